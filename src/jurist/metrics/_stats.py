"""The statistics behind the measures, in numpy alone, so they work on the base install.

Each function follows the reference implementation it replaces, operation for operation
where that keeps the results identical: scikit-learn's ``cohen_kappa_score`` and
``confusion_matrix``, the ``krippendorff`` package's ``alpha``, scipy's ``pearsonr``,
``spearmanr``, ``kendalltau`` (tau-b), ``binomtest`` (two-sided) and ``bootstrap``
(percentile, basic, BCa; the same draws for the same seed). tests/metrics/test_stats_differential.py
checks each against its reference on random and on real data.

>>> round(kappa([1, 2, 3, 1], [1, 2, 3, 2]), 4)
0.6364
>>> round(alpha([[1, 2, 3, 3, 2], [1, 2, 3, 3, 1]], level="interval"), 4)  # krippendorff: same
0.8696
>>> round(binom_test(9, 10), 6)
0.021484
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "alpha",
    "binom_test",
    "bootstrap_interval",
    "confusion_matrix",
    "kappa",
    "kendall_tau_b",
    "pearson_r",
    "spearman_rho",
]

FloatArray = npt.NDArray[np.float64]


def _sorted_labels(values: Sequence[Any]) -> list[Any]:
    try:
        return sorted(set(values))
    except TypeError:  # mixed types: any fixed order will do for unweighted kappa
        return sorted(set(values), key=str)


def confusion_matrix(
    truth: Sequence[Any], predicted: Sequence[Any], labels: Sequence[Any]
) -> npt.NDArray[np.int64]:
    """``m[i, j]`` counts ``truth == labels[i]`` and ``predicted == labels[j]``."""
    index = {v: i for i, v in enumerate(labels)}
    m = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for t, p in zip(truth, predicted, strict=True):
        if t in index and p in index:
            m[index[t], index[p]] += 1
    return m


def kappa(
    a: Sequence[Any], b: Sequence[Any], weights: Literal["linear", "quadratic"] | None = None
) -> float:
    """Cohen's kappa (as ``sklearn.metrics.cohen_kappa_score``); NaN when undefined.

    Weights are on the label positions in sorted order, as scikit-learn does.
    """
    labels = _sorted_labels([*a, *b])
    confusion = confusion_matrix(a, b, labels)
    n = len(labels)
    sum0, sum1 = confusion.sum(axis=0), confusion.sum(axis=1)
    expected = np.outer(sum0, sum1) / np.sum(sum0)
    if weights is None:
        w = np.ones((n, n), dtype=int)
        w.flat[:: n + 1] = 0
    else:
        w = np.zeros((n, n), dtype=int) + np.arange(n)
        w = np.abs(w - w.T) if weights == "linear" else (w - w.T) ** 2
    denominator = float(np.sum(w * expected))
    if denominator == 0.0 or math.isnan(denominator):
        return float("nan")
    return float(1 - np.sum(w * confusion) / denominator)


Level = Literal["nominal", "ordinal", "interval", "ratio"]


def alpha(data: Sequence[Sequence[float]] | FloatArray, level: Level = "nominal") -> float:
    """Krippendorff's alpha (as ``krippendorff.alpha``) from one row per rater, NaN = no value.

    NaN where the package raises or divides by zero: fewer than two values, or no unit with
    two values.
    """
    d = np.asarray(data, dtype=float)
    domain = np.unique(d[~np.isnan(d)])
    if len(domain) <= 1:
        return float("nan")
    counts = np.stack([(d == v).sum(axis=0) for v in domain], axis=1)  # units x values
    if (counts.sum(axis=-1) <= 1).all():
        return float("nan")
    if level == "interval":
        return _interval_alpha(d)
    v_count = len(domain)
    pairable = np.maximum(counts.sum(axis=1), 2)
    diagonals = counts[:, np.newaxis, :] * np.eye(v_count)[np.newaxis, ...]
    unnormalised = counts[..., np.newaxis] * counts[:, np.newaxis, :] - diagonals
    o = np.divide(unnormalised, (pairable - 1).reshape((-1, 1, 1)), dtype=float).sum(axis=0)
    n_v = o.sum(axis=0)
    e = np.divide(np.outer(n_v, n_v) - np.diagflat(n_v), n_v.sum() - 1, dtype=float)
    i1, i2 = np.meshgrid(np.arange(v_count), np.arange(v_count), indexing="ij")
    v1, v2 = domain[i1], domain[i2]
    dist: FloatArray
    if level == "nominal":
        dist = (v1 != v2).astype(float)
    elif level == "ratio":
        total = v1 + v2
        dist = np.divide(v1 - v2, total, out=np.zeros(total.shape), where=total != 0) ** 2
    else:  # ordinal: the mass between the two values, less half of each end
        lo, hi = np.minimum(i1, i2), np.maximum(i1, i2)
        ranges = np.dstack((lo, hi + 1))
        between = np.add.reduceat(np.append(n_v, 0), ranges.reshape(-1))[::2].reshape(*lo.shape)
        dist = (between - np.divide(n_v[lo] + n_v[hi], 2, dtype=float)) ** 2
    expected = float((e * dist).sum())
    if expected == 0.0:
        return float("nan")
    return float(1 - (o * dist).sum() / expected)


def _interval_alpha(d: FloatArray) -> float:
    """Interval alpha in O(values): the coincidence sums of squared differences in closed
    form (sum over ordered pairs of (a - b)^2 = 2 m sum(a^2) - 2 sum(a)^2), the same figure
    as the units x values x values tensor above, without it (continuous scores have as
    many distinct values as items)."""
    mask = ~np.isnan(d)
    m = mask.sum(axis=0)
    keep = m >= 2
    x = np.where(mask, d, 0.0)[:, keep]
    mk = m[keep].astype(float)
    s1, s2 = x.sum(axis=0), (x * x).sum(axis=0)
    observed = float(((2 * mk * s2 - 2 * s1 * s1) / (mk - 1)).sum())
    n = float(mk.sum())
    expected = (2 * n * float(s2.sum()) - 2 * float(s1.sum()) ** 2) / (n - 1)
    if expected <= 0.0:
        return float("nan")
    return 1 - observed / expected


def pearson_r(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r (as ``scipy.stats.pearsonr(...).statistic``)."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    xm, ym = xa - xa.mean(), ya - ya.mean()
    xmax, ymax = np.max(np.abs(xm)), np.max(np.abs(ym))
    if xmax == 0 or ymax == 0:
        return float("nan")
    xm, ym = xm / xmax, ym / ymax
    r = np.dot(xm / np.linalg.norm(xm), ym / np.linalg.norm(ym))
    return float(np.clip(r, -1.0, 1.0))


def rank_average(values: Sequence[float] | FloatArray) -> FloatArray:
    """Ranks from 1, ties given their average rank (``scipy.stats.rankdata``)."""
    a = np.asarray(values, dtype=float)
    order = np.argsort(a, kind="mergesort")
    s = a[order]
    starts = np.r_[True, s[1:] != s[:-1]]
    dense = starts.cumsum()
    bounds = np.r_[np.nonzero(starts)[0], len(s)]
    avg = 0.5 * (bounds[1:] + bounds[:-1] + 1)  # ranks from 1: (first + last) / 2
    out = np.empty(len(a))
    out[order] = avg[dense - 1]
    return out


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho (as ``scipy.stats.spearmanr(...).statistic``)."""
    rx, ry = rank_average(x), rank_average(y)
    if np.all(rx == rx[0]) or np.all(ry == ry[0]):
        return float("nan")
    r = np.corrcoef(rx, ry)[1, 0]
    return float(np.clip(r, -1.0, 1.0))


