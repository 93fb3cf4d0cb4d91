"""Weighted logistic regression with soft labels, by Newton's method (numpy only).

The one fitting routine behind the length-controlled win rate and Bradley-Terry scores.
It maximises ``sum_i w_i [y_i log s_i + (1 - y_i) log(1 - s_i)] - 1/2 sum_j r_j (b_j - m_j)^2``
with ``s = logistic(X b + offset)``: ``y`` may be any value in ``[0, 1]`` (a soft preference
or a tie's 0.5), ``w`` non-negative weights, and ``r`` / ``m`` an optional Gaussian prior
(ridge) per coefficient. The objective is concave, so Newton steps with step halving
converge to its maximum when one exists.

>>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
>>> fit = fit_logistic(X, np.array([0.0, 0.0, 1.0, 1.0]), prior_precision=np.array([0.0, 1.0]))
>>> fit.converged, [round(float(c), 3) for c in fit.coef]  # scikit-learn's LogisticRegression(C=1)
(True, [-1.437, 0.958])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["LogisticFit", "fit_logistic", "log_likelihood", "logistic"]

FloatArray = npt.NDArray[np.float64]


def logistic(x: FloatArray | float) -> FloatArray:
    """``1 / (1 + exp(-x))`` without overflow."""
    return np.asarray(np.exp(-np.logaddexp(0.0, -np.asarray(x, dtype=float))), dtype=float)


def log_likelihood(eta: FloatArray, y: FloatArray, w: FloatArray) -> float:
    """``sum w [y log s + (1 - y) log(1 - s)]`` for ``s = logistic(eta)``, computed stably."""
    # log s = -log(1 + e^-eta), log(1 - s) = -log(1 + e^eta)
    return float(-np.dot(w, y * np.logaddexp(0.0, -eta) + (1.0 - y) * np.logaddexp(0.0, eta)))


@dataclass(frozen=True)
class LogisticFit:
    """The fitted coefficients, the negative Hessian of the penalised objective at them
    (its inverse is the coefficients' approximate covariance), and whether Newton converged."""

    coef: FloatArray
    information: FloatArray
    converged: bool
    n_iter: int
    log_likelihood: float


def fit_logistic(
    X: FloatArray,
    y: FloatArray,
    *,
    weights: FloatArray | None = None,
    offset: FloatArray | None = None,
    prior_precision: FloatArray | None = None,
    prior_mean: FloatArray | None = None,
    start: FloatArray | None = None,
    max_iter: int = 200,
    tol: float = 1e-10,
) -> LogisticFit:
    """Fit ``y ~ logistic(X b + offset)`` by damped Newton steps (see the module docstring)."""
    n, k = X.shape
    w = np.ones(n) if weights is None else weights
    off = np.zeros(n) if offset is None else offset
    r = np.zeros(k) if prior_precision is None else prior_precision
    m = np.zeros(k) if prior_mean is None else prior_mean
    b = np.zeros(k) if start is None else np.array(start, dtype=float)

    def objective(beta: FloatArray) -> float:
        return log_likelihood(X @ beta + off, y, w) - 0.5 * float(np.dot(r, (beta - m) ** 2))

    current = objective(b)
    converged = False
    it = 0
    while it < max_iter:
        it += 1
        s = logistic(X @ b + off)
        grad = X.T @ (w * (y - s)) - r * (b - m)
        info = (X * (w * s * (1.0 - s))[:, None]).T @ X + np.diag(r)
        # a tiny jitter keeps a direction the data leave flat (a coefficient no row uses) solvable
        step = np.linalg.solve(info + 1e-12 * np.eye(k), grad)
        scale = 1.0
        while True:
            candidate = b + scale * step
            value = objective(candidate)
            if value >= current - 1e-12 * max(1.0, abs(current)) or scale < 1e-8:
                break
            scale /= 2.0
        b, current = candidate, value
        if float(np.max(np.abs(scale * step), initial=0.0)) < tol:
            converged = True
            break
    s = logistic(X @ b + off)
    info = (X * (w * s * (1.0 - s))[:, None]).T @ X + np.diag(r)
    return LogisticFit(
        coef=b, information=info, converged=converged, n_iter=it, log_likelihood=current
    )
