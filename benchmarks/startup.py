"""Start-up of the ``jurist`` command: CPU seconds per invocation, against typer and rich.

A command line a user types many times a day must answer at once. Each command below runs
in a fresh interpreter, ``--runs`` times (default 5), the commands alternating in one run
(round 1 runs each command once, then round 2...), so a machine whose load moves during
the run weighs on every command alike. The figure per run is the child's CPU seconds
(user + system, from ``os.wait4``'s resource usage), not wall time: CPU is what the
command itself costs, wall time is also what the other processes on the machine cost.

The reference is ``python -c 'import typer, rich.console'``: the two libraries every
``jurist`` command needs to parse its flags and print. Target: ``jurist --version`` and
``jurist judge --help`` each within 1.5x the reference's median.

    python benchmarks/startup.py                 # 5 alternating runs of each command
    python benchmarks/startup.py --runs 9 --json # more runs; the figures as JSON too

The ``jurist`` commands run as ``python -m jurist`` with this checkout's ``src`` (or
``--src``) first on ``PYTHONPATH``, with bytecode caching on, as an installed package
loads (one unmeasured run of each command first writes the caches); the exit status is 1
when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
REFERENCE = "import typer, rich.console"
TARGET = 1.5
COMMANDS: dict[str, list[str]] = {
    "python -c 'import typer, rich.console'": [sys.executable, "-c", REFERENCE],
    "jurist --version": [sys.executable, "-m", "jurist", "--version"],
    "jurist --help": [sys.executable, "-m", "jurist", "--help"],
    "jurist judge --help": [sys.executable, "-m", "jurist", "judge", "--help"],
}
TARGETED = ("jurist --version", "jurist judge --help")


def cpu_seconds(argv: list[str], env: dict[str, str]) -> float:
    """Run ``argv`` to its end; the CPU seconds (user + system) the child used."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {err[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (default 5)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument(
        "--src", type=Path, default=SRC, help="the jurist sources to measure (default: ./src)"
    )
    args = parser.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(args.src), os.environ.get("PYTHONPATH")])),
    }
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from bytecode
    for argv in COMMANDS.values():  # once each, unmeasured: the bytecode caches are written
        cpu_seconds(argv, env)
    runs: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, argv in COMMANDS.items():
            runs[name].append(cpu_seconds(argv, env))
    medians = {name: statistics.median(values) for name, values in runs.items()}
    reference = medians[next(iter(COMMANDS))]
    load = os.getloadavg()
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; medians of {args.runs} alternating runs"
    )
    print(f"{'command':<42} {'CPU s (median)':>15} {'x reference':>12}")
    missed = []
    for name, median in medians.items():
        ratio = median / reference
        mark = ""
        if name in TARGETED:
            ok = ratio <= TARGET
            mark = f"  target <= {TARGET}x: {'met' if ok else 'MISSED'}"
            if not ok:
                missed.append(name)
        print(f"{name:<42} {median:>15.3f} {ratio:>11.2f}x{mark}")
    if args.json:
        print(json.dumps({"runs": runs, "medians": medians, "load": load}, indent=2))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
