""":class:`CascadeJudge`: cheap judges first, stronger ones only where the cheaper abstain.

Each tier judges only the items every tier before it passed on: a tier keeps an item
when its confidence (:func:`~jurist.trust.outcome_confidence`, or your own ``confidence``
function) is at least its threshold, and passes it on otherwise, or when it failed or
gave no confidence. An item no tier keeps gets ``score=None``, ``abstained=True`` and an
``"abstain: ..."`` error that lists each tier's confidence against its threshold: it is
for people (:func:`~jurist.trust.write_review` writes those items to a review file),
never a made-up score. When a tier asked *failed* (an API error, a timeout, an unreadable
verdict), the item was not abstained on but not judged: its error keeps the first failed
tier's category (``"api: ..."``, ``"timeout: ..."``, ``"parse: ..."``), so a run's
``summary().errors`` counts it apart from ``abstain``, and ``abstained`` is ``False``.
The thresholds come from :meth:`CascadeJudge.fit` (labelled items, the guarantee of
:func:`~jurist.trust.fit_cascade`) or are given.

A cascade is a judge kind like the others: it names its models (``models()``, the tiers'
in order) and rebuilds on others (``with_models(fn)``), so every engine runs it, and its
outcome keeps each tier's own outcome in ``judgments`` (tier order) so a run prices it
tier by tier.

>>> import jurist
>>> from jurist.trust import CascadeJudge
>>> from jurist.types import Judgment
>>> class Sure:  # a tier that is sure of even prompts only (stands in for a model)
...     name, required_fields = "sure", ("prompt",)
...     def describe(self): return {"kind": "sure"}
...     async def judge(self, item, *, retries=0):
...         n = int(item["prompt"])
...         return Judgment(score=1.0, confidence=0.95 if n % 2 == 0 else 0.6)
>>> cascade = CascadeJudge([Sure()], thresholds=[0.9])
>>> [cascade.judge_one_sync({"prompt": str(n)}).score for n in (2, 3)]
[1.0, None]
>>> cascade.judge_one_sync({"prompt": "3"}).error
'abstain: no tier was confident enough (sure: confidence 0.6 < 0.9)'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any

import numpy as np

from jurist._missing import is_missing
from jurist._sync import run_sync
from jurist.data._item_names import item_name
from jurist.errors import ConfigError, DataError
from jurist.judges._codecs import Members
from jurist.judges._declare import Declared, JudgeConfig, checked, default_of, option, register
from jurist.judges._items import as_item_dicts
from jurist.judges._many import ManyItemsJudge, map_items, run_items
from jurist.judges._panel import judge_or_failed
from jurist.judges._protocol import (
    ItemJudge,
    ModelFn,
    fields_of,
    judges_given,
    models_of,
    with_models_of,
)
from jurist.metrics import selective_threshold
from jurist.models import Model
from jurist.models._backends import scripted_spec
from jurist.trust._fit import CascadeFit, DeltaSplit, fit_cascade, tier_delta
from jurist.trust._outcome import (
    CascadeJudgment,
    CascadeResults,
    ConfidenceFn,
    NotAsked,
    TierStep,
    outcome_confidence,
    outcome_field,
)
from jurist.types import Usage

__all__ = ["CascadeConfig", "CascadeJudge"]


class CascadeConfig(JudgeConfig):
    """A :class:`CascadeJudge`'s options (catalog kind ``cascade``); its ``confidence``
    function is code, not configuration (a cascade with its own is not stored)."""

    tiers: Annotated[tuple[Any, ...], Members()] = option(
        example=lambda: _example_tiers(), describe="never"
    )
    thresholds: tuple[float | None, ...] | None = option(
        None, example=(0.9, None), describe="always"
    )
    concurrency: int = option(16, example=4, describe="never", ge=1)
    name: str | None = option(None, example="mine", describe="never")


class CascadeJudge(Declared, ManyItemsJudge[CascadeJudgment, "CascadeResults"]):
    """Judges in tiers, cheapest first (see the module docs).

    Args:
        tiers: the judges, cheapest first (an :class:`~jurist.LLMJudge`, a panel, a
            pairwise judge or any :class:`~jurist.judges.ItemJudge`).
        thresholds: one per tier: the tier keeps an item whose confidence is at least it;
            ``None`` keeps nothing, so that tier is never asked (its items go on). ``None``
            for the whole list: the cascade is not fitted yet and refuses to judge
            (:meth:`fit` fits it).
        confidence: reads a tier's confidence from its outcome (default
            :func:`~jurist.trust.outcome_confidence`).
        name: the cascade's name (default ``"cascade"``).
        concurrency: the most items in flight at once in a batch.
        fit: the :class:`~jurist.trust.CascadeFit` the thresholds came from (kept for the
            record: :meth:`fit` sets it).
    """

    config: CascadeConfig
    """The declared options (the one place they are kept)."""

    def __init__(
        self,
        tiers: Sequence[ItemJudge],
        thresholds: Sequence[float | None] | None = None,
        *,
        confidence: ConfidenceFn | None = None,
        name: str | None = None,
        concurrency: int = default_of(CascadeConfig, "concurrency"),
        fit: CascadeFit | None = None,
    ) -> None:
        tiers = judges_given(
            tiers,
            whole="a CascadeJudge",
            each="cascade tier",
            hint="pass LLMJudge, Panel, PairwiseJudge or other ItemJudge objects",
        )
        if thresholds is not None:
            thresholds = list(thresholds)
            if len(thresholds) != len(tiers):
                raise ConfigError(f"{len(thresholds)} thresholds for {len(tiers)} cascade tiers")
        self.config = checked(
            CascadeConfig,
            {
                "tiers": tuple(tiers),
                "thresholds": (
                    tuple(None if t is None else float(t) for t in thresholds)
                    if thresholds is not None
                    else None
                ),
                "concurrency": concurrency,
                "name": name,
            },
            "CascadeJudge",
        )
        self.confidence: ConfidenceFn = confidence or outcome_confidence
        self.name = name or "cascade"
        self.fitted = fit
        self.tier_names: tuple[str, ...] = _unique([t.name for t in tiers])

    @property
    def tiers(self) -> tuple[ItemJudge, ...]:
        return self.config.tiers

    @property
    def thresholds(self) -> tuple[float | None, ...] | None:
        return self.config.thresholds

    @property
    def concurrency(self) -> int:  # type: ignore[override]
        return self.config.concurrency

    def _rebuilt(self, config: CascadeConfig) -> CascadeJudge:
        """The cascade of ``config``, with this one's confidence function (and its fit,
        while the thresholds are the same)."""
        fit = self.fitted if config.thresholds == self.thresholds else None
        return self._copy(config.tiers, config.thresholds, fit, config)

    def refuse_entry(self) -> None:
        """A cascade with its own confidence function cannot be stored: it is code."""
        if self.confidence is not outcome_confidence:
            raise ConfigError(
                f"cannot store cascade {self.name!r} in the catalog: its confidence function "
                "is code (the catalog keeps the default, outcome_confidence)"
            )

    def summary(self) -> str:
        """One line about this cascade (a catalog entry's default description)."""
        return f"cascade of {len(self.tiers)} tiers"

    def __repr__(self) -> str:
        return f"CascadeJudge({list(self.tier_names)!r}, thresholds={self.thresholds!r})"

    @property
    def judges(self) -> tuple[ItemJudge, ...]:
        """The tiers (as a panel's ``judges``: a run prices the outcome tier by tier)."""
        return self.tiers

    def models(self) -> tuple[Model, ...]:
        """Every tier's models, tier by tier."""
        return tuple(m for tier in self.tiers for m in models_of(tier))

    def with_models(self, fn: ModelFn) -> CascadeJudge:
        """A copy of this cascade whose tiers call ``fn(model)`` instead of each model."""
        return self._copy([with_models_of(t, fn) for t in self.tiers], self.thresholds, self.fitted)

    def with_thresholds(
        self, thresholds: Sequence[float | None], fit: CascadeFit | None = None
    ) -> CascadeJudge:
        """A copy of this cascade with other thresholds."""
        return self._copy(list(self.tiers), thresholds, fit)

    def _copy(
        self,
        tiers: Sequence[ItemJudge],
        thresholds: Sequence[float | None] | None,
        fit: CascadeFit | None,
        config: CascadeConfig | None = None,
    ) -> CascadeJudge:
        c = config or self.config
        return CascadeJudge(
            tiers,
            thresholds,
            confidence=self.confidence if self.confidence is not outcome_confidence else None,
            name=c.name,
            concurrency=c.concurrency,
            fit=fit,
        )

    @property
    def required_fields(self) -> tuple[str, ...]:
        """Every field any tier needs, in first-seen order."""
        return fields_of(self.tiers)

    def describe(self) -> dict[str, Any]:
        """The cascade's whole configuration (its thresholds included: a run resumed with
        other thresholds is another run)."""
        out: dict[str, Any] = {
            "kind": "cascade",
            "name": self.name,
            **self.config.described(),  # thresholds
            "tiers": [t.describe() for t in self.tiers],
        }
        if self.confidence is not outcome_confidence:
            fn = self.confidence
            out["confidence"] = f"{fn.__module__}.{getattr(fn, '__qualname__', repr(fn))}"
        return out

    # -- one item ---------------------------------------------------------------------------

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> CascadeJudgment:
        """The tiers in order on ``item`` until one is confident enough; never raises for
        a failed tier (it passes the item on, its error kept in ``steps``)."""
        if self.thresholds is None:
            raise ConfigError(
                f"cascade {self.name!r} has no thresholds: fit it on labelled items "
                "(cascade.fit_sync(items, labels, target=..., delta=...)) or pass thresholds="
            )
        map_items([item], None, self.required_fields, self._who())
        steps: list[TierStep] = []
        outcomes: list[Any] = [NotAsked() for _ in self.tiers]
        usage = Usage()
        for i, threshold in enumerate(self.thresholds):
            if threshold is None:  # it can decide nothing: not asked
                continue
            outcome = await judge_or_failed(self.tiers[i], item, retries)
            outcomes[i] = outcome
            step = self.step(i, outcome, threshold)
            steps.append(step)
            usage = usage + step.usage
            if step.certified:
                verdict = getattr(outcome, "verdict", getattr(outcome, "winner", None))
                return CascadeJudgment(
                    score=step.score,
                    verdict=verdict if isinstance(verdict, str | int | float) else None,
                    tier=i,
                    tier_name=step.name,
                    confidence=step.confidence,
                    steps=tuple(steps),
                    judgments=tuple(outcomes),
                    usage=usage,
                )
        skipped = [
            f"{self.tier_names[i]}: no certified threshold, not asked"
            for i, t in enumerate(self.thresholds)
            if t is None
        ]
        reasons = "; ".join([*map(_why, steps), *skipped])
        failed = next((s for s in steps if _failure(s) is not None), None)
        if failed is not None:  # not an abstention: a tier could not judge the item
            category = _failure(failed)
            return CascadeJudgment(
                score=None,
                error=f"{category}: tier {failed.name!r} failed; no tier decided ({reasons})",
                steps=tuple(steps),
                judgments=tuple(outcomes),
                usage=usage,
            )
        return CascadeJudgment(
            score=None,
            error=f"abstain: no tier was confident enough ({reasons})",
            abstained=True,
            steps=tuple(steps),
            judgments=tuple(outcomes),
            usage=usage,
        )

    def step(self, i: int, outcome: Any, threshold: float | None) -> TierStep:
        """Tier ``i``'s :class:`TierStep` for its ``outcome`` under ``threshold``."""
        score = outcome_field(outcome, "score")
        score = float(score) if isinstance(score, int | float) else None
        conf = self.confidence(outcome) if score is not None else None
        u = outcome_field(outcome, "usage")
        return TierStep(
            tier=i,
            name=self.tier_names[i],
            score=score,
            confidence=conf,
            threshold=threshold,
            certified=score is not None
            and conf is not None
            and threshold is not None
            and conf >= threshold,
            error=outcome_field(outcome, "error"),
            usage=u if isinstance(u, Usage) else Usage.model_validate(u or {}),
        )

    # -- batches ------------------------------------------------------------------------------

    def _who(self) -> str:
        return f"cascade {self.name!r}"

    def _results(
        self, outcomes: list[CascadeJudgment], rows: list[dict[str, Any]]
    ) -> CascadeResults:
        return CascadeResults(outcomes, rows, tier_names=self.tier_names)

    # -- fitting ----------------------------------------------------------------------------

    async def fit(
        self,
        items: Iterable[Mapping[str, Any]] | Any,
        labels: Sequence[Any],
        *,
        target: float,
        delta: float,
        agree: Callable[[float, Any], bool] | None = None,
        fields: Mapping[str, str] | None = None,
        retries: int = 0,
        min_selected: int = 30,
        resolution: float | None = 0.001,
        delta_split: DeltaSplit = "union",
        concurrency: int | None = None,
        progress: bool = False,
    ) -> CascadeJudge:
        """A copy of this cascade with thresholds fitted on labelled ``items`` so its kept
        items agree with the labels at ``>= target`` with probability ``>= 1 - delta``
        (:func:`~jurist.trust.fit_cascade`; the fit is kept in ``fitted``).

        Each tier judges only the items the tiers before it passed on, as at run time, so
        fitting costs what judging these items costs. ``labels`` are in the tiers' score
        space (for a pairwise judge, 1.0 = A better, 0.0 = B better); ``agree(score,
        label)`` says whether a score agrees with a label (default: equal to 1e-9).
        """
        rows = as_item_dicts(items)
        mapped = map_items(rows, fields, self.required_fields, self._who())
        if len(labels) != len(mapped):
            raise DataError(f"{len(labels)} labels for {len(mapped)} items")
        for i, label in enumerate(labels):
            if is_missing(label):
                raise DataError(
                    f"{item_name(i, mapped[i])}: no label (the cascade fits on labelled items only)"
                )
        same = agree or _equal
        n, k = len(mapped), len(self.tiers)
        conf = [np.full(n, np.nan) for _ in range(k)]
        right = [np.zeros(n, dtype=bool) for _ in range(k)]
        level = tier_delta(delta, k, delta_split)
        open_ = list(range(n))
        for i, tier in enumerate(self.tiers):

            async def one(j: int, tier: ItemJudge = tier, asked: list[int] = open_) -> Any:
                return await judge_or_failed(tier, mapped[asked[j]], retries)

            outs = await run_items(
                one, len(open_), concurrency=concurrency or self.concurrency, progress=progress
            )
            for idx, out in zip(open_, outs, strict=True):
                step = self.step(i, out, None)
                if step.score is not None and step.confidence is not None:
                    conf[i][idx] = step.confidence
                    right[i][idx] = bool(same(step.score, labels[idx]))
            sel = selective_threshold(
                conf[i][open_],
                right[i][open_],
                target=target,
                delta=level,
                min_selected=min_selected,
                resolution=resolution,
            )
            if sel is not None:
                open_ = [j for j in open_ if not conf[i][j] >= sel.threshold]
        fitted = fit_cascade(
            conf,
            right,
            target=target,
            delta=delta,
            names=self.tier_names,
            min_selected=min_selected,
            resolution=resolution,
            delta_split=delta_split,
        )
        return self.with_thresholds(fitted.thresholds, fitted)

    def fit_sync(
        self, items: Iterable[Mapping[str, Any]] | Any, labels: Sequence[Any], **options: Any
    ) -> CascadeJudge:
        """Sync twin of :meth:`fit` (works inside a running event loop too)."""
        return run_sync(self.fit(items, labels, **options))


def _failure(step: TierStep) -> str | None:
    """The error category of a tier that failed on an item (``"api"``, ``"timeout"``,
    ``"parse"``...); ``None`` when it gave a score or itself abstained."""
    if step.score is not None:
        return None
    category = (step.error or "error").split(":", 1)[0].strip() or "error"
    return None if category == "abstain" else category


def _why(step: TierStep) -> str:
    if step.score is None:
        return f"{step.name}: {step.error or 'no score'}"
    if step.confidence is None:
        return f"{step.name}: no confidence"
    return f"{step.name}: confidence {step.confidence:.4g} < {step.threshold:.4g}"


def _equal(score: float, label: Any) -> bool:
    try:
        return math.isclose(score, float(label), rel_tol=0.0, abs_tol=1e-9)
    except (TypeError, ValueError):
        raise DataError(f"label {label!r} is not a number in the judges' score space") from None


def _unique(names: Sequence[str]) -> tuple[str, ...]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return tuple(out)


def _example_tiers() -> tuple[Any, ...]:
    from jurist.judges import LLMJudge, Panel

    return (LLMJudge(scripted_spec("a"), name="a"), Panel([LLMJudge(scripted_spec("b"))], name="b"))


register("cascade", CascadeConfig, CascadeJudge)
