"""SIGKILL at every step of the batch-API protocol, then resume: exactly one result per
item and no request submitted twice, counted on the server (issue 12, item 2). On a
server that cannot list batches, a kill between create and record stops every rerun
with both ways on named, and each way on works: adopting the batch by id (checked, and
nothing sent twice) or creating it again (saying what that may cost twice) (issue 19)."""

from __future__ import annotations

import asyncio
import logging
import re
import signal
import sqlite3
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

import jurist
from jurist.engines import BatchAPIEngine, BatchAPIOptions
from jurist.errors import ConfigError, JuristRuntimeError
from jurist.models._openai_batch import BatchClient, request_line
from tests._batch_kill_script import OPTIONS, judge
from tests._batch_kill_script import run as run_batch
from tests._batch_server import BatchServer
from tests._forked import Forked, fork

N = 12

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")


class GatedServer(BatchServer):
    """A batch server that can hold the answer to an upload or a create (after doing
    it) until the test lets it go: the client is killed while it waits."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hold: str | None = None
        self.held = threading.Event()
        self.release = threading.Event()

    async def _gate(self, kind: str, response: web.Response) -> web.Response:
        if self.hold == kind:
            self.held.set()
            while not self.release.is_set():
                await asyncio.sleep(0.005)
        return response

    async def _upload(self, request: web.Request) -> web.Response:
        return await self._gate("upload", await super()._upload(request))

    async def _create(self, request: web.Request) -> web.Response:
        return await self._gate("create", await super()._create(request))


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    rows = [{"prompt": f"q{i}", "response": f"a{i}"} for i in range(N)]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


@pytest.fixture()
def server() -> Iterator[GatedServer]:
    with GatedServer(delay=0.25) as s:
        yield s


def wait_for(what: str, check: Callable[[], bool], proc: Forked) -> None:
    deadline = time.monotonic() + 60
    while not check():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {proc.output()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"no {what} within 60 s")
        time.sleep(0.005)


def start(server: BatchServer, run_dir: Path, data: Path, retries: int = 0) -> Forked:
    """The run in a process of its own (forked: an interpreter start saved), to be killed."""
    log = run_dir.parent / f"{run_dir.name}.log"
    return fork(run_batch, server.base_url, str(run_dir), str(data), str(retries), log=log)


def kill(proc: Forked) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.output()


def chunk_states(run_dir: Path) -> list[str]:
    try:
        db = sqlite3.connect(f"file:{run_dir / 'run.sqlite'}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return []
    try:
        return [r[0] for r in db.execute("SELECT state FROM batch_chunks")]
    except sqlite3.Error:
        return []
    finally:
        db.close()


def resume_and_check(
    server: GatedServer,
    run_dir: Path,
    data: Path,
    options: BatchAPIOptions = OPTIONS,
    *,
    sent: int = 1,
) -> jurist.Run:
    """Resume; every item scored once, each request submitted ``sent`` times."""
    server.release.set()
    run = jurist.evaluate(
        data, judge(server.base_url), run_dir=run_dir, engine=BatchAPIEngine(options)
    )
    summary = run.summary()
    assert summary.status == "complete"
    assert summary.items == N and summary.failed == 0
    assert [r["idx"] for r in run.rows()] == list(range(N))  # one result per item
    assert len(server.submissions) == N
    assert set(server.submissions.values()) == {sent}  # 1: no request submitted twice
    assert server.creations == sent
    return run


def recoveries(run_dir: Path) -> list[tuple[str, str, int]]:
    """(action, batch id, requests) of the batches given by hand, from the run store."""
    db = sqlite3.connect(f"file:{run_dir / 'run.sqlite'}?mode=ro", uri=True, timeout=5)
    try:
        rows = db.execute("SELECT action, batch_id, requests FROM batch_recoveries")
        return [(str(a), str(b), int(n)) for a, b, n in rows]
    finally:
        db.close()


def test_sigkill_during_upload(server: GatedServer, tmp_path: Path, data: Path) -> None:
    server.hold = "upload"  # the server stores the file, the client never hears of it
    proc = start(server, tmp_path / "run", data)
    wait_for("an upload", server.held.is_set, proc)
    kill(proc)
    assert chunk_states(tmp_path / "run") == ["intent"]
    resume_and_check(server, tmp_path / "run", data)
    assert server.uploads == 2  # the orphan file and the one that made the batch
    assert sorted(chunk_states(tmp_path / "run")) == ["abandoned", "done"]


def test_sigkill_between_create_and_its_record(
    server: GatedServer, tmp_path: Path, data: Path
) -> None:
    server.hold = "create"  # the batch is made, the client dies before recording its id
    proc = start(server, tmp_path / "run", data)
    wait_for("a batch", server.held.is_set, proc)
    kill(proc)
    assert chunk_states(tmp_path / "run") == ["uploaded"]
    resume_and_check(server, tmp_path / "run", data)
    assert server.uploads == 1 and server.lists >= 1  # found again with GET /batches


def test_sigkill_after_submission(server: GatedServer, tmp_path: Path, data: Path) -> None:
    proc = start(server, tmp_path / "run", data)
    wait_for("a recorded batch", lambda: chunk_states(tmp_path / "run") == ["created"], proc)
    kill(proc)
    resume_and_check(server, tmp_path / "run", data)
    assert server.uploads == 1 and server.lists == 0


def test_sigkill_during_polling(server: GatedServer, tmp_path: Path, data: Path) -> None:
    proc = start(server, tmp_path / "run", data)
    wait_for("polls", lambda: server.polls >= 3, proc)
    kill(proc)
    polls = server.polls
    resume_and_check(server, tmp_path / "run", data)
    assert server.uploads == 1 and server.polls > polls


def test_sigkill_during_a_follow_up_batch(tmp_path: Path, data: Path) -> None:
    """Even items answer unreadably the first time: their re-asks make a second batch,
    during whose polling the process is killed. Resumed, each item asks exactly what it
    asked before (even items 2 requests, odd ones 1), nothing is submitted twice, and the
    recorded attempts are the requests each item cost (issue 20)."""
    asked: set[int] = set()

    def answer(body: dict[str, Any]) -> str:
        text = " ".join(str(m["content"]) for m in body["messages"])
        n = int(re.findall(r"\bq(\d+)\b", text)[0])
        if n % 2 == 0 and n not in asked:
            asked.add(n)
            return "let me think about it"
        return "Correct"

    run_dir = tmp_path / "run"
    with GatedServer(delay=0.25, answer=answer) as server:
        proc = start(server, run_dir, data, retries=1)
        wait_for("the follow-up batch", lambda: chunk_states(run_dir) == ["done", "created"], proc)
        wait_for("its polls", lambda: server.polls >= 6, proc)
        kill(proc)
        run = jurist.evaluate(
            data, judge(server.base_url), run_dir=run_dir, engine=BatchAPIEngine(OPTIONS), retries=1
        )
        rows = list(run.records())
        assert run.summary().status == "complete" and all(r["judge_score"] == 1.0 for r in rows)
        assert server.creations == 2 and set(server.submissions.values()) == {1}
        per_item = Counter(int(c.split("-")[0]) for c in server.submissions)
        assert [per_item[i] for i in range(N)] == [2 if i % 2 == 0 else 1 for i in range(N)]
        assert [r["judge_attempts"] for r in rows] == [2 if i % 2 == 0 else 1 for i in range(N)]


def test_resume_of_a_finished_run_sends_nothing(
    server: GatedServer, tmp_path: Path, data: Path
) -> None:
    jurist.evaluate(
        data, judge(server.base_url), run_dir=tmp_path / "run", engine=BatchAPIEngine(OPTIONS)
    )
    before = (server.uploads, server.creations, server.polls, server.lists, server.downloads)
    resume_and_check(server, tmp_path / "run", data)
    assert (server.uploads, server.creations, server.polls, server.lists, server.downloads) == (
        before
    )


# -- a server without GET /v1/batches (issue 19) --------------------------------------


@pytest.fixture()
def unlisted() -> Iterator[GatedServer]:
    with GatedServer(delay=0.25, list_batches=False) as s:
        yield s


def kill_between_create_and_record(server: GatedServer, run_dir: Path, data: Path) -> str:
    """The batch is made, the process dies before recording its id; the batch's id."""
    server.hold = "create"
    proc = start(server, run_dir, data)
    wait_for("a batch", server.held.is_set, proc)
    kill(proc)
    server.release.set()
    assert chunk_states(run_dir) == ["uploaded"]
    [batch_id] = server.batches
    return batch_id


