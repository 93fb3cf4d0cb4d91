"""``jurist traces`` turns span exports into trajectory items; ``jurist grade`` takes a
trajectory rubric (checks beside criteria) on them, against a loopback judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jurist.cli import EXIT_OK, EXIT_USAGE
from tests._cli_run import run
from tests._flight_judge import FlightJudge

DATA = Path(__file__).parents[1] / "fixtures" / "traces"
FILES = [
    DATA / "flights_genai.json",
    DATA / "flights_openinference.json",
    DATA / "flights_legacy.jsonl",
]


def test_traces_then_grade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = tmp_path / "items.jsonl"
    code, out = run(["traces", *map(str, FILES), "--out", str(items)], capsys)
    assert code == EXIT_OK and "4 trajectories" in out
    rows = [json.loads(line) for line in items.read_text().splitlines()]
    assert [len(r["tools"]) for r in rows] == [2, 1, 2, 4]
    assert rows[0]["trace"][1]["role"] == "user" and rows[0]["trajectory"].startswith("Step 1:")
    with FlightJudge() as server:
        args = ["grade", str(items), "--rubric", str(DATA / "flight_rubric.yaml"),
                "--model", "openai:flight-judge", "--base-url", server.base_url,
                "--out", str(tmp_path / "run"), "--no-progress"]  # fmt: skip
        code, out = run(args, capsys)
    assert code == EXIT_OK, out
    results = [
        json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    ]
    assert [r["judge_score"] for r in results] == pytest.approx([1.0, 0.1, 0.5, 0.9])
    names = [c["name"] for c in results[0]["judge_criteria"]]
    assert names[:4] == [
        "searched_then_booked",
        "one_adult",
        "direct_only_search",
        "at_most_four_steps",
    ]


def test_traces_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}')
    code, out = run(["traces", str(bad), "--out", str(tmp_path / "o.jsonl")], capsys)
    assert code == EXIT_USAGE and "traceId and spanId are required" in out
    code, out = run(["traces", str(FILES[0]), "--out", str(tmp_path / "o.csv")], capsys)
    assert code == EXIT_USAGE and "--out must be a .jsonl file" in out
    (tmp_path / "o.jsonl").write_text("")
    code, out = run(["traces", str(FILES[0]), "--out", str(tmp_path / "o.jsonl")], capsys)
    assert code == EXIT_USAGE and "pass --overwrite" in out


def _chat_span(messages: str) -> str:
    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": messages}},
    ]
    span = {"traceId": "t", "spanId": "s", "name": "chat", "attributes": attributes}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # issue 31, defect 3: these ended in "internal error" (exit 70)
        (
            FILES[0].read_bytes().replace(b"Madrid", b"M\xe1drid", 1),
            "spans.json:{line}: the trace file is not UTF-8 text (byte 0xe1); save it as UTF-8",
        ),
        (
            b"[" * 1100 + b"]" * 1100,
            "spans.json: cannot read the trace file: JSON nested deeper than 128 levels "
            "(arrays and objects)",
        ),
        (
            b"[" * 100_000 + b"]" * 100_000,
            "spans.json: cannot read the trace file: JSON nested deeper than 128 levels",
        ),
        (
            _chat_span("[" * 1100 + "]" * 1100).encode(),
            "spans.json: resourceSpans[0].scopeSpans[0].spans[0] (span 'chat', id s): "
            "gen_ai.input.messages is not valid JSON: JSON nested deeper than 128 levels",
        ),
        # an export holding nothing is the wrong file or an exporter that never flushed
        (b"[]", "spans.json: the trace file holds no spans (an export with nothing in it)"),
        (b'{"resourceSpans": []}', "spans.json: the trace file holds no spans"),
    ],
    ids=["latin-1", "1100-deep", "100000-deep", "deep-attribute", "empty-list", "no-spans"],
)
def test_an_unreadable_or_empty_export_is_a_usage_error_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    spans, out_file = tmp_path / "spans.json", tmp_path / "o.jsonl"
    spans.write_bytes(content)
    line = content[: content.find(b"\xe1")].count(b"\n") + 1
    code, out = run(["traces", str(spans), "--out", str(out_file)], capsys)
    assert code == EXIT_USAGE, out
    assert f"{tmp_path}/{message.format(line=line)}" in out
    assert "internal error" not in out and not out_file.exists()
