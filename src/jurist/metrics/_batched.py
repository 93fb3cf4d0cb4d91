"""The measures over many bootstrap resamples at once: numpy on index matrices.

A bootstrap interval asks a measure for its value on 1,000 resamples of the same items.
Asked one resample at a time, as a Python function of two lists, that is 1,000 calls of
pure-Python bookkeeping (pairing, label tables, coding) for a few microseconds of
arithmetic. Here each measure has a *kernel*: given the paired values once, it codes them
(labels to integers in sorted order, numbers to floats) and returns a function of an index
matrix (one resample a row) that computes every row's value in one numpy pass, from the
same count tables and the same formulas as :mod:`jurist.metrics._stats`: integer counts
are exact, so the figures agree with the one-at-a-time measure to the last few bits (the
order of a float sum may differ), NaN where it is NaN. tests/metrics/test_stats_differential.py
checks the intervals against scipy's bootstrap of the reference libraries.

>>> from jurist.metrics._measures import accuracy
>>> rows = np.array([[0, 1, 2, 3], [0, 0, 1, 1]])
>>> batched(accuracy, ["a", "b", "a", "b"], ["a", "b", "b", "b"])(rows).tolist()
[0.75, 1.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from jurist.metrics._measures import (
    accuracy,
    cohen_kappa,
    kendall_tau,
    mae,
    numeric,
    pearson,
    rmse,
    spearman,
)

__all__ = ["Batched", "Kernel", "alpha_kernel", "batched", "kappa_kernel", "register"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Batched = Callable[[IntArray], FloatArray]
"""A measure's value on each row of an index matrix (one resample a row)."""
Kernel = Callable[[Sequence[Any], Sequence[Any]], Batched | None]
"""Given the paired values (none missing), their :data:`Batched`, or None where the values
do not suit one (then the caller asks the measure one resample at a time)."""

_KERNELS: dict[Callable[..., float], Kernel] = {}
_CELLS = 1 << 20  # at most this many table cells (or values) per chunk of resamples
_MAX_LABELS = 64  # more distinct labels than this: a table per resample is no saving


def register(metric: Callable[..., float], kernel: Kernel) -> None:
    """Make :func:`batched` answer ``kernel`` for ``metric``."""
    _KERNELS[metric] = kernel


def batched(metric: Callable[..., float], xs: Sequence[Any], ys: Sequence[Any]) -> Batched | None:
    """``metric``'s kernel on the paired values ``xs``, ``ys``, or None if it has none."""
    kernel = _KERNELS.get(metric)
    return None if kernel is None else kernel(xs, ys)


