"""PairwiseJudge: both orders, the consistency rule, win rate with ties as half."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import jurist
from jurist.errors import ConfigError, DataError, InternalServerError
from jurist.judges import ItemJudge, PairwiseJudge
from jurist.models import MockModel
from jurist.templates import Label, LabelScale, Template
from jurist.types import Request
from tests._llama_fixtures import llama_server, tiny_gguf  # noqa: F401

PAIR = {"prompt": "2+2?", "response_a": "four", "response_b": "five"}


def first_shown(request: Request) -> str:
    """Which response the judge saw first, by content (A is 'four' in PAIR)."""
    text = request.messages[-1].content
    return "four" if text.index("four") < text.index("five") else "five"


def prefers(good: str, tie: bool = False) -> MockModel:
    """A fair judge: picks the response ``good`` wherever it is shown."""

    def fn(request: Request) -> str:
        if tie:
            return "Both are fine. [[C]]"
        return "[[A]]" if first_shown(request) == good else "[[B]]"

    return MockModel("fair", outputs=fn)


def test_both_orders_and_the_swapped_call_puts_b_first() -> None:
    model = prefers("four")
    out = PairwiseJudge(model).judge_one_sync(PAIR)
    assert (out.winner, out.score, out.consistent, out.error) == ("A", 1.0, True, None)
    assert model.calls == 2
    assert sorted(first_shown(r) for r in model.requests) == ["five", "four"]
    assert out.forward.verdict == "A" and out.swapped is not None and out.swapped.verdict == "B"
    assert out.preferences == (1.0, 1.0)
    assert out.usage.calls == 2


def test_b_wins_and_ties() -> None:
    assert PairwiseJudge(prefers("five")).judge_one_sync(PAIR).winner == "B"
    tie = PairwiseJudge(prefers("", tie=True)).judge_one_sync(PAIR)
    assert (tie.winner, tie.score, tie.consistent) == ("tie", 0.5, True)


def test_position_bias_becomes_a_tie_by_default() -> None:
    always_first = MockModel("biased", outputs=["[[A]]"], cycle=True)
    out = PairwiseJudge(always_first).judge_one_sync(PAIR)
    assert (out.winner, out.score, out.consistent) == ("tie", 0.5, False)
    assert out.preferences == (1.0, 0.0)


def test_inconsistent_mode_keeps_the_mean_and_win_rate_leaves_it_out() -> None:
    def fn(request: Request) -> str:  # biased towards the first on one item only
        text = request.messages[-1].content
        if "biased" in text:
            return "[[A]]"
        return "[[A]]" if first_shown(request) == "four" else "[[B]]"

    judge = PairwiseJudge(MockModel("m", outputs=fn), consistency="inconsistent")
    results = judge.judge_sync([PAIR, {**PAIR, "prompt": "biased?"}])
    assert results.winners == ["A", "inconsistent"]
    assert results.scores == [1.0, 0.5]
    s = results.summary()
    assert (s.n_inconsistent, s.n_counted, s.win_rate) == (1, 1, 1.0)
    assert (s.n_both_orders, s.n_consistent, s.consistency_rate) == (2, 1, 0.5)
    assert s.first_position_rate == 0.75  # 3 of the 4 single-order verdicts picked the first


def test_one_order_only() -> None:
    model = MockModel("m", outputs=["[[B]]"])
    out = PairwiseJudge(model, swap=False).judge_one_sync(PAIR)
    assert (out.winner, out.score, out.consistent, out.swapped) == ("B", 0.0, None, None)
    assert model.calls == 1


def test_a_failed_order_fails_the_pair_and_keeps_both_judgments() -> None:
    def fn(request: Request) -> str:
        if first_shown(request) == "five":
            raise InternalServerError("overloaded", status_code=503)
        return "[[A]]"

    out = PairwiseJudge(MockModel("m", outputs=fn)).judge_one_sync(PAIR)
    assert out.score is None and out.winner is None and out.consistent is None
    assert out.error == "api: swapped order (B shown first): overloaded"
    assert out.forward.score == 1.0 and out.swapped is not None and out.swapped.score is None
    unread = PairwiseJudge(MockModel("m", outputs=["no verdict"], cycle=True))
    out = unread.judge_one_sync(PAIR, retries=1)
    assert out.error is not None and out.error.startswith("parse: first order (A shown first): ")
    assert out.forward.attempts == 2


def test_arena_hard_levels_average_when_consistent() -> None:
    def fn(request: Request) -> str:
        return "[[A>>B]]" if first_shown(request) == "four" else "[[B>A]]"

    out = PairwiseJudge(MockModel("m", outputs=fn), template="arena_hard").judge_one_sync(PAIR)
    assert (out.winner, out.consistent) == ("A", True)
    assert out.score == pytest.approx(0.875) and out.preferences == (1.0, 0.75)


def custom_template() -> Template:
    return Template(
        name="which",
        kind="pairwise",
        instructions="Pick the better answer: reply First, Second or Same.",
        item="Q: {prompt}\n<first>{response_a}</first>\n<second>{response_b}</second>",
        fields=("prompt", "response_a", "response_b"),
        scale=LabelScale(
            labels=(
                Label(name="First", score=1.0),
                Label(name="Second", score=0.0),
                Label(name="Same", score=0.5),
            )
        ),
    )


def test_custom_pairwise_template_and_field_mapping() -> None:
    pd = pytest.importorskip("pandas")

    def fn(request: Request) -> str:
        return "First" if first_shown(request) == "four" else "Second"

    judge = PairwiseJudge(MockModel("m", outputs=fn), template=custom_template())
    frame = pd.DataFrame(
        [
            {"q": "2+2?", "x": "four", "y": "five", "human": "A"},
            {"q": "2+3?", "x": "five", "y": "four", "human": "B"},
        ]
    )
    results = judge.judge_sync(frame, fields={"prompt": "q", "response_a": "x", "response_b": "y"})
    assert results.winners == ["A", "B"] and results.win_rate() == 0.5
    assert results.consistency_rate() == 1.0
    df = results.to_pandas()
    assert list(df["human"]) == ["A", "B"] and list(df["pair_winner"]) == ["A", "B"]
    assert list(df["forward_verdict"]) == ["First", "Second"]
    assert list(df["swapped_verdict"]) == ["Second", "First"]
    assert df["pair_prompt_tokens"].min() > 0
    with pytest.raises(DataError, match=r"item 1: missing field\(s\) \['y'\]"):
        judge.judge_sync(
            [{"q": "?", "x": "a"}], fields={"prompt": "q", "response_a": "x", "response_b": "y"}
        )


def test_win_rate_counts_ties_as_half_and_reports_counts() -> None:
    def fn(request: Request) -> str:
        text = request.messages[-1].content
        if "tie" in text:
            return "[[C]]"
        if "fail" in text:
            return "unreadable"
        return "[[A]]" if first_shown(request) == "four" else "[[B]]"

    items = [
        PAIR,
        PAIR,
        {**PAIR, "prompt": "tie?"},
        {**PAIR, "response_a": "five", "response_b": "four"},
    ]
    items.append({**PAIR, "prompt": "fail?"})
    results = PairwiseJudge(MockModel("m", outputs=fn)).judge_sync(items)
    s = results.summary()
    assert (s.n_a, s.n_b, s.n_tie, s.n_failed, s.n_counted) == (2, 1, 1, 1, 4)
    assert s.win_rate == pytest.approx(2.5 / 4)
    assert s.consistency_rate == 1.0 and s.first_position_rate == 0.5
    assert "win_rate=0.625" in repr(results)


def test_configuration_errors_and_contract() -> None:
    with pytest.raises(ConfigError, match="not a pairwise template"):
        PairwiseJudge("mock:m", template="likert")
    with pytest.raises(ConfigError, match="consistency must be"):
        PairwiseJudge("mock:m", consistency="coin")  # type: ignore[arg-type]
    judge = PairwiseJudge("mock:m")
    assert isinstance(judge, ItemJudge)
    assert judge.required_fields == ("prompt", "response_a", "response_b")
    config = json.loads(json.dumps(judge.describe()))
    assert config["kind"] == "pairwise" and config["judge"]["template"]["name"] == "mt_bench_pair"
    assert config["swap"] is True and config["consistency"] == "tie"
    assert jurist.PairwiseJudge is PairwiseJudge


def test_a_panel_of_pairwise_judges() -> None:
    panel = jurist.Panel(
        [PairwiseJudge(prefers("four"), name="p1"), PairwiseJudge(prefers("five"), name="p2")]
    )
    out = panel.judge_one_sync(PAIR)
    assert out.judge_scores == [1.0, 0.0] and out.score == 0.5


ARENA = [("A>>B", 1.0), ("A>B", 0.75), ("A=B", 0.5), ("B>A", 0.25), ("B>>A", 0.0)]


@given(st.sampled_from(ARENA), st.sampled_from(ARENA), st.sampled_from(["tie", "inconsistent"]))
def test_swapping_the_item_mirrors_the_verdict(
    first: tuple[str, float], second: tuple[str, float], consistency: Any
) -> None:
    """A judge whose verdict depends only on position gives mirrored results for the
    mirrored pair: winner A <-> B, score -> 1 - score; scores stay in [0, 1]."""

    def fn(request: Request) -> str:
        return f"[[{first[0] if first_shown(request) == 'four' else second[0]}]]"

    judge = PairwiseJudge(MockModel("m", outputs=fn), "arena_hard", consistency=consistency)
    out = judge.judge_one_sync(PAIR)
    mirrored = judge.judge_one_sync({**PAIR, "response_a": "five", "response_b": "four"})
    assert out.score is not None and mirrored.score is not None
    assert 0.0 <= out.score <= 1.0
    assert mirrored.score == pytest.approx(1.0 - out.score)
    flip = {"A": "B", "B": "A", "tie": "tie", "inconsistent": "inconsistent"}
    assert mirrored.winner == flip[str(out.winner)]
    assert out.consistent == mirrored.consistent


@pytest.mark.slow
def test_against_the_real_llama_server(llama_server: str) -> None:  # noqa: F811
    model = jurist.get_model(
        "openai:tiny", base_url=llama_server, api_key="x", json_mode="json_object"
    )
    judge = PairwiseJudge(model, template=custom_template(), max_tokens=8)  # fits the context
    results = judge.judge_sync([PAIR, {**PAIR, "prompt": "3+3?"}])
    assert len(results) == 2 and results.usage.calls == 4
    for pair in results:  # a random tiny model: either a verdict or a recorded parse failure
        assert pair.forward.response is not None and pair.swapped is not None
        assert pair.swapped.response is not None
        if pair.score is None:
            assert pair.error is not None and pair.error.startswith("parse: ")
        else:
            assert pair.winner in ("A", "B", "tie")
