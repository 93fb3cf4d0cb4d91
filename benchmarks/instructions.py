"""Client instructions per judgment: jurist against bare aiohttp, counted by callgrind.

Time on a shared machine moves with its load (``throughput.py``'s CPU ratio moves by about
± 0.07 from run to run on a busy 2-core machine); the instructions a process executes do
not. This counts them: ``valgrind --tool=callgrind`` runs a client process that judges
``--small`` items and then one that judges ``--large`` items at ``--concurrency`` in flight
against the stub server (``_stub_server.py``, in a process of its own, not counted), and
the difference divided by ``large - small`` is the client's instructions per judgment,
start-up and imports cancelled out. The same is done for the transport floor: bare aiohttp
posting the same request bodies, built beforehand and read from a file (as
``throughput.py``'s floor builds them before its clock starts), with no verdict read.

The target is the one ``throughput.py`` holds in time: jurist within 1.25x of the floor.
Instructions are user-space only: the kernel's share of each request (sockets, epoll),
which time includes on both sides alike, is not counted, so this ratio is the stricter one.

Run::

    apt-get install valgrind                  # once (Debian's package)
    python benchmarks/instructions.py         # about 2 minutes on the 2-core machine
    python benchmarks/instructions.py --small 300 --large 900 --concurrency 32

It prints the counts and the ratio, writes ``benchmarks/results/instructions-<time>.json``
and exits 1 when the ratio is past the target (2 when valgrind is missing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TARGET_RATIO = 1.25


# -- the client, run under callgrind -----------------------------------------------------


async def _jurist_client(base_url: str, n: int, concurrency: int) -> None:
    from throughput import TEMPLATE, make_workload

    import jurist

    prompts, responses = make_workload(n)
    model = jurist.get_model("openai:stub", base_url=base_url, api_key="x")
    judge = jurist.LLMJudge(model, template=TEMPLATE, output="text")
    try:
        out = await judge.judge_responses(prompts, responses, retries=0, concurrency=concurrency)
    finally:
        await model.aclose()
    if out["scores"] != [1.0] * n:
        raise SystemExit(f"jurist client: not every score is 1.0: {out['scores'][:5]}...")


async def _floor_client(base_url: str, n: int, concurrency: int, bodies_file: Path) -> None:
    from throughput import aiohttp_floor

    bodies = bodies_file.read_bytes().split(b"\n")[:n]
    _, _, texts = await aiohttp_floor(base_url, bodies, concurrency)
    if texts != ["Correct"] * n:
        raise SystemExit("floor client: not every answer is the verdict")


def _write_bodies(path: Path, n: int) -> None:
    """The floor's request bodies, as ``throughput.py``'s floor builds them."""
    from throughput import floor_bodies, make_workload

    path.write_bytes(b"\n".join(floor_bodies(*make_workload(n))))


# -- the driver ----------------------------------------------------------------------------


def _instructions(mode: str, n: int, port: int, concurrency: int, bodies: Path) -> int:
    """The instructions callgrind counts in one client process judging ``n`` items."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            str(Path(__file__).resolve()),
            "--client",
            mode,
            "--n",
            str(n),
            "--port",
            str(port),
            "--concurrency",
            str(concurrency),
            "--bodies",
            str(bodies),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{mode} client failed ({done.returncode}):\n{done.stderr[-2000:]}")
        for line in out.read_text().splitlines():
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise SystemExit(f"{mode} client: callgrind wrote no totals")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--small", type=int, default=300, help="items of the first run")
    parser.add_argument("--large", type=int, default=900, help="items of the second run")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05, help="the stub's seconds")
    parser.add_argument("--out", type=Path, default=None, help="the JSON results file")
    parser.add_argument("--client", choices=["jurist", "floor"], help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--bodies", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.client is not None:  # one client process, under callgrind
        base_url = f"http://127.0.0.1:{args.port}/v1"
        if args.client == "jurist":
            asyncio.run(_jurist_client(base_url, args.n, args.concurrency))
        else:
            asyncio.run(_floor_client(base_url, args.n, args.concurrency, args.bodies))
        return 0

    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    if not 0 < args.small < args.large:
        parser.error("--small must be above 0 and below --large")
    from _stub_server import StubServer

    per: dict[str, float] = {}
    totals: dict[str, dict[int, int]] = {}
    with tempfile.TemporaryDirectory() as tmp, StubServer(latency=args.latency) as server:
        bodies = Path(tmp) / "bodies.txt"
        _write_bodies(bodies, args.large)
        for mode in ("floor", "jurist"):
            totals[mode] = {}
            for n in (args.small, args.large):
                print(f"{mode}: {n} items under callgrind ...", flush=True)
                totals[mode][n] = _instructions(mode, n, server.port, args.concurrency, bodies)
            per[mode] = (totals[mode][args.large] - totals[mode][args.small]) / (
                args.large - args.small
            )
    ratio = per["jurist"] / per["floor"]
    passed = ratio <= TARGET_RATIO
    print(f"floor  (bare aiohttp): {per['floor']:>10,.0f} instructions per request")
    print(f"jurist (LLMJudge):     {per['jurist']:>10,.0f} instructions per judgment")
    print(
        f"jurist / floor: {ratio:.3f}x (target <= {TARGET_RATIO}x): "
        + ("PASS" if passed else "FAIL")
    )
    out = args.out or HERE / "results" / f"instructions-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "small": args.small,
                "large": args.large,
                "concurrency": args.concurrency,
                "latency_s": args.latency,
                "python": sys.version.split()[0],
                "totals": {m: {str(k): v for k, v in t.items()} for m, t in totals.items()},
                "per_judgment": per,
                "ratio": ratio,
                "target": TARGET_RATIO,
                "passed": passed,
            },
            indent=2,
        )
    )
    print(f"results: {out}")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
