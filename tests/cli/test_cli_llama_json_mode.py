"""``compare`` and ``grade`` against a real llama-cpp-python server, with ``--json-mode``
and without (the backend then falls back to the form the server takes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jurist.cli import EXIT_FAILED_ITEMS, EXIT_OK, main
from tests._llama_fixtures import llama_server, tiny_gguf  # noqa: F401


def _pairs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps({"prompt": "2+2?", "response": "4"}) + "\n")
    b.write_text(json.dumps({"prompt": "2+2?", "response": "5"}) + "\n")
    return a, b


def test_compare_on_llama_cpp_python_with_json_object(
    llama_server: str,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b = _pairs(tmp_path)
    base = ["compare", str(a), str(b), "--model", "tiny", "--base-url", llama_server]
    base += ["--no-cache", "--retries", "0", "--no-progress", "--no-swap"]
    # the server refuses OpenAI's json_schema response format (HTTP 500): the default
    # falls back to its json_object form, and the summary says so ...
    assert main([*base, "--max-retries", "0", "--out", str(tmp_path / "schema")]) == EXIT_OK
    row = json.loads((tmp_path / "schema" / "results.jsonl").read_text())
    assert row["judge_winner"] in ("A", "B", "tie") and row["judge_error"] is None
    notes = json.loads((tmp_path / "schema" / "summary.json").read_text())["notes"]
    assert [n for n in notes if "refuses response_format json_schema" in n]
    # ... and --json-mode json_object starts there, which compare passes on
    code = main([*base, "--json-mode", "json_object", "--out", str(tmp_path / "object")])
    capsys.readouterr()
    assert code == EXIT_OK
    row = json.loads((tmp_path / "object" / "results.jsonl").read_text())
    assert row["judge_winner"] in ("A", "B", "tie") and row["judge_error"] is None
    assert json.loads((tmp_path / "object" / "summary.json").read_text())["notes"] == {}


def test_grade_on_llama_cpp_python_with_json_object(
    llama_server: str,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rubric = tmp_path / "r.yaml"
    rubric.write_text("criteria:\n  - name: correct\n    requirement: The answer is right\n")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "2+2?", "response": "4"}) + "\n")
    code = main(
        [
            "grade",
            str(data),
            "--rubric",
            str(rubric),
            "--model",
            "tiny",
            "--base-url",
            llama_server,
            "--json-mode",
            "json_object",
            "--no-cache",
            "--out",
            str(tmp_path / "g"),
            "--no-progress",
            "--retries",
            "0",
        ]
    )
    capsys.readouterr()
    row = json.loads((tmp_path / "g" / "results.jsonl").read_text())
    # a random tiny model may not name a valid verdict; the server must have answered
    # (json_object taken, the prompt within its context): no error, or one of parsing
    assert code in (EXIT_OK, EXIT_FAILED_ITEMS)
    assert row["judge_error"] is None or row["judge_error"].startswith("parse:"), row
    summary = json.loads((tmp_path / "g" / "summary.json").read_text())
    assert summary["calls"] == 1  # a completion came back (a refused call is no call)
