"""The Ray Data engine against the local one: same results, resume, one row per item."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.engines import RayEngine, RayOptions, judge_ray_dataset
from jurist.engines import _ray as ray_engine
from jurist.engines._ray import Recorder
from jurist.engines._ray_actor import JudgeActor, Secrets, encode_result, portable_entry, rebuild
from jurist.errors import ConfigError, MissingDependencyError
from jurist.runs import Run
from jurist.runs._cost import resolve_prices
from jurist.runs._store import StoredResult
from jurist.types import Request, Usage
from tests._ray_cluster import ray_session  # noqa: F401

OPTIONS = RayOptions(actors=2, batch_size=3)


def _items(n: int) -> list[dict[str, Any]]:
    return [
        {
            "prompt": f"What is 2+2? (#{i})",
            "response": "4" if i % 3 else "5",
            "response_a": "4",
            "response_b": str(i),
            "meta": {"i": i, "tags": ["x", {"deep": [i, None, 1.25]}]},
        }
        for i in range(n)
    ]


def _verdicts(good: str, bad: str, *, calls_file: Path | None = None) -> Callable[[Request], str]:
    """A mock's answer as a function of the request (the same wherever it runs)."""

    def answer(request: Request) -> str:
        if calls_file is not None:
            with calls_file.open("a") as f:
                f.write(f"{os.getpid()}\n")
        text = request.messages[-1].content
        return good if "<answer>\n4\n" in text or len(text) % 3 == 0 else bad

    return answer


def _kept(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if "latency" not in k}


def _judges() -> dict[str, Any]:
    mock = jurist.get_model("mock:a", outputs=_verdicts("Correct", "Incorrect"))
    other = jurist.get_model("mock:b", outputs=_verdicts("Rating: [[8]]", "Rating: [[2]]"))
    return {
        "llm": jurist.LLMJudge(mock, explanations=False),
        "panel": jurist.Panel(
            [jurist.LLMJudge(mock), jurist.LLMJudge(other, template="mt_bench")],
            aggregation="mean",
        ),
        "pairwise": jurist.PairwiseJudge(
            jurist.get_model("mock:p", outputs=_verdicts("[[A]]", "[[B]]")), swap=True
        ),
    }


def test_same_records_as_the_local_engine(ray_cluster: Any, tmp_path: Path) -> None:
    # a panel over two scripted mocks (each actor gets its own copies, in their places)
    # with two templates; its items go to Ray in two windows (6 + 4), each a fresh actor
    # pool. Every judge kind over the engine matrix's server is compared with the local
    # engine on Ray in tests/engines/test_engine_matrix.py; records judged by two actors at once
    # in test_judge_ray_dataset_rows_are_the_results_jsonl_records
    items = _items(10)
    judge = _judges()["panel"]
    local = jurist.evaluate(items, judge, run_dir=tmp_path / "local")
    options = RayOptions(actors=1, batch_size=3, window=6)
    on_ray = jurist.evaluate(items, judge, run_dir=tmp_path / "ray", engine=RayEngine(options))
    want = [_kept(r) for r in local.records()]
    got = [_kept(r) for r in on_ray.records()]
    assert got == want
    assert len({r["judge_score"] for r in got}) > 1  # the scores vary by item
    assert on_ray.manifest.settings["engine"] == "ray"
    assert on_ray.summary().items == len(items)


def test_tiny_hf_model_gives_the_same_results(
    ray_cluster: Any, tiny_model_dir: Path, tmp_path: Path
) -> None:
    judge = jurist.LLMJudge(f"hf:{tiny_model_dir}", max_tokens=4)
    items = _items(4)
    local = [_kept(r) for r in jurist.evaluate(items, judge, run_dir=tmp_path / "l").records()]
    ray_run = jurist.evaluate(
        items, judge, run_dir=tmp_path / "r", engine=RayEngine(RayOptions(actors=1, batch_size=4))
    )
    got = [_kept(r) for r in ray_run.records()]
    keys = ("judge_score", "judge_verdict", "judge_error", "judge_explanation", "judge_response")
    assert [{k: r.get(k) for k in keys} for r in got] == [
        {k: r.get(k) for k in keys} for r in local
    ]


def test_judge_ray_dataset_rows_are_the_results_jsonl_records(
    ray_cluster: Any, tmp_path: Path
) -> None:
    items = _items(7)
    judge = _judges()["panel"]
    local = sorted(
        (_kept(r) for r in jurist.evaluate(items, judge, run_dir=tmp_path / "l").records()),
        key=lambda r: r["prompt"],
    )
    # a list travels as JSON text (nested values exact); a Ray Dataset is judged in the
    # kill test
    rows = judge_ray_dataset(items, judge, options=OPTIONS)
    got = sorted((_kept(r) for r in rows.take_all()), key=lambda r: r["prompt"])
    assert got == local


