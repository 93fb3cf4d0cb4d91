"""Estimates from a judge on every item and people's labels on a few: PPI++.

A judge's mean score is biased by the judge's own errors; an interval around it covers
the judge's sampling noise, not that bias. Prediction-powered inference (Angelopoulos et
al., 2023) corrects the judge's mean with the labelled items' residuals: the interval is
valid whatever the judge's quality, and narrower than the labels alone when the judge is
informative. The power ``lam`` is tuned to the data (PPI++): an uninformative judge gets
``lam`` near 0 and the figure falls back to the labels alone.

:func:`ppi_mean` is the one estimator (``judge``: one prediction per item, for every item;
``labels``: the person's value where there is one, ``None`` elsewhere);
:func:`ppi_win_rate` and :func:`ppi_agreement` read pairwise verdicts and verdict-label
agreement into it. Labels come from a uniform random subset, or from items chosen with
known inclusion probabilities (``probabilities``: weighted, as in active inference,
Zrnic and Candes, 2024). ``strata`` estimates each stratum apart and weights them by size.

It refuses (:class:`~jurist.errors.UntrustedEstimateError`, naming the reason) what it
cannot stand behind: fewer than ``min_labels`` labels, labels all alike, a "random"
subset whose judge scores differ from the rest's beyond chance (a subset chosen by hand
or in data order), a probability outside (0, 1].

>>> judge = [0.9, 0.8, 0.3, 0.7, 0.2, 0.6] * 10
>>> labels = [1, 1, 0, None, 0, None] * 10
>>> est = ppi_mean(judge, labels, min_labels=20)
>>> est.labels, est.items, est.lower < est.estimate < est.upper
(40, 60, True)
>>> est.width < est.labels_only.width
True
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from jurist.errors import ConfigError, UntrustedEstimateError
from jurist.metrics._ppi_core import (
    uniform_ppi,
    uniform_ppi_draws,
    weighted_ppi,
    weighted_ppi_draws,
)

__all__ = [
    "BALANCE_Z",
    "PPIEstimate",
    "PPIInterval",
    "agreement_hits",
    "ppi_agreement",
    "ppi_mean",
    "ppi_win_rate",
    "win_value",
]

Method = Literal["analytic", "bootstrap"]
BALANCE_Z = 3.9
"""A uniform random subset is refused when its judge mean sits this many standard errors
from all items' (a chance of about 1 in 10,000 for a truly random one)."""


class PPIInterval(BaseModel):
    """A figure with its interval and how many labels (or items) it rests on."""

    model_config = ConfigDict(frozen=True)

    estimate: float
    lower: float
    upper: float
    labels: int

    @property
    def width(self) -> float:
        return self.upper - self.lower


class PPIEstimate(PPIInterval):
    """The corrected figure (``estimate``, ``lower``, ``upper``, ``labels``) beside the
    labels alone (``labels_only``) and the judge alone (``judge_only``; ``None`` when the
    judge gives no prediction of the quantity, e.g. agreement without a confidence)."""

    items: int
    level: float
    method: Method
    design: Literal["uniform", "weighted"]
    power: float
    """The tuned ``lam`` (0: the judge is not used; stratified: the labels' weighted mean)."""
    labels_only: PPIInterval
    judge_only: PPIInterval | None
    unscored: int = 0
    """Items the judge gave no score: predicted by the judge's mean (see the docs)."""
    strata: dict[str, PPIInterval] | None = None
    notes: list[str] = []

    @property
    def effective_labels(self) -> float:
        """How many labels alone would give this interval's width (labels times the ratio of
        the variances)."""
        if self.width <= 0:
            return float("inf")
        return self.labels * (self.labels_only.width / self.width) ** 2

    def as_json(self) -> dict[str, Any]:
        """The figures as ``--json`` writes them: the corrected interval at the top level."""
        out = self.model_dump(exclude={"strata"})
        out["width"] = self.width
        out["labels_only"]["width"] = self.labels_only.width
        if self.judge_only is not None:
            out["judge_only"]["width"] = self.judge_only.width
        if self.strata is not None:
            out["strata"] = {k: v.model_dump() for k, v in self.strata.items()}
        return out


