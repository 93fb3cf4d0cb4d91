"""Selective judging with a guarantee: the exact binomial bounds (against scipy), the
fixed-sequence threshold (against a direct re-implementation of the procedure), the
guarantee itself on a judge whose true agreement is known, and the confidence helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jurist.errors import ConfigError, DataError
from jurist.metrics import (
    SelectiveThreshold,
    binomial_cdf,
    clopper_pearson_upper,
    confidence_from_logprobs,
    confidence_from_panel,
    confidence_from_probs,
    confidence_from_repeats,
    selective_agreement,
    selective_threshold,
)
from jurist.metrics._binomial import binomial_cdfs

# -- the exact binomial tail and bound, against scipy -----------------------------------------


def test_binomial_cdf_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    n = rng.integers(1, 3000, 400)
    k = np.array([rng.integers(0, m + 1) for m in n])
    p = rng.uniform(0, 1, 400)
    ours = binomial_cdfs(k, n, p)
    theirs = stats.binom.cdf(k, n, p)
    assert np.allclose(ours, theirs, rtol=1e-9, atol=1e-13)
    for kk, nn, pp in [(0, 1, 0.5), (3, 3, 0.2), (0, 50, 0.0), (10, 50, 1.0), (0, 0, 0.3)]:
        assert binomial_cdf(kk, nn, pp) == pytest.approx(float(stats.binom.cdf(kk, nn, pp)))


def test_clopper_pearson_upper_matches_scipy_beta() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(4)
    for _ in range(300):
        n = int(rng.integers(1, 2000))
        k = int(rng.integers(0, n))
        delta = float(rng.choice([0.01, 0.05, 0.1, 0.2, 0.5]))
        want = float(stats.beta.ppf(1 - delta, k + 1, n - k))
        assert clopper_pearson_upper(k, n, delta) == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert clopper_pearson_upper(7, 7, 0.1) == 1.0


def test_binomial_bad_arguments_are_refused() -> None:
    with pytest.raises(DataError, match="0 <= k <= n"):
        binomial_cdf(5, 3, 0.5)
    with pytest.raises(DataError, match="0 <= p <= 1"):
        binomial_cdf(1, 3, 1.5)
    with pytest.raises(ConfigError, match="delta"):
        clopper_pearson_upper(1, 3, 0.0)


# -- the fixed-sequence procedure --------------------------------------------------------------


def reference(
    conf: np.ndarray, ok: np.ndarray, target: float, delta: float, grid: np.ndarray, min_n: int
) -> float | None:
    """The procedure as the paper states it, one threshold at a time: from the highest
    candidate that keeps ``min_n`` items down, stop at the first whose exact upper bound
    on the disagreement (scipy's beta quantile) exceeds ``1 - target``; the last one that
    passed, or None."""
    stats = pytest.importorskip("scipy.stats")
    cands = [t for t in sorted(set(grid.tolist()), reverse=True) if (conf >= t).sum() >= min_n]
    last = None
    for t in cands:
        kept = conf >= t
        errors = int((~ok[kept]).sum())
        n = int(kept.sum())
        upper = 1.0 if errors == n else float(stats.beta.ppf(1 - delta, errors + 1, n - errors))
        if upper > 1 - target:
            break
        last = t
    return last


@pytest.mark.parametrize("resolution", [None, 0.001, 1 / 4999])
def test_threshold_is_the_fixed_sequence_procedure(resolution: float | None) -> None:
    rng = np.random.default_rng(5)
    agreed = 0
    for trial in range(30):
        n = int(rng.integers(40, 400))
        conf = rng.uniform(0.4, 1.0, n).round(int(rng.integers(2, 6)))
        ok = rng.uniform(size=n) < np.clip(conf + rng.normal(0, 0.1), 0, 1)
        target = float(rng.choice([0.7, 0.8, 0.85, 0.9]))
        got = selective_threshold(conf, ok, target=target, delta=0.1, resolution=resolution)
        # the multiples of the resolution (the paper's linspace for 1/4999)
        grid = conf if resolution is None else np.floor(conf / resolution) * resolution
        want = reference(conf, ok, target, 0.1, grid, 30)
        if want is None:
            assert got is None, trial
            continue
        agreed += 1
        assert got is not None and got.threshold == pytest.approx(want, abs=1e-12), trial
        kept = conf >= got.threshold
        assert got.n_selected == kept.sum() and got.coverage == kept.mean()
        assert got.empirical_agreement == pytest.approx(ok[kept].mean())
        assert got.upper_bound_disagreement <= 1 - target + 1e-12
    assert agreed >= 10  # the comparison was not all None


def test_nothing_certified_is_none_not_a_threshold() -> None:
    rng = np.random.default_rng(6)
    conf = rng.uniform(0.5, 1, 300)
    ok = rng.uniform(size=300) < 0.6  # agreement 0.6 at every confidence
    assert selective_threshold(conf, ok, target=0.85, delta=0.1) is None
    assert selective_threshold(conf[:20], ok[:20], target=0.5, delta=0.1) is None  # < 30 items


def test_missing_confidence_is_never_kept_but_counts_in_coverage() -> None:
    conf = np.r_[np.full(100, 0.99), np.full(100, np.nan)]
    sel = selective_threshold(conf, np.ones(200, dtype=bool), target=0.9, delta=0.1)
    assert isinstance(sel, SelectiveThreshold)
    assert (sel.n_selected, sel.n, sel.coverage, sel.empirical_agreement) == (100, 200, 0.5, 1.0)
    assert sel.upper_bound_disagreement == pytest.approx(1 - 0.1 ** (1 / 100))


def test_bad_input_is_refused_with_its_reason() -> None:
    with pytest.raises(DataError, match="differ in length: 3 and 2"):
        selective_threshold([0.9, 0.8, 0.7], [True, False], target=0.8, delta=0.1)
    with pytest.raises(DataError, match="booleans"):
        selective_threshold([0.9, 0.8], [2, 1], target=0.8, delta=0.1)
    with pytest.raises(ConfigError, match="target"):
        selective_threshold([0.9], [True], target=1.0, delta=0.1)
    with pytest.raises(ConfigError, match="resolution"):
        selective_threshold([0.9], [True], target=0.8, delta=0.1, resolution=0)


def test_the_guarantee_holds_where_the_true_agreement_is_known() -> None:
    """A calibrated judge (confidence c ~ U(0.5, 1), right with probability c): the items
    at or above t agree with probability (1 + t) / 2, so the threshold t fails the target
    0.85 exactly when t < 0.7. Over 400 calibration sets of 300, it may fail in at most
    delta = 10% of them (binomial noise of 400 trials: 1.5 points). It certifies a
    threshold in most of them: the sequence starts at the top 30 items, which agree at
    0.975 but hold 2+ errors (and then fail the exact test) about 17% of the time."""
    rng = np.random.default_rng(7)
    fails = none = 0
    coverage = []
    for _ in range(400):
        conf = rng.uniform(0.5, 1.0, 300)
        ok = rng.uniform(size=300) < conf
        sel = selective_threshold(conf, ok, target=0.85, delta=0.1)
        if sel is None:
            none += 1
            continue
        fails += sel.threshold < 0.7
        coverage.append((1 - sel.threshold) / 0.5)
    assert fails / 400 <= 0.1
    assert none < 100 and np.mean(coverage) > 0.3  # and it certifies a useful share


def test_selective_agreement() -> None:
    assert selective_agreement([0.9, np.nan, 0.5], [True, True, False], 0.6) == (1 / 3, 1.0)
    assert selective_agreement([0.5], [True], 0.9) == (0.0, None)


# -- confidences ------------------------------------------------------------------------------


def test_confidence_from_probs_and_logprobs() -> None:
    c = confidence_from_probs([[0.42, 0.58], [0.99, 0.01], [0.0, 0.0]])
    assert c.confidence[:2].tolist() == pytest.approx([0.58, 0.99])
    assert math.isnan(c.confidence[2]) and c.verdict == [1, 0, None]
    lp = confidence_from_logprobs([[math.log(0.2), math.log(0.3), -math.inf]])
    assert lp.confidence.tolist() == pytest.approx([0.6]) and lp.verdict == [1]
    with pytest.raises(DataError, match="2\\+ classes"):
        confidence_from_probs([0.5, 0.5])


def test_confidence_from_repeats_and_panel() -> None:
    r = confidence_from_repeats([[1, 1, 1, 0], [None, None], ["x"]])
    assert r.confidence[0] == 0.75 and math.isnan(r.confidence[1]) and r.confidence[2] == 1.0
    assert r.verdict == [1, None, "x"]
    p = confidence_from_panel([[0.25, 0.25 + 1e-12, 1.0], [None, 0.0]])
    assert p.confidence.tolist() == pytest.approx([2 / 3, 1.0]) and p.verdict == [0.25, 0.0]
