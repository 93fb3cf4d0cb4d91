"""PPI++ estimates (jurist.metrics.ppi_mean and friends) and the plan's sampling.

The formulas are checked against a direct computation, the weighted design's
unbiasedness and coverage on synthetic data with a biased judge (thousands of draws at
once through the vectorised core), and each refusal by its reason.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from jurist.errors import ConfigError, UntrustedEstimateError
from jurist.metrics import (
    draw_plan,
    inclusion_probabilities,
    labels_for_width,
    ppi_agreement,
    ppi_mean,
    ppi_win_rate,
    residual_spread,
)
from jurist.metrics._ppi_core import uniform_ppi, weighted_ppi

Z = NormalDist().inv_cdf(0.975)


def _population(n: int = 2000, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Labels 0/1 with P(1) = 0.55 and a judge biased upward (its probability of 1)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.55).astype(float)
    f = np.clip(0.35 * y + 0.45 + rng.normal(0, 0.15, n), 0, 1)
    return y, f


def test_the_uniform_estimate_is_the_ppi_plus_plus_formula() -> None:
    y, f = _population(400)
    rng = np.random.default_rng(0)
    lab = np.zeros(y.size, dtype=bool)
    lab[rng.choice(y.size, 80, replace=False)] = True
    labels = [float(v) if m else None for v, m in zip(y, lab, strict=True)]
    est = ppi_mean(f.tolist(), labels)
    n, big_n = 80, 400
    cov = np.cov(y[lab], f[lab], ddof=1)[0, 1]
    lam = cov / ((1 + n / big_n) * f.var(ddof=1))
    theta = lam * f.mean() + (y[lab] - lam * f[lab]).mean()
    var = (y[lab] - lam * f[lab]).var(ddof=1) / n + lam**2 * f.var(ddof=1) / big_n
    assert est.power == pytest.approx(lam)
    assert est.estimate == pytest.approx(theta)
    assert est.upper - est.lower == pytest.approx(2 * Z * math.sqrt(var))
    assert est.labels_only.estimate == pytest.approx(y[lab].mean())
    assert est.judge_only is not None and est.judge_only.estimate == pytest.approx(f.mean())
    assert est.width < est.labels_only.width and est.effective_labels > n


def test_a_judge_of_pure_noise_falls_back_to_the_labels() -> None:
    y, _ = _population(1000)
    noise = np.random.default_rng(5).random(1000)
    labels = [float(v) if i % 5 == 0 else None for i, v in enumerate(y)]
    est = ppi_mean(noise.tolist(), labels)
    assert abs(est.power) < 0.3
    assert est.width == pytest.approx(est.labels_only.width, rel=0.05)


def test_uniform_and_weighted_draws_cover_a_biased_judges_truth() -> None:
    y, f = _population()
    truth, reps, n = y.mean(), 3000, 100
    rng = np.random.default_rng(2)
    idx = np.argsort(rng.random((reps, y.size)), axis=1)[:, :n]
    est, var, _ = uniform_ppi(y[idx], f[idx], f)
    assert np.mean(np.abs(est - truth) <= Z * np.sqrt(var)) >= 0.94
    assert abs(f.mean() - truth) > 0.05  # the judge alone is off
    # weighted: items drawn with unequal, known probabilities (Poisson draws)
    spread, _ = residual_spread(f.tolist())
    pi = inclusion_probabilities(spread, n)
    xi = (rng.random((reps, y.size)) < pi).astype(float)
    west, wvar, _ = weighted_ppi(y, f, xi, pi)
    assert abs(west.mean() - truth) < 0.005  # unbiased
    assert np.mean(np.abs(west - truth) <= Z * np.sqrt(wvar)) >= 0.94


def test_probabilities_weight_a_chosen_subset_and_bootstrap_agrees() -> None:
    y, f = _population(600)
    rng = np.random.default_rng(4)
    pi = inclusion_probabilities(residual_spread(f.tolist())[0], 150)
    picked = draw_plan(pi, rng)
    labels: list[float | None] = [None] * y.size
    probs: list[float | None] = [None] * y.size
    for i in picked:
        labels[i], probs[i] = float(y[i]), float(pi[i])
    est = ppi_mean(f.tolist(), labels, probabilities=probs)
    boot = ppi_mean(f.tolist(), labels, probabilities=probs, method="bootstrap", n_resamples=800)
    assert est.design == "weighted" and est.labels == 150
    assert est.lower <= y.mean() <= est.upper
    assert boot.estimate == est.estimate
    assert boot.width == pytest.approx(est.width, rel=0.25)


def test_strata_are_estimated_apart_and_weighted_by_size() -> None:
    y, f = _population(800)
    keys = ["a" if i < 200 else "b" for i in range(800)]
    labels = [float(v) if i % 4 == 0 else None for i, v in enumerate(y)]
    est = ppi_mean(f.tolist(), labels, strata=keys)
    assert est.strata is not None and {k: s.labels for k, s in est.strata.items()} == {
        "a": 50,
        "b": 150,
    }
    expected = 0.25 * est.strata["a"].estimate + 0.75 * est.strata["b"].estimate
    assert est.estimate == pytest.approx(expected)


def test_refusals_say_why() -> None:
    y, f = _population(300)
    few = [float(v) if i < 10 else None for i, v in enumerate(y)]
    with pytest.raises(UntrustedEstimateError, match="10 labels; an interval from labels needs"):
        ppi_mean(f.tolist(), few, where="runs/x: field 'human'")
    same = [1.0 if i % 3 == 0 else None for i in range(300)]
    with pytest.raises(UntrustedEstimateError, match="every one of the 100 labels is 1"):
        ppi_mean(f.tolist(), same)
    # labels only where the judge is most confident: not a random subset
    top = np.argsort(f)[-150:]
    picked = [float(y[i]) if i in set(top) else None for i in range(300)]
    with pytest.raises(UntrustedEstimateError, match="not a random subset"):
        ppi_mean(f.tolist(), picked)
    # the same subset with its (known) probabilities is accepted
    probs = [0.9 if i in set(top) else None for i in range(300)]
    assert ppi_mean(f.tolist(), picked, probabilities=probs).design == "weighted"
    with pytest.raises(UntrustedEstimateError, match=r"item \d+: .* in \(0, 1\], got 1.5"):
        ppi_mean(f.tolist(), picked, probabilities=[1.5] * 300)
    with pytest.raises(ConfigError, match="method must be analytic or bootstrap"):
        ppi_mean(f.tolist(), picked, method="exact")  # type: ignore[arg-type]


def test_win_rate_and_agreement_read_verdicts() -> None:
    rng = np.random.default_rng(9)
    human = rng.choice(["A", "B", "tie"], size=400, p=[0.5, 0.4, 0.1])
    judge = [h if rng.random() < 0.8 else "A" for h in human]  # leans to A
    labels = [h if i % 4 == 0 else None for i, h in enumerate(human)]
    est = ppi_win_rate(judge, labels)
    truth = np.mean([{"A": 1.0, "B": 0.0, "tie": 0.5}[h] for h in human])
    assert est.lower <= truth <= est.upper
    agree = ppi_agreement(judge, labels)
    assert agree.judge_only is None and agree.power == 0.0
    assert agree.estimate == pytest.approx(
        np.mean([j == h for j, h in zip(judge[::4], human[::4], strict=True)])
    )


def test_inclusion_probabilities_and_the_plan_draw() -> None:
    spread = np.array([5.0, 1, 1, 1, 1, 1, 1, 1])
    pi = inclusion_probabilities(spread, 3, uniform_share=0.2)
    assert pi.sum() == pytest.approx(3) and pi.max() <= 1 and pi[0] > pi[1]
    rng = np.random.default_rng(0)
    counts = np.zeros(8)
    for _ in range(20000):
        chosen = draw_plan(pi, rng)
        assert chosen.size == 3 and len(set(chosen.tolist())) == 3
        counts[chosen] += 1
    assert np.allclose(counts / 20000, pi, atol=0.015)
    done = np.array([True] + [False] * 7)
    assert inclusion_probabilities(spread, 3, exclude=done)[0] == 0
    with pytest.raises(ConfigError, match="cannot plan 9 labels among 8"):
        inclusion_probabilities(spread, 9)


def test_labels_for_a_width_from_the_labels_so_far() -> None:
    y, f = _population(2000)
    labels = [float(v) if i % 20 == 0 else None for i, v in enumerate(y)]
    with_judge, alone = labels_for_width(f.tolist(), labels, 0.1)
    assert with_judge is not None and alone is not None and with_judge < alone
    assert alone == pytest.approx(np.var(y[::20], ddof=1) * (2 * Z / 0.1) ** 2, abs=1)
    # the judge's own noise over all items bounds how narrow it can help
    assert labels_for_width(f.tolist(), labels, 1e-4) == (None, None)
