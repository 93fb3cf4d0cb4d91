"""Sync twins share one background event loop: one connection pool across calls, inside
and outside a running loop, with the caller's context, cancellation and a clean exit."""

from __future__ import annotations

import asyncio
import contextvars
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import jurist
from jurist._sync import run_sync, shared_loop
from tests._fault_server import FaultServer, ok

ROOT = Path(__file__).resolve().parents[1]


class PeerServer(FaultServer):
    """The fault server, keeping the client port of every request (one per connection)."""

    def __init__(self) -> None:
        super().__init__([ok("Correct")] * 3)
        self.peers: list[Any] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        self.peers.append(request.transport.get_extra_info("peername"))
        return await super()._handle(request)


async def _loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_sync_calls_share_one_background_loop() -> None:
    first, second = run_sync(_loop()), run_sync(_loop())
    assert first is second is shared_loop()
    assert first.is_running()
    assert run_sync(asyncio.to_thread(threading.current_thread)) is not threading.current_thread()


def test_judge_sync_reuses_one_connection_pool_inside_and_outside_a_running_loop() -> None:
    with PeerServer() as server:
        model = jurist.get_model("openai:x", base_url=server.url, api_key="k", max_retries=0)
        judge = jurist.LLMJudge(model, template="true_false")
        items = [{"prompt": "2+2?", "response": "4"}]
        before = judge.judge_sync(items)
        after = judge.judge_sync(items)

        async def inside() -> Any:
            return judge.judge_sync(items)  # a sync twin called from a running loop

        within = asyncio.run(inside())
        assert [r.error for r in (*before, *after, *within)] == [None, None, None]
        # three calls, three requests, one connection: the pool outlives each call
        assert server.requests == 3
        assert len(set(server.peers)) == 1, server.peers
        run_sync(model.aclose())


def test_a_sync_call_from_the_shared_loop_itself_runs_on_a_loop_of_its_own() -> None:
    async def nested() -> tuple[bool, int]:
        outer = asyncio.get_running_loop()
        inner = run_sync(_loop())  # would wait for itself on the shared loop
        return inner is outer, run_sync(asyncio.sleep(0, result=7))

    assert run_sync(nested()) == (False, 7)


def test_the_callers_context_variables_travel_with_the_call() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    async def read() -> str:
        return var.get()

    token = var.set("caller's value")
    try:
        assert run_sync(read()) == "caller's value"
    finally:
        var.reset(token)
    assert run_sync(read()) == "unset"


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="SIGINT")
def test_an_interrupted_wait_cancels_the_coroutine_and_waits_for_it() -> None:
    """Ctrl-C while a sync twin waits: the coroutine is cancelled on the shared loop and
    its cleanup has run by the time the caller sees KeyboardInterrupt."""
    started, events = threading.Event(), []

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            events.append("cancelled")
            await asyncio.sleep(0.01)  # cleanup that itself awaits
            events.append("cleaned up")
            raise

    def interrupt() -> None:
        started.wait()
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run_sync(forever())
    assert events == ["cancelled", "cleaned up"]
    assert run_sync(_loop()) is shared_loop()  # the loop serves the next call


def test_the_process_exits_cleanly_with_open_pools() -> None:
    """A process that used an HTTP judge through sync twins closes the pool at exit:
    no unclosed-session or pending-task warnings."""
    code = (
        "import jurist\n"
        "from tests._fault_server import FaultServer, ok\n"
        "server = FaultServer([ok('Correct')] * 2).__enter__()\n"
        "model = jurist.get_model('openai:x', base_url=server.url, api_key='k')\n"
        "judge = jurist.LLMJudge(model, template='true_false')\n"
        "print([r.error for r in judge.judge_sync([{'prompt': 'q', 'response': 'a'}] * 2)])\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[None, None]"
    for warning in ("Unclosed", "unclosed", "was destroyed but it is pending", "Traceback"):
        assert warning not in done.stderr, done.stderr
