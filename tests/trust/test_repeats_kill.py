"""A run with repeats killed with SIGKILL halfway and started again: every (item, repeat)
pair is judged exactly once across both processes (none twice, none missing), except the
calls in flight at the kill, whose answers were never stored.

The run goes in a process of its own (forked: tests/_forked.py), judging with a model whose
later repeats answer later (``repeats`` in tests/_kill_runs.py), and resumes in the test's
process; every answered call appends ``item repeat`` to a log file (the side channel), so calls
are counted across both processes; the store's ``repeats`` table says which pairs were kept.
The test stops the process (SIGSTOP) once half the pairs are stored and kills it only
when some item has part of its repeats stored, so the kill always falls inside an item.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from collections import Counter
from pathlib import Path

import pytest

import jurist
from tests._forked import fork
from tests._kill_runs import REPEATS
from tests._kill_runs import repeats as repeats_run

N = 30


def partial(pairs: list[tuple[int, int]]) -> bool:
    """Whether some item has some of its repeats stored, not all."""
    counts = Counter(i for i, _ in pairs)
    return any(n < REPEATS for n in counts.values())


def stored_pairs(store: Path) -> list[tuple[int, int]]:
    if not store.exists():
        return []
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        return [(int(i), int(r)) for i, r in db.execute("SELECT idx, repeat FROM repeats")]
    except sqlite3.OperationalError:  # the table is not made yet
        return []
    finally:
        db.close()


def logged(log: Path) -> list[tuple[int, int]]:
    if not log.exists():
        return []
    return [(int(a), int(b)) for a, b in (line.split() for line in log.read_text().splitlines())]


@pytest.mark.slow
def test_sigkill_halfway_then_resume_judges_each_item_repeat_once(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": f"ITEM-{i}-END", "response": "4"}) + "\n" for i in range(N))
    )
    run_dir, log = tmp_path / "run", tmp_path / "calls.log"
    store = run_dir / "run.sqlite"
    args = [str(data), str(run_dir), str(log)]
    everything = {(i, r) for i in range(N) for r in range(REPEATS)}

    # from item 20 on, the third and fourth repeats are never answered in the killed
    # process: it cannot end first, and it holds cut items if the test is slow to look
    proc = fork(repeats_run, *args, "20", log=tmp_path / "run.log")
    try:
        deadline = time.monotonic() + 120
        while True:  # stop the run when half is stored, and kill it while an item is cut
            assert proc.poll() is None, f"the run ended before it could be killed: {proc.output()}"
            assert time.monotonic() < deadline, "the run made no progress"
            if len(stored_pairs(store)) >= len(everything) // 2:
                os.kill(proc.pid, signal.SIGSTOP)  # nothing is written while we look
                if partial(stored_pairs(store)):
                    break
                os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.005)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL, proc.output()

    after_kill = set(stored_pairs(store))
    calls_before = logged(log)
    assert len(everything) // 2 <= len(after_kill) < len(everything)
    assert after_kill <= set(calls_before)
    assert partial(sorted(after_kill))  # the kill fell inside an item

    repeats_run(*args)  # resumed in this process, another than the killed one
    calls_after = logged(log)[len(calls_before) :]
    final = stored_pairs(store)
    assert sorted(final) == sorted(everything)  # every (item, repeat) stored, once
    assert not after_kill & set(calls_after)  # no stored pair judged again
    assert set(calls_after) == everything - after_kill  # exactly the missing ones
    assert max(Counter(calls_after).values()) == 1
    # at most the calls in flight when killed (4 items x 4 repeats) were answered but lost
    assert len(calls_before) + len(calls_after) <= len(everything) + 4 * REPEATS

    run = jurist.Run(run_dir)
    summary = run.summary()
    assert summary.status == "complete" and summary.items == N
    assert summary.repeats is not None and summary.repeats.judgments == N * REPEATS
    for record in run.records():
        i = int(record["prompt"].split("-")[1])
        expected = [0.0 if (i + r) % 3 == 0 else 1.0 for r in range(REPEATS)]
        assert record["judge_repeats"]["scores"] == expected
    # what the lost in-flight calls spent is not counted; every stored repeat is
    assert summary.calls == N * REPEATS
