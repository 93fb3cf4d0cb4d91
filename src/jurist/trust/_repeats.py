"""Repeats: judge each item several times, and know when an item's verdict is settled.

A repeat is a fresh draw from the judge: :func:`judge_for_repeat` gives the judge whose
models mark their requests with the repeat number (:class:`RepeatModel`), which the cache
keys on and no backend sends, so a repeat is never answered from an earlier repeat's
cached answer; a request with a ``seed`` gets ``seed + repeat``, so a seeded judge draws
anew too. Repeat 0 is the judge itself: its requests are those of a run without repeats.

:class:`RepeatPlan` says how many repeats an item gets. Fixed (``repeats=N``): N each.
Adaptive (``repeats=N, adaptive=True``): ``min_repeats`` first (default ``min(3, N)``),
then one more at a time, up to N, while the item's verdict is not settled. **The stopping
rule**: after at least ``min_repeats`` repeats, an item is settled when its scored verdicts
are unanimous, or when the most frequent verdict leads the runner-up by more than the
repeats still allowed (no remaining repeat could change the mode). A failed repeat
(no score) takes its slot but counts for no verdict.

>>> plan = RepeatPlan(repeats=6, adaptive=True)
>>> plan.first, plan.settled([1.0, 1.0, 1.0]), plan.settled([1.0, 0.0, 1.0])
(3, True, False)
>>> plan.settled([1.0, 0.0, 1.0, 1.0, 1.0])   # leads 4-1 with one repeat left
True
>>> RepeatPlan(repeats=4).first, RepeatPlan(repeats=4).settled([1.0, 0.0, 1.0, 0.0])
(4, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from jurist.judges._protocol import with_models_of
from jurist.models import Model, WrapperModel
from jurist.types import Completion, Request

__all__ = ["RepeatModel", "RepeatPlan", "aggregate_repeats", "judge_for_repeat"]


class RepeatPlan(BaseModel):
    """How many times each item is judged (see the module's docs for the rule)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repeats: int = 1
    """The repeats each item gets (adaptive: the most it gets)."""
    adaptive: bool = False
    min_repeats: int | None = None
    """Adaptive only: the repeats every item gets first (default ``min(3, repeats)``)."""

    @model_validator(mode="after")
    def _check(self) -> RepeatPlan:
        if self.repeats < 1:
            raise ValueError(f"repeats must be at least 1, got {self.repeats}")
        if self.min_repeats is not None:
            if not self.adaptive:
                raise ValueError("min_repeats applies with adaptive=True only")
            if not 1 <= self.min_repeats <= self.repeats:
                raise ValueError(
                    f"min_repeats must be between 1 and repeats ({self.repeats}), "
                    f"got {self.min_repeats}"
                )
        return self

    @property
    def first(self) -> int:
        """The repeats every item gets before the stopping rule is asked."""
        if not self.adaptive:
            return self.repeats
        return self.min_repeats if self.min_repeats is not None else min(3, self.repeats)

    def settled(self, scores: Sequence[float | None]) -> bool:
        """Whether an item with these repeat scores (in repeat order, ``None``: failed)
        needs no more repeats."""
        done = len(scores)
        if done >= self.repeats:
            return True
        if done < self.first:
            return False
        counts: dict[float, int] = {}
        for s in scores:
            if s is not None:
                key = round(float(s), 9)
                counts[key] = counts.get(key, 0) + 1
        if not counts:
            return False
        if len(counts) == 1:
            return True
        top, second = sorted(counts.values(), reverse=True)[:2]
        return top - second > self.repeats - done

    def describe(self) -> dict[str, Any]:
        """The plan as the run's manifest keeps it."""
        return {"repeats": self.repeats, "adaptive": self.adaptive, "min_repeats": self.first}


class RepeatModel(WrapperModel):
    """``wrapped``, with each request marked as repeat ``repeat`` (its cache key differs;
    its seed, when it has one, is offset by ``repeat``)."""

    def __init__(self, wrapped: Model, repeat: int) -> None:
        super().__init__(wrapped)
        self.repeat = repeat

    def _marked(self, request: Request) -> Request:
        seed = None if request.seed is None else request.seed + self.repeat
        return request.model_copy(update={"repeat": self.repeat, "seed": seed})

    async def complete(self, request: Request) -> Completion:
        return await self.wrapped.complete(self._marked(request))

    def __repr__(self) -> str:
        return f"RepeatModel({self.wrapped!r}, repeat={self.repeat})"


def judge_for_repeat(judge: Any, repeat: int) -> Any:
    """The judge whose calls are repeat ``repeat`` (``judge`` itself for repeat 0)."""
    if repeat == 0:
        return judge
    return with_models_of(judge, lambda model: RepeatModel(model, repeat))


def aggregate_repeats(outcomes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One item's stored outcome from its repeats' outcomes (in repeat order): the outcome
    of the first repeat that gave the mode (the first repeat when none is scored), with
    ``score`` the mean of the scored repeats and ``repeats`` the item's figures
    (:class:`~jurist.metrics.ItemRepeats`: scores, mean, mode, flip rate).

    >>> out = aggregate_repeats([{"score": 1.0, "verdict": "Correct", "error": None},
    ...                          {"score": 0.0, "verdict": "Incorrect", "error": None},
    ...                          {"score": 1.0, "verdict": "Correct", "error": None}])
    >>> out["verdict"], round(out["score"], 3), out["repeats"]["mode"]
    ('Correct', 0.667, 1.0)
    """
    from jurist.metrics._repeats import ItemRepeats  # numpy on first use

    scores = [o.get("score") for o in outcomes]
    stats = ItemRepeats.of(scores)
    chosen = outcomes[0]
    if stats.mode is not None:
        chosen = next(
            o
            for o, s in zip(outcomes, scores, strict=True)
            if s is not None and round(float(s), 9) == stats.mode
        )
    merged = dict(chosen)
    merged["score"] = stats.mean
    if stats.mean is not None:
        merged["error"] = None
    merged["repeats"] = {
        **stats.model_dump(mode="json"),
        "n": len(outcomes),
        "failed": sum(1 for s in scores if s is None),
    }
    return merged
