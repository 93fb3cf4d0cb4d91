"""Columns are never dropped nor values mangled on the way into a judge's prompt.

A CSV header, a Parquet schema or a DataFrame that names a column twice is refused,
naming the file, the header and the name (a row can hold one value per name: the other
would be judged or dropped without a word). A list or dict field reaches the prompt as
JSON, not as Python's repr.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import jurist
from jurist.cli import EXIT_USAGE, main
from jurist.data import read_records
from jurist.errors import DataError


def test_a_csv_header_naming_a_column_twice_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.csv"
    data.write_text("id,prompt,response,response\n1,q,first,second\n")
    out = tmp_path / "run"
    code = main(["judge", str(data), "--model", "mock:judge", "--no-progress", "--out", str(out)])
    said = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_USAGE
    assert f"{data}:1: the header line 'id,prompt,response,response'" in said
    assert "names column 'response' twice" in said
    assert not out.exists()


def test_a_parquet_file_or_dataframe_with_a_repeated_column_is_refused(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pd = pytest.importorskip("pandas")
    table = pa.table([["q"], ["first"], ["second"]], names=["prompt", "response", "response"])
    path = tmp_path / "d.parquet"
    pq.write_table(table, path)
    with pytest.raises(DataError, match=r"d\.parquet: the Parquet schema .* 'response' twice"):
        read_records(path)
    frame = pd.DataFrame([["q", "first", "second"]], columns=["prompt", "response", "response"])
    judge = jurist.LLMJudge("mock:judge", outputs=["Correct"])
    with pytest.raises(DataError, match=r"the DataFrame's columns .* 'response' twice"):
        jurist.evaluate(frame, judge, run_dir=tmp_path / "run")


def test_list_and_dict_fields_reach_the_prompt_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    row = {"prompt": ["step 1", "étape 2"], "response": {"answer": 4, "units": None}}
    data.write_text(json.dumps(row, ensure_ascii=False) + "\n")
    out = tmp_path / "run"
    code = main(["judge", str(data), "--model", "mock:judge", "--no-progress", "--out", str(out)])
    assert code == 0, capsys.readouterr()
    prompt = json.loads((out / "results.jsonl").read_text())["judge_prompt"]
    assert '["step 1","étape 2"]' in prompt
    assert '{"answer":4,"units":null}' in prompt
    assert "['step 1'" not in prompt and "'answer'" not in prompt


def test_a_numpy_array_from_a_dataframe_is_json_too() -> None:
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"prompt": [np.array([1, 2, 3])], "response": [[np.float64(0.5)]]})
    judge = jurist.LLMJudge("mock:judge", outputs=["Correct"])
    (result,) = judge.judge_sync(frame)
    assert "[1,2,3]" in result.judge_prompt and "[0.5]" in result.judge_prompt
