#!/usr/bin/env bash
# Create .venvs/autorubric: an isolated virtual environment holding autorubric 1.6.1 (the
# peer the rubric benchmark compares against). autorubric calls models through LiteLLM; the
# worker (_autorubric_worker.py) points it at the local stub server as an OpenAI-compatible
# endpoint.
#
# If autorubric pulls torch, a CPU build is installed first (torch==2.13.0 resolves to a
# local CPU build here) so that pip never fetches the multi-gigabyte CUDA wheels.
#
# Usage: bash benchmarks/setup_autorubric_venv.sh [PYTHON]   (default: python3.11 or python3)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${AUTORUBRIC_VENV:-$ROOT/.venvs/autorubric}"
PY="${1:-$(command -v python3.11 || command -v python3)}"
SPEC="autorubric==1.6.1"

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "creating $VENV with $PY"
    "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip)
"${PIP[@]}" install --upgrade pip

# torch first (CPU build), only if autorubric would pull it in.
if "${PIP[@]}" install --dry-run --quiet --report - "$SPEC" 2>/dev/null \
        | "$VENV/bin/python" -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if any(i["metadata"]["name"].lower()=="torch" for i in r["install"]) else 1)'; then
    echo "autorubric pulls torch: installing torch==2.13.0 (CPU build) first"
    "${PIP[@]}" install "torch==2.13.0"
fi

"${PIP[@]}" install "$SPEC"
"$VENV/bin/python" -c 'import autorubric; from autorubric.graders import CriterionGrader; print("autorubric ready:", autorubric.__file__)'
