"""Judging at scale: what the Ray engine costs per item, and what a second actor buys.

Two measurements, both through ``jurist.evaluate`` into a fresh run folder (the run store,
SQLite, is written for every item in both engines, so both pay the same bookkeeping):

(a) **overhead**: N items (default 100,000) judged by a zero-latency mock model (``mock:``,
    verdict ``Correct``), once by the local engine and once by the Ray engine on this one
    node (a local Ray instance started before the clock starts; its start-up time is
    reported apart). With a judge that takes no time, wall time / N is the engine's
    per-item overhead. Target: Ray's per-item overhead within 3x of the local engine's.
(b) **actors**: M items (default 2,000) judged through ``openai:`` against the stub
    OpenAI-compatible server of ``_stub_server.py`` (its own process, answering every
    request after 200 ms), by the Ray engine with 1 actor and then with 2 actors.
    Throughput = M / wall. Target: 2 actors >= 1.8x the throughput of 1 actor. An actor
    holds up to 4 batches at once (Ray Data's default for an async batch function), so
    with ``--server-batch-size 4`` (the default) one actor has 16 requests in flight and
    is bound at 16 / 0.2 s = 80 items/s, two at 160 items/s: the actors are the limit,
    not this machine's CPU. With bigger batches (``--server-batch-size 16``: 320 items/s
    per actor) a small machine runs out of CPU first and a second actor on the same
    node adds little; that figure is worth running too.

Both figures are given twice: over the whole run (wall time, start-up included: the
actors' start, the first batch), and in the steady state, from the first result stored
to the last (the run store's ``finished`` times).

Every run is checked: exactly one result per item, every score 1.0, and in (b) exactly one
server request per item.

Run::

    python benchmarks/scale.py                       # the full sizes (a few minutes)
    python benchmarks/scale.py --items 2000 --server-items 200    # a smoke run

Figures are printed as a table and written as JSON to ``benchmarks/results/scale-<time>.json``.
Needs the ``ray`` extra (``pip install 'jurist[ray]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import jurist  # noqa: E402
from jurist.engines import LocalEngine, RayEngine, RayOptions  # noqa: E402

__all__ = ["Figure", "actors_figures", "main", "overhead_figures"]


@dataclass
class Figure:
    """One timed run."""

    label: str
    engine: str
    items: int
    wall_s: float
    per_item_ms: float
    items_per_s: float
    steady_per_item_ms: float
    steady_items_per_s: float
    results: int
    scores: dict[str, int]
    extra: dict[str, Any] = field(default_factory=dict)


def make_items(n: int) -> list[dict[str, str]]:
    return [{"prompt": f"question {i}?", "response": f"answer {i}"} for i in range(n)]


def _timed_run(
    label: str,
    engine: str,
    items: list[dict[str, str]],
    judge: Any,
    folder: Path,
    ray: RayOptions | None,
    concurrency: int | None = None,
) -> Figure:
    started = time.perf_counter()
    chosen = RayEngine(ray) if ray is not None else LocalEngine()
    run = jurist.evaluate(items, judge, run_dir=folder, engine=chosen, concurrency=concurrency)
    wall = time.perf_counter() - started
    scores: dict[str, int] = {}
    for score in run.scores:
        scores[str(score)] = scores.get(str(score), 0) + 1
    n = len(items)
    steady = steady_seconds(folder)
    figure = Figure(
        label=label,
        engine=engine,
        items=n,
        wall_s=round(wall, 3),
        per_item_ms=round(wall / n * 1000, 4),
        items_per_s=round(n / wall, 1),
        steady_per_item_ms=round(steady / (n - 1) * 1000, 4),
        steady_items_per_s=round((n - 1) / steady, 1),
        results=len(run),
        scores=scores,
    )
    if figure.results != n or scores != {"1.0": n}:
        raise SystemExit(f"{label}: wrong results: {figure.results} rows, scores {scores}")
    return figure


def steady_seconds(folder: Path) -> float:
    """Seconds from the first result stored to the last (the run store's ``finished``
    times): the steady state, without start-up (Ray's actors, the first batch)."""
    db = sqlite3.connect(folder / "run.sqlite")
    try:
        first, last = db.execute("SELECT MIN(finished), MAX(finished) FROM results").fetchone()
    finally:
        db.close()
    return max(float(last) - float(first), 1e-9)


def start_ray(cpus: int | None) -> float:
    """Start a local Ray instance (the engine reuses it); the seconds it took."""
    import ray

    started = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    return time.perf_counter() - started


def overhead_figures(n: int, actors: int, batch_size: int, work: Path) -> list[Figure]:
    """(a): the local engine and the Ray engine over ``n`` zero-latency mock items."""
    items = make_items(n)
    judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=["Correct"], cycle=True))
    local = _timed_run("overhead", "local", items, judge, work / "local", None)
    options = RayOptions(actors=actors, batch_size=batch_size)
    on_ray = _timed_run("overhead", "ray", items, judge, work / "ray", options)
    on_ray.extra = {"actors": actors, "batch_size": batch_size}
    return [local, on_ray]


