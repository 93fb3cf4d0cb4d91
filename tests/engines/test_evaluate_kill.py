"""A run killed with SIGKILL halfway and started again: exactly one result per item, and the
calls that had finished are not sent again.

The run goes in a process of its own (forked: tests/_forked.py), judging with a mock model
with latency (``logged`` in tests/_kill_runs.py), and resumes in the test's process; every
answered call appends the item's id to a log file (the side channel), so calls are counted
across both processes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests._forked import fork
from tests._kill_runs import logged as logged_run

N = 200


def stored_ids(store: Path) -> list[int]:
    if not store.exists():
        return []
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        return [int(r[0]) for r in db.execute("SELECT idx FROM results")]
    except sqlite3.OperationalError:  # the table is not made yet
        return []
    finally:
        db.close()


def logged(log: Path) -> list[int]:
    return [int(x) for x in log.read_text().split()] if log.exists() else []


@pytest.mark.slow
def test_sigkill_halfway_then_resume(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": f"ITEM-{i}-END", "response": "4"}) + "\n" for i in range(N))
    )
    run_dir, log = tmp_path / "run", tmp_path / "calls.log"
    store = run_dir / "run.sqlite"
    args = [str(data), str(run_dir), str(log)]

    # the items from N - 10 on are never answered in the killed process: it cannot end
    # first, however slow the machine; it is killed while items flow if the test is quick
    proc = fork(logged_run, *args, str(N - 10), log=tmp_path / "run.log")
    try:
        deadline = time.monotonic() + 120
        while len(stored_ids(store)) < N // 2:
            assert proc.poll() is None, f"the run ended before it could be killed: {proc.output()}"
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL, proc.output()

    after_kill = set(stored_ids(store))
    calls_before = logged(log)
    assert N // 2 <= len(after_kill) <= N - 10
    assert after_kill <= set(calls_before)

    logged_run(*args)  # resumed in this process, another than the killed one
    calls_after = logged(log)[len(calls_before) :]
    final = stored_ids(store)
    assert sorted(final) == list(range(N))  # exactly one result per item
    assert not after_kill & set(calls_after)  # finished calls were not sent again
    assert set(calls_after) == set(range(N)) - after_kill
    # at most the calls in flight when killed (4 workers) were answered but lost
    assert len(calls_before) + len(calls_after) <= N + 4
    db = sqlite3.connect(store)
    (status,) = db.execute("SELECT value FROM meta WHERE key = 'status'").fetchone()
    db.close()
    assert json.loads(status) == "complete"
    assert re.fullmatch(
        r"[0-9a-f]{32}", json.loads((run_dir / "manifest.json").read_text())["dataset"]["hash"]
    )
