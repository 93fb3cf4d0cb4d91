"""Rewards never pay for garbage (issue 14.1): clamping is for a hair outside [0, 1]."""

from __future__ import annotations

import pytest

from jurist.models import MockModel
from jurist.rewards import (
    RewardBackend,
    compute_score,
    llm_as_judge_reward,
    llm_as_judge_rewards,
    read_raw_score,
    trl_reward_func,
    verl_compute_score,
)


def backend(*outputs: str) -> RewardBackend:
    return RewardBackend(MockModel("judge", outputs=list(outputs), cycle=True))


@pytest.mark.parametrize(
    "output", ["Score: 99", "nonsense 7", '{"verdict":99', "Score: 1.2", "Score: -3", "7"]
)
def test_far_out_of_range_or_formless_numbers_are_parse_failures(output: str) -> None:
    out = llm_as_judge_reward("Paris", "Paris", llm_backend=backend(output))
    assert out["reward"] == 0.0 and out["parse_failed"] is True
    assert out["raw_score"] is None and out["clamped"] is False
    assert out["error"].startswith("parse: ")


def test_the_error_names_the_number_and_the_tolerance() -> None:
    out = llm_as_judge_reward("Paris", "Paris", llm_backend=backend("Score: 99"))
    assert "99" in out["error"] and "tolerance 0.05" in out["error"]


@pytest.mark.parametrize(
    ("output", "value", "raw"),
    [("Score: 1.03", 1.0, 1.03), ("Score: -0.02", 0.0, -0.02), ("1.05", 1.0, 1.05)],
)
def test_a_hair_outside_is_clamped(output: str, value: float, raw: float) -> None:
    out = llm_as_judge_reward("Paris", "Paris", llm_backend=backend(output))
    assert out["reward"] == value and out["raw_score"] == pytest.approx(raw)
    assert out["clamped"] is True and out["parse_failed"] is False and out["error"] is None


def test_tolerance_is_a_parameter() -> None:
    b = backend("Score: 1.2")
    assert llm_as_judge_reward("P", "P", llm_backend=b, tolerance=0.25)["reward"] == 1.0
    assert llm_as_judge_reward("P", "P", llm_backend=b, tolerance=0.0)["parse_failed"] is True
    exact = llm_as_judge_reward("P", "P", llm_backend=backend("Score: 1.0"), tolerance=0.0)
    assert exact["reward"] == 1.0 and exact["clamped"] is False
    with pytest.raises(ValueError, match="tolerance"):
        llm_as_judge_reward("P", "P", llm_backend=b, tolerance=-0.1)


@pytest.mark.parametrize(
    ("output", "value"), [("Score: 99", 1.0), ("nonsense 7", 1.0), ('{"verdict":99', 1.0)]
)
def test_lenient_keeps_the_seed_behaviour(output: str, value: float) -> None:
    out = llm_as_judge_reward("Paris", "Paris", llm_backend=backend(output), lenient=True)
    assert out["reward"] == value and out["clamped"] is True and out["parse_failed"] is False


def test_batch_form_takes_the_same_options() -> None:
    b = backend("Score: 99")
    strict = llm_as_judge_rewards(["a", "b"], ["a", "b"], b)
    assert [r["parse_failed"] for r in strict] == [True, True]
    lenient = llm_as_judge_rewards(["a", "b"], ["a", "b"], b, lenient=True)
    assert [r["reward"] for r in lenient] == [1.0, 1.0]


def test_read_raw_score_strict_reads_only_the_verdict_form() -> None:
    assert read_raw_score("Score: 1.03") == (1.03, None)
    raw, why = read_raw_score("nonsense 7")
    assert raw is None and why is not None and why.startswith("parse: ")
    assert read_raw_score("nonsense 7", lenient=True) == (7.0, None)


def test_trl_and_verl_adapters_are_strict() -> None:
    b = backend("Score: 99", "Score: 0.4")
    fn = trl_reward_func(llm_backend=b, failure_value=None)
    assert fn(completions=["x", "y"], answer=["x", "y"]) == [None, 0.4]
    compute = verl_compute_score(llm_backend=backend("nonsense 7"))
    out = compute("src", "41", "42")
    assert out["score"] == 0.0 and out["parse_failed"] == 1.0 and out["failed"] == 1.0
    assert compute_score.__name__ == "compute_score"
