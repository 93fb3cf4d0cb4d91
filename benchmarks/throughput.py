"""Throughput benchmark: jurist against its latency bound and against uqlm, in one run.

A stub OpenAI-compatible server (``_stub_server.py``, in a process of its own) answers
every ``/v1/chat/completions`` after a fixed latency (0.2 s) with the verdict "Correct".
Against it:

1. jurist, 2,000 judgments at concurrency 32: wall time within 1.10x of the bound
   ``n / concurrency x latency`` (12.5 s).
2. jurist, the same at concurrency 256: within 1.5x of its bound (1.5625 s).
3. jurist's client CPU per judgment, everything included (prompt building, transport,
   parsing), from runs 1 and 2: under 0.5 ms.
4. uqlm's ``LLMJudge`` (in its own venv, ``.venvs/uqlm``), the same 2,000 judgments with
   its default (no concurrency bound): wall time and CPU per call, and the ratios.
5. Pacing: jurist with ``max_calls_per_min=1200`` over 400 judgments; from the server's
   arrival times, no 5-second window holds more than 1.2x its prorated share (100) and
   the achieved rate is at least 90% of the limit. uqlm with the same setting is shown
   for contrast (no target).

6. jurist's client CPU per judgment against the transport floor, bare aiohttp posting the
   same request bodies (built beforehand) to the same server at the same concurrency:
   within 1.25x at 32 and at 256 in flight. jurist and the floor run alternately,
   ``--repeats`` times each (default 3), and the ratio is of the medians, so a machine
   whose load changes during the run weighs on both sides alike.

Client CPU is ``time.process_time()`` of the judging process around the judging call
(jurist in this process, uqlm in its worker), divided by the number of judgments.

Run::

    bash benchmarks/setup_uqlm_venv.sh       # once: creates .venvs/uqlm
    python benchmarks/throughput.py          # full run, ~2 min
    python benchmarks/throughput.py --quick  # smoke run, smaller n
    python benchmarks/throughput.py --skip-uqlm

The results go to the terminal (a table, PASS/FAIL per target) and to
``benchmarks/results/throughput-<time>.json``. The exit status is 1 when a target fails.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from bisect import bisect_left
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stub_server import StubServer

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS_DIR = HERE / "results"
UQLM_PYTHON = ROOT / ".venvs" / "uqlm" / "bin" / "python"
TEMPLATE = "true_false_uncertain"

# Targets (from the issue).
WALL_RATIO_C32 = 1.10
WALL_RATIO_C256 = 1.5
CPU_MS_PER_JUDGMENT = 0.5
CPU_RATIO_TO_FLOOR = 1.25
PACING_WINDOW_S = 5.0
PACING_MAX_WINDOW_RATIO = 1.2
PACING_MIN_RATE_RATIO = 0.9
# uqlm as measured when the issue was written (for reference next to this run's numbers).
UQLM_REFERENCE = {"cpu_ms_per_call": 7.4, "wall_s_2000": 15.0}


@dataclass
class Target:
    name: str
    measured: float
    limit: float
    op: str  # "<=" or ">="
    unit: str = ""
    enforced: bool = True  # False: shown, but does not fail the run (wall ratios in --quick)

    @property
    def passed(self) -> bool:
        return self.measured <= self.limit if self.op == "<=" else self.measured >= self.limit


@dataclass
class Run:
    """One judging run: who, how many, how, and what it cost."""

    label: str
    tool: str
    n: int
    concurrency: int | None
    wall_s: float
    cpu_s: float
    bound_s: float | None = None
    scores: dict[str, int] = field(default_factory=dict)
    server_requests: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cpu_ms_per_judgment(self) -> float:
        return self.cpu_s / self.n * 1000.0 if self.n else 0.0

    @property
    def wall_ratio(self) -> float | None:
        return self.wall_s / self.bound_s if self.bound_s else None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cpu_ms_per_judgment"] = self.cpu_ms_per_judgment
        d["wall_ratio"] = self.wall_ratio
        return d


# -- workload ---------------------------------------------------------------------------------


def make_workload(n: int) -> tuple[list[str], list[str]]:
    """``n`` deterministic question/answer pairs of realistic length (~150 + ~250 chars)."""
    subjects = ["physics", "history", "geography", "chemistry", "literature", "biology"]
    prompts: list[str] = []
    responses: list[str] = []
    for i in range(n):
        a, b = 17 + (i * 7919) % 983, 3 + (i * 104729) % 97
        subject = subjects[i % len(subjects)]
        prompts.append(
            f"Question {i} ({subject} quiz): a warehouse holds {a} crates and receives {b} "
            f"more each day. How many crates does it hold after one day? Answer briefly."
        )
        responses.append(
            f"The warehouse starts with {a} crates. After one day it receives {b} more, so it "
            f"holds {a} + {b} = {a + b} crates. The answer is {a + b}. This assumes no crates "
            "leave the warehouse during that day and that the delivery arrives in full."
        )
    return prompts, responses


def score_counts(scores: list[Any]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for s in scores:
        if s is None or (isinstance(s, float) and math.isnan(s)):
            counts["none"] += 1
        else:
            counts[repr(float(s))] += 1
    return dict(counts)


# -- jurist ---------------------------------------------------------------------------------


async def _jurist_judge(
    base_url: str,
    prompts: list[str],
    responses: list[str],
    concurrency: int,
    max_calls_per_min: int | None = None,
) -> tuple[float, float, dict[str, list[Any]]]:
    """Judge with a fresh model and judge; returns (wall_s, cpu_s, output)."""
    import jurist

    model = jurist.get_model("openai:stub", base_url=base_url, api_key="x")
    # text output, as uqlm asks for (the stub answers text and ignores response_format)
    judge = jurist.LLMJudge(
        model, template=TEMPLATE, max_calls_per_min=max_calls_per_min, output="text"
    )
    try:
        gc.collect()
        wall0 = time.perf_counter()
        cpu0 = time.process_time()
        out = await judge.judge_responses(prompts, responses, retries=0, concurrency=concurrency)
        cpu_s = time.process_time() - cpu0
        wall_s = time.perf_counter() - wall0
    finally:
        await model.aclose()
    return wall_s, cpu_s, out


def run_jurist(
    server: StubServer,
    label: str,
    prompts: list[str],
    responses: list[str],
    concurrency: int,
    max_calls_per_min: int | None = None,
) -> tuple[Run, list[float]]:
    server.reset()
    wall_s, cpu_s, out = asyncio.run(
        _jurist_judge(server.base_url, prompts, responses, concurrency, max_calls_per_min)
    )
    arrivals = server.arrivals()
    n = len(prompts)
    bound = n / concurrency * server.latency if max_calls_per_min is None else None
    run = Run(
        label=label,
        tool="jurist",
        n=n,
        concurrency=concurrency,
        wall_s=wall_s,
        cpu_s=cpu_s,
        bound_s=bound,
        scores=score_counts(out["scores"]),
        server_requests=len(arrivals),
        extra={
            "waves_bound_s": math.ceil(n / concurrency) * server.latency,
            "max_calls_per_min": max_calls_per_min,
        },
    )
    return run, arrivals


async def aiohttp_floor(
    base_url: str, bodies: list[bytes], concurrency: int
) -> tuple[float, float, list[str]]:
    """The transport floor: the same request bodies posted with bare aiohttp."""
    import aiohttp

    url = f"{base_url}/chat/completions"
    headers = {"Content-Type": "application/json", "Authorization": "Bearer x"}
    texts: list[str] = [""] * len(bodies)
    indices = iter(range(len(bodies)))
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def worker() -> None:
            for i in indices:
                async with session.post(url, data=bodies[i]) as resp:
                    payload = json.loads(await resp.read())
                texts[i] = payload["choices"][0]["message"]["content"]

        gc.collect()
        wall0 = time.perf_counter()
        cpu0 = time.process_time()
        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(bodies)))))
        cpu_s = time.process_time() - cpu0
        wall_s = time.perf_counter() - wall0
    return wall_s, cpu_s, texts


def floor_bodies(prompts: list[str], responses: list[str]) -> list[bytes]:
    """The floor's request bodies: what jurist sends for the same items (its messages)."""
    import jurist

    judge = jurist.LLMJudge(jurist.get_model("mock:judge"), template=TEMPLATE)
    return [
        json.dumps(
            {
                "model": "stub",
                "messages": [
                    {"role": m.role, "content": m.content}
                    for m in judge.messages({"prompt": p, "response": r})
                ],
                "max_tokens": judge.max_tokens,
                "temperature": 0.0,
            }
        ).encode()
        for p, r in zip(prompts, responses, strict=True)
    ]