def _z(level: float) -> float:
    if not 0 < level < 1:
        raise ConfigError(f"level must be between 0 and 1, got {level}")
    return NormalDist().inv_cdf(0.5 + level / 2)


def _numbers(values: Sequence[Any], what: str) -> np.ndarray:
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        if v is None or isinstance(v, bool):
            if isinstance(v, bool):
                out[i] = float(v)
            continue
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            raise ConfigError(f"{what}: item {i + 1}: {v!r} is not a number") from None
        if math.isinf(out[i]):
            raise UntrustedEstimateError(f"{what}: item {i + 1}: {v!r} is not a finite number")
    return out


def _check_labels(y: np.ndarray, min_labels: int, where: str) -> None:
    have = y[~np.isnan(y)]
    if have.size < min_labels:
        raise UntrustedEstimateError(
            f"{where}{have.size} labels; an interval from labels needs at least {min_labels} "
            "(fewer cannot support the normal approximation it rests on)"
        )
    if np.all(have == have[0]):
        raise UntrustedEstimateError(
            f"{where}every one of the {have.size} labels is {have[0]:g}: labels without "
            "variation give an interval of zero width, which no sample can support"
        )


def _balance(f: np.ndarray, xi: np.ndarray, where: str) -> None:
    """Refuse a 'uniform random' subset whose judge scores sit far from the rest's."""
    n, big_n = int(xi.sum()), f.size
    if n >= big_n or n < 2:
        return
    sd = f.std(ddof=1)
    if sd == 0:
        return
    se = sd * math.sqrt((1 / n) * (1 - n / big_n))
    z = (f[xi > 0].mean() - f.mean()) / se
    if abs(z) > BALANCE_Z:
        raise UntrustedEstimateError(
            f"{where}the labelled items are not a random subset: their mean judge score "
            f"{f[xi > 0].mean():.4f} is {abs(z):.1f} standard errors from all items' "
            f"{f.mean():.4f}; label a random sample (jurist review RUN --plan N), or give "
            "each labelled item its inclusion probability"
        )


def _one(
    y: np.ndarray,
    f: np.ndarray,
    pi: np.ndarray | None,
    method: Method,
    z: float,
    n_resamples: int,
    rng: np.random.Generator,
) -> tuple[float, float, float, float, float, float]:
    """(estimate, lower, upper, power, labels-only estimate, labels-only half-width)."""
    xi = (~np.isnan(y)).astype(float)
    yy = np.nan_to_num(y)
    if pi is None:
        lab = xi > 0
        est, var, lam = uniform_ppi(yy[lab][None], f[lab][None], f)
        plain = yy[lab]
        lab_est, lab_half = plain.mean(), z * plain.std(ddof=1) / math.sqrt(plain.size)
    else:
        est, var, lam = weighted_ppi(yy, f, xi[None], pi)
        lo_est, lo_var, _ = weighted_ppi(yy, np.zeros_like(f), xi[None], pi, tune=False)
        lab_est, lab_half = float(lo_est[0]), z * math.sqrt(float(lo_var[0]))
    e, half = float(est[0]), z * math.sqrt(float(var[0]))
    if method == "analytic":
        return e, e - half, e + half, float(lam[0]), float(lab_est), lab_half
    if pi is None:
        lab = xi > 0
        draws = uniform_ppi_draws(yy[lab], f[lab], f, draws=n_resamples, rng=rng)
    else:
        draws = weighted_ppi_draws(yy, f, xi, pi, draws=n_resamples, rng=rng)
    alpha = (1 - (2 * NormalDist().cdf(z) - 1)) / 2
    lo, hi = np.quantile(draws, [alpha, 1 - alpha])
    return e, float(lo), float(hi), float(lam[0]), float(lab_est), lab_half


