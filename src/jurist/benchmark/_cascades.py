"""A cascade in a bench: a cheap setup decides the pairs it is confident of and sends the
rest to a stronger one, its threshold fitted on one half of the pairs and tested on the
other, over many random splits.

Both setups have judged every pair already (in both orders), so the cascade is replayed
from their recorded outcomes with :class:`~jurist.trust.CascadeJudge`'s own reading
(:func:`~jurist.trust.fit_recorded`, :func:`~jurist.trust.replay_recorded`): no call.
A pair's outcome for a tier is its two-order decision as a score (``0.5 + net / 4``) with
the mean of its two orders' confidences (a reward model's ``max(p, 1 - p)`` of its margin;
a parsed verdict's ``max(score, 1 - score)``).

For each split, the cheap tier's threshold is the smallest one certified (at ``delta``)
to keep its decided pairs at least ``target`` accurate on the fitting half
(:func:`~jurist.metrics.selective_threshold`); ``target`` defaults to the strong setup's
own two-order accuracy on that half (keep the cheap decision where it is as good as the
strong judge), kept inside [0.001, 0.999] (a bound is certified inside (0, 1) only).
The strong tier then decides every pair sent on. On the test half:

- ``accuracy``: the share of pairs the cascade decides correctly (abstentions wrong);
- ``sent_on``: the share of pairs the cheap tier passed to the strong one (its cost);
- ``cheap_accuracy``, ``strong_accuracy``: each setup alone on the same test halves.

Each is reported as its mean over the splits with the 2.5th and 97.5th percentiles
across splits (the spread a new split of this size would show), and ``no_threshold``
counts the splits where nothing could be certified (everything sent on).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from jurist.benchmark._figures import PairOutcome
from jurist.errors import ConfigError
from jurist.judges._protocol import ItemJudge
from jurist.metrics import Estimate
from jurist.trust import CascadeJudge, fit_recorded, replay_recorded

__all__ = ["CascadeFigures", "cascade_figures"]


class CascadeFigures(BaseModel):
    """A cheap -> strong cascade over ``splits`` random half splits (see the module doc)."""

    model_config = ConfigDict(frozen=True)

    cheap: str
    strong: str
    dataset: str
    n: int
    splits: int
    target: float | None
    delta: float
    accuracy: Estimate
    sent_on: Estimate
    cheap_accuracy: Estimate
    strong_accuracy: Estimate
    threshold: Estimate | None
    no_threshold: int


def _agree(score: float, label: Any) -> bool:
    decision = "A" if score > 0.5 else "B" if score < 0.5 else "tie"
    return bool(decision == label)


def _spread(values: Sequence[float]) -> Estimate:
    arr = np.asarray(values, dtype=float)
    low, high = np.percentile(arr, [2.5, 97.5])
    return Estimate(value=float(arr.mean()), low=float(low), high=float(high), confidence=0.95)


def _outcome(p: PairOutcome) -> dict[str, Any]:
    return {"score": p.score, "confidence": p.confidence if p.score is not None else None}


def _accuracy(pairs: Sequence[PairOutcome]) -> float:
    return sum(1 for p in pairs if p.decision == p.label) / len(pairs)


def cascade_figures(
    cheap: tuple[str, ItemJudge, Sequence[PairOutcome]],
    strong: tuple[str, ItemJudge, Sequence[PairOutcome]],
    *,
    dataset: str,
    splits: int = 200,
    target: float | None = None,
    delta: float = 0.1,
    min_selected: int = 30,
    seed: int = 0,
) -> CascadeFigures:
    """The cascade ``cheap`` -> ``strong`` (each ``(name, judge, pair outcomes)``, the
    outcomes in the same pair order) over ``splits`` half splits."""
    (cheap_name, cheap_judge, low), (strong_name, strong_judge, high) = cheap, strong
    n = len(low)
    if len(high) != n or [p.id for p in low] != [p.id for p in high]:
        raise ConfigError(f"cascade {cheap_name} -> {strong_name}: the pairs differ")
    if n < 4:
        raise ConfigError(f"cascade {cheap_name} -> {strong_name}: {n} pairs, too few to split")
    if splits < 1:
        raise ConfigError("a cascade needs at least one split")
    cascade = CascadeJudge([cheap_judge, strong_judge], name=f"{cheap_name}->{strong_name}")
    tiers = [[_outcome(p) for p in low], [_outcome(p) for p in high]]
    labels = [p.label for p in low]
    rng = np.random.default_rng(seed)
    acc, sent, alone_cheap, alone_strong, thresholds = [], [], [], [], []
    for _ in range(splits):
        order = rng.permutation(n)
        fit_idx, test_idx = order[: n // 2], order[n // 2 :]
        aim = target if target is not None else _accuracy([high[i] for i in fit_idx])
        aim = min(max(aim, 0.001), 0.999)  # a bound is certified inside (0, 1) only
        fitted = fit_recorded(
            cascade,
            [[t[i] for i in fit_idx] for t in tiers],
            [labels[i] for i in fit_idx],
            target=aim,
            delta=delta,
            agree=_agree,
            min_selected=min_selected,
        )
        first = fitted.thresholds[0] if fitted.thresholds else None
        if first is not None:
            thresholds.append(first)
        # the strong tier decides whatever is sent on to it (it is the last tier)
        chosen = cascade.with_thresholds((first, 0.0))
        out = replay_recorded(
            chosen,
            [[t[i] for i in test_idx] for t in tiers],
            [labels[i] for i in test_idx],
            agree=_agree,
        )
        decided = out.coverage * (out.agreement or 0.0)
        acc.append(decided)
        sent.append(1.0 - out.tiers[0].decided / out.n)
        alone_cheap.append(_accuracy([low[i] for i in test_idx]))
        alone_strong.append(_accuracy([high[i] for i in test_idx]))
    return CascadeFigures(
        cheap=cheap_name,
        strong=strong_name,
        dataset=dataset,
        n=n,
        splits=splits,
        target=target,
        delta=delta,
        accuracy=_spread(acc),
        sent_on=_spread(sent),
        cheap_accuracy=_spread(alone_cheap),
        strong_accuracy=_spread(alone_strong),
        threshold=_spread(thresholds) if thresholds else None,
        no_threshold=splits - len(thresholds),
    )
