"""A judge's run decisions are recorded in the run store and restored on resume.

Two decisions change the requests a judge sends once they are taken: ``output="auto"``
turns JSON off for a model that answered requests for JSON in text three times, and the
openai backend steps its JSON form down when a server refuses ``json_schema``. A run is
killed (SIGKILL, in a process of its own) after such a decision, then resumed (in the test's
process, from the store alone): the resumed session
must start from it (no request in the old form, no refused probe), build the very prompts
the killed session built, and record as many attempts as the server received.

The server is a loopback OpenAI-compatible stand-in in this process, so it counts the
requests of both sessions.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from aiohttp import web

import jurist
from jurist.judges._state import JudgeState
from tests._forked import fork
from tests._kill_runs import batch as batch_run
from tests._kill_runs import openai as openai_run
from tests._loopback import Loopback

N = 40

Mode = Literal["text", "refuse_schema"]


class JudgeServer(Loopback):
    """``text``: ignores ``response_format`` and answers ``Correct`` (a server that does
    not constrain output); ``refuse_schema``: answers a ``json_schema`` request with
    llama-cpp-python's HTTP 500 and any other with a JSON verdict. The requests for items
    from ``hold_from`` on are kept (in ``bodies``, counted in ``held``) and never answered
    (until the server stops); setting ``hold_from`` to ``None`` answers the ones to come."""

    def __init__(self, mode: Mode, latency: float = 0.03, hold_from: int | None = None) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.mode = mode
        self.latency = latency
        self.hold_from = hold_from
        self.held = 0
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def sent(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.bodies)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            self.bodies.append(body)
        found = re.search(r"ITEM-(\d+)-END", _prompt(body))
        if self.hold_from is not None and found and int(found.group(1)) >= self.hold_from:
            self.held += 1  # on the server's one loop thread
            await self.stopping.wait()
        await asyncio.sleep(self.latency)
        form = (body.get("response_format") or {}).get("type")
        if self.mode == "refuse_schema" and form == "json_schema":
            detail = "1 validation error: ('body', 'response_format', 'type') input: 'json_schema'"
            return web.json_response({"error": {"message": detail}}, status=500)
        text = "Correct" if self.mode == "text" else '{"verdict": "Correct"}'
        return web.json_response(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
            }
        )


def _query(store: Path, sql: str) -> list[tuple[Any, ...]]:
    if not store.exists():
        return []
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        return list(db.execute(sql))
    except sqlite3.OperationalError:  # the tables are not made yet
        return []
    finally:
        db.close()


def _decisions(store: Path) -> Any:
    rows = _query(store, "SELECT value FROM meta WHERE key = 'decisions'")
    return json.loads(rows[0][0]) if rows else None


def _attempts(store: Path) -> int:
    kept = _query(store, "SELECT TOTAL(attempts) FROM results")
    replaced = _query(store, "SELECT TOTAL(attempts) FROM superseded")
    return int(kept[0][0] + (replaced[0][0] if replaced else 0))


def _stored(store: Path) -> int:
    rows = _query(store, "SELECT COUNT(*) FROM results")
    return int(rows[0][0]) if rows else 0


def _kill_after_decision(
    tmp_path: Path, server: JudgeServer, decided: Callable[[dict[str, Any]], bool]
) -> tuple[list[str], Path]:
    """Start the run in a process of its own, SIGKILL it once the server received a request sent
    after the decision (``decided(body)``) and the run is at a standstill: every item before
    ``server.hold_from`` stored, and the two calls in flight (``concurrency=2``) held by the
    server, so the run cannot end first and no request of the killed process reaches the
    server afterwards. The run's arguments (``openai`` in tests/_kill_runs.py: the test
    resumes it in its own process, after setting ``server.hold_from`` to ``None``), and the
    store."""
    assert server.hold_from is not None
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": f"ITEM-{i}-END", "response": "4"}) + "\n" for i in range(N))
    )
    run_dir = tmp_path / "run"
    store = run_dir / "run.sqlite"
    args = [str(data), str(run_dir), server.url]
    proc = fork(openai_run, *args, log=tmp_path / "run.log")
    deadline = time.monotonic() + 120
    try:
        while not (
            any(decided(b) for b in server.sent())
            and _stored(store) == server.hold_from
            and server.held == 2
        ):
            assert proc.poll() is None, f"the run ended before it could be killed: {proc.output()}"
            assert time.monotonic() < deadline, "the run took no decision"
            time.sleep(0.02)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL, proc.output()
    assert _stored(store) == server.hold_from < N
    server.hold_from = None  # the resumed run is answered
    return args, store


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


@pytest.mark.slow
def test_text_fallback_is_restored_after_a_kill(tmp_path: Path) -> None:
    with JudgeServer("text", hold_from=N - 10) as server:
        args, store = _kill_after_decision(
            tmp_path, server, lambda body: "response_format" not in body
        )
        first = server.sent()
        recorded = _attempts(store)
        (entry,) = _decisions(store)  # recorded when taken, before the kill
        assert entry["decisions"]["output"] == {"json_off": True}
        # the server took json_schema (and ignored it): recorded, so it is not probed again
        assert entry["decisions"]["json_form"]["answered"] == "json_schema"
        openai_run(*args)  # resumed in this process, another than the killed one
        resumed = server.sent()[len(first) :]

    # the first session asked for JSON until the third text reply, then for text
    assert "response_format" in first[0]
    as_text = [b for b in first if "response_format" not in b]
    assert as_text, "the first session never asked for text"
    system = as_text[-1]["messages"][0]["content"]
    assert system != first[0]["messages"][0]["content"]
    # the resumed session asks for text from its first request: no JSON probe again
    assert resumed, "the resumed session sent nothing"
    assert all("response_format" not in b for b in resumed)
    assert {b["messages"][0]["content"] for b in resumed} == {system}
    # an item the killed session had sent (not stored) gets the very same prompt again
    earlier = {_prompt(b): b["messages"] for b in as_text}
    again = [b for b in resumed if _prompt(b) in earlier]
    assert all(b["messages"] == earlier[_prompt(b)] for b in again)
    # the attempts the resumed session recorded are the requests the server received
    assert _attempts(store) - recorded == len(resumed)
    run = jurist.Run(store.parent)
    summary = run.summary()
    assert summary.items == summary.scored == N
    assert summary.sessions == 2
    assert summary.decisions == ["openai:tiny: JSON output off"]
    resumed_prompts = {_prompt(b) for b in resumed}
    for record in run.records():
        if record["prompt"] in resumed_prompts:
            assert record["judge_output_format"] == "text"


@pytest.mark.slow
def test_json_form_is_restored_after_a_kill(tmp_path: Path) -> None:
    with JudgeServer("refuse_schema", hold_from=N - 10) as server:
        args, store = _kill_after_decision(
            tmp_path, server, lambda body: body["response_format"]["type"] == "json_object"
        )
        first = server.sent()
        recorded = _attempts(store)
        (entry,) = _decisions(store)  # recorded when taken, before the kill
        assert entry["decisions"]["json_form"]["form"] == "json_object"
        assert entry["decisions"]["json_form"]["answered"] == "json_object"
        openai_run(*args)  # resumed in this process, another than the killed one
        resumed = server.sent()[len(first) :]

    forms = [b["response_format"]["type"] for b in first]
    assert forms[0] == "json_schema" and forms.count("json_schema") <= 2
    # the resumed session sends no request the server refused, not even a probe
    assert resumed
    assert [b["response_format"]["type"] for b in resumed] == ["json_object"] * len(resumed)
    earlier = {_prompt(b): b for b in first if b["response_format"]["type"] == "json_object"}
    assert all(b == earlier[_prompt(b)] for b in resumed if _prompt(b) in earlier)
    assert _attempts(store) - recorded == len(resumed)
    summary = jurist.Run(store.parent).summary()
    assert summary.items == summary.scored == N
    assert summary.decisions == [
        "openai:tiny: JSON schemas sent as json_object; refused: json_schema"
    ]


def test_a_changed_setting_wins_over_a_restored_decision() -> None:
    kept = [
        {
            "model": "openai:tiny",
            "decisions": {
                "json_form": {
                    "start": "json_schema",
                    "form": "json_object",
                    "answered": "json_object",
                    "refused": {"json_schema": "HTTP 500"},
                },
                "output": {"json_off": True},
            },
        }
    ]
    url = "http://127.0.0.1:9/v1"
    same = jurist.LLMJudge(jurist.get_model("openai:tiny", base_url=url, api_key="x"))
    assert JudgeState(same).restore(kept) == [
        "openai:tiny: json_form restored (JSON schemas sent as json_object; refused: json_schema)",
        "openai:tiny: output restored (JSON output off)",
    ]
    assert JudgeState(same).snapshot() == kept
    model = jurist.get_model("openai:tiny", base_url=url, api_key="x", json_mode="json_object")
    lines = JudgeState(jurist.LLMJudge(model)).restore(kept)
    assert lines[0] == (
        "openai:tiny: json_form not restored (JSON schemas sent as json_object; refused: "
        "json_schema; its setting changed since)"
    )
    other = jurist.LLMJudge(jurist.get_model("openai:other", base_url=url, api_key="x"))
    assert JudgeState(other).restore(kept) == [
        "openai:tiny: not restored (the judge has no such model there now)"
    ]
    assert JudgeState(other).snapshot() == []


def _items(n: int) -> list[dict[str, str]]:
    return [{"prompt": f"q{i}", "response": f"a{i}"} for i in range(n)]


def test_a_resumed_session_starts_from_the_decisions_of_the_last(tmp_path: Path) -> None:
    from rich.console import Console

    from jurist.cli._summary import print_summary
    from jurist.errors import status_error

    # text replies to requests for JSON; the last two items fail (a server that went down)
    outputs: list[Any] = ["Correct"] * 4 + [status_error(500, "down")] * 2
    first = jurist.models.MockModel("m", json_schema=True, outputs=outputs)
    run = jurist.evaluate(_items(6), jurist.LLMJudge(first), run_dir=tmp_path, concurrency=1)
    assert [r.json_schema is not None for r in first.requests] == [True] * 3 + [False] * 3
    assert run.summary().failed == 2
    assert run.summary().decisions == ["mock:m: JSON output off"]

    # a new process: a new model object, which has decided nothing
    again = jurist.models.MockModel("m", json_schema=True, outputs=["Correct"] * 2)
    run = jurist.evaluate(_items(6), jurist.LLMJudge(again), run_dir=tmp_path)
    assert [r.json_schema for r in again.requests] == [None, None]  # text from the start
    assert [r.messages for r in again.requests] == [r.messages for r in first.requests[4:]]
    summary = run.summary()
    assert summary.scored == 6 and summary.sessions == 2
    assert summary.attempts == 8  # every request the model received, both sessions
    records = list(run.records())
    assert [r["judge_output_format"] for r in records[4:]] == ["text", "text"]
    assert "decided during the run" in run.report().read_text()
    console = Console(record=True, width=200)
    print_summary(console, summary.model_dump() | {"results": "x"}, [])
    assert "decided: mock:m: JSON output off" in console.export_text()


UNREADABLE = {1, 4, 7, 10}


def _batch_answer(body: dict[str, Any]) -> str:
    """Text ("Correct") to every request for JSON, "nonsense" for the unreadable items."""
    found = re.search(r"ITEM-(\d+)-END", str(body["messages"][-1]["content"]))
    assert found is not None
    return "nonsense" if int(found.group(1)) in UNREADABLE else "Correct"


@pytest.mark.slow
def test_batch_run_killed_during_a_followup_round_resends_nothing(tmp_path: Path) -> None:
    """Issue 20: a batch run killed while its follow-up batch (the re-asks) was polled,
    then resumed, sent some unreadable items 4 requests and recorded 3: the resumed
    session turned JSON off at another point, so some re-asks were other requests."""
    from tests._batch_server import BatchServer, Knobs

    n = 12
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": f"ITEM-{i}-END", "response": "4"}) + "\n" for i in range(n))
    )
    run_dir = tmp_path / "run"
    with BatchServer(answer=_batch_answer, delay=0.05) as server:
        server.next_batch(Knobs(delay=0.05))  # the first round
        server.next_batch(Knobs(delay=600))  # the follow-up round: still running when killed
        args = [server.base_url, str(run_dir), str(data)]
        proc = fork(batch_run, *args, log=tmp_path / "run.log")
        deadline = time.monotonic() + 120
        while server.creations < 2 or server.polls < 3:
            assert proc.poll() is None, f"the run ended before it could be killed: {proc.output()}"
            assert time.monotonic() < deadline, "no follow-up round"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL, proc.output()
        (entry,) = _decisions(run_dir / "run.sqlite")  # taken in the first round, recorded
        assert entry["decisions"]["output"] == {"json_off": True}
        for batch in server.batches.values():
            batch.knobs.delay = 0.05  # the follow-up round finishes now
        batch_run(*args)  # resumed in this process, another than the killed one
        sent: dict[int, int] = {}
        for custom_id, times in server.submissions.items():
            idx = int(custom_id.split("-")[0])
            sent[idx] = sent.get(idx, 0) + times
        creations = server.creations

    # as without the kill: one request per readable item, three per unreadable one
    assert sent == {i: 3 if i in UNREADABLE else 1 for i in range(n)}
    assert creations == 3  # the first round, the follow-up round (polled again), the last
    run = jurist.Run(run_dir)
    assert [r["usage"].attempts for r in run.rows()] == [sent[i] for i in range(n)]
    assert run.summary().attempts == sum(sent.values())


def test_a_model_listened_to_still_pickles_with_its_decisions() -> None:
    """A judge shipped to another process (a Ray actor) keeps what its backend decided,
    not the engine's listeners (which hold the run store)."""
    import pickle

    from jurist.models._openai import OpenAIModel

    model = OpenAIModel("tiny", base_url="http://127.0.0.1:9/v1", api_key="x")
    state = JudgeState(jurist.LLMJudge(model))
    stop = state.listen(lambda: None)  # a lambda: unpicklable, as a listener may be
    assert model.json_form is not None
    model.json_form.fall_back("json_schema", "HTTP 500: response_format json_schema")
    copy = pickle.loads(pickle.dumps(model))
    stop()
    assert copy.deciders()["json_form"].decisions() == model.json_form.decisions()
    assert copy.json_form is not None and copy.json_form.form == "json_object"
