"""``jurist agreement``, ``compare``, ``grade`` and ``report`` on real runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import jurist
from jurist.cli import EXIT_OK, EXIT_USAGE, main


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, " ".join(out.split()), " ".join(err.split())


def test_agreement_nominal_and_ordinal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = ["Correct", "Incorrect", "Correct", "Correct", "Incorrect", "Correct"]
    judged = ["Correct", "Incorrect", "Correct", "Incorrect", "Incorrect", "Correct"]
    items = [{"prompt": f"q{i}", "response": "a", "human": h} for i, h in enumerate(labels)]
    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=judged), template="true_false")
    jurist.evaluate(items, judge, run_dir=tmp_path / "nominal")
    code, out, _ = run(["agreement", str(tmp_path / "nominal"), "--labels", "human"], capsys)
    assert code == EXIT_OK
    assert "agreement (nominal)" in out and "cohen_kappa" in out
    assert re.search(r"accuracy\W+0\.8333", out)

    stars = [1, 2, 3, 4, 5, 3]
    said = ["Score: 1", "Score: 2", "Score: 3", "Score: 5", "Score: 5", "Score: 2"]
    items = [{"prompt": f"q{i}", "response": "a", "stars": s} for i, s in enumerate(stars)]
    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=said), template="likert")
    jurist.evaluate(items, judge, run_dir=tmp_path / "ordinal")
    code, out, _ = run(["agreement", str(tmp_path / "ordinal"), "--labels", "stars"], capsys)
    assert code == EXIT_OK and "agreement (ordinal)" in out and "quadratic_kappa" in out
    code, out, _ = run(
        [
            "agreement",
            str(tmp_path / "ordinal"),
            "--labels",
            "stars",
            "--kind",
            "interval",
            "--no-ci",
        ],
        capsys,
    )
    assert code == EXIT_OK and "pearson" in out and "rmse" in out
    # compared on the stars' own 1-5 scale (verdicts 1 2 3 5 5 2 vs stars 1 2 3 4 5 3),
    # never the 0-1 score against 1-5 labels (RMSE ~2.8)
    assert "verdict scale" in " ".join(out.split()) or "judge's scale" in " ".join(out.split())
    assert re.search(r"rmse\W+0\.5774", out), out
    code, _, err = run(["agreement", str(tmp_path / "ordinal"), "--labels", "nope"], capsys)
    assert code == EXIT_USAGE and "item 1 has no field 'nope'" in err
    code, _, err = run(["agreement", str(tmp_path / "missing"), "--labels", "x"], capsys)
    assert code == EXIT_USAGE and "not a jurist run folder" in err


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_compare_two_systems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_jsonl(
        tmp_path / "a.jsonl", [{"prompt": f"q{i}", "response": f"a{i}"} for i in range(4)]
    )
    b = write_jsonl(
        tmp_path / "b.jsonl", [{"prompt": f"q{i}", "response": f"b{i}"} for i in range(4)]
    )
    out = tmp_path / "cmp"
    code, text, _ = run(
        [
            "compare",
            str(a),
            str(b),
            "--model",
            "mock:judge",
            "--out",
            str(out),
            "--no-progress",
            "--retries",
            "0",
        ],
        capsys,
    )
    # the default mock answers "Correct": no [[A]]/[[B]] verdict, so every pair fails to parse
    assert code == 1 and "parse:" in text
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and rows[0]["response_a"] == "a0" and rows[0]["response_b"] == "b0"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed"] == 4 and summary["wins"]["A"] == 0
    short = write_jsonl(tmp_path / "short.jsonl", [{"prompt": "q0", "response": "x"}])
    code, _, err = run(
        ["compare", str(a), str(short), "--model", "mock:judge", "--out", str(tmp_path / "c2")],
        capsys,
    )
    assert code == EXIT_USAGE and "has more rows than" in err
    other = write_jsonl(
        tmp_path / "o.jsonl", [{"prompt": f"z{i}", "response": "x"} for i in range(4)]
    )
    code, _, err = run(
        ["compare", str(a), str(other), "--model", "mock:judge", "--out", str(tmp_path / "c3")],
        capsys,
    )
    assert code == EXIT_USAGE and "the prompts differ" in err


def test_grade_with_a_rubric_then_agreement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "criteria:\n"
        "  - name: polite\n    requirement: The answer is polite\n"
        "  - name: clarity\n    requirement: How clear is it?\n    options:\n"
        "      - {label: poor, value: 0}\n      - {label: good, value: 1}\n"
    )
    data = write_jsonl(
        tmp_path / "d.jsonl",
        [
            {"prompt": "hi", "response": "Hello!", "truth": ["MET", "good"]},
            {"prompt": "hi", "response": "What.", "truth": ["UNMET", "poor"]},
        ],
    )
    out = tmp_path / "graded"
    code, text, _ = run(
        [
            "grade",
            str(data),
            "--rubric",
            str(rubric),
            "--model",
            "mock:judge",
            "--out",
            str(out),
            "--no-progress",
            "--retries",
            "0",
            "--no-cache",
        ],
        capsys,
    )
    # the default mock answers "Correct", which is no grade: every item fails, with reasons
    assert code == 1 and re.search(r"items\W+2\W", text) and "parse:" in text
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["judge_score"] is None for r in rows)
    assert all(r["judge_error"] for r in rows)
    code, text, _ = run(["agreement", str(out), "--labels", "truth"], capsys)
    assert code == EXIT_OK and "per criterion" in text and "polite" in text

    # the same rubric graded for real (scripted verdicts), then `jurist agreement` on it
    verdicts = ['{"c1": {"verdict": "MET"}, "c2": {"selected": 2}}']
    grader = jurist.CriterionGrader(
        judges=[jurist.get_model("mock:g", outputs=verdicts, cycle=True)],
        seed=1,
        shuffle_options=False,
    )
    judge = grader.for_rubric(jurist.Rubric.from_file(rubric))
    jurist.evaluate(data, judge, run_dir=tmp_path / "real")
    code, text, _ = run(["agreement", str(tmp_path / "real"), "--labels", "truth"], capsys)
    assert code == EXIT_OK and "overall accuracy: 0.5000" in text


def test_report_command_on_a_cli_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples" / "qa.jsonl"
    folder = tmp_path / "run"  # tmp_path itself holds the test's cache: not a run folder
    assert (
        main(
            [
                "judge",
                str(examples),
                "--model",
                "mock:judge",
                "--out",
                str(folder),
                "--no-progress",
            ]
        )
        == EXIT_OK
    )
    capsys.readouterr()
    code, _, _ = run(["report", str(folder), "--out", str(tmp_path / "r.html")], capsys)
    assert code == EXIT_OK and (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
