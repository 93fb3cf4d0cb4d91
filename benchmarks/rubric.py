"""Rubric benchmark: the same 10-criterion rubric over 200 items, jurist against autorubric.

A stub OpenAI-compatible server (``_stub_server.py --answer schema``, a process of its own)
answers every ``/v1/chat/completions`` after a fixed latency with a JSON instance of the
schema the request asks for, and counts, server-side, the requests, the message characters
and the prompt tokens (``ceil(chars / 4)`` per request, one estimate for both tools).
Against it, one after the other, with at most ``--concurrency`` (32) requests in flight:

1. jurist, ``CriterionGrader(calls="per_item")``: the whole rubric in one call per item,
   static text first (the system message is the same for every item);
2. autorubric 1.6.1 (its own venv, ``.venvs/autorubric``, through ``_autorubric_worker.py``)
   with its default, ``llm_calls="per_criterion"``: one call per criterion;
3. autorubric with ``llm_calls="per_item"``, its own one-call mode;
4. jurist with ``calls="per_criterion"`` (shown for reference, no target).

Reported per item for each: HTTP requests, prompt tokens (and characters), completion
tokens, wall time, and the ratios autorubric / jurist. Targets (the issue's): jurist sends
fewer requests and fewer prompt tokens per item than autorubric. Every run also checks
correctness: every item scored, no criterion lost to a parse error.

Run::

    bash benchmarks/setup_autorubric_venv.sh   # once: creates .venvs/autorubric
    python benchmarks/rubric.py                # the full run, about a minute
    python benchmarks/rubric.py --quick        # 40 items
    python benchmarks/rubric.py --skip-autorubric

Results go to the terminal and to ``benchmarks/results/rubric-<time>.json``; the exit status
is 1 when a target fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stub_server import StubServer

import jurist

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS_DIR = HERE / "results"
AUTORUBRIC_PYTHON = ROOT / ".venvs" / "autorubric" / "bin" / "python"

_FOUR = [
    {"label": "Poor", "value": 0.0},
    {"label": "Fair", "value": 0.33},
    {"label": "Good", "value": 0.67},
    {"label": "Excellent", "value": 1.0},
]
RUBRIC = jurist.Rubric.from_dict(
    {
        "name": "support-answer",
        "criteria": [
            {"name": "answers", "requirement": "Answers the question asked", "weight": 10},
            {"name": "steps", "requirement": "Gives concrete steps to follow", "weight": 8},
            {"name": "accurate", "requirement": "Every technical claim is accurate", "weight": 10},
            {"name": "safe", "requirement": "Warns before a step that can lose data", "weight": 5},
            {"name": "cites", "requirement": "Points to official documentation", "weight": 3},
            {"name": "invents", "requirement": "Invents a command or option", "weight": -8},
            {"name": "clarity", "requirement": "How clear is the answer?", "weight": 6,
             "options": _FOUR},
            {"name": "depth", "requirement": "How complete is the answer?", "weight": 6,
             "options": _FOUR},
            {"name": "tone", "requirement": "What is the tone of the answer?", "weight": 4,
             "scale_type": "nominal",
             "options": [{"label": "Professional", "value": 1.0},
                         {"label": "Casual", "value": 0.7},
                         {"label": "Curt", "value": 0.2}]},
            {"name": "format", "requirement": "How is the answer laid out?", "weight": 2,
             "scale_type": "nominal",
             "options": [{"label": "Numbered steps", "value": 1.0},
                         {"label": "Paragraphs", "value": 0.6},
                         {"label": "One long block", "value": 0.1}]},
        ],
    }
)  # fmt: skip

Calls = Literal["per_item", "per_criterion"]
TOPICS = ["backups", "disk space", "SSH keys", "a stuck update", "DNS", "a slow database"]


def make_workload(n: int) -> list[dict[str, str]]:
    """``n`` deterministic support questions and answers of a few hundred characters."""
    items = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        query = f"Ticket {i}: how do I deal with {topic} on my Linux server?"
        steps = " ".join(
            f"Step {k + 1}: check the {topic} settings in /etc/app{i % 7}/conf.d/{k}.conf "
            f"and restart the service."
            for k in range(2 + i % 4)
        )
        items.append(
            {
                "query": query,
                "submission": f"Thanks for reaching out about {topic}. {steps} "
                "If the problem persists, see the official guide or reply to this ticket.",
            }
        )
    return items


def _per_item(stats: dict[str, Any], n: int) -> dict[str, float]:
    return {
        "requests": stats["count"] / n,
        "prompt_tokens": stats["prompt_tokens"] / n,
        "prompt_chars": stats["prompt_chars"] / n,
        "completion_tokens": stats["completion_tokens"] / n,
        "body_bytes": stats["body_bytes"] / n,
    }


def run_jurist(
    server: StubServer, items: list[dict[str, str]], calls: Calls, concurrency: int
) -> dict[str, Any]:
    async def go() -> tuple[list[jurist.GradeReport], float, float, dict[str, Any]]:
        model = jurist.get_model("openai:stub", base_url=server.base_url, api_key="x")
        grader = jurist.CriterionGrader(
            judges=[model], calls=calls, seed=0, concurrency=concurrency
        )
        await grader.grade_many(RUBRIC, items[:4])  # warm-up: connections, first imports
        server.reset()
        wall0, cpu0 = time.perf_counter(), time.process_time()
        reports = await grader.grade_many(RUBRIC, items)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        stats = server.stats()
        await model.aclose()
        return reports, wall, cpu, stats

    reports, wall, cpu, stats = asyncio.run(go())
    n = len(items)
    parse_errors = sum(1 for r in reports for c in r.criteria for v in c.votes if v.is_error)
    return {
        "label": f"jurist {calls}",
        "tool": "jurist",
        "calls": calls,
        "n": n,
        "wall_s": wall,
        "cpu_s": cpu,
        "wall_ms_per_item": wall / n * 1000,
        "cpu_ms_per_item": cpu / n * 1000,
        "scored": sum(1 for r in reports if r.score is not None),
        "criterion_errors": parse_errors,
        "server": {k: v for k, v in stats.items() if k != "arrivals"},
        "per_item": _per_item(stats, n),
    }


def run_autorubric(
    server: StubServer, items: list[dict[str, str]], llm_calls: str, concurrency: int
) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"rubric": RUBRIC.to_dict(), "items": items}, f)
        data = f.name
    worker = str(HERE / "_autorubric_worker.py")
    base = [str(AUTORUBRIC_PYTHON), worker, "--base-url", server.base_url]
    base += ["--llm-calls", llm_calls, "--concurrency", str(concurrency)]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    try:
        # warm-up on 4 items (imports, connections), then the measured run after a reset
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"rubric": RUBRIC.to_dict(), "items": items[:4]}, f)
            warm = f.name
        subprocess.run([*base, "--data", warm], check=True, capture_output=True, env=env)
        server.reset()
        out = subprocess.run(
            [*base, "--data", data], check=True, capture_output=True, text=True, env=env
        )
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"the autorubric worker failed:\n{e.stderr[-4000:]}") from e
    finally:
        Path(data).unlink(missing_ok=True)
    stats = server.stats()
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    n = len(items)
    result.update(
        label=f"autorubric {llm_calls}",
        wall_ms_per_item=result["wall_s"] / n * 1000,
        cpu_ms_per_item=result["cpu_s"] / n * 1000,
        server={k: v for k, v in stats.items() if k != "arrivals"},
        per_item=_per_item(stats, n),
    )
    return result


def print_report(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=150)
    table = Table(title=f"{report['n']} items x {len(RUBRIC)} criteria, stub latency "
                  f"{report['latency_s']} s, concurrency {report['concurrency']}")  # fmt: skip
    for col in ("run", "requests/item", "prompt tok/item", "prompt chars/item",
                "completion tok/item", "wall ms/item", "client CPU ms/item", "scored"):  # fmt: skip
        table.add_column(col, justify="right" if col != "run" else "left")
    for run in report["runs"]:
        p = run["per_item"]
        table.add_row(
            run["label"],
            f"{p['requests']:.2f}",
            f"{p['prompt_tokens']:.0f}",
            f"{p['prompt_chars']:.0f}",
            f"{p['completion_tokens']:.1f}",
            f"{run['wall_ms_per_item']:.2f}",
            f"{run['cpu_ms_per_item']:.2f}",
            f"{run['scored']}/{run['n']}",
        )
    console.print(table)
    for name, r in report["ratios"].items():
        console.print(
            f"{name}: requests x{r['requests']:.1f}, prompt tokens x{r['prompt_tokens']:.1f}, "
            f"wall x{r['wall']:.2f}"
        )
    for t in report["targets"]:
        mark = "[green]PASS[/]" if t["passed"] else "[red]FAIL[/]"
        console.print(f"{mark} {t['name']}: {t['jurist']:.1f} {t['op']} {t['autorubric']:.1f}")
    mark = "[green]PASS[/]" if report["correct"] else "[red]FAIL[/]"
    console.print(f"{mark} every item scored, no criterion lost to a failed answer")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05, help="stub seconds per answer")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="40 items")
    parser.add_argument("--skip-autorubric", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    n = 40 if args.quick else args.n
    items = make_workload(n)
    skip_ar = args.skip_autorubric or not AUTORUBRIC_PYTHON.exists()
    if skip_ar and not args.skip_autorubric:
        print(f"{AUTORUBRIC_PYTHON} not found: run benchmarks/setup_autorubric_venv.sh")
    runs: list[dict[str, Any]] = []
    with StubServer(latency=args.latency, answer="schema") as server:
        runs.append(run_jurist(server, items, "per_item", args.concurrency))
        if not skip_ar:
            runs.append(run_autorubric(server, items, "per_criterion", args.concurrency))
            runs.append(run_autorubric(server, items, "per_item", args.concurrency))
        runs.append(run_jurist(server, items, "per_criterion", args.concurrency))
    ours = runs[0]
    ratios: dict[str, dict[str, float]] = {}
    targets: list[dict[str, Any]] = []
    for run in runs[1:]:
        if run["tool"] != "autorubric":
            continue
        key = f"{run['label']} / jurist per_item"
        ratios[key] = {
            "requests": run["per_item"]["requests"] / ours["per_item"]["requests"],
            "prompt_tokens": run["per_item"]["prompt_tokens"] / ours["per_item"]["prompt_tokens"],
            "wall": run["wall_s"] / ours["wall_s"],
        }
        for metric in ("requests", "prompt_tokens"):
            # one call per item cannot be beaten on requests by another one-call mode
            strict = not (metric == "requests" and run["llm_calls"] == "per_item")
            mine, theirs = ours["per_item"][metric], run["per_item"][metric]
            targets.append(
                {
                    "name": f"jurist {metric}/item {'<' if strict else '<='} {run['label']}",
                    "jurist": mine,
                    "autorubric": theirs,
                    "op": "<" if strict else "<=",
                    "passed": mine < theirs if strict else mine <= theirs,
                }
            )
    correct = all(r["scored"] == r["n"] and not r.get("criterion_errors") for r in runs)
    report = {
        "benchmark": "rubric",
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "n": n,
        "criteria": len(RUBRIC),
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg": list(os.getloadavg()),
        "runs": runs,
        "ratios": ratios,
        "targets": targets,
        "correct": correct,
    }
    print_report(report)
    RESULTS_DIR.mkdir(exist_ok=True)
    out = args.out or RESULTS_DIR / f"rubric-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0 if correct and all(t["passed"] for t in targets) else 1


if __name__ == "__main__":
    raise SystemExit(main())
