"""The measures: agreement on labels and on numbers, with one rule for missing values.

Labels: accuracy, Cohen's kappa (``weights=None | "linear" | "quadratic"``), the confusion
matrix, Fleiss' kappa (Fleiss 1971), Krippendorff's alpha (nominal, ordinal, interval,
ratio). Numbers: Pearson, Spearman, Kendall tau-b, RMSE and MAE. All of it is numpy alone
(:mod:`jurist.metrics._stats`), so it works on the base install; the figures match
scikit-learn, the ``krippendorff`` package and scipy, which the tests check.

Missing values (``None`` or NaN) are dropped pairwise: a failed judgment is left out of
agreement, never counted as a 0.

>>> paired([1, None, 3.0, float("nan")], [1, 2, None, 4])
([1], [1])
>>> round(accuracy(["a", "b", "a"], ["a", "b", "b"]), 4)
0.6667
>>> round(cohen_kappa([1, 2, 3, 1], [1, 2, 3, 2]), 4)
0.6364
>>> round(fleiss_kappa([[1, 1, 1], [2, 2, 2], [1, 2, 1]]), 4)
0.55
>>> round(krippendorff_alpha([[1, 2, 3, None], [1, 2, 3, 3]], level="nominal"), 4)
1.0
>>> round(pearson([1, 2, 3, 4], [1, 2, 3, 5]), 6)
0.982708
>>> spearman([1, 2, 3, 4], [1, 2, 3, 5]), kendall_tau([1, 2, 3, None], [3, 2, 1, 0])
(1.0, -1.0)
>>> round(rmse([1, 2, 3], [1, 2, 5]), 4), round(mae([1, 2, 3], [1, 2, 5]), 4)
(1.1547, 0.6667)
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Literal

import numpy as np

from jurist.errors import DataError, MissingDependencyError
from jurist.metrics import _stats

__all__ = [
    "accuracy",
    "cohen_kappa",
    "confusion",
    "fleiss_kappa",
    "is_missing",
    "kendall_tau",
    "krippendorff_alpha",
    "mae",
    "need",
    "numeric",
    "paired",
    "pearson",
    "rmse",
    "spearman",
]

_PIP_NAMES = {"sklearn": "scikit-learn"}


def need(module: str, feature: str) -> ModuleType:
    """Import an optional package, or say which extra installs it (the measures need none)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.split(".")[0]
        raise MissingDependencyError(_PIP_NAMES.get(top, top), "metrics", feature) from e


def is_missing(value: Any) -> bool:
    """``None`` or a float NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def paired(a: Sequence[Any], b: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """The pairs where neither value is missing (lengths must match)."""
    if len(a) != len(b):
        raise DataError(f"the two series differ in length: {len(a)} != {len(b)}")
    xs: list[Any] = []
    ys: list[Any] = []
    for x, y in zip(a, b, strict=True):
        if not (is_missing(x) or is_missing(y)):
            xs.append(x)
            ys.append(y)
    return xs, ys


def numeric(values: Sequence[Any], what: str) -> list[float]:
    """``values`` as floats, or a DataError naming the first that is not a number."""
    out: list[float] = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int | float):
            try:
                out.append(float(v))
            except (TypeError, ValueError):
                raise DataError(f"{what}: value {i} ({v!r}) is not a number") from None
        else:
            out.append(float(v))
    return out


Level = Literal["nominal", "ordinal", "interval", "ratio"]


def accuracy(predicted: Sequence[Any], truth: Sequence[Any]) -> float:
    """The share of pairs that agree exactly (pairs with a missing value are left out)."""
    xs, ys = paired(predicted, truth)
    if not xs:
        return float("nan")
    return sum(1 for x, y in zip(xs, ys, strict=True) if x == y) / len(xs)


def cohen_kappa(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    weights: Literal["linear", "quadratic"] | None = None,
) -> float:
    """Cohen's kappa between two raters; ``weights`` for ordinal labels."""
    xs, ys = paired(a, b)
    if not xs:
        return float("nan")
    return _stats.kappa(xs, ys, weights)  # one label only: kappa is undefined, NaN says so


