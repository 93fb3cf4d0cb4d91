"""Newton's method for the Bradley-Terry likelihood, using its structure (numpy only).

The model: ``P(a beats b) = logistic(r_a - r_b + z . gamma)`` over battles (or pooled pairs)
with soft outcomes ``y`` and weights ``w``, the baseline's strength fixed at 0. It is the
logistic regression of :func:`jurist.metrics._glm.fit_logistic` on a design whose model
columns hold one +1 and one -1 per row; here the gradient and the information matrix are
accumulated per model with ``bincount`` instead of through that dense design, so a step
costs ``O(n K^2 + M^2)`` rather than ``O(n (M + K)^2)`` (``n`` rows, ``M`` models, ``K``
style features): what makes 1,000 bootstrap refits of a style-controlled leaderboard
cheap. Without style the battles pool into one row per ordered pair, and
:func:`fit_bradley_terry_many` refits every bootstrap resample in one loop of batched Newton
steps (each resample its own steps and step halving, until its own step is below ``tol``).

>>> a, b = np.array([1, 1, 1, 1]), np.array([0, 0, 0, 0])
>>> coef, ok = fit_bradley_terry(a, b, np.array([1.0, 1.0, 1.0, 0.0]), np.ones(4), None, 2, 0)
>>> ok, round(float(coef[0]), 4)  # log(3): model 1 wins 3 of 4
(True, 1.0986)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from jurist.metrics._glm import log_likelihood, logistic

__all__ = ["fit_bradley_terry", "fit_bradley_terry_many", "model_design"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def fit_bradley_terry(
    a: IntArray,
    b: IntArray,
    y: FloatArray,
    w: FloatArray,
    z: FloatArray | None,
    n_models: int,
    base: int,
    start: FloatArray | None = None,
    *,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> tuple[FloatArray, bool]:
    """Coefficients ``[strengths of the other models in order, style weights]`` and whether
    Newton converged (it does not when some strength has no finite estimate)."""
    m = n_models
    k = 0 if z is None else z.shape[1]
    p = m - 1
    coef = np.zeros(p + k) if start is None else np.array(start, dtype=float)

    def eta_of(c: FloatArray) -> FloatArray:
        r = np.insert(c[:p], base, 0.0)
        eta = r[a] - r[b]
        return eta if z is None else eta + z @ c[p:]

    eta = eta_of(coef)
    current = log_likelihood(eta, y, w)
    converged = False
    for _ in range(max_iter):
        s = logistic(eta)
        resid = w * (y - s)
        v = w * s * (1.0 - s)
        grad_r = np.bincount(a, resid, m) - np.bincount(b, resid, m)
        diag = np.bincount(a, v, m) + np.bincount(b, v, m)
        off = np.bincount(a * m + b, v, m * m).reshape(m, m)
        h_rr = np.diag(diag) - off - off.T
        keep = np.arange(m) != base
        grad = grad_r[keep]
        info = h_rr[np.ix_(keep, keep)]
        if z is not None:
            vz = v[:, None] * z
            h_rg = (
                np.stack(
                    [np.bincount(a, vz[:, j], m) - np.bincount(b, vz[:, j], m) for j in range(k)],
                    axis=1,
                )
            )[keep]
            grad = np.concatenate([grad, z.T @ resid])
            info = np.block([[info, h_rg], [h_rg.T, z.T @ vz]])
        step = np.linalg.solve(info + 1e-12 * np.eye(p + k), grad)
        scale = 1.0
        while True:
            candidate = coef + scale * step
            cand_eta = eta_of(candidate)
            value = log_likelihood(cand_eta, y, w)
            if value >= current - 1e-12 * max(1.0, abs(current)) or scale < 1e-8:
                break
            scale /= 2.0
        coef, eta, current = candidate, cand_eta, value
        if float(np.max(np.abs(scale * step), initial=0.0)) < tol:
            converged = True
            break
    return coef, converged


def model_design(a: IntArray, b: IntArray, n_models: int, base: int) -> FloatArray:
    """The rows' model columns: +1 for ``a``, -1 for ``b``, the baseline's column left out."""
    design = np.zeros((a.size, n_models))
    np.add.at(design, (np.arange(a.size), a), 1.0)
    np.add.at(design, (np.arange(b.size), b), -1.0)
    out: FloatArray = design[:, np.arange(n_models) != base]
    return out


_CELLS = 1 << 21  # at most this many (sample, row, coefficient) cells in one chunk


def fit_bradley_terry_many(
    design: FloatArray,
    y: FloatArray,
    w: FloatArray,
    start: FloatArray,
    *,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """:func:`fit_bradley_terry` on many samples of the same rows at once: ``design`` holds
    the rows' columns (:func:`model_design`, then any style columns), ``y`` the outcomes
    (one row per sample, or one for all) and ``w`` one row of weights per sample (0 where a
    sample lacks a row). Each sample takes the same Newton steps and step halving as a fit
    of its own, until its step is below ``tol``; returns each sample's coefficients and
    whether it converged."""
    samples = w.shape[0]
    y = np.broadcast_to(y, w.shape)
    step = max(1, _CELLS // max(1, design.shape[0] * design.shape[1]))
    coef = np.empty((samples, design.shape[1]))
    converged = np.zeros(samples, dtype=bool)
    for lo in range(0, samples, step):
        hi = min(samples, lo + step)
        coef[lo:hi], converged[lo:hi] = _newton_many(
            design, y[lo:hi], w[lo:hi], start, max_iter, tol
        )
    return coef, converged


def _newton_many(
    design: FloatArray, y: FloatArray, w: FloatArray, start: FloatArray, max_iter: int, tol: float
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    q = design.shape[1]
    coef = np.tile(np.asarray(start, dtype=float), (w.shape[0], 1))
    converged = np.zeros(w.shape[0], dtype=bool)

    def loglik(eta: FloatArray, yy: FloatArray, ww: FloatArray) -> FloatArray:
        terms = yy * np.logaddexp(0.0, -eta) + (1.0 - yy) * np.logaddexp(0.0, eta)
        out: FloatArray = -(ww * terms).sum(axis=1)
        return out

    live = np.arange(w.shape[0])
    current = loglik(coef @ design.T, y, w)
    for _ in range(max_iter):
        if live.size == 0:
            break
        c, yy, ww = coef[live], y[live], w[live]
        s = logistic(c @ design.T)
        resid, v = ww * (yy - s), ww * s * (1.0 - s)
        grad = resid @ design
        info = np.einsum("rk,ki,kj->rij", v, design, design, optimize=True) + 1e-12 * np.eye(q)
        step = np.linalg.solve(info, grad[:, :, None])[:, :, 0]
        scale = np.ones(live.size)
        cand = c + step
        value = loglik(cand @ design.T, yy, ww)
        now = current[live]
        while True:
            bad = (value < now - 1e-12 * np.maximum(1.0, np.abs(now))) & (scale >= 1e-8)
            if not bad.any():
                break
            scale[bad] /= 2.0
            cand[bad] = c[bad] + scale[bad, None] * step[bad]
            value[bad] = loglik(cand[bad] @ design.T, yy[bad], ww[bad])
        coef[live], current[live] = cand, value
        done = np.max(np.abs(scale[:, None] * step), axis=1, initial=0.0) < tol
        converged[live[done]] = True
        live = live[~done]
    return coef, converged
