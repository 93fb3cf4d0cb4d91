"""Input users have: byte order marks, null and NaN fields, empty CSV cells."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import jurist
from jurist.cli import EXIT_OK, EXIT_USAGE, main
from jurist.data import read_records
from jurist.errors import DataError

BOM = b"\xef\xbb\xbf"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("d.jsonl", b'{"prompt": "q", "response": "a"}\n'),
        ("d.json", b'[{"prompt": "q", "response": "a"}]'),
        ("d.csv", b"prompt,response\r\nq,a\r\n"),
    ],
)
def test_a_byte_order_mark_is_not_part_of_the_data(
    name: str, body: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / name
    data.write_bytes(BOM + body)
    assert list(read_records(data)) == [{"prompt": "q", "response": "a"}]
    code, _, err = run(
        [
            "judge",
            str(data),
            "--model",
            "mock:judge",
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ],
        capsys,
    )
    assert code == EXIT_OK, err


def test_a_null_field_is_reported_as_null_not_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    rows = [{"prompt": "q", "response": "a"}] * 3 + [{"prompt": "q", "response": None}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = run(
        [
            "judge",
            str(data),
            "--model",
            "mock:judge",
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ],
        capsys,
    )
    assert code == EXIT_USAGE
    assert f"{data}:4: field 'response' is null" in err and "missing" not in err


def test_a_parquet_nan_response_is_a_missing_value_not_the_text_nan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    data = tmp_path / "d.parquet"
    table = pa.table({"prompt": ["q1", "q2"], "response": pa.array([1.0, math.nan])})
    pq.write_table(table, data)
    out_dir = tmp_path / "o"
    code, _, err = run(
        ["judge", str(data), "--model", "mock:judge", "--out", str(out_dir), "--no-progress"],
        capsys,
    )
    assert code == EXIT_USAGE
    assert f"{data}: row 2: field 'response' is NaN (a missing value)" in err
    assert not (out_dir / "results.jsonl").exists()


@pytest.mark.parametrize("missing", ["nan", "none", "na"])
def test_dataframe_missing_values_are_not_judged(missing: str) -> None:
    pd = pytest.importorskip("pandas")
    value = {"nan": math.nan, "none": None, "na": pd.NA}[missing]
    frame = pd.DataFrame({"prompt": ["q1", "q2"], "response": ["fine", value]})
    if missing == "na":
        frame["response"] = frame["response"].astype("string")
    model = jurist.get_model("mock:judge", outputs=["Correct"], cycle=True)
    judge = jurist.LLMJudge(model)
    with pytest.raises(DataError, match=r"item 2: missing field\(s\) \['response'\]"):
        judge.judge_sync(frame)
    with pytest.raises(DataError, match=r"item 2: field 'response' is (null|NaN|<NA>)"):
        jurist.evaluate(frame, judge, progress=False)


def test_an_empty_csv_cell_is_an_empty_response(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.csv"
    data.write_text("prompt,response\nq,\n")
    code, _, err = run(
        [
            "judge",
            str(data),
            "--model",
            "mock:judge",
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ],
        capsys,
    )
    assert code == EXIT_OK, err
    row = json.loads((tmp_path / "o" / "results.jsonl").read_text())
    assert row["response"] == ""


def test_judge_metric_does_not_judge_a_nan_prediction_or_reference() -> None:
    judge = jurist.LLMJudge(
        jurist.get_model("mock:j", outputs=["[[8]]"], cycle=True), template="mt_bench_reference"
    )
    metric = jurist.JudgeMetric(judge, context_fields={"prompt": "question"})
    rows = [{"question": "2+2?"}]
    with pytest.raises(DataError, match="instance 0: the judge needs field 'response'"):
        metric.compute([math.nan], references=["4"], task_data=rows)
    with pytest.raises(DataError, match="instance 0: the judge needs field 'reference'"):
        metric.compute(["4"], references=[math.nan], task_data=rows)
    assert metric.compute(["4"], references=["4"], task_data=rows).scores == [0.8]