def confusion(
    predicted: Sequence[Any], truth: Sequence[Any], labels: Sequence[Any] | None = None
) -> tuple[list[Any], list[list[int]]]:
    """``(labels, matrix)``: ``matrix[i][j]`` counts truth ``labels[i]`` judged ``labels[j]``.

    >>> confusion(["a", "b", "b"], ["a", "a", "b"])
    (['a', 'b'], [[1, 1], [0, 1]])
    """
    xs, ys = paired(predicted, truth)
    names = list(labels) if labels is not None else sorted(set(xs) | set(ys), key=str)
    matrix = _stats.confusion_matrix(ys, xs, names)
    return names, [[int(v) for v in row] for row in matrix.tolist()]


def fleiss_kappa(ratings: Sequence[Sequence[Any]]) -> float:
    """Fleiss' kappa from one row per item holding each rater's label.

    Every item needs the same number of ratings (at least two).
    """
    rows = [list(r) for r in ratings]
    if not rows:
        return float("nan")
    n_raters = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != n_raters or any(is_missing(v) for v in row):
            raise DataError(
                f"Fleiss' kappa: item {i} has {sum(not is_missing(v) for v in row)} ratings, "
                f"expected {n_raters} (every item needs every rater)"
            )
    if n_raters < 2:
        raise DataError("Fleiss' kappa needs at least two ratings per item")
    categories = sorted({v for row in rows for v in row}, key=str)
    index = {c: j for j, c in enumerate(categories)}
    counts = np.zeros((len(rows), len(categories)))
    for i, row in enumerate(rows):
        for v in row:
            counts[i, index[v]] += 1
    p_j = counts.sum(axis=0) / (len(rows) * n_raters)
    p_i = ((counts * counts).sum(axis=1) - n_raters) / (n_raters * (n_raters - 1))
    p_bar, p_e = p_i.mean(), (p_j * p_j).sum()
    if p_e == 1.0:
        return float("nan")
    return float((p_bar - p_e) / (1 - p_e))


def krippendorff_alpha(reliability: Sequence[Sequence[Any]], *, level: Level = "nominal") -> float:
    """Krippendorff's alpha from one row per rater (``None`` where a rater gave no label).

    Non-numeric labels are coded in sorted order (meaningful for ``nominal``; for the other
    levels pass numbers).
    """
    rows = [list(r) for r in reliability]
    values = {v for row in rows for v in row if not is_missing(v)}
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    if not numeric and level != "nominal":
        raise DataError(f"Krippendorff's alpha at the {level} level needs numeric labels")
    codes = {v: float(i) for i, v in enumerate(sorted(values, key=str))}
    data = np.array(
        [
            [np.nan if is_missing(v) else (float(v) if numeric else codes[v]) for v in row]
            for row in rows
        ],
        dtype=float,
    )
    if len(values) < 2:
        return float("nan")
    return _stats.alpha(data, level)


def _pairs(a: Sequence[Any], b: Sequence[Any]) -> tuple[list[float], list[float]]:
    xs, ys = paired(a, b)
    return numeric(xs, "first series"), numeric(ys, "second series")


def _constant(values: list[float]) -> bool:
    return len(set(values)) < 2


def pearson(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Pearson's r (NaN when fewer than two pairs or a series is constant)."""
    xs, ys = _pairs(a, b)
    if len(xs) < 2 or _constant(xs) or _constant(ys):
        return float("nan")
    return _stats.pearson_r(xs, ys)


def spearman(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Spearman's rho."""
    xs, ys = _pairs(a, b)
    if len(xs) < 2 or _constant(xs) or _constant(ys):
        return float("nan")
    return _stats.spearman_rho(xs, ys)


def kendall_tau(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Kendall's tau-b (ties handled)."""
    xs, ys = _pairs(a, b)
    if len(xs) < 2 or _constant(xs) or _constant(ys):
        return float("nan")
    return _stats.kendall_tau_b(xs, ys)


def rmse(predicted: Sequence[Any], truth: Sequence[Any]) -> float:
    """Root mean squared error."""
    xs, ys = _pairs(predicted, truth)
    if not xs:
        return float("nan")
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(xs, ys, strict=True)) / len(xs))


def mae(predicted: Sequence[Any], truth: Sequence[Any]) -> float:
    """Mean absolute error."""
    xs, ys = _pairs(predicted, truth)
    if not xs:
        return float("nan")
    return sum(abs(x - y) for x, y in zip(xs, ys, strict=True)) / len(xs)
