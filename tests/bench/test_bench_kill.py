"""A bench killed with SIGKILL half-way and started again on its folder: every finished
judgment is kept and none is asked again (each setup's runs resume in the engine)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests._forked import fork
from tests.bench._bench_kill import logged_bench

N = 40  # pairs: 80 judgments per setup


def _stored(store: Path, setup: str = "second") -> set[str]:
    """The judgments ``store`` holds, as the log names them (item ``k`` of a run is pair
    ``k // 2`` in order ``ab`` when ``k`` is even, ``ba`` when odd)."""
    if not store.exists():
        return set()
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        idx = [int(r[0]) for r in db.execute("SELECT idx FROM results")]
    except sqlite3.OperationalError:
        return set()
    finally:
        db.close()
    return {f"{setup} {k // 2}:{'ab' if k % 2 == 0 else 'ba'}" for k in idx}


def _log(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.slow
def test_a_killed_bench_resumes_without_judging_twice(tmp_path: Path) -> None:
    data = tmp_path / "pairs.jsonl"
    rows = [
        {
            "id": str(i),
            "prompt": f"PAIR-{i}-END",
            "response_a": "first",
            "response_b": "second",
            "label": "A",
        }
        for i in range(N)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, log = tmp_path / "bench", tmp_path / "calls.log"
    second = out / "runs" / "second" / "pairs" / "run.sqlite"
    proc = fork(logged_bench, str(data), str(out), str(log), str(N // 2), log=tmp_path / "b.log")
    try:
        deadline = time.monotonic() + 120
        while len(_stored(second)) < N // 2:  # the first setup done, the second half-way
            assert proc.poll() is None, f"the bench ended before it was killed: {proc.output()}"
            assert time.monotonic() < deadline, "the bench made no progress"
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL, proc.output()
    before = _log(log)
    kept = _stored(second)
    assert len([c for c in before if c.startswith("first ")]) == 2 * N
    assert kept <= set(before) and len(kept) < 2 * N

    logged_bench(str(data), str(out), str(log))  # resumed in this process
    after = _log(log)[len(before) :]
    assert not kept & set(after)  # nothing stored was asked again
    assert not any(c.startswith("first ") for c in after)
    # at most the calls in flight when it was killed (4 at a time) were answered, not stored
    assert len(set(before) & set(after)) <= 4
    assert sorted(set(before) | set(after)) == sorted(
        f"{s} {i}:{o}" for s in ("first", "second") for i in range(N) for o in ("ab", "ba")
    )
    figures = json.loads((out / "figures.json").read_text())
    assert [t["n"] for t in figures["tables"]] == [N, N]
    assert len(_stored(second)) == 2 * N