def actors_figures(n: int, latency: float, batch_size: int, work: Path) -> list[Figure]:
    """(b): the Ray engine with 1 and with 2 actors against a server answering after
    ``latency`` seconds."""
    from _stub_server import StubServer

    items = make_items(n)
    figures = []
    with StubServer(latency=latency) as server:
        judge = jurist.LLMJudge(
            jurist.get_model("openai:stub", base_url=server.base_url, api_key="x", max_retries=0)
        )
        for actors in (1, 2):
            server.reset()
            options = RayOptions(actors=actors, batch_size=batch_size)
            figure = _timed_run(
                f"{actors} actor{'s' if actors > 1 else ''}",
                "ray",
                items,
                judge,
                work / f"actors{actors}",
                options,
            )
            requests = len(server.arrivals())
            if requests != n:
                raise SystemExit(f"{figure.label}: {requests} server requests for {n} items")
            figure.extra = {
                "actors": actors,
                "batch_size": batch_size,
                "latency_s": latency,
                "server_requests": requests,
            }
            figures.append(figure)
    return figures


def table(figures: list[Figure], ray_start_s: float) -> str:
    lines = [
        f"{'measure':<9} {'engine':<6} {'actors':>6} {'items':>7} {'wall s':>8} "
        f"{'ms/item':>9} {'items/s':>9} {'steady ms/item':>15} {'steady items/s':>15}",
    ]
    for f in figures:
        kind = "overhead" if f.label == "overhead" else "actors"
        actors = str(f.extra.get("actors", "-"))
        lines.append(
            f"{kind:<9} {f.engine:<6} {actors:>6} {f.items:>7} {f.wall_s:>8.2f} "
            f"{f.per_item_ms:>9.4f} {f.items_per_s:>9.1f} {f.steady_per_item_ms:>15.4f} "
            f"{f.steady_items_per_s:>15.1f}"
        )
    lines.append(
        "ms/item, items/s: wall time of the whole run; steady: from the first result "
        "stored to the last (start-up left out)"
    )
    lines.append(f"Ray start-up (ray.init, a local instance; in no figure): {ray_start_s:.2f} s")
    return "\n".join(lines)


def ratios(figures: list[Figure]) -> dict[str, float]:
    by = {(f.label, f.engine): f for f in figures}
    out: dict[str, float] = {}
    if ("overhead", "local") in by and ("overhead", "ray") in by:
        ray, local = by["overhead", "ray"], by["overhead", "local"]
        out["ray_overhead_x_local"] = round(ray.per_item_ms / local.per_item_ms, 2)
        out["ray_overhead_x_local_steady"] = round(
            ray.steady_per_item_ms / local.steady_per_item_ms, 2
        )
    if ("1 actor", "ray") in by and ("2 actors", "ray") in by:
        one, two = by["1 actor", "ray"], by["2 actors", "ray"]
        out["two_actors_x_one"] = round(two.items_per_s / one.items_per_s, 2)
        out["two_actors_x_one_steady"] = round(two.steady_items_per_s / one.steady_items_per_s, 2)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000, help="items of (a)")
    parser.add_argument("--server-items", type=int, default=2_000, help="items of (b)")
    parser.add_argument("--latency", type=float, default=0.2, help="server latency of (b), s")
    parser.add_argument("--actors", type=int, default=2, help="Ray actors in (a)")
    parser.add_argument("--batch-size", type=int, default=256, help="items per Ray batch in (a)")
    parser.add_argument(
        "--server-batch-size", type=int, default=4, help="items per Ray batch in (b)"
    )
    parser.add_argument("--ray-cpus", type=int, default=None, help="num_cpus of the local Ray")
    parser.add_argument("--only", choices=("overhead", "actors"), default=None)
    parser.add_argument("--no-save", action="store_true", help="do not write the JSON file")
    args = parser.parse_args(argv)

    import ray

    ray_start = start_ray(args.ray_cpus)
    figures: list[Figure] = []
    try:
        with tempfile.TemporaryDirectory(prefix="jurist-scale-") as tmp:
            work = Path(tmp)
            if args.only in (None, "overhead"):
                figures += overhead_figures(args.items, args.actors, args.batch_size, work)
            if args.only in (None, "actors"):
                figures += actors_figures(
                    args.server_items,
                    args.latency,
                    args.server_batch_size,
                    work,
                )
    finally:
        ray.shutdown()
    found = ratios(figures)
    result = {
        "figures": [asdict(f) for f in figures],
        "ratios": found,
        "ray_start_s": round(ray_start, 3),
        "cpus": os.cpu_count(),
        "args": vars(args),
    }
    print(table(figures, ray_start))
    for name, value in found.items():
        print(f"{name}: {value}")
    if not args.no_save:
        out = HERE / "results" / f"scale-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written: {out}")
    return result


if __name__ == "__main__":
    main()
