#!/usr/bin/env bash
# Create .venvs/uqlm: an isolated virtual environment holding uqlm (the peer the
# throughput benchmark compares against) and langchain-openai (uqlm takes LangChain
# chat models; the worker points ChatOpenAI at the local stub server).
#
# uqlm needs pyarrow<20 on Python 3.11. If uqlm pulls torch, a CPU build is installed
# first (torch==2.13.0 resolves to a local CPU build here) so that pip never fetches
# the multi-gigabyte CUDA wheels.
#
# Usage: bash benchmarks/setup_uqlm_venv.sh [PYTHON]   (default: python3.11 or python3)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${UQLM_VENV:-$ROOT/.venvs/uqlm}"
PY="${1:-$(command -v python3.11 || command -v python3)}"

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "creating $VENV with $PY"
    "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip)
"${PIP[@]}" install --upgrade pip

# torch first (CPU build), only if uqlm would pull it in.
if "${PIP[@]}" install --dry-run --quiet --report - uqlm "pyarrow<20" 2>/dev/null \
        | "$VENV/bin/python" -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if any(i["metadata"]["name"].lower()=="torch" for i in r["install"]) else 1)'; then
    echo "uqlm pulls torch: installing torch==2.13.0 (CPU build) first"
    "${PIP[@]}" install "torch==2.13.0"
fi

"${PIP[@]}" install uqlm "pyarrow<20" langchain-openai
"$VENV/bin/python" -c 'import uqlm, langchain_openai; from uqlm.judges import LLMJudge; print("uqlm ready:", uqlm.__file__)'
