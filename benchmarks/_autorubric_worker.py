"""Grade a workload with autorubric 1.6.1 and report its own wall and CPU time as JSON.

Runs inside the autorubric virtual environment (``.venvs/autorubric``, see
``setup_autorubric_venv.sh``), never in jurist's: ``rubric.py`` starts it as a subprocess.
It reads the workload (``{"rubric": {...}, "items": [{"submission", "query"}, ...]}``)
from a JSON file, grades every item with ``autorubric.graders.CriterionGrader`` over
LiteLLM pointed at the stub server (``openai/<model>`` with ``api_base``), at most
``--concurrency`` requests in flight (``LLMConfig.max_parallel_requests``), and prints one
JSON object on the last line of stdout::

    {"tool": "autorubric", "n": 200, "wall_s": 3.1, "cpu_s": 2.9, "failed": 0, ...}

Only the grading is timed; imports and setup are reported apart. Caching and retries are
off, so every criterion judgment is one request the server counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

_T0 = time.perf_counter()
# LiteLLM fetches a model price map at import unless told to use its bundled copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    # Imported here: these live only in the autorubric venv.
    import autorubric  # type: ignore[import-not-found]
    from autorubric import LLMConfig, Rubric
    from autorubric.graders import CriterionGrader  # type: ignore[import-not-found]

    import_s = time.perf_counter() - _T0
    workload = json.loads(Path(args.data).read_text())
    items: list[dict[str, Any]] = workload["items"]

    t_setup = time.perf_counter()
    rubric = Rubric.from_dict(workload["rubric"])
    config = LLMConfig(
        model=f"openai/{args.model}",
        api_base=args.base_url,
        api_key="x",
        temperature=0.0,
        max_parallel_requests=args.concurrency,
        cache_enabled=False,
        max_retries=0,
    )
    grader = CriterionGrader(judge_model_config=config, llm_calls=args.llm_calls, seed=args.seed)
    setup_s = time.perf_counter() - t_setup

    async def one(item: dict[str, Any]) -> Any:
        return await rubric.grade(to_grade=item["submission"], grader=grader, query=item["query"])

    wall0 = time.perf_counter()
    cpu0 = time.process_time()
    reports = await asyncio.gather(*(one(item) for item in items))
    cpu_s = time.process_time() - cpu0
    wall_s = time.perf_counter() - wall0

    errors = [r.error for r in reports if r.error]
    criterion_errors = sum(
        1 for r in reports for c in r.report or [] if getattr(c, "error", None) is not None
    )
    prompt_tokens = sum(r.token_usage.prompt_tokens for r in reports if r.token_usage)
    return {
        "tool": "autorubric",
        "autorubric_version": getattr(autorubric, "__version__", None) or _version("autorubric"),
        "litellm_version": _version("litellm"),
        "python": sys.version.split()[0],
        "llm_calls": args.llm_calls,
        "n": len(items),
        "concurrency": args.concurrency,
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "import_s": import_s,
        "setup_s": setup_s,
        "failed": len(errors),
        "criterion_errors": criterion_errors,
        "first_error": errors[0] if errors else None,
        "scored": sum(1 for r in reports if r.score is not None),
        "client_prompt_tokens": prompt_tokens,
    }


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", required=True, help="the workload JSON file")
    parser.add_argument("--base-url", required=True, help="the stub server's /v1 URL")
    parser.add_argument("--model", default="stub")
    parser.add_argument("--llm-calls", choices=("per_criterion", "per_item"), default="per_item")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    result = asyncio.run(_run(args))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