def ppi_mean(
    judge: Sequence[float | None],
    labels: Sequence[float | None],
    *,
    probabilities: Sequence[float | None] | None = None,
    strata: Sequence[Hashable] | None = None,
    level: float = 0.95,
    method: Method = "analytic",
    n_resamples: int = 2000,
    seed: int = 0,
    min_labels: int = 30,
    min_per_stratum: int = 10,
    where: str = "",
) -> PPIEstimate:
    """The mean of ``labels`` over all items: the PPI++ estimate (see the module docs).

    ``judge``: every item's judge value (``None``: no score; such items are predicted by
    the judge's mean over the others, and counted in ``unscored``); ``labels``: the
    person's value, ``None`` where unlabelled; ``probabilities``: each labelled item's
    probability of having been chosen (``None``: a uniform random subset, checked for
    balance); ``strata``: a key per item; ``method``: ``analytic`` (normal) or
    ``bootstrap`` (percentile, ``n_resamples`` draws); ``where``: the file or field the
    labels came from, named in refusals.
    """
    head = f"{where}: " if where else ""
    if method not in ("analytic", "bootstrap"):
        raise ConfigError(f"method must be analytic or bootstrap, not {method!r}")
    if len(judge) != len(labels):
        raise ConfigError(f"{head}{len(judge)} judge values but {len(labels)} labels")
    z = _z(level)
    f = _numbers(judge, f"{head}judge")
    y = _numbers(labels, f"{head}labels")
    pi: np.ndarray | None = None
    if probabilities is not None:
        if len(probabilities) != len(labels):
            raise ConfigError(
                f"{head}{len(probabilities)} inclusion probabilities for {len(labels)} items"
            )
        pi = _numbers(probabilities, f"{head}inclusion probabilities")
        bad = np.flatnonzero(~np.isnan(y) & ~((pi > 0) & (pi <= 1)))
        if bad.size:
            raise UntrustedEstimateError(
                f"{head}item {bad[0] + 1}: a labelled item needs an inclusion probability in "
                f"(0, 1], got {probabilities[bad[0]]!r}"
            )
        pi = np.where(np.isnan(pi), 1.0, pi)
    unscored = int(np.isnan(f).sum())
    notes: list[str] = []
    if unscored == f.size:
        raise UntrustedEstimateError(f"{head}the judge scored none of the {f.size} items")
    if unscored:
        f = np.where(np.isnan(f), np.nanmean(f), f)
        notes.append(f"{unscored} items without a judge score are predicted by its mean")
    _check_labels(y, min_labels, head)
    keys = [str(k) for k in strata] if strata is not None else ["all"] * f.size
    if len(keys) != f.size:
        raise ConfigError(f"{head}{len(keys)} strata keys for {f.size} items")
    groups: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    rng = np.random.default_rng(seed)
    parts: dict[str, tuple[float, float, float, float, float, float, int, float]] = {}
    for k, members in groups.items():
        idx = np.asarray(members)
        yk, fk = y[idx], f[idx]
        sub = head if strata is None else f"{head}stratum {k!r}: "
        _check_labels(yk, min_per_stratum if strata is not None else min_labels, sub)
        if pi is None:
            _balance(fk, (~np.isnan(yk)).astype(float), sub)
        pk = None if pi is None else pi[idx]
        res = _one(yk, fk, pk, method, z, n_resamples, rng)
        parts[k] = (*res, int((~np.isnan(yk)).sum()), idx.size / f.size)
    return _combine(
        parts,
        f,
        int((~np.isnan(y)).sum()),
        z,
        level,
        method,
        pi,
        unscored,
        notes,
        strata is not None,
    )


