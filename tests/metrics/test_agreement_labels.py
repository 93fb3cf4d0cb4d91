"""``jurist agreement`` with a label column it cannot use: exit 2, naming the column and why.

Before, a column with no usable value printed a table of NaN and exited 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.cli import EXIT_OK, EXIT_USAGE, main

SAID = ["Score: 1", "Score: 2", "Score: 3", "Score: 5", "Score: 5", "Score: 2"]


def likert_run(
    tmp_path: Path, labels: list[Any], *, name: str = "run", field: str = "stars"
) -> str:
    items: list[dict[str, Any]] = []
    for i, label in enumerate(labels):
        item: dict[str, Any] = {"prompt": f"q{i}", "response": "a"}
        if label is not ...:
            item["stars"] = label
        items.append(item)
    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=SAID), template="likert")
    jurist.evaluate(items, judge, run_dir=tmp_path / name)
    return str(tmp_path / name)


def agreement(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["agreement", *args])
    out, err = capsys.readouterr()
    return code, " ".join(out.split()), " ".join(err.split())


def test_usable_labels_still_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a missing label here and there is left out, not an error
    run = likert_run(tmp_path, [1, 2, None, 4, float("nan"), 3])
    code, out, _ = agreement([run, "--labels", "stars", "--no-ci"], capsys)
    assert code == EXIT_OK and "4 pairs; 2 left out" in out and "nan" not in out.lower()
    # stars read from a CSV as text are compared with the verdicts as text
    run = likert_run(tmp_path, ["1", "2", "3", "4", "5", "3"], name="text-stars")
    code, out, _ = agreement([run, "--labels", "stars", "--no-ci"], capsys)
    assert code == EXIT_OK and "6 pairs; 0 left out" in out and "nan" not in out.lower()


def test_absent_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = likert_run(tmp_path, [1, 2, 3, 4, 5, 3])
    code, out, err = agreement([run, "--labels", "human"], capsys)
    assert code == EXIT_USAGE and out == ""
    assert "--labels 'human' is absent: item 1 has no field 'human'" in err
    assert "their fields are ['prompt', 'response', 'stars']" in err


def test_column_absent_from_some_items(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = likert_run(tmp_path, [1, 2, ..., 4, ..., 3])
    code, _, err = agreement([run, "--labels", "stars"], capsys)
    assert code == EXIT_USAGE
    assert "--labels 'stars' is absent from 2 of 6 items (item 3 has no field 'stars')" in err


@pytest.mark.parametrize("empty", [None, float("nan"), ""])
def test_column_with_no_usable_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], empty: Any
) -> None:
    run = likert_run(tmp_path, [empty] * 6)
    code, out, err = agreement([run, "--labels", "stars"], capsys)
    assert code == EXIT_USAGE and "nan" not in out.lower()
    assert (
        "--labels 'stars' has no usable values: it is missing (null, NaN or blank) in all "
        "6 items" in err
    )


def test_labels_off_the_judges_scale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = likert_run(tmp_path, ["good", "bad", "good", "good", "bad", "ok"], name="words")
    code, out, err = agreement([run, "--labels", "stars"], capsys)
    assert code == EXIT_USAGE and out == ""
    assert "--labels 'stars': 6 of 6 labels are unusable, not verdicts of the scale" in err
    assert "(e.g. 'good')" in err
    run = likert_run(tmp_path, [1, 2, "n/a", 4, 5, 3], name="one-bad")
    code, _, err = agreement([run, "--labels", "stars"], capsys)
    assert code == EXIT_USAGE
    assert "--labels 'stars': 1 of 6 labels are unusable" in err and "'n/a'" in err


def test_text_labels_where_kind_needs_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = ["Correct", "Incorrect", "Correct", "Correct", "Incorrect", "Correct"]
    items = [{"prompt": f"q{i}", "response": "a", "human": h} for i, h in enumerate(labels)]
    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=labels), template="true_false")
    jurist.evaluate(items, judge, run_dir=tmp_path / "tf")
    tf = str(tmp_path / "tf")
    code, _, err = agreement([tf, "--labels", "human", "--kind", "ordinal"], capsys)
    assert code == EXIT_USAGE
    assert "6 of 6 labels are unusable, not numbers, and --kind ordinal needs them" in err
    code, out, _ = agreement([tf, "--labels", "human", "--no-ci"], capsys)
    assert code == EXIT_OK and "accuracy" in out


def test_no_item_with_both_a_score_and_a_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [{"prompt": f"q{i}", "response": "a", "stars": 3 + i % 2} for i in range(3)]
    judge = jurist.LLMJudge(
        jurist.get_model("mock:j", outputs=["no verdict"], cycle=True), template="likert"
    )
    jurist.evaluate(items, judge, run_dir=tmp_path / "failed")
    code, _, err = agreement([str(tmp_path / "failed"), "--labels", "stars"], capsys)
    assert code == EXIT_USAGE
    assert "no item has both a judge score and a label (3 of 3 items got no score)" in err
