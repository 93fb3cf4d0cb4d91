"""Win rates, length-controlled win rates and Bradley-Terry scores on planted data (issue 23,
item 2): known strengths and effects are recovered, intervals cover them, edge cases and bad
input give clear errors. The real-data goldens are in tests/golden/test_winrate_golden.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from jurist.errors import DataError
from jurist.metrics import (
    bootstrap_interval,
    bradley_terry,
    fit_length_controlled,
    length_controlled_win_rate,
    markdown_counts,
    preference_from_alpaca,
    style_differences,
    win_rate,
)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)), dtype=float)


# --- win_rate ---------------------------------------------------------------------------


def test_win_rate_counts_and_standard_error() -> None:
    p = [1, 1, 0, 0.5, 0.5, 0.9, 0.1]
    wr = win_rate(p)
    assert wr.value == pytest.approx(100 * np.mean(p))
    assert wr.standard_error == pytest.approx(100 * np.std(p, ddof=1) / math.sqrt(len(p)))
    assert (wr.n, wr.n_wins, wr.n_draws, wr.n_losses) == (7, 3, 2, 2)


def test_win_rate_of_one_item_has_no_standard_error() -> None:
    wr = win_rate([1.0])
    assert wr.value == 100.0 and math.isnan(wr.standard_error)


def test_weighted_win_rate_equals_repeating_items() -> None:
    assert win_rate([1, 0, 0.5], weights=[2, 1, 1]).value == win_rate([1, 1, 0, 0.5]).value


@pytest.mark.parametrize(
    ("preference", "message"),
    [
        ([], "preference is empty"),
        ([0.2, float("nan")], r"preference\[1\] is nan"),
        ([0.2, "x"], r"preference\[1\] is not a number: 'x'"),
        ([0.2, 1.7], r"preference\[1\] is 1.7.*preference_from_alpaca"),
        ([[0.1, 0.2]], "one-dimensional"),
    ],
)
def test_win_rate_rejects_bad_preferences_naming_the_item(preference: object, message: str) -> None:
    with pytest.raises(DataError, match=message):
        win_rate(preference)  # type: ignore[arg-type]


def test_win_rate_rejects_bad_weights() -> None:
    with pytest.raises(DataError, match="weights has 1 items, preference has 2"):
        win_rate([1, 0], weights=[1])
    with pytest.raises(DataError, match=r"weights\[1\] is -1.0"):
        win_rate([1, 0], weights=[1, -1])


def test_preference_from_alpaca_maps_its_scale_and_rejects_others() -> None:
    assert preference_from_alpaca([1, 2, 1.5, 0]).tolist() == [0.0, 1.0, 0.5, 0.5]
    with pytest.raises(DataError, match=r"preference\[1\] is 0.7.*\[1, 2\]"):
        preference_from_alpaca([1.2, 0.7])


# --- length-controlled win rate ----------------------------------------------------------


def _planted_lc(
    rng: np.random.Generator, n: int, theta: float, beta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    delta = rng.normal(150, 300, n)
    t = np.tanh(delta / delta.std(ddof=1))
    y = rng.binomial(1, _sigmoid(theta + beta * t)).astype(float)
    return y, 3000 + delta, np.full(n, 3000.0)


def test_length_controlled_recovers_the_planted_model_term_with_covering_intervals() -> None:
    rng = np.random.default_rng(3)
    theta, beta = -0.4, 1.2
    truth = 100 * _sigmoid(np.array(theta))
    covered = 0
    for _ in range(100):
        y, s_len, b_len = _planted_lc(rng, 400, theta, beta)
        lc = length_controlled_win_rate(y, s_len, b_len, length_prior_precision=0)
        covered += int(abs(lc.value - truth) < 1.96 * lc.standard_error)
    assert covered >= 88  # nominal 95 of 100
    y, s_len, b_len = _planted_lc(rng, 20000, theta, beta)
    lc = length_controlled_win_rate(y, s_len, b_len, length_prior_precision=0)
    assert lc.value == pytest.approx(truth, abs=1.0)
    assert lc.length_coef == pytest.approx(beta, abs=0.1)
    assert lc.raw > lc.value  # the longer answers bought wins; length control takes them back


def test_length_controlled_without_length_variation_is_the_raw_rate() -> None:
    lc = length_controlled_win_rate([1, 0, 1, 1, 0.5], [10] * 5, [10] * 5)
    assert lc.value == pytest.approx(lc.raw) and lc.length_coef == 0.0 and lc.length_scale == 0.0


def test_length_controlled_of_a_system_that_loses_everything_does_not_pretend() -> None:
    lc = length_controlled_win_rate([0.0] * 20, list(range(20)), [10] * 20)
    assert not lc.converged and lc.value < 0.1 and math.isnan(lc.standard_error)


def test_length_controlled_rejects_bad_lengths_naming_the_item() -> None:
    with pytest.raises(DataError, match="system_length has 2 items, preference has 3"):
        length_controlled_win_rate([1, 0, 1], [1, 2], [1, 2, 3])
    with pytest.raises(DataError, match=r"baseline_length\[2\] is -3.0"):
        length_controlled_win_rate([1, 0, 1], [1, 2, 3], [1, 2, -3])
    with pytest.raises(DataError, match="instruction_difficulty has 1 items"):
        length_controlled_win_rate([1, 0], [1, 2], [1, 2], instruction_difficulty=[0.0])


def test_joint_fit_recovers_planted_difficulty_and_length_free_rates() -> None:
    rng = np.random.default_rng(5)
    n = 600
    d = rng.normal(0, 1.2, n)
    thetas = {"a": -2.5, "b": -1.0, "c": 0.0, "d": 1.0}
    prefs, lens = {}, {}
    for name, theta in thetas.items():
        delta = rng.normal(200 * theta, 300, n)  # better systems also write longer answers
        t = np.tanh(delta / delta.std(ddof=1))
        prefs[name] = _sigmoid(theta + d + 1.5 * t)  # soft preferences, as from logprobs
        lens[name] = 3000 + delta
    fit = fit_length_controlled(prefs, lens, np.full(n, 3000.0))
    assert fit.converged
    for name, theta in thetas.items():
        truth = 100 * float(np.mean(_sigmoid(theta + d)))
        assert fit[name].value == pytest.approx(truth, abs=1.5), name
        assert fit[name].length_coef == pytest.approx(1.5, abs=0.2)
    assert float(np.corrcoef(fit.difficulty_array, d)[0, 1]) > 0.95


def test_joint_fit_aligns_systems_by_item_id() -> None:
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 1, 50)
    length = rng.uniform(100, 900, 50)
    base = np.full(50, 500.0)
    order = rng.permutation(50)
    fit = fit_length_controlled(
        {"x": p, "y": p[order]},
        {"x": length, "y": length[order]},
        {"x": base, "y": base},
        items={"x": list(range(50)), "y": order.tolist()},
    )
    assert fit["x"].value == pytest.approx(fit["y"].value, abs=1e-6)
    with pytest.raises(DataError, match="different numbers of items"):
        fit_length_controlled(
            {"x": p, "y": p[:40]}, {"x": length, "y": length[:40]}, {"x": base, "y": base[:40]}
        )
    with pytest.raises(DataError, match="items has no entry for system 'y'"):
        fit_length_controlled(
            {"x": p, "y": p}, {"x": length, "y": length}, base, items={"x": range(50)}
        )
    with pytest.raises(KeyError, match="no system 'z'"):
        fit["z"]
    with pytest.raises(DataError, match="needs at least two systems, got 1"):
        fit_length_controlled({"x": p}, {"x": length}, base)


def test_length_controlled_of_all_ties_is_50() -> None:
    args = ([0.5] * 30, list(range(100, 130)), [115] * 30)
    plain = length_controlled_win_rate(*args, length_prior_precision=0)
    assert plain.converged and plain.value == pytest.approx(50.0) and plain.raw == 50.0
    assert plain.length_coef == pytest.approx(0.0, abs=1e-6)
    # the default length prior (a stand-in for AlpacaEval's gamed baselines) outweighs 30
    # items: it pulls the length weight towards 1.5, and the rate moves within its error
    lc = length_controlled_win_rate(*args)
    assert lc.length_coef > 0.5 and abs(lc.value - 50.0) < lc.standard_error


# --- Bradley-Terry -----------------------------------------------------------------------


def _planted_battles(
    rng: np.random.Generator, strengths: dict[str, float], n: int, tie: float = 0.1
) -> list[dict[str, object]]:
    names = list(strengths)
    out: list[dict[str, object]] = []
    for _ in range(n):
        a, b = rng.choice(len(names), 2, replace=False)
        p = _sigmoid(np.array(strengths[names[a]] - strengths[names[b]]))
        u = rng.uniform()
        winner = "tie" if u < tie else ("model_a" if u < tie + (1 - tie) * p else "model_b")
        out.append({"model_a": names[a], "model_b": names[b], "winner": winner})
    return out


STRENGTHS = {"base": 0.0, "m1": 1.0, "m2": -0.7, "m3": 0.4, "m4": -1.5}


def test_bradley_terry_recovers_planted_strengths() -> None:
    battles = _planted_battles(np.random.default_rng(0), STRENGTHS, 20000, tie=0.0)
    res = bradley_terry(battles, baseline="base", bootstrap=50)
    assert res.converged and res.unbounded == [] and res.bootstrap_unconverged == 0
    for model, s in STRENGTHS.items():
        assert res[model].score == pytest.approx(100 * _sigmoid(np.array(s)), abs=1.5), model
        assert res[model].lower <= res[model].score <= res[model].upper
    assert [r.model for r in res.rows] == ["m1", "m3", "base", "m2", "m4"]
    assert res["base"].rating == 1000.0 and res["m1"].rating == pytest.approx(1174, abs=15)


def test_bradley_terry_intervals_cover_the_planted_scores() -> None:
    rng = np.random.default_rng(1)
    truth = 100 * _sigmoid(np.array(STRENGTHS["m1"]))
    covered = 0
    for i in range(40):
        res = bradley_terry(
            _planted_battles(rng, STRENGTHS, 600), baseline="base", seed=i, bootstrap=200
        )
        covered += int(res["m1"].lower <= truth <= res["m1"].upper)
    assert covered >= 34  # nominal 38 of 40


def test_bootstrap_refits_at_once_equal_refits_one_at_a_time() -> None:
    """bradley_terry refits every resample in one batched Newton loop (_bt_fit); each
    resample gets the coefficients and the convergence of its own fit, also where a model
    never loses in a resample (no finite strength: not converged in both)."""
    from jurist.metrics._battles import read_battles
    from jurist.metrics._bradley_terry import _fit, _fit_pooled_many

    battles = _planted_battles(np.random.default_rng(6), STRENGTHS, 120)
    battles += [{"model_a": "m5", "model_b": "base", "winner": "model_a"}] * 2
    b = read_battles(battles)
    base, n = b.models.index("base"), len(b)
    pairs, inv = np.unique(b.a * len(b.models) + b.b, return_inverse=True)
    pooled = (pairs.astype(np.int64), inv.astype(np.int64).ravel())
    start, _ = _fit(b, np.ones(n), None, base, None, pooled)
    rng = np.random.default_rng(0)
    counts = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(30)])
    many, ok = _fit_pooled_many(b, counts.astype(float), base, start, pooled)
    assert not ok.all() and ok.any()  # m5 is in some resamples (unbounded) and not in others
    for r, row in enumerate(counts.astype(float)):
        one, one_ok = _fit(b, row, None, base, start, pooled)
        assert one_ok == ok[r], r
        np.testing.assert_allclose(many[r], one, rtol=1e-9, atol=1e-9, err_msg=str(r))


def test_bradley_terry_matches_arena_hard_logistic_regression() -> None:
    sklearn = pytest.importorskip("sklearn.linear_model")
    battles = pd.DataFrame(_planted_battles(np.random.default_rng(4), STRENGTHS, 3000))
    res = bradley_terry(battles, baseline="base", bootstrap=0)
    # Arena-Hard-Auto's compute_mle_elo: one row per battle and per side, ties as half a win
    models = sorted(STRENGTHS)
    X, y, w = [], [], []
    for a, b, win in battles[["model_a", "model_b", "winner"]].itertuples(index=False):
        row = np.zeros(len(models))
        row[models.index(a)], row[models.index(b)] = 1.0, -1.0
        p = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}[win]
        X += [row, row]
        y += [1, 0]
        w += [p, 1 - p]
    lr = sklearn.LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-10, max_iter=10000)
    lr.fit(np.array(X), np.array(y), sample_weight=np.array(w))
    coef = lr.coef_[0] - lr.coef_[0][models.index("base")]
    for k, model in enumerate(models):
        assert res[model].score == pytest.approx(100 * _sigmoid(coef[k]), abs=1e-3)


def test_bradley_terry_all_ties_scores_everyone_50() -> None:
    battles = [("a", "b", "tie"), ("b", "c", "tie"), ("c", "a", "tie"), ("a", "c", "tie")]
    res = bradley_terry(battles, baseline="a", bootstrap=100)
    assert all(r.score == pytest.approx(50.0) for r in res.rows)
    assert all(r.lower == pytest.approx(50.0) and r.upper == pytest.approx(50.0) for r in res.rows)


def test_bradley_terry_names_a_model_that_never_loses() -> None:
    battles = [("a", "base", "model_a")] * 5 + [("b", "base", "model_b"), ("b", "base", "model_a")]
    res = bradley_terry(battles, bootstrap=20)
    assert res.baseline == "base"  # the model in the most battles
    assert res.unbounded == ["a"] and not res.converged
    assert res["a"].score > 99.0
    assert res.bootstrap_unconverged >= 1


def test_bradley_terry_one_pair_and_the_default_baseline() -> None:
    res = bradley_terry(
        [("x", "y", "model_a"), ("x", "y", "model_b"), ("x", "y", "model_a")], bootstrap=0
    )
    assert res.baseline == "x" and res["y"].score == pytest.approx(100 / 3)


def test_bradley_terry_weights_count_battles_several_times() -> None:
    once = bradley_terry([("x", "y", "model_a")] * 3 + [("x", "y", "model_b")], bootstrap=0)
    weighted = bradley_terry(
        [{"model_a": "x", "model_b": "y", "winner": "model_a", "weight": 3},
         {"model_a": "x", "model_b": "y", "winner": "model_b"}],
        bootstrap=0,
    )  # fmt: skip
    assert weighted["x"].score == pytest.approx(once["x"].score)


@pytest.mark.parametrize(
    ("battles", "message"),
    [
        (pd.DataFrame({"model_a": ["x"], "model_b": ["y"]}), "battles has no column 'winner'"),
        ([{"model_a": "x", "model_b": "y", "winner": "A"}], "battle 0: winner is 'A'"),
        ([("x", "y", "tie"), ("x", "x", "tie")], "battle 1: model_a and model_b are both 'x'"),
        ([("x", "y", "tie"), ("x", None, "tie")], "battle 1: model_b is None"),
        ([("x", "y", 1.5)], "battle 0: winner is 1.5"),
        ([{"model_a": "x", "model_b": "y", "winner": "tie", "weight": -1}], "battle 0: weight"),
        ([{"model_a": "x", "winner": "tie"}], "battle 0 has no 'model_b'"),
        ([], "battles is empty"),
        ("x,y,tie", "battles must be a pandas DataFrame"),
    ],
)
def test_bradley_terry_rejects_bad_battles_naming_them(battles: object, message: str) -> None:
    with pytest.raises(DataError, match=message):
        bradley_terry(battles, bootstrap=0)


def test_bradley_terry_rejects_an_unknown_baseline_and_bad_style() -> None:
    battles = [("x", "y", "model_a"), ("x", "y", "model_b")]
    with pytest.raises(DataError, match="baseline 'z' is in no battle"):
        bradley_terry(battles, baseline="z")
    with pytest.raises(DataError, match="style feature 'length' has 1 values, there are 2"):
        bradley_terry(battles, style={"length": [0.1]})
    with pytest.raises(DataError, match="style feature 'bold' does not vary"):
        bradley_terry(battles, style={"bold": [0.0, 0.0]})


def test_style_control_separates_length_from_strength() -> None:
    rng = np.random.default_rng(7)
    strengths = {"base": 0.0, "verbose": 0.0, "good": 0.8}
    length_effect = 0.9  # per standard deviation of the length difference
    rows, length = [], []
    for _ in range(6000):
        model = rng.choice(["verbose", "good"])
        diff = rng.normal(
            0.6 if model == "verbose" else 0.0, 0.3
        )  # (len_a - len_b) / (len_a + len_b)
        rows.append((model, "base", diff))
        length.append(diff)
    z = (np.array(length) - np.mean(length)) / np.std(length, ddof=1)
    battles = []
    for (model, base, _), zi in zip(rows, z, strict=True):
        p = _sigmoid(np.array(strengths[model] + length_effect * zi))
        battles.append((model, base, "model_a" if rng.uniform() < p else "model_b"))
    plain = bradley_terry(battles, baseline="base", bootstrap=0)
    styled = bradley_terry(battles, baseline="base", bootstrap=100, style={"length": length})
    assert plain["verbose"].score > 60  # length buys the verbose model wins
    (coef,) = styled.style
    assert coef.name == "length" and coef.lower < length_effect < coef.upper
    # with style controlled, the scores are the planted strengths' (at the mean style)
    for model, s in strengths.items():
        truth = 100 * float(_sigmoid(np.array(s)))
        assert styled[model].lower <= truth <= styled[model].upper, model
    assert styled["verbose"].score == pytest.approx(50, abs=4)


def test_result_to_pandas_and_bootstrap_interval() -> None:
    res = bradley_terry(
        [("x", "y", "model_a"), ("x", "y", "model_b"), ("y", "x", "tie")], bootstrap=10
    )
    frame = res.to_pandas()
    assert list(frame.columns) == ["model", "score", "lower", "upper", "rating", "n_battles"]
    assert frame["model"].tolist() == [r.model for r in res.rows]
    assert bootstrap_interval(np.arange(5.0), level=0.5) == (1.0, 3.0)
    with pytest.raises(DataError, match="level must lie in"):
        bootstrap_interval([1.0], level=1.5)
    with pytest.raises(DataError, match="samples is empty"):
        bootstrap_interval([])


def test_style_differences_follow_arena_hard_and_feed_bradley_terry() -> None:
    a = ["## Plan\n1. first\n2. second\n**note**", "short"]
    b = ["A plain paragraph with several words in it.", "also short but longer"]
    feats = style_differences(a, b, lengths_a=[10, 1], lengths_b=[10, 4])
    assert feats["length"].tolist() == [0.0, pytest.approx(-0.6)]
    assert feats["header"][0] == pytest.approx(0.1 / 1.1)  # density 1/10 against 0
    assert feats["list"][0] == pytest.approx(0.2 / 1.2) and feats["bold"][0] == pytest.approx(
        0.1 / 1.1
    )
    assert markdown_counts("```\n- in code\n```\n- out") == (0, 1, 0)
    res = bradley_terry([("x", "y", "model_a"), ("x", "y", "model_b")], style=feats, bootstrap=0)
    assert [c.name for c in res.style] == ["length", "header", "list", "bold"]
    with pytest.raises(DataError, match="answers_a has 2 answers, answers_b 1"):
        style_differences(a, b[:1])
    with pytest.raises(DataError, match="lengths_b has 1 values, there are 2 answers"):
        style_differences(a, b, lengths_b=[3])
