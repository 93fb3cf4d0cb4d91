"""SIGKILL at every step of the batch-API protocol, then resume: exactly one result per
item and no request submitted twice, counted on the server (issue 12, item 2)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

import jurist
from tests._batch_kill_script import OPTIONS, judge
from tests._batch_server import BatchServer

N = 12
ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve().parent / "_batch_kill_script.py"

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


def wait_for(what: str, check: Callable[[], bool], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not check():
        if proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            raise AssertionError(f"the run ended before {what}: {out}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"no {what} within 60 s")
        time.sleep(0.005)


def start(server: BatchServer, run_dir: Path, data: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), server.base_url, str(run_dir), str(data)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


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


def resume_and_check(server: BatchServer, run_dir: Path, data: Path) -> jurist.Run:
    server.release.set()
    run = jurist.evaluate(data, judge(server.base_url), run_dir=run_dir, batch_api=OPTIONS)
    summary = run.summary()
    assert summary.status == "complete"
    assert summary.items == N and summary.failed == 0
    assert [r["idx"] for r in run.rows()] == list(range(N))  # one result per item
    assert len(server.submissions) == N
    assert set(server.submissions.values()) == {1}  # no request submitted twice
    assert server.creations == 1
    return run


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


def test_resume_of_a_finished_run_sends_nothing(
    server: GatedServer, tmp_path: Path, data: Path
) -> None:
    jurist.evaluate(data, judge(server.base_url), run_dir=tmp_path / "run", batch_api=OPTIONS)
    before = (server.uploads, server.creations, server.polls, server.lists, server.downloads)
    resume_and_check(server, tmp_path / "run", data)
    assert (server.uploads, server.creations, server.polls, server.lists, server.downloads) == (
        before
    )
