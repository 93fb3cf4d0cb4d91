"""Panel: judges run concurrently, failures skipped and counted, aggregations and results."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import jurist
from jurist.errors import ConfigError, DataError, InternalServerError
from jurist.judges import ItemJudge, LLMJudge, Panel, PanelJudgment, PanelResults
from jurist.judges._aggregate import AGGREGATIONS, aggregate
from jurist.models import MockModel
from jurist.types import Request, Usage
from tests._llama_fixtures import llama_server, tiny_gguf  # noqa: F401
from tests.conftest import free_port

ITEMS = [{"prompt": f"q{i}", "response": f"a{i}"} for i in range(5)]


def judge(outputs: list[Any] | Any, name: str, template: str = "true_false") -> LLMJudge:
    model = MockModel(name, outputs=outputs, cycle=isinstance(outputs, list))
    return LLMJudge(model, template=template, name=name)


def test_one_judge_failing_on_every_call_still_scores_with_the_count() -> None:
    boom = InternalServerError("server down", status_code=503)
    panel = Panel(
        [judge(["Correct"], "good"), judge([boom], "broken"), judge(["Incorrect"], "bad")],
        aggregation="mean",
    )
    results = panel.judge_sync(ITEMS)
    assert results.scores == [0.5] * 5
    assert results.n_counted == [2] * 5
    assert all(p.n_failed == 1 for p in results)
    assert results.judge_failures() == {"good": 0, "broken": 5, "bad": 0}
    assert results.judge_scores["broken"] == [None] * 5
    broken = results[0].judgments[1]
    assert broken.score is None and broken.error.startswith("api: ")
    row = results.to_records()[0]
    assert row["panel_n_counted"] == 2 and row["panel_n_failed"] == 1
    assert row["judge_2_score"] is None and row["judge_2_error"].startswith("api: ")
    assert row["judge_1_verdict"] == "Correct" and row["prompt"] == "q0"


class RaisingJudge:
    """A custom judge that breaks the contract by raising."""

    name = "raiser"
    required_fields = ("prompt",)

    def describe(self) -> dict[str, Any]:
        return {"kind": "raiser"}

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> Any:
        raise RuntimeError("kaput")


class Outcome(BaseModel):
    score: float | None
    error: str | None = None
    usage: Usage = Usage()


class ConstJudge:
    """A non-LLM ItemJudge: any outcome with a score works in a panel."""

    def __init__(self, score: float | None, name: str = "const") -> None:
        self.score = score
        self.name = name

    @property
    def required_fields(self) -> tuple[str, ...]:
        return ("response",)

    def describe(self) -> dict[str, Any]:
        return {"kind": "const", "score": self.score}

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> Outcome:
        if self.score is None:
            return Outcome(score=None, error="parse: nothing", usage=Usage(calls=1))
        return Outcome(score=self.score, usage=Usage(prompt_tokens=3, calls=1))


def test_an_exception_from_a_custom_judge_is_recorded_not_raised() -> None:
    assert isinstance(RaisingJudge(), ItemJudge)
    panel = Panel([RaisingJudge(), ConstJudge(0.25)], aggregation="max")
    out = panel.judge_one_sync({"prompt": "q", "response": "a"})
    assert out.score == 0.25 and out.n_counted == 1 and out.n_failed == 1
    assert out.judge_errors[0] == "error: RuntimeError: kaput"
    assert out.usage == Usage(prompt_tokens=3, calls=1)


def test_no_judge_scored_gives_none_and_says_so() -> None:
    panel = Panel([ConstJudge(None, "x"), ConstJudge(None, "y")])
    out = panel.judge_one_sync({"response": "a"})
    assert out.score is None and out.n_counted == 0 and out.n_failed == 2
    assert out.error == (
        "panel: no judge scored this item (2 of 2 failed; first error: parse: nothing)"
    )
    assert out.usage.calls == 2


async def test_judges_run_concurrently() -> None:
    started: list[str] = []
    both = asyncio.Event()

    def make(name: str) -> LLMJudge:
        async def fn(request: Request) -> str:
            started.append(name)
            if len(started) == 2:
                both.set()
            await asyncio.wait_for(both.wait(), timeout=5)  # deadlocks if run one by one
            return "Correct"

        return LLMJudge(MockModel(name, outputs=fn), template="true_false", name=name)

    out = await Panel([make("a"), make("b")]).judge({"prompt": "q", "response": "a"})
    assert out.score == 1.0 and sorted(started) == ["a", "b"]


@pytest.mark.parametrize(
    ("aggregation", "weights", "expected"),
    [
        ("mean", None, 0.5),
        ("median", None, 0.5),
        ("min", None, 0.25),
        ("max", None, 0.75),
        ("majority", None, 0.25),  # 0.25 and 0.75 once each, 0.5 once: a tie -> lowest
        ("weighted", [3.0, 1.0, 0.0], 0.375),
    ],
)
def test_aggregations_on_likert(
    aggregation: str, weights: list[float] | None, expected: float
) -> None:
    judges = [
        judge(["2"], "j1", "likert"),
        judge(["4"], "j2", "likert"),
        judge(["3"], "j3", "likert"),
    ]
    panel = Panel(judges, aggregation=aggregation, weights=weights)
    out = panel.judge_one_sync({"prompt": "q", "response": "a"})
    assert out.score == pytest.approx(expected)
    assert out.aggregation == aggregation and out.spread == pytest.approx(0.5)
    assert out.tie == (aggregation == "majority")


def test_majority_skips_failures_and_breaks_ties_low() -> None:
    panel = Panel(
        [judge(["Correct"], "a"), judge(["???"], "b"), judge(["Incorrect"], "c")],
        aggregation="majority",
    )
    out = panel.judge_one_sync({"prompt": "q", "response": "a"})
    assert out.score == 0.0 and out.tie and out.n_counted == 2
    assert out.judgments[1].error.startswith("parse: ")


def test_weighted_renormalises_over_the_judges_that_scored() -> None:
    panel = Panel([ConstJudge(1.0), ConstJudge(None), ConstJudge(0.0)], "weighted", [1, 5, 3])
    assert panel.judge_one_sync({"response": "a"}).score == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"judges": []}, "at least one judge"),
        ({"aggregation": "mode"}, "unknown aggregation 'mode'"),
        ({"aggregation": "weighted"}, "needs weights"),
        ({"aggregation": "weighted", "weights": [1.0]}, "1 weights for 2 judges"),
        ({"aggregation": "weighted", "weights": [1.0, -1.0]}, "not negative"),
        ({"aggregation": "weighted", "weights": [0.0, 0.0]}, "sum to 0"),
        ({"aggregation": "mean", "weights": [1.0, 1.0]}, "only used with"),
        ({"judges": ["mock:x"]}, "not a judge"),
    ],
)
def test_bad_configuration(kwargs: dict[str, Any], match: str) -> None:
    args: dict[str, Any] = {"judges": [ConstJudge(1.0), ConstJudge(0.0)], **kwargs}
    with pytest.raises(ConfigError, match=match):
        Panel(**args)


def test_items_are_checked_before_any_call_and_fields_map() -> None:
    model = MockModel("m", outputs=["Correct"], cycle=True)
    panel = Panel([LLMJudge(model, template="true_false"), ConstJudge(1.0)])
    with pytest.raises(DataError, match=r"item 2: missing field\(s\) \['response'\]"):
        panel.judge_sync([{"prompt": "q", "response": "a"}, {"prompt": "q"}])
    assert model.calls == 0
    results = panel.judge_sync(
        [{"question": "q", "answer": "a", "score": 3}],
        fields={"prompt": "question", "response": "answer"},
    )
    assert results.scores == [1.0]
    row = results.to_records()[0]
    assert row["score"] == 3 and row["panel_score"] == 1.0  # input columns kept, not clobbered
    assert "<answer>\na\n</answer>" in model.requests[0].messages[-1].content


def test_results_container_and_pandas() -> None:
    pd = pytest.importorskip("pandas")
    panel = Panel([judge(["Correct", "Incorrect"], "a"), judge(["Correct"], "b")], name="p")
    results = panel.judge_sync(pd.DataFrame(ITEMS[:4]), concurrency=1)
    assert results.scores == [1.0, 0.5, 1.0, 0.5]
    assert results.spreads == [0.0, 1.0, 0.0, 1.0]
    assert results.mean() == 0.75 and results.n_failed == 0
    assert results.usage.calls == 8
    assert results.judge_names == ("a", "b")
    assert results.agreement() == {"mean_spread": 0.5, "unanimous_rate": 0.5}
    head = results[:2]
    assert isinstance(head, PanelResults) and head.judge_names == ("a", "b")
    assert head.scores == [1.0, 0.5] and head.to_records()[1]["prompt"] == "q1"
    df = results.to_pandas()
    assert list(df["judge_1_score"]) == [1.0, 0.0, 1.0, 0.0]
    assert {"panel_score", "judge_2_response", "prompt"} <= set(df.columns)
    config = json.loads(json.dumps(panel.describe()))  # JSON-able, for run manifests
    assert config["name"] == "p" and config["judges"][0]["kind"] == "llm_judge"
    assert config["aggregation"] == "mean" and config["weights"] is None


def test_panel_is_an_item_judge_and_nests() -> None:
    inner = Panel([ConstJudge(1.0), ConstJudge(0.0)], aggregation="min", name="inner")
    assert isinstance(inner, ItemJudge)
    outer = Panel([inner, ConstJudge(0.5)], aggregation="max")
    out = outer.judge_one_sync({"response": "x"})
    assert out.score == 0.5 and isinstance(out.judgments[0], PanelJudgment)
    assert out.model_dump(mode="json")["judgments"][0]["aggregation"] == "min"


def test_duplicate_judge_names_are_made_unique() -> None:
    panel = Panel([ConstJudge(1.0), ConstJudge(0.0)])
    assert panel.judge_names == ("const", "const#2")
    assert panel.judge_sync([{"response": "a"}]).judge_scores == {
        "const": [1.0],
        "const#2": [0.0],
    }


async def test_sync_twin_inside_a_running_loop() -> None:
    panel = jurist.Panel([ConstJudge(0.5), ConstJudge(1.0)], aggregation="median")
    assert panel.judge_sync([{"response": "a"}]).scores == [0.75]


scores_st = st.lists(
    st.one_of(st.none(), st.just(math.nan), st.floats(0, 1)), min_size=1, max_size=7
)


@given(scores_st, st.sampled_from(AGGREGATIONS))
def test_aggregate_properties(scores: list[float | None], how: str) -> None:
    weights = [1.0 + i for i in range(len(scores))] if how == "weighted" else None
    agg = aggregate(scores, how, weights)
    valid = [s for s in scores if s is not None and not math.isnan(s)]
    assert agg.n_counted == len(valid) and agg.n_counted + agg.n_failed == len(scores)
    if not valid:
        assert agg.score is None and agg.spread is None
    else:
        assert agg.score is not None
        assert min(valid) - 1e-12 <= agg.score <= max(valid) + 1e-12
        if how == "majority":
            assert agg.score in valid
        # the rule depends on the scores, not the judges' order (weights aside)
        if how != "weighted":
            assert aggregate(list(reversed(scores)), how).score == pytest.approx(agg.score)


@pytest.mark.slow
def test_real_server_judges_with_one_unreachable_on_every_call(llama_server: str) -> None:  # noqa: F811
    """A real llama.cpp judge, a scripted one, and one whose server refuses every call."""
    tiny = jurist.get_model(
        "openai:tiny", base_url=llama_server, api_key="x", json_mode="json_object"
    )
    dead = jurist.get_model(
        "openai:tiny", base_url=f"http://127.0.0.1:{free_port()}/v1", api_key="x", max_retries=0
    )
    panel = Panel(
        [
            LLMJudge(tiny, template="likert", max_tokens=4, name="llama"),
            LLMJudge(dead, template="likert", name="dead"),
            judge(["4"], "scripted", "likert"),
        ],
        aggregation="median",
    )
    results = panel.judge_sync(ITEMS)
    assert results.judge_failures()["dead"] == len(ITEMS)
    assert all(e.startswith("connection: ") for e in (p.judgments[1].error for p in results))
    assert results.judge_scores["scripted"] == [0.75] * len(ITEMS)
    for p in results:  # the random tiny model may or may not give a readable rating
        llama_ok = p.judgments[0].score is not None
        assert p.n_counted == 1 + llama_ok and p.n_failed == 2 - llama_ok
        assert p.score is not None
        assert p.judgments[0].response is not None  # the real server answered
    assert results.usage.calls >= len(ITEMS) * 2