def test_unlisted_server_stops_every_rerun_naming_both_ways_on(
    unlisted: GatedServer, tmp_path: Path, data: Path
) -> None:
    run_dir = tmp_path / "run"
    kill_between_create_and_record(unlisted, run_dir, data)
    for rerun in (1, 2):
        with pytest.raises(JuristRuntimeError) as stop:
            jurist.evaluate(
                data, judge(unlisted.base_url), run_dir=run_dir, engine=BatchAPIEngine(OPTIONS)
            )
        said = " ".join(str(stop.value).split())
        assert "GET /batches answered HTTP 405" in said
        assert "--batch-adopt BATCH_ID" in said and "--batch-resubmit" in said
        assert f"these {N} requests (about" in said and "billed twice" in said
        assert unlisted.refused_lists == rerun
    # nothing was sent again: one upload, one batch
    assert (unlisted.uploads, unlisted.creations) == (1, 1)
    assert chunk_states(run_dir) == ["uploaded"]


def test_adopting_the_batch_by_id_sends_nothing_twice(
    unlisted: GatedServer, tmp_path: Path, data: Path
) -> None:
    run_dir = tmp_path / "run"
    batch_id = kill_between_create_and_record(unlisted, run_dir, data)
    adopting = OPTIONS.model_copy(update={"adopt": (batch_id,)})
    resume_and_check(unlisted, run_dir, data, adopting)
    assert unlisted.uploads == 1
    assert recoveries(run_dir) == [("adopted", batch_id, N)]  # in the journal
    # a later resume, with or without the flag, sees the adoption and sends nothing
    before = (unlisted.uploads, unlisted.creations, unlisted.polls, unlisted.refused_lists)
    for options in (OPTIONS, adopting):
        resume_and_check(unlisted, run_dir, data, options)
    assert (unlisted.uploads, unlisted.creations, unlisted.polls, unlisted.refused_lists) == (
        before
    )


