"""RewardModelJudge with scripted scalar models: its maps, its failures, fitting, and its
place as the cheap first tier of a cascade (low-margin pairs sent on to a stronger judge)."""

from __future__ import annotations

import math

import pytest

import jurist
from jurist.errors import APIConnectionError, ConfigError
from jurist.judges import PairwiseJudge, RewardModelJudge
from jurist.judges._reward_map import fit_map, pair_probability, sigmoid
from jurist.trust import CascadeJudge, outcome_confidence
from jurist.types import Request

REWARDS = {"4": 2.0, "five": -1.0, "Paris": 1.0, "Lyon": 0.8, "hi": 0.3, "hello": 0.35}


def by_response(request: Request) -> float:
    return REWARDS[request.messages[-1].content]


def scalar_model(name: str = "rm") -> jurist.Model:
    return jurist.get_model(f"mock:{name}", outputs=by_response, scalar=True)


def test_pointwise_map_and_raw_reward() -> None:
    judge = RewardModelJudge(scalar_model(), temperature=2.0, center=1.0)
    out = judge.judge_one_sync({"prompt": "2+2?", "response": "4"})
    assert out.verdict == 2.0
    assert out.score == pytest.approx(sigmoid(0.5))
    raw = judge.with_options(squash="none").judge_one_sync({"prompt": "2+2?", "response": "five"})
    assert raw.score == -1.0 and raw.confidence is None
    assert judge.describe()["squash"] == "sigmoid"
    assert judge.describe()["temperature"] == 2.0


def test_the_conversation_sent_is_the_items_with_a_system_prompt() -> None:
    model = scalar_model()
    judge = RewardModelJudge(model, system_prompt="Be brief.")
    judge.judge_one_sync({"prompt": "2+2?", "response": "4"})
    sent = model.requests[-1].messages  # type: ignore[attr-defined]
    assert [(m.role, m.content) for m in sent] == [
        ("system", "Be brief."),
        ("user", "2+2?"),
        ("assistant", "4"),
    ]


def test_pairwise_probability_winner_and_confidence() -> None:
    judge = RewardModelJudge(scalar_model(), pairwise=True, temperature=0.5)
    out = judge.judge_one_sync({"prompt": "capital?", "response_a": "Lyon", "response_b": "Paris"})
    p = pair_probability(0.8, 1.0, temperature=0.5)
    assert out.score == pytest.approx(p) and out.winner == "B"
    assert out.forward.verdict == pytest.approx(-0.2)
    assert out.forward.confidence == pytest.approx(1 - p)
    assert out.forward.distribution == pytest.approx({"A": p, "B": 1 - p})
    assert out.consistent is None and out.swapped is None  # one reading: no position


def test_a_failed_reward_is_an_error_never_a_score() -> None:
    def flaky(request: Request) -> float | BaseException:
        if request.messages[-1].content == "five":
            return APIConnectionError("mock:rm: cannot reach the server", model="mock:rm")
        return 1.0

    model = jurist.get_model("mock:rm", outputs=flaky, scalar=True)
    judge = RewardModelJudge(model, pairwise=True)
    out = judge.judge_one_sync({"prompt": "2+2?", "response_a": "4", "response_b": "five"})
    assert out.score is None and out.winner is None
    assert out.error.startswith("connection: response B: mock:rm: cannot reach")
    point = RewardModelJudge(model).judge_one_sync({"prompt": "2+2?", "response": "five"})
    assert point.score is None and point.error.startswith("connection:")


def test_pointwise_fit_recovers_center_and_temperature() -> None:
    values = [-3.0, -2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0]
    labels = [sigmoid((v - 0.7) / 1.3) for v in values]  # soft labels of a known map
    fit = fit_map(values, labels, center=True)
    assert fit.temperature == pytest.approx(1.3, rel=1e-4)
    assert fit.center == pytest.approx(0.7, abs=1e-4)
    with pytest.raises(jurist.JuristError, match="label 1"):
        fit_map([0.0, 1.0], [0.0, 2.0], center=False)


def test_pointwise_judge_fit_on_items() -> None:
    judge = RewardModelJudge(scalar_model())
    items = [{"prompt": "q", "response": r} for r in REWARDS]
    labels = [sigmoid((REWARDS[r] - 0.5) / 0.25) for r in REWARDS]
    fitted = judge.fit_sync(items, labels)
    assert fitted.config.temperature == pytest.approx(0.25, rel=1e-3)
    assert fitted.config.center == pytest.approx(0.5, abs=1e-3)
    with pytest.raises(ConfigError, match="no map to fit"):
        judge.with_options(squash="none").fit_sync(items, labels)


def test_cascade_reward_model_first_then_a_stronger_judge_on_low_margins() -> None:
    """The reward model keeps the pairs it is sure of (a wide margin); the close ones go to
    the stronger (scripted) pairwise judge."""
    rm = RewardModelJudge(scalar_model(), pairwise=True, temperature=0.5, name="rm")
    strong_model = jurist.get_model("mock:strong", outputs=["[[B>>A]]"], cycle=True)
    strong = PairwiseJudge(strong_model, template="arena_hard", swap=False, name="strong")

    def confidence(outcome: object) -> float | None:  # the strong judge is trusted outright
        found = outcome_confidence(outcome)
        return 1.0 if found is None else found

    cascade = CascadeJudge([rm, strong], thresholds=[0.9, 0.0], confidence=confidence)
    wide = {"prompt": "2+2?", "response_a": "4", "response_b": "five"}  # margin 3
    close = {"prompt": "hi", "response_a": "hi", "response_b": "hello"}  # margin -0.05
    out_wide, out_close = cascade.judge_sync([wide, close])
    assert out_wide.tier_name == "rm" and out_wide.score == pytest.approx(sigmoid(6.0))
    assert out_close.tier_name == "strong" and out_close.score == 0.0
    assert strong_model.calls == 1  # type: ignore[attr-defined]
    assert math.isclose(out_close.steps[0].confidence, 1 - sigmoid(-0.1))


def test_catalog_entry_round_trip(tmp_path: object) -> None:
    from jurist.catalog._dump import entry_of

    judge = RewardModelJudge(scalar_model(), pairwise=True, temperature=0.3, name="rm-pair")
    entry = entry_of(judge)
    assert entry == {
        "kind": "reward_model",
        "model": "mock:rm",
        "model_options": {"scalar": True},
        "pairwise": True,
        "temperature": 0.3,
        "name": "rm-pair",
    }