def test_an_interrupted_run_resumes_with_only_the_missing_items(
    ray_cluster: Any, tmp_path: Path
) -> None:
    items = _items(24)
    folder = tmp_path / "run"
    options = RayOptions(actors=1, batch_size=3)  # one actor process per session

    def judge(calls: Path) -> jurist.LLMJudge:
        model = jurist.get_model(
            "mock:a", outputs=_verdicts("Correct", "Incorrect", calls_file=calls), latency=0.3
        )
        return jurist.LLMJudge(model)

    def stored() -> int:
        try:
            return Run(folder).summary().items
        except ConfigError:  # not created yet
            return 0

    async def first_session() -> int:
        task = asyncio.create_task(
            jurist.aevaluate(
                items, judge(tmp_path / "calls-1"), run_dir=folder, engine=RayEngine(options)
            )
        )
        while stored() < 4 and not task.done():
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return stored()

    done_first = asyncio.run(first_session())
    assert 4 <= done_first < len(items)
    assert Run(folder).summary().status == "interrupted"

    second = jurist.evaluate(
        items, judge(tmp_path / "calls-2"), run_dir=folder, engine=RayEngine(options)
    )
    calls = (tmp_path / "calls-2").read_text().split()
    assert len(calls) == len(items) - done_first
    records = list(second.records())
    assert [r["meta"]["i"] for r in records] == list(range(len(items)))
    assert second.summary().status == "complete"


def test_the_driver_refuses_a_second_row_for_an_item() -> None:
    kept: list[StoredResult] = []
    recorder = Recorder(kept.append)

    def result(idx: int, score: float) -> str:
        return encode_result(
            StoredResult(
                idx=idx,
                item_hash="h",
                item={"q": [idx, {"n": None}]},
                score=score,
                error=None,
                outcome={"score": score},
                usage=Usage(calls=1),
                cost=0.0,
            )
        )

    for text in (result(0, 1.0), result(1, 0.5), result(0, 0.0), result(2, 0.0)):
        recorder.take(text)
    assert [(r.idx, r.score) for r in kept] == [(0, 1.0), (1, 0.5), (2, 0.0)]
    assert kept[0].item == {"q": [0, {"n": None}]}
    assert recorder.duplicates == 1


def test_mock_judges_of_every_kind_rebuild_from_their_portable_entry() -> None:
    item = _items(2)[1]
    for kind, judge in _judges().items():
        rebuilt = rebuild(portable_entry(judge))
        assert rebuilt is not judge
        assert rebuilt.describe() == judge.describe(), kind
        got, want = asyncio.run(rebuilt.judge(item)), asyncio.run(judge.judge(item))
        assert (got.score, got.error) == (want.score, want.error), kind


def test_a_rubric_judge_over_mock_models_rebuilds_with_its_mocks() -> None:
    rubric = jurist.Rubric.from_dict(
        {"criteria": [{"name": "correct", "requirement": "The answer is right."}]}
    )
    met = '{"c1": {"verdict": "MET"}}'
    mocks = [jurist.get_model(f"mock:r{i}", outputs=[met], cycle=True) for i in (1, 2)]
    judge = jurist.CriterionGrader(judges=mocks, seed=3).for_rubric(rubric)
    rebuilt = rebuild(portable_entry(judge))
    assert rebuilt.models() == tuple(mocks)  # each mock back in its place
    assert rebuilt.describe() == judge.describe()
    assert asyncio.run(rebuilt.judge(_items(1)[0])).score == 1.0


def test_a_judge_the_catalog_cannot_rebuild_is_refused() -> None:
    class Custom:
        name = "custom"
        required_fields = ("prompt",)

        def describe(self) -> dict[str, Any]:
            return {"kind": "custom"}

        async def judge(self, item: Any, *, retries: int = 0) -> Any:
            raise AssertionError("never judged")

    with pytest.raises(ConfigError, match=r"cannot judge with this Custom on Ray.*LLMJudge"):
        judge_ray_dataset([{"prompt": "q"}], Custom())


def test_api_keys_travel_in_memory_to_the_rebuilt_models_never_to_an_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    url = "http://127.0.0.1:9/v1"
    given = jurist.LLMJudge(jurist.get_model("openai:m", base_url=url, api_key="sk-given"))
    assert "sk-given" not in repr(portable_entry(given))
    secrets = Secrets.of(given)
    assert secrets.per_model == ({"api_key": "sk-given"},)
    assert "sk-given" not in repr(secrets)
    # a model built without one uses the environment's here: that key travels with it
    plain = jurist.LLMJudge(jurist.get_model("openai:m", base_url=url))
    assert Secrets.of(plain).per_model == ({"api_key": "sk-from-the-environment"},)
    # two models with two keys: each rebuilt model gets its own (one $OPENAI_API_KEY
    # could not hold both), and the actor's environment is left as it was
    other = jurist.LLMJudge(jurist.get_model("openai:n", base_url=url, api_key="sk-other"))
    panel = jurist.Panel([given, other])
    monkeypatch.delenv("OPENAI_API_KEY")
    environ = dict(os.environ)
    actor = JudgeActor(portable_entry(panel), resolve_prices(None), 0, secrets=Secrets.of(panel))
    assert dict(os.environ) == environ
    assert [m.secrets() for m in actor.judge.models()] == [
        {"api_key": "sk-given"},
        {"api_key": "sk-other"},
    ]
    # the option is kept, but no longer copies variables anywhere
    with pytest.warns(DeprecationWarning, match="env_vars is deprecated"):
        RayOptions(env_vars=("OPENAI_API_KEY",))
    # Ray's runtime-env agent logs env_vars in plain text: the pool must not use it
    assert "runtime_env" not in ray_engine._pool_args(RayOptions(), blocks=1)


def test_a_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'jurist\[ray\]'"):
        judge_ray_dataset([{"prompt": "q", "response": "a"}], jurist.LLMJudge("mock:a"))


def test_importing_jurist_does_not_import_ray() -> None:
    code = "import sys, jurist, jurist.engines, jurist.cli; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