def _discordant(y: npt.NDArray[np.int64]) -> int:
    """Pairs ``i < j`` with ``y[i] > y[j]`` (``y``: dense ranks from 1)."""
    k = int(y.max())
    if k <= 256 or len(y) > 4096:  # few distinct values: counts per value so far
        seen = np.zeros(k + 2, dtype=np.int64)
        total = 0
        # a blocked pass keeps memory at block x k while staying vectorised
        for start in range(0, len(y), 1024):
            block = y[start : start + 1024]
            onehot = np.zeros((len(block), k + 2), dtype=np.int64)
            onehot[np.arange(len(block)), block] = 1
            before = np.cumsum(onehot, axis=0) - onehot + seen  # counts before each item
            greater = np.cumsum(before[:, ::-1], axis=1)[:, ::-1]  # counts of values >= v
            total += int(greater[np.arange(len(block)), block + 1].sum())
            seen += onehot.sum(axis=0)
        return total
    return int(np.triu(y[:, None] > y[None, :], k=1).sum())


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b (as ``scipy.stats.kendalltau(..., variant="b").statistic``)."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    size = len(xa)
    perm = np.argsort(ya)
    xa, ya = xa[perm], ya[perm]
    yr = np.r_[True, ya[1:] != ya[:-1]].cumsum(dtype=np.int64)
    perm = np.argsort(xa, kind="mergesort")
    xa, yr = xa[perm], yr[perm]
    xr = np.r_[True, xa[1:] != xa[:-1]].cumsum(dtype=np.int64)
    dis = _discordant(yr)
    obs = np.r_[True, (xr[1:] != xr[:-1]) | (yr[1:] != yr[:-1]), True]
    cnt = np.diff(np.nonzero(obs)[0]).astype("int64", copy=False)
    ntie = int((cnt * (cnt - 1) // 2).sum())

    def ties(r: npt.NDArray[np.int64]) -> int:
        c = np.bincount(r).astype("int64", copy=False)
        c = c[c > 1]
        return int((c * (c - 1) // 2).sum())

    xtie, ytie = ties(xr), ties(yr)
    tot = (size * (size - 1)) // 2
    if xtie == tot or ytie == tot:
        return float("nan")
    con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
    tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    return float(np.clip(tau, -1.0, 1.0))


def binom_test(k: int, n: int, p: float = 0.5) -> float:
    """Two-sided exact binomial test (as ``scipy.stats.binomtest(k, n, p).pvalue``).

    The p-value sums the probabilities of every count no more likely than ``k``.
    """
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if k == p * n:
        return 1.0
    i = np.arange(n + 1)
    lg = np.vectorize(math.lgamma)
    with np.errstate(divide="ignore"):
        log_pmf = lg(n + 1) - lg(i + 1) - lg(n - i + 1) + i * np.log(p) + (n - i) * np.log1p(-p)
    pmf = np.exp(log_pmf)
    d = pmf[k]
    return float(min(1.0, pmf[pmf <= d * (1 + 1e-7)].sum()))


def _ndtr(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2))


def _ndtri(q: float) -> float:
    if math.isnan(q):
        return q
    if q <= 0.0:
        return -math.inf
    if q >= 1.0:
        return math.inf
    return NormalDist().inv_cdf(q)


def _bca_levels(
    statistic: Callable[[npt.NDArray[np.int64]], float],
    n: int,
    theta_b: FloatArray,
    alpha_: float,
) -> tuple[float, float]:
    theta_hat = statistic(np.arange(n))
    percentile = (
        np.count_nonzero(theta_b < theta_hat) + np.count_nonzero(theta_b <= theta_hat)
    ) / (2 * len(theta_b))
    z0 = _ndtri(float(percentile))
    keep = ~np.eye(n, dtype=bool)
    jack = np.array([statistic(np.arange(n)[keep[i]]) for i in range(n)], dtype=float)
    u = (n - 1) * (jack.mean() - jack)
    num, den = np.sum(u**3) / n**3, np.sum(u**2) / n**2
    with np.errstate(divide="ignore", invalid="ignore"):
        a_hat = float(1 / 6 * num / den ** (3 / 2))
    z_alpha = _ndtri(alpha_)

    def level(z: float) -> float:
        s = z0 + z
        return _ndtr(z0 + s / (1 - a_hat * s))

    return level(z_alpha), level(-z_alpha)


def bootstrap_interval(
    statistic: Callable[[npt.NDArray[np.int64]], float],
    n: int,
    *,
    n_resamples: int,
    confidence: float,
    method: Literal["percentile", "basic", "BCa"],
    seed: int,
    batched: Callable[[npt.NDArray[np.int64]], FloatArray] | None = None,
) -> tuple[float, float]:
    """A two-sided bootstrap interval for ``statistic(indices)`` over ``n`` items.

    As ``scipy.stats.bootstrap((np.arange(n),), statistic, vectorized=False,
    rng=np.random.default_rng(seed))``: the same resamples, the same linear quantiles, and
    NaN ends where a resample's statistic is NaN.

    ``batched(rows)``, where given, is the statistic of every row of an index matrix at
    once (:mod:`jurist.metrics._batched`); the percentile and basic intervals use it. BCa
    asks ``statistic`` one resample at a time, as scipy does: its bias correction counts
    the resamples below and equal to the estimate, which a last-bit difference would move.
    """
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, (n_resamples, n))
    if batched is not None and method != "BCa":
        theta_b = np.asarray(batched(idx), dtype=float)
    else:
        theta_b = np.array([statistic(row) for row in idx], dtype=float)
    alpha_ = (1 - confidence) / 2
    lo_q, hi_q = (
        _bca_levels(statistic, n, theta_b, alpha_) if method == "BCa" else (alpha_, 1 - alpha_)
    )
    if math.isnan(lo_q) or math.isnan(hi_q) or np.isnan(theta_b).any():
        return float("nan"), float("nan")
    low, high = (float(v) for v in np.quantile(theta_b, [lo_q, hi_q]))
    if method == "basic":
        theta_hat = statistic(np.arange(n))
        low, high = 2 * theta_hat - high, 2 * theta_hat - low
    return low, high