def _chunked(per_row: int, fn: Batched) -> Batched:
    """``fn`` over row chunks holding at most :data:`_CELLS` cells (``per_row`` a row)."""

    def run(idx: IntArray) -> FloatArray:
        step = max(1, _CELLS // max(1, per_row))
        if len(idx) <= step:
            return fn(idx)
        return np.concatenate([fn(idx[s : s + step]) for s in range(0, len(idx), step)])

    return run


def _codes(values: Sequence[Any]) -> tuple[list[Any], IntArray] | None:
    """The labels in sorted order and each value's position; None if they do not sort."""
    try:
        labels = sorted(set(values))
    except TypeError:
        return None
    index = {v: i for i, v in enumerate(labels)}
    return labels, np.array([index[v] for v in values], dtype=np.int64)


def _tables(xc: IntArray, yc: IntArray, nx: int, ny: int, idx: IntArray) -> IntArray:
    """``t[r, i, j]``: items of resample ``r`` with ``x`` code ``i`` and ``y`` code ``j``."""
    r = len(idx)
    flat = (np.arange(r)[:, None] * (nx * ny) + xc[idx] * ny + yc[idx]).ravel()
    return np.bincount(flat, minlength=r * nx * ny).reshape(r, nx, ny)


def _joint(xs: Sequence[Any], ys: Sequence[Any]) -> tuple[int, IntArray, IntArray] | None:
    coded = _codes([*xs, *ys])
    if coded is None or len(coded[0]) > _MAX_LABELS:
        return None
    labels, codes = coded
    return len(labels), codes[: len(xs)], codes[len(xs) :]


def _accuracy(xs: Sequence[Any], ys: Sequence[Any]) -> Batched | None:
    joint = _joint(xs, ys)
    if joint is None:
        return None
    _, xc, yc = joint
    return _chunked(len(xs), lambda idx: (xc[idx] == yc[idx]).sum(axis=1) / idx.shape[1])


def kappa_kernel(weights: Literal["linear", "quadratic"] | None) -> Kernel:
    """Cohen's kappa as :func:`jurist.metrics._stats.kappa`: weights on the positions of
    the labels present in each resample, in sorted order."""

    def kernel(xs: Sequence[Any], ys: Sequence[Any]) -> Batched | None:
        joint = _joint(xs, ys)
        if joint is None:
            return None
        n, xc, yc = joint

        def run(idx: IntArray) -> FloatArray:
            confusion = _tables(xc, yc, n, n, idx)
            sum0, sum1 = confusion.sum(axis=1), confusion.sum(axis=2)
            expected = sum0[:, :, None] * sum1[:, None, :] / sum0.sum(axis=1)[:, None, None]
            if weights is None:
                w = np.broadcast_to(1 - np.eye(n, dtype=np.int64), confusion.shape)
            else:
                pos = np.cumsum((sum0 + sum1) > 0, axis=1)  # absent labels take no place
                w = np.abs(pos[:, :, None] - pos[:, None, :])
                w = w if weights == "linear" else w * w
            return _one_less((w * confusion).sum(axis=(1, 2)), (w * expected).sum(axis=(1, 2)))

        return _chunked(n * n, run)

    return kernel


def alpha_kernel(level: Literal["nominal", "ordinal", "interval"]) -> Kernel:
    """Krippendorff's alpha of two raters with a value on every item, as
    :func:`jurist.metrics._stats.alpha`: the coincidence matrix of a resample is its
    table plus its transpose (each item one pair of values, both ways)."""

    def kernel(xs: Sequence[Any], ys: Sequence[Any]) -> Batched | None:
        if level == "interval":
            return _interval_alpha(xs, ys)
        values = [*xs, *ys]
        number = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        if level == "ordinal" and not number:
            return None  # the measure raises; let it say so
        joint = _joint(xs, ys)
        if joint is None:
            return None
        n, xc, yc = joint

        def run(idx: IntArray) -> FloatArray:
            table = _tables(xc, yc, n, n, idx)
            o = (table + table.transpose(0, 2, 1)).astype(float)
            n_v = o.sum(axis=1)
            total = n_v.sum(axis=1)[:, None, None]
            diag = n_v[:, :, None] * np.eye(n)
            e = (n_v[:, :, None] * n_v[:, None, :] - diag) / (total - 1)
            if level == "nominal":
                dist = np.broadcast_to(1.0 - np.eye(n), o.shape)
            else:  # the mass between two values, less half of each end
                cum = np.concatenate([np.zeros((len(idx), 1)), np.cumsum(n_v, axis=1)], axis=1)
                at = np.arange(n)
                lo, hi = np.minimum.outer(at, at), np.maximum.outer(at, at)
                between = cum[:, hi + 1] - cum[:, lo]
                dist = (between - (n_v[:, lo] + n_v[:, hi]) / 2) ** 2
            return _one_less((o * dist).sum(axis=(1, 2)), (e * dist).sum(axis=(1, 2)))

        return _chunked(n * n, run)

    return kernel


def _one_less(observed: FloatArray, expected: FloatArray) -> FloatArray:
    """``1 - observed / expected`` per resample (kappa's and alpha's form); NaN where
    nothing was expected to disagree."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1 - observed / expected
    return np.where(expected == 0.0, np.nan, out)


def _numbers(xs: Sequence[Any], ys: Sequence[Any]) -> tuple[FloatArray, FloatArray]:
    return (
        np.array(numeric(xs, "first series"), dtype=float),
        np.array(numeric(ys, "second series"), dtype=float),
    )


def _interval_alpha(xs: Sequence[Any], ys: Sequence[Any]) -> Batched:
    x, y = _numbers(xs, ys)

    def run(idx: IntArray) -> FloatArray:
        a, b = x[idx], y[idx]
        s1, s2 = a + b, a * a + b * b
        observed = (4 * s2 - 2 * s1 * s1).sum(axis=1)
        n = 2.0 * idx.shape[1]
        expected = (2 * n * s2.sum(axis=1) - 2 * s1.sum(axis=1) ** 2) / (n - 1)
        constant = (a == a[:, :1]).all(axis=1) & (b == a[:, :1]).all(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = 1 - observed / expected
        return np.where(constant | (expected <= 0.0), np.nan, out)

    return _chunked(2 * len(xs), run)


def _constant_rows(a: FloatArray) -> npt.NDArray[np.bool_]:
    same: npt.NDArray[np.bool_] = (a == a[:, :1]).all(axis=1)
    return same


def _pearson_rows(a: FloatArray, b: FloatArray) -> FloatArray:
    """:func:`jurist.metrics._stats.pearson_r` of each row pair; NaN for a constant row."""
    am, bm = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    amax, bmax = np.abs(am).max(axis=1, keepdims=True), np.abs(bm).max(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        am, bm = am / amax, bm / bmax
        an = am / np.linalg.norm(am, axis=1, keepdims=True)
        bn = bm / np.linalg.norm(bm, axis=1, keepdims=True)
        r = np.clip((an * bn).sum(axis=1), -1.0, 1.0)
    return np.where(_constant_rows(a) | _constant_rows(b), np.nan, r)


def _pearson(xs: Sequence[Any], ys: Sequence[Any]) -> Batched:
    x, y = _numbers(xs, ys)
    return _chunked(2 * len(xs), lambda idx: _pearson_rows(x[idx], y[idx]))


def _ranks(a: FloatArray) -> FloatArray:
    """Each row's ranks from 1, ties given their average (``scipy.stats.rankdata``)."""
    r, n = a.shape
    order = np.argsort(a, axis=1, kind="mergesort")
    s = np.take_along_axis(a, order, axis=1)
    starts = np.ones((r, n), dtype=bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]
    ends = np.ones((r, n), dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    at = np.arange(n)
    first = np.maximum.accumulate(np.where(starts, at, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, at, n)[:, ::-1], axis=1)[:, ::-1]
    out = np.empty((r, n))
    np.put_along_axis(out, order, 0.5 * (first + last + 2), axis=1)
    return out


def _spearman(xs: Sequence[Any], ys: Sequence[Any]) -> Batched:
    x, y = _numbers(xs, ys)
    return _chunked(4 * len(xs), lambda idx: _pearson_rows(_ranks(x[idx]), _ranks(y[idx])))


def _kendall(xs: Sequence[Any], ys: Sequence[Any]) -> Batched | None:
    """Kendall's tau-b from each resample's table of (x, y) values: the same integer counts
    of discordant and tied pairs as :func:`jurist.metrics._stats.kendall_tau_b`."""
    x, y = _numbers(xs, ys)
    xv, xc = np.unique(x, return_inverse=True)
    yv, yc = np.unique(y, return_inverse=True)
    nx, ny = len(xv), len(yv)
    if nx * ny > _CELLS:
        return None

    def run(idx: IntArray) -> FloatArray:
        t = _tables(xc.astype(np.int64), yc.astype(np.int64), nx, ny, idx)
        # below[r, i, j]: items with x code > i and y code < j
        suffix = np.cumsum(t[:, ::-1, :], axis=1)[:, ::-1, :]  # x code >= i
        after = np.zeros_like(t)
        after[:, :-1, :] = suffix[:, 1:, :]
        left = np.zeros_like(t)
        left[:, :, 1:] = np.cumsum(after, axis=2)[:, :, :-1]
        dis = (t * left).sum(axis=(1, 2))
        size = idx.shape[1]
        tot = size * (size - 1) // 2
        rows, cols = t.sum(axis=2), t.sum(axis=1)
        xtie = (rows * (rows - 1) // 2).sum(axis=1)
        ytie = (cols * (cols - 1) // 2).sum(axis=1)
        ntie = (t * (t - 1) // 2).sum(axis=(1, 2))
        con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
        return np.where((xtie == tot) | (ytie == tot), np.nan, np.clip(tau, -1.0, 1.0))

    return _chunked(nx * ny + len(xs), run)


def _errors(kind: Literal["rmse", "mae"]) -> Kernel:
    def kernel(xs: Sequence[Any], ys: Sequence[Any]) -> Batched:
        x, y = _numbers(xs, ys)

        def run(idx: IntArray) -> FloatArray:
            d = x[idx] - y[idx]
            out: FloatArray = (
                np.abs(d).sum(axis=1) / idx.shape[1]
                if kind == "mae"
                else np.sqrt((d * d).sum(axis=1) / idx.shape[1])
            )
            return out

        return _chunked(len(xs), run)

    return kernel


register(accuracy, _accuracy)
register(cohen_kappa, kappa_kernel(None))
register(pearson, _pearson)
register(spearman, _spearman)
register(kendall_tau, _kendall)
register(rmse, _errors("rmse"))
register(mae, _errors("mae"))
