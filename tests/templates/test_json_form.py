"""A server that refuses the JSON schema's form gets the form it takes (issue 19.3).

llama-cpp-python's server answers ``response_format={"type": "json_schema", ...}`` with an
HTTP 500 naming ``json_schema``. The openai backend reads that as a refusal (never retried)
and falls back, once per model object, to ``json_object``, then to no ``response_format``;
a plain 500 stays transient. The servers here are aiohttp apps on 127.0.0.1 that record
the form of every request they receive.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from rich.console import Console

import jurist
from jurist._sync import run_sync
from jurist.cli import EXIT_OK, main
from jurist.cli._summary import print_summary
from jurist.errors import InternalServerError, UnsupportedRequestError
from jurist.models import MockModel, RetryModel
from jurist.models._json_form import JsonForm, JsonFormDecision, refuses
from jurist.models._openai import OpenAIModel
from jurist.types import Message, Request
from tests._fault_server import FaultServer, _completion, ok, status
from tests._loopback import Loopback

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string"}}}
REQUEST = Request(messages=(Message(role="user", content="2+2=4?"),), json_schema=SCHEMA)
ITEMS = [{"prompt": f"{i}+{i}?", "response": str(2 * i)} for i in range(8)]


def llama_message(form: str) -> str:
    """The message of llama-cpp-python's HTTP 500 for a response_format type it lacks
    (version 0.3: the validation error, then where it was raised)."""
    return (
        "1 validation error:\n  {'type': 'literal_error', "
        "'loc': ('body', 'response_format', 'type'), "
        "'msg': \"Input should be 'text' or 'json_object'\", "
        f"'input': '{form}', 'ctx': {{'expected': \"'text' or 'json_object'\"}}}}\n\n"
        '  File "llama_cpp/server/app.py", line 376, in create_chat_completion\n'
        "    POST /v1/chat/completions"
    )


class FormServer(Loopback):
    """Refuses the ``response_format`` types in ``refuse`` as llama-cpp-python does (an
    HTTP 500 naming the type) and answers the others with ``answer``. ``forms`` holds the
    type of every request received (``"text"``: none), in arrival order."""

    def __init__(self, refuse: set[str], answer: str = '{"verdict": "Correct"}') -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.refuse = refuse
        self.answer = answer
        self.forms: list[str] = []
        self._lock = threading.Lock()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        fmt = body.get("response_format")
        form = fmt["type"] if fmt else "text"
        with self._lock:
            self.forms.append(form)
        await asyncio.sleep(0.01)  # calls overlap: all would be in flight without the probe
        if form in self.refuse:
            error = {"message": llama_message(form), "type": "internal_server_error"}
            return web.json_response({"error": error, "param": None, "code": None}, status=500)
        return web.json_response(_completion(body, self.answer))


def note(form: JsonForm, *refused: JsonForm) -> str:
    """The note on a completion of ``openai:x`` sent in ``form`` after ``refused``."""
    decision = JsonFormDecision("openai:x", "json_schema")
    for f in refused or ("json_schema",):
        decision.refused[f] = "refused"
    text = decision.note_for(form)
    assert text is not None
    return text


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        (500, llama_message("json_schema"), True),
        (422, "response_format: unknown variant `json_schema`, expected `json`", True),
        (400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported", True),
        (500, "scripted HTTP 500", False),  # a plain 500
        (500, "json_schema", False),  # names the type, not the field
        (503, llama_message("json_schema"), False),  # overloaded: transient
        (400, "Invalid schema for response_format 'output': 'x' is required", False),
    ],
)
def test_what_reads_as_a_refusal(code: int, message: str, expected: bool) -> None:
    assert refuses(code, message, "json_schema") is expected


def test_a_500_naming_json_schema_is_a_refusal_and_not_retried() -> None:
    with FormServer(refuse={"json_schema"}) as server:
        model = OpenAIModel("x", base_url=server.url, api_key="k")
        retry = RetryModel(model, max_retries=4, backoff_base=0.001)
        first = run_sync(retry.complete(REQUEST))
        second = run_sync(retry.complete(REQUEST))
    assert server.forms == ["json_schema", "json_object", "json_object"]
    assert first.text == '{"verdict": "Correct"}' and first.attempts == 2
    assert second.attempts == 1
    assert first.format_note == second.format_note == note("json_object")
    assert model.json_form is not None and model.json_form.form == "json_object"


def test_a_plain_500_is_transient_and_retried_in_the_same_form() -> None:
    with FaultServer([status(500), ok('{"verdict": "Correct"}')]) as server:
        model = OpenAIModel("x", base_url=server.url, api_key="k")
        done = run_sync(RetryModel(model, backoff_base=0.001).complete(REQUEST))
        sent = list(server.bodies)
    assert done.attempts == 2 and done.format_note is None
    assert [b["response_format"]["type"] for b in sent] == ["json_schema", "json_schema"]


def test_a_form_the_server_answered_is_kept() -> None:
    """After one answer in json_schema, a 500 naming it is a server error, not a refusal."""
    refusal = status(500, message=llama_message("json_schema"))
    with FaultServer([ok("{}"), refusal, refusal]) as server:
        model = OpenAIModel("x", base_url=server.url, api_key="k")
        run_sync(model.complete(REQUEST))
        with pytest.raises(InternalServerError):
            run_sync(model.complete(REQUEST))
    assert model.json_form is not None and model.json_form.form == "json_schema"


def test_retry_never_repeats_a_refusal() -> None:
    refusal = UnsupportedRequestError("no json_schema", form="json_schema", status_code=500)
    mock = MockModel(outputs=[refusal, "Correct"])
    with pytest.raises(UnsupportedRequestError) as caught:
        run_sync(RetryModel(mock, max_retries=4, backoff_base=0.001).complete(REQUEST))
    assert mock.calls == 1 and caught.value.attempts == 1


def test_concurrent_calls_send_one_refused_request_per_form(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the others wait for the probe (however loaded the machine, the refusal comes first)
    monkeypatch.setattr("jurist.models._json_form.PROBE_WAIT_S", 60.0)

    async def many(model: OpenAIModel, n: int) -> list[Any]:
        return await asyncio.gather(*(model.complete(REQUEST) for _ in range(n)))

    with (
        caplog.at_level(logging.WARNING, logger="jurist"),
        FormServer(refuse={"json_schema", "json_object"}) as server,
    ):
        model = OpenAIModel("x", base_url=server.url, api_key="k")
        done = run_sync(many(model, 200))
    assert server.forms[:2] == ["json_schema", "json_object"]
    assert server.forms[2:] == ["text"] * 200
    assert sum(c.attempts for c in done) == 202
    assert {c.format_note for c in done} == {note("text", "json_schema", "json_object")}
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2 and all("\n" not in w for w in warnings)
    assert 'json_mode="json_object", --json-mode json_object' in warnings[0]
    assert "json_mode=None, --json-mode none" in warnings[1]


def test_a_configured_json_object_falls_back_to_text_only() -> None:
    with FormServer(refuse={"json_object"}) as server:
        model = OpenAIModel("x", base_url=server.url, api_key="k", json_mode="json_object")
        done = run_sync(model.complete(REQUEST))
    assert server.forms == ["json_object", "text"]
    assert done.format_note is not None and "refuses response_format json_object;" in (
        done.format_note
    )


def test_judgments_and_grades_record_the_fall_back() -> None:
    with FormServer(refuse={"json_schema"}) as server:
        model = jurist.get_model("openai:x", base_url=server.url, api_key="k")
        results = jurist.LLMJudge(model, concurrency=4).judge_sync(ITEMS)
        assert server.forms.count("json_schema") == 1
        assert results.scores == [1.0] * len(ITEMS)
        assert all(j.output_format == "json" for j in results)
        assert {j.output_note for j in results} == {note("json_object")}
        rubric = jurist.Rubric.from_dict(
            {"criteria": [{"name": "correct", "requirement": "The answer is right"}]}
        )
        server.answer = '{"c1": {"verdict": "MET"}}'
        grader = jurist.CriterionGrader(
            judges=[jurist.get_model("openai:y", base_url=server.url, api_key="k")]
        )
        report = grader.grade_sync(rubric, "4", query="2+2?")
    assert report.output_note is not None and "refuses response_format json_schema" in (
        report.output_note
    )


def test_the_cli_says_it_once_and_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    with FormServer(refuse={"json_schema"}) as server:
        code = main(
            [
                "judge",
                str(data),
                "--model",
                "openai:x",
                "--base-url",
                server.url,
                "--no-cache",
                "--no-progress",
                "--out",
                str(tmp_path / "run"),
            ]
        )
    out, err = capsys.readouterr()
    assert code == EXIT_OK
    assert server.forms.count("json_schema") == 1
    assert server.forms.count("json_object") == len(ITEMS)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["notes"] == {note("json_object"): len(ITEMS)}
    assert summary["attempts"] == len(ITEMS) + 1
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1 and "--json-mode json_object" in said[0] and "\n" not in said[0]
    assert "Traceback" not in out + err
    assert " ".join(note("json_object").split()) in " ".join(out.split())


def test_a_failure_under_the_summary_takes_one_line() -> None:
    traceback = 'api: HTTP 500: 1 validation error:\n  {...}\n\n  File "app.py", line 376\n'
    console = Console(record=True, width=300)
    summary = {
        "data": "d.jsonl",
        "items": 1,
        "scored": 0,
        "failed": 1,
        "mean_score": None,
        "verdicts": {},
        "calls": 0,
        "attempts": 1,
        "cache_hits": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost": None,
        "seconds": 0.1,
        "results": "r.jsonl",
        "notes": {"openai:x: a note": 1},
    }
    print_summary(console, summary, [("item 1", traceback)])
    shown = console.export_text()
    assert '  item 1: api: HTTP 500: 1 validation error: {...} File "app.py", line 376\n' in shown
    assert "note (1 item(s)): openai:x: a note" in shown  # ":x:" is no emoji


def test_a_decided_model_pickles_with_its_decision() -> None:
    """A model travels to spawned workers (TRL, Ray) with what its server decided, and a
    fresh lock: the copy neither shares nor loses the decision."""
    import pickle

    model = OpenAIModel("x", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert model.json_form is not None
    model.json_form.fall_back("json_schema", "HTTP 500: response_format json_schema unsupported")
    copy = pickle.loads(pickle.dumps(model))
    assert copy.json_form is not None and copy.json_form.form == "json_object"
    assert copy.json_form.refused == model.json_form.refused
    assert copy.json_form._lock is not model.json_form._lock


class ProbeHeld(FaultServer):
    """Holds the first request (the probe) unanswered until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = 0
        self.release = threading.Event()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.arrived += 1  # on the server's one loop thread
        if self.arrived == 1:
            while not self.release.is_set() and not self.stopping.is_set():
                await asyncio.sleep(0.005)
        return await super()._handle(request)


async def test_a_hung_probe_holds_the_other_calls_only_briefly() -> None:
    """The first call in an unproven form is the probe; a probe that hangs does not make
    every other call wait for its deadline."""
    with ProbeHeld() as server:
        model = OpenAIModel("x", base_url=server.url, api_key="k", timeout=5.0)
        try:
            first = asyncio.create_task(model.complete(REQUEST))
            while server.arrived < 1:  # the probe is out, and held
                await asyncio.sleep(0.005)
            done = await model.complete(REQUEST)
            assert done.text and not first.done()  # answered while the probe still hangs
            server.release.set()
            assert (await first).text
        finally:
            await model.aclose()
