"""JSON output that degrades instead of failing under ``output="auto"`` (issue 13.1).

A server that ignores ``response_format`` (``transformers serve``, several gateways)
answers in text. Under ``auto`` every judgment used to fail with "the output is not a JSON
object" after two re-asks: three times the spend for nothing. The server here is a real
aiohttp app on 127.0.0.1 that counts the requests it receives.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

import jurist
from jurist.cli import EXIT_FAILED_ITEMS, EXIT_OK, main
from jurist.cli._summary import print_summary
from jurist.judges._output import TEXT_REPLIES_TO_STOP, json_off_note, text_read_note
from jurist.models import MockModel
from tests._fault_server import FaultServer, ok

ITEMS = [{"prompt": f"{i}+{i}?", "response": str(2 * i)} for i in range(6)]


def _text_server() -> FaultServer:
    """Answers every request in plain text, whatever ``response_format`` asked."""
    return FaultServer([ok("Correct")] * 100)


def _judge(server: FaultServer, output: str = "auto") -> jurist.LLMJudge:
    model = jurist.get_model("openai:x", base_url=server.url, api_key="x", max_retries=0)
    return jurist.LLMJudge(model, output=output, concurrency=1)  # type: ignore[arg-type]


def test_auto_reads_text_and_stops_asking_for_json() -> None:
    with _text_server() as server:
        judge = _judge(server)
        assert judge.json  # the openai backend takes a schema: auto asks for JSON
        results = judge.judge_sync(ITEMS, retries=2)
        sent = list(server.bodies)
    assert results.scores == [1.0] * len(ITEMS)
    assert len(sent) == len(ITEMS)  # one request per item: no re-asks
    n = TEXT_REPLIES_TO_STOP
    assert all("response_format" in body for body in sent[:n])
    assert not any("response_format" in body for body in sent[n:])
    # once JSON is off, the system message asks for the template's text format
    first_system = sent[0]["messages"][0]["content"]
    later_system = sent[n]["messages"][0]["content"]
    assert "JSON" in first_system and "JSON" not in later_system
    assert later_system == judge.template.system_text()
    assert [j.output_format for j in results] == ["text"] * len(ITEMS)
    notes = [j.output_note for j in results]
    assert notes == [text_read_note("openai:x")] * n + [json_off_note("openai:x")] * (
        len(ITEMS) - n
    )
    assert all(j.error is None and j.attempts == 1 for j in results)


def test_strict_json_stays_strict_and_re_asks() -> None:
    with _text_server() as server:
        results = _judge(server, output="json").judge_sync(ITEMS, retries=2)
        requests = server.requests
        sent = list(server.bodies)
    assert results.scores == [None] * len(ITEMS)
    assert all(j.error == "parse: the output is not a JSON object" for j in results)
    assert requests == 3 * len(ITEMS)  # retries=2: strict JSON re-asks, as asked
    assert all("response_format" in body for body in sent)


def test_a_server_that_honours_the_schema_is_read_as_json() -> None:
    with FaultServer([ok('{"verdict": "Incorrect"}')] * len(ITEMS)) as server:
        results = _judge(server).judge_sync(ITEMS, retries=2)
        sent = list(server.bodies)
    assert results.scores == [0.0] * len(ITEMS)
    assert all("response_format" in body for body in sent) and len(sent) == len(ITEMS)
    assert all(j.output_format == "json" and j.output_note is None for j in results)


def test_a_json_reply_starts_the_count_again() -> None:
    json_reply = '{"verdict": "Correct"}'
    outputs = ["Correct", "Correct", json_reply, "Correct", "Correct", json_reply]
    model = MockModel(outputs=outputs, json_schema=True)
    judge = jurist.LLMJudge(model, concurrency=1)
    results = judge.judge_sync(ITEMS)
    assert results.scores == [1.0] * 6
    assert [j.output_format for j in results] == ["text", "text", "json", "text", "text", "json"]
    # never three text replies in a row: every request still asked for JSON
    assert all(r.json_schema is not None for r in model.requests)


def test_the_state_is_per_model_object_and_shared_by_its_judges() -> None:
    model = MockModel(outputs=["Incorrect"], cycle=True, json_schema=True)
    judge = jurist.LLMJudge(model, concurrency=1)
    judge.judge_sync(ITEMS[:TEXT_REPLIES_TO_STOP])
    other = judge.with_options(template="true_false")  # the same model object
    j = other.judge_one_sync(ITEMS[0])
    assert j.score == 0.0 and j.output_note == json_off_note("mock:mock")
    assert model.requests[-1].json_schema is None
    fresh = MockModel(outputs=["Incorrect"], cycle=True, json_schema=True)
    k = jurist.LLMJudge(fresh).judge_one_sync(ITEMS[0])  # another model: JSON again
    assert k.output_note == text_read_note("mock:mock") and fresh.requests[0].json_schema


def test_unreadable_text_is_re_asked_like_a_text_judge_and_says_why() -> None:
    model = MockModel(outputs=["hmm", "Incorrect"], json_schema=True)
    j = jurist.LLMJudge(model).judge_one_sync(ITEMS[0], retries=1)
    assert j.score == 0.0 and j.attempts == 2 and j.output_format == "text"
    bad = MockModel(outputs=["no idea"], cycle=True, json_schema=True)
    f = jurist.LLMJudge(bad).judge_one_sync(ITEMS[0], retries=1)
    assert f.score is None and f.output_format is None
    assert f.error is not None and "JSON" not in f.error  # the text reader's reason
    assert f.output_note == text_read_note("mock:mock")


def test_text_and_json_only_judges_are_unchanged() -> None:
    text = jurist.LLMJudge(MockModel(outputs=["Correct"], json_schema=True), output="text")
    j = text.judge_one_sync(ITEMS[0])
    assert (j.score, j.output_format, j.output_note) == (1.0, "text", None)
    plain = jurist.LLMJudge(MockModel(outputs=["Correct"]))  # no schema: auto means text
    assert plain.judge_one_sync(ITEMS[0]).output_format == "text"


def test_the_cli_scores_every_item_against_a_text_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    base = [str(data), "--model", "openai:x", "--base-url", "URL", "--no-cache"]
    with _text_server() as server:
        args = [a.replace("URL", server.url) for a in base]
        out = tmp_path / "auto"
        code = main(["judge", *args, "--out", str(out), "--no-progress", "--concurrency", "1"])
        auto_requests = server.requests
    assert code == EXIT_OK and auto_requests == len(ITEMS)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["judge_score"] for r in rows] == [1.0] * len(ITEMS)
    assert {r["judge_output_format"] for r in rows} == {"text"}
    summary = json.loads((out / "summary.json").read_text())
    stop = TEXT_REPLIES_TO_STOP
    assert summary["notes"] == {
        text_read_note("openai:x"): stop,
        json_off_note("openai:x"): len(ITEMS) - stop,
    }
    printed = " ".join(capsys.readouterr().out.split())
    assert " ".join(json_off_note("openai:x").split()) in printed
    with _text_server() as server:
        args = [a.replace("URL", server.url) for a in base]
        out = tmp_path / "json"
        code = main(["judge", *args, "--out", str(out), "--no-progress", "--output", "json"])
        strict_requests = server.requests
    assert code == EXIT_FAILED_ITEMS and strict_requests == 3 * len(ITEMS)
    capsys.readouterr()


def test_the_summary_prints_each_note_once() -> None:
    console = Console(record=True, width=200)
    summary = {
        "data": "d.jsonl",
        "items": 6,
        "scored": 6,
        "failed": 0,
        "mean_score": 1.0,
        "verdicts": {"Correct": 6},
        "calls": 6,
        "attempts": 6,
        "cache_hits": 0,
        "prompt_tokens": 1,
        "completion_tokens": 1,
        "cost": None,
        "seconds": 0.1,
        "results": "r.jsonl",
        "notes": {text_read_note("openai:x"): 3, json_off_note("openai:x"): 3},
    }
    print_summary(console, summary, [])
    shown = console.export_text()
    assert shown.count("JSON output is off for this model") == 1
    assert shown.count("answered in text") == 1
    assert "3 item(s)" in shown
