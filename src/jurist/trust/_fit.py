"""Fit and replay a cascade of judges offline, from recorded confidences (no model call).

A cascade runs its tiers in order (cheap first); tier ``i`` keeps an item when its
confidence is at least ``thresholds[i]`` and passes it on otherwise; an item no tier
keeps is left for people. :func:`fit_cascade` fits the thresholds on labelled items as
Jung et al. (ICLR 2025) do: tier by tier, each on the items the tiers before it passed
on, with :func:`~jurist.metrics.selective_threshold` at the same ``target``. When every
tier's kept items agree at ``>= target``, so do all the cascade's kept items (a mixture
of them); each tier's bound holds with probability ``>= 1 - delta_tier``, so the cascade's
holds with probability ``>= 1 - sum(delta_tier)`` (a union bound). ``delta_split="union"``
(the default) gives each of the ``k`` tiers ``delta / k``, which makes the cascade's
guarantee hold at ``delta``; ``"per_tier"`` gives each tier ``delta`` as the paper's code
does (more coverage, a formal level of ``k * delta`` for the whole cascade). A tier with
no certified threshold keeps nothing (``None``): it is never asked, and all its items go on.

:func:`replay_cascade` applies thresholds to recorded confidences: which tier decided
each item, the coverage, and, with labels, the realised agreement per tier and overall.

>>> import numpy as np
>>> rng = np.random.default_rng(1)
>>> cheap, strong = rng.uniform(0.5, 1, 600), rng.uniform(0.6, 1, 600)
>>> ok = [rng.uniform(size=600) < cheap, rng.uniform(size=600) < strong]
>>> fit = fit_cascade([cheap, strong], ok, target=0.85, delta=0.1, names=["cheap", "strong"])
>>> [round(t, 3) for t in fit.thresholds]
[0.771, 0.686]
>>> out = replay_cascade([cheap, strong], fit.thresholds, correct=ok)
>>> round(out.coverage, 3), round(out.agreement, 3), [t.decided for t in out.tiers]
(0.883, 0.891, [261, 269])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict

from jurist.errors import ConfigError, DataError
from jurist.metrics import SelectiveThreshold, selective_threshold

__all__ = [
    "CascadeFit",
    "CascadeReplay",
    "DeltaSplit",
    "TierFit",
    "TierReplay",
    "fit_cascade",
    "replay_cascade",
    "tier_delta",
]

DeltaSplit = Literal["union", "per_tier"]
"""How a cascade's ``delta`` is shared by its tiers: ``"union"`` (each of ``k`` tiers at
``delta / k``: the whole cascade's guarantee holds at ``delta``) or ``"per_tier"`` (each
tier at ``delta``, as the paper's code does)."""


class TierFit(BaseModel):
    """One tier's fitted threshold: ``reached`` calibration items came to it,
    ``selection`` is its certified threshold on them (``None``: it keeps nothing)."""

    model_config = ConfigDict(frozen=True)

    name: str
    reached: int
    delta: float
    selection: SelectiveThreshold | None

    @property
    def threshold(self) -> float | None:
        return self.selection.threshold if self.selection is not None else None


class CascadeFit(BaseModel):
    """A fitted cascade: per tier its threshold (``None`` keeps nothing), and the fit's
    coverage and agreement on the calibration items."""

    model_config = ConfigDict(frozen=True)

    target: float
    delta: float
    delta_split: DeltaSplit
    n: int
    tiers: tuple[TierFit, ...]
    coverage: float
    agreement: float | None

    @property
    def thresholds(self) -> tuple[float | None, ...]:
        return tuple(t.threshold for t in self.tiers)


class TierReplay(BaseModel):
    """One tier over a replay: ``reached`` items came to it, ``calls`` of them it was asked
    (all of them, or none for a tier with no threshold: it is never asked), ``decided`` of
    them it kept; ``coverage = decided / n``; ``agreement`` among those it kept (with
    labels); ``cost`` is ``calls * cost_per_call`` when a cost was given."""

    model_config = ConfigDict(frozen=True)

    name: str
    threshold: float | None
    reached: int
    calls: int
    decided: int
    coverage: float
    agreement: float | None = None
    cost: float | None = None


class CascadeReplay(BaseModel):
    """The thresholds applied: ``decided_by[i]`` is the tier that kept item ``i`` (``None``:
    no tier did, it goes to people); overall coverage and agreement, and per-tier figures."""

    model_config = ConfigDict(frozen=True)

    n: int
    decided_by: tuple[int | None, ...]
    coverage: float
    agreement: float | None
    abstained: int
    tiers: tuple[TierReplay, ...]

    @property
    def cost(self) -> float | None:
        costs = [t.cost for t in self.tiers]
        return None if any(c is None for c in costs) else float(sum(c or 0.0 for c in costs))


def tier_delta(delta: float, tiers: int, split: DeltaSplit) -> float:
    """The level each tier is tested at: ``delta / tiers`` (``"union"``) or ``delta``."""
    if split == "union":
        return delta / tiers
    if split == "per_tier":
        return delta
    raise ConfigError(f"delta_split must be 'union' or 'per_tier', got {split!r}")


