"""The batch engine: inputs, resume, config checks, concurrency, errors, exports."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import jurist
from jurist.engines import aevaluate, evaluate
from jurist.errors import ConfigError, DataError, ModelError
from jurist.runs import Run
from jurist.runs._store import RunStore
from jurist.types import Usage


class Outcome(BaseModel):
    score: float | None
    error: str | None = None
    usage: Usage = Usage()
    text: str = ""


class Crash(Exception):
    """A bug in a judge: ends the run (finished items stay stored)."""


class LenJudge:
    """Scores an item by the length of its text; counts calls and what is in flight."""

    name = "len"
    required_fields = ("text",)

    def __init__(
        self, version: int = 1, *, crash_at: str | None = None, delay: float = 0.0
    ) -> None:
        self.version = version
        self.crash_at = crash_at
        self.delay = delay
        self.calls: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def describe(self) -> dict[str, Any]:
        return {"kind": "len", "version": self.version}

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> Outcome:
        text = str(item["text"])
        if text == self.crash_at:
            raise Crash(text)
        self.calls.append(text)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            if text.startswith("fail"):
                raise ModelError("server said no")
            return Outcome(
                score=(len(text) % 10) / 10,
                usage=Usage(prompt_tokens=len(text), completion_tokens=1, calls=1),
                text=text,
            )
        finally:
            self.in_flight -= 1


def items(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "text": "x" * (i % 7 + 1)} for i in range(n)]


def test_llm_judge_through_the_engine(tmp_path: Path) -> None:
    model = jurist.get_model("mock:judge", outputs=["Correct", "Incorrect", "nonsense"])
    judge = jurist.LLMJudge(model)
    data = [{"prompt": f"q{i}", "response": f"a{i}"} for i in range(3)]
    run = jurist.evaluate(data, judge, run_dir=tmp_path / "run")
    records = list(run.records())
    assert [r["judge_score"] for r in records] == [1.0, 0.0, None]
    assert records[2]["judge_error"].startswith("parse:")
    assert records[0]["prompt"] == "q0" and records[0]["judge_response"] == "Correct"
    summary = run.summary()
    assert (summary.items, summary.scored, summary.failed, summary.calls) == (3, 2, 1, 3)
    assert summary.status == "complete" and summary.cost == 0.0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judge"]["kind"] == "llm_judge"
    assert manifest["dataset"]["items"] == 3 and len(manifest["dataset"]["hash"]) == 32
    assert manifest["jurist_version"] == jurist.__version__


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet", "pandas", "dataset", "generator"])
def test_every_input_kind(kind: str, tmp_path: Path) -> None:
    rows = items(5)
    data: Any
    if kind == "jsonl":
        data = tmp_path / "d.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif kind == "csv":
        data = tmp_path / "d.csv"
        data.write_text("id,text\n" + "".join(f"{r['id']},{r['text']}\n" for r in rows))
    elif kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        data = tmp_path / "d.parquet"
        pq.write_table(pa.Table.from_pylist(rows), data)
    elif kind == "pandas":
        import pandas as pd

        data = pd.DataFrame(rows)
    elif kind == "dataset":
        import datasets

        data = datasets.Dataset.from_list(rows)
    else:
        data = (r for r in rows)
    judge = LenJudge()
    run = evaluate(data, judge, run_dir=tmp_path / "run")
    texts = [r["text"] for r in run.records()]
    assert texts == [r["text"] for r in rows]
    assert sorted(judge.calls) == sorted(texts)
    assert run.summary().items == 5


def test_resume_skips_finished_items(tmp_path: Path) -> None:
    data = [{"text": t} for t in ["a", "bb", "ccc", "boom", "dddd", "eeeee"]]
    first = LenJudge(crash_at="boom")
    with pytest.raises(Crash):
        evaluate(data, first, run_dir=tmp_path, concurrency=1)
    assert first.calls == ["a", "bb", "ccc"]
    assert Run(tmp_path).summary().status == "failed"  # the crash ended it; rows stay
    second = LenJudge()
    run = evaluate(data, second, run_dir=tmp_path, concurrency=1)
    assert second.calls == ["boom", "dddd", "eeeee"]
    assert [r["text"] for r in run.records()] == [d["text"] for d in data]
    summary = run.summary()
    assert summary.status == "complete" and summary.sessions == 2 and summary.calls == 6
    third = LenJudge()
    evaluate(data, third, run_dir=tmp_path)
    assert third.calls == []


def test_changed_config_or_dataset_stops_the_resume(tmp_path: Path) -> None:
    data = items(4)
    evaluate(data, LenJudge(version=1), run_dir=tmp_path)
    with pytest.raises(ConfigError) as e:
        evaluate(data, LenJudge(version=2), run_dir=tmp_path)
    assert "judge.version: 1 -> 2" in str(e.value) and "--no-resume" in str(e.value)
    with pytest.raises(ConfigError, match=r"dataset: .*\(4 items, hash .*\(5 items"):
        evaluate(items(5), LenJudge(version=1), run_dir=tmp_path)
    changed = [dict(r) for r in data]
    changed[2]["text"] = "changed"
    with pytest.raises(ConfigError, match="dataset"):
        evaluate(changed, LenJudge(version=1), run_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"options\.retries: 0 -> 2"):
        evaluate(data, LenJudge(version=1), run_dir=tmp_path, retries=2)
    fresh = LenJudge(version=2)
    run = evaluate(changed, fresh, run_dir=tmp_path, resume=False)
    assert len(fresh.calls) == 4 and len(run) == 4
    assert run.manifest.judge["version"] == 2


def test_one_shot_iterator_is_checked_item_by_item(tmp_path: Path) -> None:
    data = items(4)
    evaluate(iter(data), LenJudge(), run_dir=tmp_path)
    changed = [dict(r) for r in data]
    changed[1]["text"] = "other"
    with pytest.raises(DataError, match="item 1: this item differs"):
        evaluate(iter(changed), LenJudge(), run_dir=tmp_path)


def test_missing_field_stops_before_any_call(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a"}\n\n{"txt": "b"}\n')
    judge = LenJudge()
    with pytest.raises(
        DataError, match=r"d.jsonl:3: missing field 'text'; the fields are \['txt'\]"
    ):
        evaluate(path, judge, run_dir=tmp_path / "run")
    assert judge.calls == []
    assert not (tmp_path / "run" / "manifest.json").exists()


def test_field_mapping(tmp_path: Path) -> None:
    judge = LenJudge()
    run = evaluate([{"body": "abc"}], judge, run_dir=tmp_path, fields={"text": "body"})
    assert judge.calls == ["abc"]
    assert next(run.records())["body"] == "abc"


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    judge = LenJudge(delay=0.01)
    evaluate(items(40), judge, run_dir=tmp_path, concurrency=3)
    assert judge.max_in_flight == 3


def test_runtime_errors_become_results(tmp_path: Path) -> None:
    judge = LenJudge()
    run = evaluate([{"text": "ok"}, {"text": "fail-1"}], judge, run_dir=tmp_path)
    assert run.failures() == [(1, "api: server said no")]
    assert run.summary().errors == {"api": 1}


def test_a_non_judge_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a judge"):
        evaluate(items(1), object(), run_dir=tmp_path)  # type: ignore[arg-type]


def test_exports(tmp_path: Path) -> None:
    data = [{"text": "a", "n": 1}, {"text": "fail", "n": 2.5}, {"text": "ccc", "n": None}]
    run = evaluate(data, LenJudge(), run_dir=tmp_path / "run")
    lines = run.to_jsonl(tmp_path / "out.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines]
    assert [r["judge_score"] for r in rows] == [0.1, None, 0.3]
    assert rows[1]["judge_error"] == "api: server said no"
    import pandas as pd
    import pyarrow.parquet as pq

    table = pq.read_table(run.to_parquet(tmp_path / "out.parquet", batch_size=2))
    assert table.column("judge_score").to_pylist() == [0.1, None, 0.3]
    assert table.column("n").to_pylist() == [1.0, 2.5, None]
    frame = run.to_pandas()
    assert isinstance(frame, pd.DataFrame) and list(frame["text"]) == ["a", "fail", "ccc"]


async def test_async_twin_and_sync_inside_a_loop(tmp_path: Path) -> None:
    run = await aevaluate(items(3), LenJudge(), run_dir=tmp_path / "a")
    assert len(run) == 3
    again = evaluate(items(3), LenJudge(), run_dir=tmp_path / "b")  # inside a running loop
    assert len(again) == 3


def test_progress_bar_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = evaluate(items(5), LenJudge(), run_dir=tmp_path, progress=True)
    assert len(run) == 5


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(n=st.integers(1, 30), crash=st.integers(0, 40), workers=st.integers(1, 5))
def test_crash_then_resume_gives_exactly_one_result_per_item(
    tmp_path_factory: pytest.TempPathFactory, n: int, crash: int, workers: int
) -> None:
    folder = tmp_path_factory.mktemp("run")
    data = [{"text": f"item-{i}"} for i in range(n)]
    first = LenJudge(crash_at=f"item-{crash}")
    with contextlib.suppress(Crash):
        evaluate(data, first, run_dir=folder, concurrency=workers)
    store = RunStore(folder / "run.sqlite")
    stored = {r["item"]["text"] for r in store.rows()}
    store.close()
    second = LenJudge()
    run = evaluate(data, second, run_dir=folder, concurrency=workers)
    texts = [r["item"]["text"] for r in run.rows()]
    assert texts == [d["text"] for d in data]
    assert not stored & set(second.calls)
    assert sorted([*stored, *second.calls]) == sorted(texts)