def run_aiohttp_floor(
    server: StubServer, prompts: list[str], responses: list[str], concurrency: int
) -> Run:
    """Bare aiohttp with jurist's request bodies built beforehand: no jurist on the path."""
    bodies = floor_bodies(prompts, responses)
    server.reset()
    wall_s, cpu_s, texts = asyncio.run(aiohttp_floor(server.base_url, bodies, concurrency))
    n = len(bodies)
    return Run(
        label=f"aiohttp floor c={concurrency}",
        tool="aiohttp",
        n=n,
        concurrency=concurrency,
        wall_s=wall_s,
        cpu_s=cpu_s,
        bound_s=n / concurrency * server.latency,
        scores=score_counts([1.0 if t == server.verdict else None for t in texts]),
        server_requests=server.count(),
        extra={"note": "transport floor: bare aiohttp, bodies prebuilt, no verdict parsing"},
    )


# -- uqlm -----------------------------------------------------------------------------------


def run_uqlm(
    server: StubServer,
    label: str,
    prompts: list[str],
    responses: list[str],
    max_calls_per_min: int | None = None,
    timeout: float = 900.0,
) -> tuple[Run, list[float]]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"prompts": prompts, "responses": responses}, f)
        data_path = f.name
    cmd = [
        str(UQLM_PYTHON),
        str(HERE / "_uqlm_worker.py"),
        "--base-url",
        server.base_url,
        "--data",
        data_path,
        "--template",
        TEMPLATE,
    ]
    if max_calls_per_min is not None:
        cmd += ["--max-calls-per-min", str(max_calls_per_min)]
    server.reset()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    finally:
        os.unlink(data_path)
    if proc.returncode != 0:
        raise RuntimeError(f"uqlm worker failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    arrivals = server.arrivals()
    run = Run(
        label=label,
        tool="uqlm",
        n=int(result["n"]),
        concurrency=None,
        wall_s=float(result["wall_s"]),
        cpu_s=float(result["cpu_s"]),
        scores={k.replace("nan", "none"): v for k, v in result["scores"].items()},
        server_requests=len(arrivals),
        extra={
            k: result.get(k)
            for k in ("uqlm_version", "langchain_openai_version", "import_s", "setup_s")
        }
        | {"max_calls_per_min": max_calls_per_min},
    )
    return run, arrivals


# -- pacing ---------------------------------------------------------------------------------


def pacing_stats(arrivals: list[float], limit_per_min: int) -> dict[str, float]:
    """Max count in any sliding 5-second window vs its prorated share, and achieved rate."""
    ts = sorted(arrivals)
    n = len(ts)
    share = limit_per_min / 60.0 * PACING_WINDOW_S
    # Every maximal window starts at an arrival: count arrivals in [t_i, t_i + 5 s)
    # (less a nanosecond, so that float noise never counts a 1200/min grid's 101st).
    horizon = PACING_WINDOW_S - 1e-9
    max_window = max((bisect_left(ts, t + horizon) - i for i, t in enumerate(ts)), default=0)
    span = ts[-1] - ts[0] if n > 1 else 0.0
    rate = (n - 1) / span * 60.0 if span > 0 else math.inf
    return {
        "n": n,
        "span_s": span,
        "window_s": PACING_WINDOW_S,
        "prorated_share": share,
        "max_in_window": float(max_window),
        "max_window_ratio": max_window / share,
        "achieved_per_min": rate,
        "rate_ratio": rate / limit_per_min,
    }


# -- report -----------------------------------------------------------------------------------


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def print_report(report: dict[str, Any]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is a jurist dependency
        print(json.dumps(report, indent=2))
        return
    console = Console()
    if not console.is_terminal:
        console = Console(width=120)
    env = report["environment"]
    console.print(
        f"[bold]jurist throughput[/] — stub latency {report['latency_s']} s, "
        f"python {env['python']}, {env['cpus']} CPUs, load avg before "
        f"{env['loadavg_before'][0]:.2f}, after {env['loadavg_after'][0]:.2f}"
        + ("  [yellow](--quick)[/]" if report["quick"] else "")
    )
    runs = Table(title="Runs")
    for col in (
        "run",
        "n",
        "conc.",
        "wall s",
        "bound s",
        "wall/bound",
        "CPU ms/judgment",
        "scores",
        "server reqs",
    ):
        runs.add_column(col, justify="left" if col in ("run", "scores") else "right")
    for r in report["runs"]:
        runs.add_row(
            r["label"],
            str(r["n"]),
            "none" if r["concurrency"] is None else str(r["concurrency"]),
            _fmt(r["wall_s"]),
            _fmt(r["bound_s"]),
            _fmt(r["wall_ratio"], ".3f"),
            _fmt(r["cpu_ms_per_judgment"]),
            ", ".join(f"{k}: {v}" for k, v in sorted(r["scores"].items())),
            str(r["server_requests"]),
        )
    console.print(runs)

    if report["pacing"]:
        pace = Table(title="Pacing (server-side arrival times)")
        for col in (
            "run",
            "n",
            "span s",
            "max in 5 s",
            "share",
            "max/share",
            "rate /min",
            "rate/limit",
        ):
            pace.add_column(col, justify="left" if col == "run" else "right")
        for label, p in report["pacing"].items():
            pace.add_row(
                label,
                str(int(p["n"])),
                _fmt(p["span_s"], ".2f"),
                str(int(p["max_in_window"])),
                _fmt(p["prorated_share"], ".0f"),
                _fmt(p["max_window_ratio"], ".3f"),
                _fmt(p["achieved_per_min"], ".1f"),
                _fmt(p["rate_ratio"], ".3f"),
            )
        console.print(pace)

    if report["floor"]:
        floor = Table(
            title="jurist vs the transport floor (bare aiohttp, same bodies prebuilt; "
            "medians of the alternated runs)"
        )
        for col in (
            "conc.",
            "runs",
            "floor CPU ms",
            "jurist CPU ms",
            "jurist − floor ms",
            "jurist / floor",
            "floor wall s",
            "jurist wall s",
        ):
            floor.add_column(col, justify="right")
        for row in report["floor"]:
            floor.add_row(
                str(row["concurrency"]),
                str(row["repeats"]),
                _fmt(row["floor_cpu_ms"]),
                _fmt(row["jurist_cpu_ms"]),
                _fmt(row["jurist_over_floor_cpu_ms"]),
                _fmt(row["cpu_ratio"], ".2f"),
                _fmt(row["floor_wall_s"]),
                _fmt(row["jurist_wall_s"]),
            )
        console.print(floor)

    if report["ratios"]:
        ratios = Table(title="jurist vs uqlm (uqlm / jurist: > 1 means jurist is better)")
        ratios.add_column("what")
        ratios.add_column("uqlm", justify="right")
        ratios.add_column("jurist", justify="right")
        ratios.add_column("ratio", justify="right")
        for row in report["ratios"]:
            ratios.add_row(
                row["what"], _fmt(row["uqlm"]), _fmt(row["jurist"]), f"{row['ratio']:.1f}x"
            )
        console.print(ratios)

    targets = Table(title="Targets")
    for col in ("target", "measured", "limit", "result"):
        targets.add_column(col, justify="left" if col == "target" else "right")
    for t in report["targets"]:
        verdict = "[green]PASS[/]" if t["passed"] else "[red]FAIL[/]"
        if not t["enforced"]:
            verdict = ("PASS" if t["passed"] else "fail") + " (info)"
        targets.add_row(
            t["name"],
            f"{t['measured']:.3f}{t['unit']}",
            f"{t['op']} {t['limit']:g}{t['unit']}",
            verdict,
        )
    console.print(targets)
    console.print(f"results: {report['results_file']}")


# -- main -------------------------------------------------------------------------------------


def _loadavg() -> list[float]:
    try:
        return list(os.getloadavg())
    except OSError:  # pragma: no cover
        return [math.nan] * 3


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("jurist", "aiohttp", "pydantic"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller n, for a smoke run")
    parser.add_argument("--skip-uqlm", action="store_true", help="do not run uqlm")
    parser.add_argument(
        "--skip-floor", action="store_true", help="do not run the bare-aiohttp transport floor"
    )
    parser.add_argument("--latency", type=float, default=0.2, help="stub latency, seconds")
    parser.add_argument("--n", type=int, default=None, help="judgments per throughput run")
    parser.add_argument("--pacing-n", type=int, default=None, help="judgments in the pacing run")
    parser.add_argument("--rate", type=int, default=1200, help="max_calls_per_min for pacing")
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="jurist and floor runs per concurrency, alternated (CPU ratio of the medians)",
    )
    parser.add_argument("--out", type=Path, default=None, help="results JSON path")
    args = parser.parse_args(argv)

    n = args.n or (400 if args.quick else 2000)
    pacing_n = args.pacing_n or (150 if args.quick else 400)
    run_uqlm_too = not args.skip_uqlm
    if run_uqlm_too and not UQLM_PYTHON.exists():
        print(
            f"uqlm venv not found at {UQLM_PYTHON}; run `bash benchmarks/setup_uqlm_venv.sh` "
            "or pass --skip-uqlm",
            file=sys.stderr,
        )
        return 2

    import jurist  # noqa: F401  (import cost stays out of every measurement)

    prompts, responses = make_workload(n)
    p_prompts, p_responses = make_workload(pacing_n)
    runs: list[Run] = []
    pacing: dict[str, dict[str, float]] = {}
    loadavg_before = _loadavg()
    started = time.time()

    with StubServer(latency=args.latency) as server:
        # Warm-up: first-use costs (template compile, imports inside backends) stay out.
        asyncio.run(_jurist_judge(server.base_url, prompts[:8], responses[:8], 8))
        for conc in (32, 256):
            for rep in range(1, max(1, args.repeats) + 1):
                tag = "" if rep == 1 else f" #{rep}"
                print(f"jurist: {n} judgments at concurrency {conc}{tag} ...", file=sys.stderr)
                run, _ = run_jurist(server, f"jurist c={conc}{tag}", prompts, responses, conc)
                runs.append(run)
                if not args.skip_floor:  # right after, so both see the same machine
                    print(
                        f"aiohttp floor: {n} requests at concurrency {conc}{tag} ...",
                        file=sys.stderr,
                    )
                    floor_run = run_aiohttp_floor(server, prompts, responses, conc)
                    floor_run.label += tag
                    runs.append(floor_run)
        print(f"jurist: pacing, {pacing_n} judgments at {args.rate}/min ...", file=sys.stderr)
        run, arrivals = run_jurist(
            server, f"jurist {args.rate}/min", p_prompts, p_responses, pacing_n, args.rate
        )
        runs.append(run)
        pacing[run.label] = pacing_stats(arrivals, args.rate)
        if run_uqlm_too:
            print(f"uqlm: {n} judgments, no concurrency bound ...", file=sys.stderr)
            run, _ = run_uqlm(server, "uqlm (no bound)", prompts, responses)
            runs.append(run)
            print(f"uqlm: pacing, {pacing_n} judgments at {args.rate}/min ...", file=sys.stderr)
            run, arrivals = run_uqlm(
                server, f"uqlm {args.rate}/min", p_prompts, p_responses, args.rate
            )
            runs.append(run)
            pacing[run.label] = pacing_stats(arrivals, args.rate)

    by_label = {r.label: r for r in runs}
    c32, c256 = by_label["jurist c=32"], by_label["jurist c=256"]
    paced = by_label[f"jurist {args.rate}/min"]
    p = pacing[paced.label]
    # With --quick, wall time and CPU per judgment are dominated by fixed costs (opening 256
    # connections for a few hundred judgments): shown, not enforced.
    timed = not args.quick
    targets = [
        Target(
            "jurist c=32 wall / bound", c32.wall_ratio or math.inf, WALL_RATIO_C32, "<=", "x", timed
        ),
        Target(
            "jurist c=256 wall / bound",
            c256.wall_ratio or math.inf,
            WALL_RATIO_C256,
            "<=",
            "x",
            timed,
        ),
        Target(
            "jurist CPU per judgment, c=32",
            c32.cpu_ms_per_judgment,
            CPU_MS_PER_JUDGMENT,
            "<=",
            " ms",
            timed,
        ),
        Target(
            "jurist CPU per judgment, c=256",
            c256.cpu_ms_per_judgment,
            CPU_MS_PER_JUDGMENT,
            "<=",
            " ms",
            timed,
        ),
        Target(
            "pacing: max 5 s window / share",
            p["max_window_ratio"],
            PACING_MAX_WINDOW_RATIO,
            "<=",
            "x",
        ),
        Target("pacing: achieved rate / limit", p["rate_ratio"], PACING_MIN_RATE_RATIO, ">=", "x"),
    ]
    for r in runs:  # correctness: every judgment scored "Correct", one request each
        targets.append(
            Target(f"{r.label}: all scores 1.0", float(r.scores.get("1.0", 0)), r.n, ">=")
        )
        targets.append(Target(f"{r.label}: one request per judgment", r.server_requests, r.n, "<="))

    overhead: list[dict[str, Any]] = []
    for j in (c32, c256):
        in_flight = j.concurrency
        floors = [r for r in runs if r.tool == "aiohttp" and r.concurrency == in_flight]
        jurists = [
            r
            for r in runs
            if r.tool == "jurist"
            and r.concurrency == in_flight
            and r.extra["max_calls_per_min"] is None
        ]
        if floors:
            floor_ms = statistics.median(r.cpu_ms_per_judgment for r in floors)
            jurist_ms = statistics.median(r.cpu_ms_per_judgment for r in jurists)
            overhead.append(
                {
                    "concurrency": in_flight,
                    "repeats": len(floors),
                    "floor_cpu_ms": floor_ms,
                    "jurist_cpu_ms": jurist_ms,
                    "jurist_over_floor_cpu_ms": jurist_ms - floor_ms,
                    "cpu_ratio": jurist_ms / floor_ms,
                    "floor_cpu_ms_each": [r.cpu_ms_per_judgment for r in floors],
                    "jurist_cpu_ms_each": [r.cpu_ms_per_judgment for r in jurists],
                    "floor_wall_s": statistics.median(r.wall_s for r in floors),
                    "jurist_wall_s": statistics.median(r.wall_s for r in jurists),
                }
            )
            targets.append(
                Target(
                    f"jurist CPU / floor CPU, c={in_flight} (medians of {len(floors)})",
                    jurist_ms / floor_ms,
                    CPU_RATIO_TO_FLOOR,
                    "<=",
                    "x",
                    timed,
                )
            )

    ratios: list[dict[str, Any]] = []
    uq = by_label.get("uqlm (no bound)")
    if uq is not None:
        for j in (c32, c256):
            ratios.append(
                {
                    "what": f"CPU ms per judgment (jurist {j.label.split()[-1]})",
                    "uqlm": uq.cpu_ms_per_judgment,
                    "jurist": j.cpu_ms_per_judgment,
                    "ratio": uq.cpu_ms_per_judgment / j.cpu_ms_per_judgment,
                }
            )
        for j in (c32, c256):
            ratios.append(
                {
                    "what": f"wall s for {n} (jurist {j.label.split()[-1]})",
                    "uqlm": uq.wall_s,
                    "jurist": j.wall_s,
                    "ratio": uq.wall_s / j.wall_s,
                }
            )

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
    out_path = args.out or RESULTS_DIR / f"throughput-{stamp}.json"
    report: dict[str, Any] = {
        "benchmark": "throughput",
        "started": stamp,
        "quick": args.quick,
        "latency_s": args.latency,
        "template": TEMPLATE,
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_before": loadavg_before,
            "loadavg_after": _loadavg(),
            "versions": _versions(),
        },
        "runs": [r.as_dict() for r in runs],
        "pacing": pacing,
        "floor": overhead,
        "ratios": ratios,
        "uqlm_reference": UQLM_REFERENCE,
        "targets": [asdict(t) | {"passed": t.passed} for t in targets],
        "all_passed": all(t.passed for t in targets if t.enforced),
        "results_file": str(out_path),
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)
    return 0 if report["all_passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