def _matrix(values: Sequence[ArrayLike], what: str, dtype: type) -> list[NDArray[Any]]:
    rows: list[NDArray[Any]] = [np.asarray(v, dtype=dtype).ravel() for v in values]
    if not rows:
        raise DataError(f"a cascade needs at least one tier of {what}")
    sizes = {r.size for r in rows}
    if len(sizes) != 1:
        raise DataError(f"every tier's {what} must cover the same items, got sizes {sorted(sizes)}")
    return rows


def _names(names: Sequence[str] | None, k: int) -> list[str]:
    if names is None:
        return [f"tier_{i + 1}" for i in range(k)]
    if len(names) != k:
        raise DataError(f"{len(names)} names for {k} tiers")
    return list(names)


def fit_cascade(
    confidence: Sequence[ArrayLike],
    correct: Sequence[ArrayLike],
    *,
    target: float,
    delta: float,
    names: Sequence[str] | None = None,
    min_selected: int = 30,
    resolution: float | None = 0.001,
    delta_split: DeltaSplit = "union",
) -> CascadeFit:
    """Fit one threshold per tier on labelled items (see the module docs).

    Args:
        confidence: per tier, one confidence per item (``NaN`` where the tier gave none,
            or never judged the item: it is passed on).
        correct: per tier, whether its verdict on each item agrees with the label (read
            only where the tier was reached).
        target, delta: the agreement to guarantee and the chance it may fail.
        names: the tiers' names (default ``tier_1``...).
        min_selected, resolution: passed to :func:`~jurist.metrics.selective_threshold`.
        delta_split: ``"union"`` (each tier at ``delta / k``) or ``"per_tier"``.
    """
    conf = _matrix(confidence, "confidences", float)
    ok = _matrix(correct, "correctness", bool)
    if len(ok) != len(conf) or ok[0].size != conf[0].size:
        raise DataError("confidence and correct must have the same tiers and items")
    labels = _names(names, len(conf))
    level = tier_delta(delta, len(conf), delta_split)
    n = conf[0].size
    open_ = np.ones(n, dtype=bool)  # not yet kept by a tier
    kept_right = kept = 0
    tiers = []
    for name, c, right in zip(labels, conf, ok, strict=True):
        reached = int(open_.sum())
        sel = selective_threshold(
            c[open_],
            right[open_],
            target=target,
            delta=level,
            min_selected=min_selected,
            resolution=resolution,
        )
        tiers.append(TierFit(name=name, reached=reached, delta=level, selection=sel))
        if sel is not None:
            take = open_ & (c >= sel.threshold)
            kept += int(take.sum())
            kept_right += int((take & right).sum())
            open_ &= ~take
    return CascadeFit(
        target=target,
        delta=delta,
        delta_split=delta_split,
        n=n,
        tiers=tuple(tiers),
        coverage=kept / n if n else 0.0,
        agreement=kept_right / kept if kept else None,
    )


def replay_cascade(
    confidence: Sequence[ArrayLike],
    thresholds: Sequence[float | None],
    *,
    correct: Sequence[ArrayLike] | None = None,
    names: Sequence[str] | None = None,
    cost_per_call: Sequence[float] | None = None,
) -> CascadeReplay:
    """Apply ``thresholds`` (one per tier, ``None`` keeps nothing) to recorded confidences
    (per tier, one per item; ``NaN`` passes the item on), with no model call."""
    conf = _matrix(confidence, "confidences", float)
    if len(thresholds) != len(conf):
        raise DataError(f"{len(thresholds)} thresholds for {len(conf)} tiers")
    ok = _matrix(correct, "correctness", bool) if correct is not None else None
    if ok is not None and (len(ok) != len(conf) or ok[0].size != conf[0].size):
        raise DataError("confidence and correct must have the same tiers and items")
    if cost_per_call is not None and len(cost_per_call) != len(conf):
        raise DataError(f"{len(cost_per_call)} costs for {len(conf)} tiers")
    labels = _names(names, len(conf))
    n = conf[0].size
    by = np.full(n, -1)
    tiers = []
    for i, (name, c, t) in enumerate(zip(labels, conf, thresholds, strict=True)):
        open_ = by < 0
        reached = int(open_.sum())
        take = open_ & (c >= t) if t is not None else np.zeros(n, dtype=bool)
        by[take] = i
        decided = int(take.sum())
        agreement = float(ok[i][take].mean()) if ok is not None and decided else None
        calls = reached if t is not None else 0
        cost = calls * float(cost_per_call[i]) if cost_per_call is not None else None
        tiers.append(
            TierReplay(
                name=name,
                threshold=t,
                reached=reached,
                calls=calls,
                decided=decided,
                coverage=decided / n if n else 0.0,
                agreement=agreement,
                cost=cost,
            )
        )
    kept = by >= 0
    overall = None
    if ok is not None and kept.any():
        right = np.array([ok[int(t)][j] for j, t in enumerate(by) if t >= 0])
        overall = float(right.mean())
    return CascadeReplay(
        n=n,
        decided_by=tuple(int(t) if t >= 0 else None for t in by),
        coverage=float(kept.mean()) if n else 0.0,
        agreement=overall,
        abstained=int((~kept).sum()),
        tiers=tuple(tiers),
    )
