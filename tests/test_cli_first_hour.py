"""A newcomer's first hour (issue 21): a report after every run, ``eval-model`` as a run
folder, one item numbering, resume refused before any model loads, ``--judge`` and
``--criteria`` on the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jurist.cli import EXIT_OK, main
from tests._cli_run import write


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, " ".join(out.split()), " ".join(err.split())


ROWS = [{"prompt": f"What is {i}+{i}?", "response": str(2 * i)} for i in range(3)]


@pytest.mark.parametrize("out_name", ["folder", "file.jsonl"])
def test_judge_writes_report_beside_the_results_and_prints_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], out_name: str
) -> None:
    data = write(tmp_path / "d.jsonl", ROWS)
    out = tmp_path / "out" / out_name
    args = ["judge", str(data), "--model", "mock:j", "--no-progress", "--out", str(out)]
    code, said, _ = run(args, capsys)
    assert code == EXIT_OK
    report = out / "report.html" if out_name == "folder" else out.with_name("file.report.html")
    assert report.is_file() and "<html" in report.read_text()
    assert f"report: {report}" in said


def test_compare_and_grade_write_their_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write(tmp_path / "a.jsonl", ROWS)
    b = write(tmp_path / "b.jsonl", [{**r, "response": "no idea"} for r in ROWS])
    out = tmp_path / "cmp"
    code, said, _ = run(
        ["compare", str(a), str(b), "--model", "mock:j", "--no-progress", "--out", str(out)],
        capsys,
    )
    assert code in (0, 1) and (out / "report.html").is_file()
    assert f"report: {out / 'report.html'}" in said
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("criteria:\n  - name: right\n    requirement: The answer is right\n")
    code, said, _ = run(
        [
            "grade",
            str(a),
            "--rubric",
            str(rubric),
            "--model",
            "mock:j",
            "--no-progress",
            "--out",
            str(tmp_path / "g"),
        ],
        capsys,
    )
    assert (tmp_path / "g" / "report.html").is_file(), said
    assert re.search(r"report: \S+report\.html", said)


def test_a_foreign_report_file_beside_a_jsonl_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write(tmp_path / "d.jsonl", ROWS)
    (tmp_path / "o.report.html").write_text("mine")
    code, _, err = run(
        ["judge", str(data), "--model", "mock:j", "--out", str(tmp_path / "o.jsonl")], capsys
    )
    assert code == 2 and "o.report.html" in err
    assert (tmp_path / "o.report.html").read_text() == "mine"


def _json(path: Path) -> dict[str, object]:
    value: dict[str, object] = json.loads(path.read_text())
    return value
