"""Exact binomial tails and the Clopper-Pearson upper bound, in numpy alone.

:func:`binomial_cdf` is ``P(X <= k)`` for ``X ~ Binomial(n, p)``, summed exactly in log
space (a table of log-factorials, then log-sum-exp), so it holds for thousands of trials
without overflow. :func:`clopper_pearson_upper` is the exact one-sided upper confidence
bound on ``p`` after ``k`` successes in ``n`` trials: the ``p`` at which
``P(X <= k) = delta`` (scipy's ``beta.ppf(1 - delta, k + 1, n - k)``), found by bisection
to machine precision. tests/trust/test_selective.py checks both against scipy.stats.

>>> round(binomial_cdf(2, 10, 0.3), 10)
0.3827827864
>>> round(clopper_pearson_upper(0, 30, 0.1), 6)  # no error in 30: the error rate < 7.4%
0.073881
>>> clopper_pearson_upper(5, 5, 0.1)
1.0
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from jurist.errors import ConfigError, DataError

__all__ = ["binomial_cdf", "binomial_cdfs", "clopper_pearson_upper"]

_BISECTIONS = 64  # halves [0, 1] to below 1e-19: past float precision


def _log_factorials(n: int) -> NDArray[np.float64]:
    """``log(j!)`` for ``j`` in ``0..n``."""
    out = np.zeros(n + 1)
    if n:
        out[1:] = np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))
    return out


def binomial_cdfs(k: ArrayLike, n: ArrayLike, p: ArrayLike) -> NDArray[np.float64]:
    """:func:`binomial_cdf` element-wise over arrays ``k``, ``n`` and ``p`` (broadcast)."""
    kk, nn, pp = np.broadcast_arrays(
        np.asarray(k, dtype=np.int64), np.asarray(n, dtype=np.int64), np.asarray(p, dtype=float)
    )
    if np.any(nn < 0) or np.any(kk < 0) or np.any(kk > nn):
        raise DataError("binomial_cdf needs 0 <= k <= n")
    if np.any((pp < 0) | (pp > 1) | np.isnan(pp)):
        raise DataError("binomial_cdf needs 0 <= p <= 1")
    flat_k, flat_n, flat_p = kk.ravel(), nn.ravel(), pp.ravel()
    out = np.ones(flat_k.shape, dtype=float)  # k == n, p == 0: every outcome is <= k
    if flat_k.size == 0:
        return out.reshape(kk.shape)
    logf = _log_factorials(int(flat_n.max()))
    inner = (flat_k < flat_n) & (flat_p > 0)
    out[inner & (flat_p >= 1)] = 0.0  # p == 1: X == n > k
    rows = np.flatnonzero(inner & (flat_p < 1))
    if rows.size:
        ks, ns, ps = flat_k[rows], flat_n[rows], flat_p[rows]
        j = np.arange(int(ks.max()) + 1)[None, :]
        valid = j <= ks[:, None]
        jj = np.where(valid, j, 0)
        terms = (
            logf[ns][:, None]
            - logf[jj]
            - logf[ns[:, None] - jj]
            + jj * np.log(ps)[:, None]
            + (ns[:, None] - jj) * np.log1p(-ps)[:, None]
        )
        terms = np.where(valid, terms, -np.inf)
        top = terms.max(axis=1)
        total = top + np.log(np.exp(terms - top[:, None]).sum(axis=1))
        out[rows] = np.minimum(np.exp(total), 1.0)
    return out.reshape(kk.shape)


def binomial_cdf(k: int, n: int, p: float) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)``, exact (see the module docs)."""
    return float(binomial_cdfs(k, n, p))


def clopper_pearson_upper(k: int, n: int, delta: float) -> float:
    """The exact (Clopper-Pearson) upper ``1 - delta`` confidence bound on the success
    probability after ``k`` successes in ``n`` trials: with probability at least
    ``1 - delta`` the true rate is at most this. ``1.0`` when ``k == n`` (and ``n == 0``)."""
    if not 0 < delta < 1:
        raise ConfigError(f"delta must be in (0, 1), got {delta}")
    if n < 0 or not 0 <= k <= n:
        raise DataError(f"clopper_pearson_upper needs 0 <= k <= n, got k={k}, n={n}")
    if k == n:
        return 1.0
    logf = _log_factorials(n)
    j = np.arange(k + 1)
    log_choose = logf[n] - logf[j] - logf[n - j]

    def cdf(p: float) -> float:  # P(X <= k) at p, the coefficients computed once
        terms = log_choose + j * math.log(p) + (n - j) * math.log1p(-p)
        top = float(terms.max())
        return math.exp(top + math.log(float(np.exp(terms - top).sum())))

    lo, hi = 0.0, 1.0  # P(X <= k) falls from 1 to 0 as p rises: find where it is delta
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2
        if cdf(mid) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= math.ulp(hi):
            break
    return hi
