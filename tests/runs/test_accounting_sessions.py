"""A run's attempts across sessions: every request the server received, resumes included.

Items that failed in one session are judged again when the run resumes; the stored
failure is replaced, and what it had spent (its attempts, calls, tokens) must stay in the
run's totals. Both runs go against the loopback fault server, whose request count is the
truth: once in process (fail, resume), once with the first session killed by SIGKILL while
the server holds one request (the only one no session can know it sent).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import jurist
from jurist.models import RetryModel
from jurist.runs._store import RunStore, StoredResult
from jurist.types import Usage
from tests._fault_server import FaultServer, hang, ok, status

N = 8
ITEMS = [{"prompt": f"question {i}", "response": f"answer {i}"} for i in range(N)]
BUSY = status(503, retry_after_ms=1)


def _user_message(item: dict[str, str]) -> str:
    return jurist.LLMJudge("mock:j", template="likert", output="text").messages(item)[-1].content


def _write_data(path: Path) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    return path


def _result(score: float | None, usage: Usage) -> StoredResult:
    error = None if score is not None else "api: 503"
    outcome = {"score": score, "error": error}
    return StoredResult(0, "h", {"q": 0}, score, error, outcome, usage, cost=0.0)


def test_the_store_keeps_what_a_replaced_failure_spent(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run.sqlite")
    assert store.write(_result(None, Usage(attempts=3)))
    assert store.write(_result(1.0, Usage(prompt_tokens=7, calls=1, attempts=2)))
    totals = store.totals()
    assert (totals.items, totals.scored, totals.superseded) == (1, 1, 1)
    assert (totals.usage.calls, totals.usage.attempts, totals.usage.prompt_tokens) == (1, 5, 7)
    assert [r["usage"].attempts for r in store.rows()] == [2]  # the row is its own judgment's
    store.clear()
    assert store.totals().usage.attempts == 0 and store.totals().superseded == 0
    store.write(_result(None, Usage(attempts=3)))
    store.close()
    # a store written before the superseded table existed is still read
    db = sqlite3.connect(tmp_path / "run.sqlite")
    db.execute("DROP TABLE superseded")
    db.commit()
    db.close()
    old = RunStore(tmp_path / "run.sqlite", readonly=True)
    assert old.totals().usage.attempts == 3 and old.totals().superseded == 0
    old.close()


async def test_resumed_failures_keep_their_attempts(tmp_path: Path) -> None:
    data = _write_data(tmp_path / "data.jsonl")
    with FaultServer() as server:
        for i, item in enumerate(ITEMS):
            # items 0-2 fail in session 1 (3 tries each), then answer in session 2
            failing = [BUSY] * 3 if i < 3 else []
            server.script_for(_user_message(item), *failing, ok("4"))
        model = jurist.get_model(
            "openai:x", base_url=server.url, api_key="x", timeout=10, max_retries=0
        )
        judge = jurist.LLMJudge(
            RetryModel(model, max_retries=2, backoff_base=0.001), template="likert", output="text"
        )
        try:
            run = await jurist.aevaluate(data, judge, run_dir=tmp_path / "run")
            first = run.summary()
            assert (first.failed, first.attempts) == (3, 3 * 3 + 5) == (3, server.requests)
            run = await jurist.aevaluate(data, judge, run_dir=tmp_path / "run")
        finally:
            await model.aclose()
        summary = run.summary()
    assert summary.failed == 0 and summary.sessions == 2 and summary.superseded == 3
    # before: 8 (the replaced failures' 9 requests were lost)
    assert summary.attempts == 3 * 3 + 5 + 3 == server.requests
    assert summary.calls == N
    # each stored row keeps its own judgment's usage; the totals add the replaced rows
    assert sum(r["usage"].attempts for r in run.rows()) == N


SCRIPT = """
import sys
import jurist

data, run_dir, url = sys.argv[1:4]
model = jurist.get_model("openai:x", base_url=url, api_key="x", timeout=120, max_retries=2)
judge = jurist.LLMJudge(model, template="likert", output="text")
jurist.evaluate(data, judge, run_dir=run_dir, concurrency=1)
"""


def _stored(store: Path) -> int:
    if not store.exists():
        return 0
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:  # the table is not made yet
        return 0
    finally:
        db.close()


@pytest.mark.slow
def test_killed_and_resumed_run_counts_every_request(tmp_path: Path) -> None:
    data = _write_data(tmp_path / "data.jsonl")
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    held = 5  # the item the server holds when session 1 is killed
    with FaultServer() as server:
        args = [sys.executable, str(script), str(data), str(run_dir), server.url]
        for i, item in enumerate(ITEMS):
            faults = [BUSY] * 3 if i in (1, 3) else [BUSY] if i == 2 else []
            if i == held:
                faults = [hang(120)]
            server.script_for(_user_message(item), *faults, ok("4"))
        proc = subprocess.Popen(args, env=env)
        # session 1: items 0-4 stored (1 and 3 failed after 3 tries, 2 after one retry),
        # item 5's request held by the server
        deadline = time.monotonic() + 120
        while not (_stored(run_dir / "run.sqlite") == held and server.requests == 11):
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
        subprocess.run(args, env=env, check=True, timeout=300)
        requests = server.requests
    summary = jurist.Run(run_dir).summary()
    assert summary.failed == 0 and summary.sessions == 2 and summary.superseded == 2
    # session 2 sent items 1 and 3 again, 5 again, then 6 and 7: 5 more requests
    assert requests == 11 + 5
    # the held request reached the server but no session saw it end: the only one missing
    assert summary.attempts == requests - 1