def another_batch(server: BatchServer, lines: int, run: str) -> str:
    """A batch of someone else's file of ``lines`` requests; its id."""

    async def make() -> str:
        client = BatchClient(server.base_url, headers={"Authorization": "Bearer k"})
        try:
            body = {"model": "judge", "messages": [{"role": "user", "content": "hi"}]}
            data = b"".join(request_line(f"x{i}", body) for i in range(lines))
            uploaded = await client.upload(data, filename="other.jsonl")
            batch = await client.create(uploaded.id, metadata={"jurist_run": run})
            return batch.id
        finally:
            await client.aclose()

    return asyncio.run(make())


def test_adopting_a_batch_that_does_not_match_is_refused_naming_the_difference(
    unlisted: GatedServer, tmp_path: Path, data: Path
) -> None:
    run_dir = tmp_path / "run"
    kill_between_create_and_record(unlisted, run_dir, data)
    other = another_batch(unlisted, 3, run="someone-else")
    creations = unlisted.creations
    wrong = OPTIONS.model_copy(update={"adopt": (other,)})
    with pytest.raises(ConfigError) as refused:
        jurist.evaluate(
            data, judge(unlisted.base_url), run_dir=run_dir, engine=BatchAPIEngine(wrong)
        )
    said = " ".join(str(refused.value).split())
    assert f"batch {other} is not the batch of any request file" in said
    assert "its input file is file-" in said and f"it holds 3 requests, not {N}" in said
    assert "its metadata jurist_run is 'someone-else'" in said
    with pytest.raises(ConfigError, match="knows no such batch"):
        jurist.evaluate(
            data,
            judge(unlisted.base_url),
            run_dir=run_dir,
            engine=BatchAPIEngine(OPTIONS.model_copy(update={"adopt": ("batch-nope",)})),
        )
    assert unlisted.creations == creations and chunk_states(run_dir) == ["uploaded"]
    assert recoveries(run_dir) == []


def test_resubmitting_says_what_it_may_cost_twice(
    unlisted: GatedServer, tmp_path: Path, data: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run_dir = tmp_path / "run"
    kill_between_create_and_record(unlisted, run_dir, data)
    resubmitting = OPTIONS.model_copy(update={"resubmit": True})
    with caplog.at_level(logging.WARNING, logger="jurist.engines"):
        resume_and_check(unlisted, run_dir, data, resubmitting, sent=2)  # as it warned
    said = " ".join(caplog.text.split())
    assert "created again (--batch-resubmit; GET /batches answered HTTP 405" in said
    assert f"these {N} requests (about" in said and "billed twice" in said
    [(action, batch_id, requests)] = recoveries(run_dir)
    assert (action, requests) == ("resubmitted", N) and batch_id in unlisted.batches
    # a later resume sees the new batch: nothing is created a third time
    resume_and_check(unlisted, run_dir, data, resubmitting, sent=2)
    assert unlisted.uploads == 1
