"""Run uqlm's LLMJudge on a workload and report its own CPU and wall time as JSON.

This script runs inside the uqlm virtual environment (``.venvs/uqlm``, see
``setup_uqlm_venv.sh``), never in jurist's: ``throughput.py`` starts it as a subprocess so
that uqlm's CPU is measured in a process of its own. It reads the workload
(``{"prompts": [...], "responses": [...]}``) from a JSON file, judges it with
``uqlm.judges.LLMJudge`` over ``langchain_openai.ChatOpenAI`` pointed at the stub
server, and prints one JSON object on the last line of stdout::

    {"n": 2000, "wall_s": 15.0, "cpu_s": 14.8, "cpu_ms_per_call": 7.4, "scores": {...}, ...}

Only the ``judge_responses`` call is timed; imports and model construction are reported
apart (``import_s``, ``setup_s``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

_T0 = time.perf_counter()


def _score_counts(scores: list[Any]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for s in scores:
        if s is None or (isinstance(s, float) and s != s):
            counts["nan"] += 1
        else:
            counts[repr(float(s))] += 1
    return dict(counts)


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    # Imported here: these live only in the uqlm venv.
    import uqlm  # type: ignore[import-not-found]
    from langchain_openai import ChatOpenAI  # type: ignore[import-not-found]
    from uqlm.judges import LLMJudge  # type: ignore[import-not-found]

    import_s = time.perf_counter() - _T0
    workload = json.loads(Path(args.data).read_text())
    prompts: list[str] = workload["prompts"]
    responses: list[str] = workload["responses"]

    t_setup = time.perf_counter()
    llm = ChatOpenAI(
        base_url=args.base_url,
        api_key="x",
        model="stub",
        temperature=0,
    )
    judge = LLMJudge(
        llm=llm,
        scoring_template=args.template,
        max_calls_per_min=args.max_calls_per_min,
    )
    setup_s = time.perf_counter() - t_setup

    wall0 = time.perf_counter()
    cpu0 = time.process_time()
    out = await judge.judge_responses(prompts=prompts, responses=responses, retries=args.retries)
    cpu_s = time.process_time() - cpu0
    wall_s = time.perf_counter() - wall0

    n = len(prompts)
    return {
        "tool": "uqlm",
        "uqlm_version": getattr(uqlm, "__version__", None) or _dist_version("uqlm"),
        "langchain_openai_version": _dist_version("langchain-openai"),
        "python": sys.version.split()[0],
        "n": n,
        "max_calls_per_min": args.max_calls_per_min,
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "cpu_ms_per_call": cpu_s / n * 1000.0 if n else 0.0,
        "import_s": import_s,
        "setup_s": setup_s,
        "scores": _score_counts(list(out["scores"])),
        "judge_prompt_example": out["judge_prompts"][0] if n else None,
    }


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="uqlm LLMJudge throughput worker")
    parser.add_argument("--base-url", required=True, help="http://127.0.0.1:<port>/v1")
    parser.add_argument("--data", required=True, help="JSON file: prompts and responses")
    parser.add_argument("--template", default="true_false_uncertain")
    parser.add_argument("--max-calls-per-min", type=int, default=None)
    parser.add_argument("--retries", type=int, default=0)
    args = parser.parse_args(argv)
    result = asyncio.run(_run(args))
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
