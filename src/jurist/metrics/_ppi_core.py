"""The arithmetic of prediction-powered inference for a mean, on many samples at once.

Every function here takes a leading axis ``R`` (samples: one for an estimate, thousands
for a coverage study) and returns one figure per sample; nothing loops in Python over
items. :mod:`jurist.metrics._ppi` wraps them with the checks and the result a user reads;
``benchmarks/ppi_estimate.py`` calls them directly to replay thousands of label draws.

Two designs:

- **uniform** (:func:`uniform_ppi`): ``n`` items labelled, drawn uniformly at random from
  the ``N`` judged ones. PPI++ (Angelopoulos, Duchi and Zrnic, 2023) with the power-tuned
  ``lam = Cov(Y, f) / ((1 + n/N) Var(f))``: the estimate ``lam * mean_N(f) + mean_n(Y -
  lam * f)`` and its variance ``Var_n(Y - lam f) / n + lam^2 Var_N(f) / N``.
- **weighted** (:func:`weighted_ppi`): item ``i`` was labelled with a known probability
  ``pi_i`` (active inference, Zrnic and Candes, 2024). Each item contributes
  ``Z_i = lam f_i + (Y_i - lam f_i) xi_i / pi_i`` (``xi_i``: labelled or not); the estimate
  is the mean of ``Z`` and its variance ``Var(Z) / N``; ``lam`` minimises that variance.

``lam = 0`` gives the labels alone (the plain mean, or its inverse-probability-weighted
form); the judge alone is the mean of ``f`` with its sampling variance.

>>> import numpy as np
>>> y = np.array([[1.0, 0.0, 1.0, 1.0]]); f = np.array([[0.9, 0.2, 0.8, 0.6]])
>>> est, var, lam = uniform_ppi(y, f, np.array([0.9, 0.2, 0.8, 0.6, 0.7, 0.1]))
>>> est.shape, bool(var[0] > 0), bool(lam[0] > 0)
((1,), True, True)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "combine_batches",
    "uniform_ppi",
    "uniform_ppi_draws",
    "weighted_ppi",
    "weighted_ppi_draws",
]

Array = NDArray[np.float64]


def _var(x: Array, axis: int = -1) -> Array:
    n = x.shape[axis]
    return np.asarray(x.var(axis=axis) * n / max(n - 1, 1))


def uniform_ppi(
    y: Array, f: Array, f_all: Array, *, tune: bool = True
) -> tuple[Array, Array, Array]:
    """Per sample (rows of ``y``/``f``: the labels and the judge on the ``n`` labelled
    items; ``f_all``: the judge on all ``N`` items, shape ``(N,)`` or ``(R, N)``): the
    estimate, its variance and the power ``lam`` (``tune=False``: ``lam = 1``, plain PPI)."""
    n = y.shape[-1]
    big_n = f_all.shape[-1]
    mean_all = f_all.mean(axis=-1)
    var_all = _var(f_all)
    if tune:
        yc = y - y.mean(axis=-1, keepdims=True)
        fc = f - f.mean(axis=-1, keepdims=True)
        cov = (yc * fc).sum(axis=-1) / max(n - 1, 1)
        denom = (1 + n / big_n) * var_all
        lam = np.divide(cov, denom, out=np.zeros_like(cov), where=denom > 0)
    else:
        lam = np.ones(y.shape[0])
    resid = y - lam[:, None] * f
    est = lam * mean_all + resid.mean(axis=-1)
    var = _var(resid) / n + lam**2 * var_all / big_n
    return est, var, lam


def _weighted_terms(y: Array, f: Array, xi: Array, pi: Array) -> tuple[Array, Array]:
    """``A = Y xi / pi`` and ``B = f (1 - xi / pi)``: ``Z = A + lam B``."""
    w = np.divide(xi, pi, out=np.zeros_like(xi, dtype=np.float64), where=xi > 0)
    return np.where(xi > 0, y, 0.0) * w, f * (1.0 - w)


def _weighted_from_terms(a: Array, b: Array, tune: bool) -> tuple[Array, Array, Array]:
    big_n = a.shape[-1]
    if tune:
        ac = a - a.mean(axis=-1, keepdims=True)
        bc = b - b.mean(axis=-1, keepdims=True)
        cov = (ac * bc).sum(axis=-1)
        vb = (bc * bc).sum(axis=-1)
        lam = np.divide(-cov, vb, out=np.zeros_like(cov), where=vb > 0)
    else:
        lam = np.ones(a.shape[0])
    z = a + lam[:, None] * b
    return z.mean(axis=-1), _var(z) / big_n, lam


def weighted_ppi(
    y: Array, f: Array, xi: Array, pi: Array, *, tune: bool = True
) -> tuple[Array, Array, Array]:
    """Per sample (rows of ``xi``: 1 where the item was labelled; ``pi``: each item's
    probability of a label, same shape or ``(N,)``; ``y``: the labels, any value where
    unlabelled; ``f``: the judge): the estimate, its variance and ``lam``."""
    a, b = _weighted_terms(np.broadcast_to(y, xi.shape), np.broadcast_to(f, xi.shape), xi, pi)
    return _weighted_from_terms(a, b, tune)


def uniform_ppi_draws(
    y: Array, f: Array, f_all: Array, *, draws: int, rng: np.random.Generator, tune: bool = True
) -> Array:
    """``draws`` bootstrap estimates for one sample (``y``, ``f``: shape ``(n,)``): the
    labelled pairs and the judged items resampled apart, ``lam`` tuned again each time."""
    n, big_n = y.shape[0], f_all.shape[0]
    out = np.empty(draws)
    step = max(1, 4_000_000 // max(big_n, 1))
    for start in range(0, draws, step):
        k = min(step, draws - start)
        li = rng.integers(0, n, size=(k, n))
        ai = rng.integers(0, big_n, size=(k, big_n))
        out[start : start + k] = uniform_ppi(y[li], f[li], f_all[ai], tune=tune)[0]
    return out


def weighted_ppi_draws(
    y: Array,
    f: Array,
    xi: Array,
    pi: Array,
    *,
    draws: int,
    rng: np.random.Generator,
    tune: bool = True,
) -> Array:
    """``draws`` bootstrap estimates for one weighted sample (all arrays ``(N,)``): the
    items resampled with their label indicator, ``lam`` tuned again each time."""
    a, b = _weighted_terms(y, f, xi, pi)
    big_n = a.shape[0]
    out = np.empty(draws)
    step = max(1, 4_000_000 // max(big_n, 1))
    for start in range(0, draws, step):
        k = min(step, draws - start)
        idx = rng.integers(0, big_n, size=(k, big_n))
        out[start : start + k] = _weighted_from_terms(a[idx], b[idx], tune)[0]
    return out


def combine_batches(
    est: tuple[Array, Array],
    var: tuple[Array, Array],
    lam: tuple[Array, Array],
    judge_var: float,
    share: float,
) -> tuple[Array, Array]:
    """Two estimates of one mean from two label batches (the second drawn with
    probabilities set from the first's labels), weighted ``share`` and ``1 - share``
    (fixed in advance, e.g. the first batch's share of the labels: weights estimated
    from small batches would follow their errors): the estimate and its variance. Both
    use the judge's mean over the same items, so they covary by ``lam1 * lam2 *
    judge_var`` (``judge_var``: the variance of the judge's mean over the N items)."""
    cov = lam[0] * lam[1] * judge_var
    w1, w2 = share, 1.0 - share
    return w1 * est[0] + w2 * est[1], w1**2 * var[0] + w2**2 * var[1] + 2 * w1 * w2 * cov