def _combine(
    parts: dict[str, tuple[float, float, float, float, float, float, int, float]],
    f: np.ndarray,
    labels: int,
    z: float,
    level: float,
    method: Method,
    pi: np.ndarray | None,
    unscored: int,
    notes: list[str],
    stratified: bool,
) -> PPIEstimate:
    est = sum(w * p[0] for p in parts.values() for w in [p[7]])
    # each stratum's half-width as a standard error; strata are independent
    se = math.sqrt(sum((p[7] * (p[2] - p[1]) / (2 * z)) ** 2 for p in parts.values()))
    shift = sum(p[7] * ((p[1] + p[2]) / 2 - p[0]) for p in parts.values())
    lab_est = sum(p[7] * p[4] for p in parts.values())
    lab_se = math.sqrt(sum((p[7] * p[5] / z) ** 2 for p in parts.values()))
    judge_mean, judge_half = float(f.mean()), z * float(f.std(ddof=1)) / math.sqrt(f.size)
    return PPIEstimate(
        estimate=est,
        lower=est + shift - z * se,
        upper=est + shift + z * se,
        labels=labels,
        items=f.size,
        level=level,
        method=method,
        design="uniform" if pi is None else "weighted",
        power=sum(p[7] * p[3] for p in parts.values()),
        labels_only=PPIInterval(
            estimate=lab_est,
            lower=lab_est - z * lab_se,
            upper=lab_est + z * lab_se,
            labels=labels,
        ),
        judge_only=PPIInterval(
            estimate=judge_mean,
            lower=judge_mean - judge_half,
            upper=judge_mean + judge_half,
            labels=0,
        ),
        unscored=unscored,
        strata=(
            {
                k: PPIInterval(estimate=p[0], lower=p[1], upper=p[2], labels=p[6])
                for k, p in parts.items()
            }
            if stratified
            else None
        ),
        notes=notes,
    )


_WIN = {"a": 1.0, "b": 0.0, "tie": 0.5, "c": 0.5, "1": 1.0, "2": 0.0, "0": 0.5}


def win_value(v: Any) -> float | None:
    """A pairwise verdict as A's win: ``A`` 1, ``B`` 0, ``tie`` 0.5; a number in [0, 1] is
    a probability that A wins (kept as is); ``None``: no verdict.

    >>> [win_value(v) for v in ("A", "b", "tie", 0.75, None)]
    [1.0, 0.0, 0.5, 0.75, None]
    """
    if v is None:
        return None
    if isinstance(v, str):
        key = v.strip().lower()
        if key in _WIN:
            return _WIN[key]
        raise ConfigError(f"{v!r} is not a pairwise verdict (A, B or tie)")
    x = float(v)
    if not 0 <= x <= 1:
        raise ConfigError(f"{v!r} is not a pairwise verdict (a probability in [0, 1])")
    return x


def ppi_win_rate(judge: Sequence[Any], labels: Sequence[Any], **kwargs: Any) -> PPIEstimate:
    """A's win rate (ties half) from pairwise verdicts: ``A``/``B``/``tie`` or A's win
    probability, for the judge on every pair and people on a few (:func:`ppi_mean`'s
    options)."""
    return ppi_mean([win_value(v) for v in judge], [win_value(v) for v in labels], **kwargs)


def agreement_hits(verdicts: Sequence[Any], labels: Sequence[Any]) -> list[float | None]:
    """Per item, 1.0 where the verdict equals the label (numbers as numbers, text without
    case or surrounding blanks), 0.0 where not, ``None`` where unlabelled.

    >>> agreement_hits([4.0, "A", None, 2], [4, "a", "B", None])
    [1.0, 1.0, 0.0, None]
    """

    def key(v: Any) -> Any:
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v)
        return str(v).strip().lower()

    return [
        None if lab is None else float(v is not None and key(v) == key(lab))
        for v, lab in zip(verdicts, labels, strict=True)
    ]


def ppi_agreement(
    verdicts: Sequence[Any],
    labels: Sequence[Any],
    *,
    confidence: Sequence[float | None] | None = None,
    **kwargs: Any,
) -> PPIEstimate:
    """The rate at which the judge's verdict equals the person's label, over all items.

    ``confidence``: the judge's probability that its verdict is right, per item; it is the
    prediction PPI corrects (without it the figure is the labels' alone, and ``judge_only``
    is ``None``).
    """
    hits = [
        None
        if lab is None
        else float(v is not None and str(v).strip().lower() == str(lab).strip().lower())
        for v, lab in zip(verdicts, labels, strict=True)
    ]
    if confidence is None:
        est = ppi_mean([0.0] * len(hits), hits, **kwargs)
        return est.model_copy(update={"judge_only": None, "power": 0.0})
    return ppi_mean(list(confidence), hits, **kwargs)
