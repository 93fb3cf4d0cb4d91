"""A judge whose scores go through a fitted :class:`~jurist.trust.Calibration`.

:class:`CalibratedJudge` wraps any judge kind by composition: it asks the judge, then maps
the judge's 0-1 score onto the labels' scale with the calibration (``verdict``: the nearest
label value; ``score``: that verdict normalised to [0, 1] over the labels' range), and keeps
the judge's own score and verdict beside them (``raw_score``, ``raw_verdict``) with the
whole inner outcome (``judgment``). A failed judgment stays failed: nothing is mapped, no
score is made up. It names the inner judge's models, so every engine runs it.

>>> import jurist
>>> from jurist.metrics._calibration import IsotonicMap
>>> from jurist.trust import Calibration, CalibratedJudge, FittedOn
>>> cal = Calibration(map=IsotonicMap(x=(0.0, 0.5, 1.0), y=(1.0, 2.2, 5.0)),
...                   values=(1.0, 2.0, 3.0, 4.0, 5.0), low=1.0, high=5.0,
...                   fitted_on=FittedOn(fingerprint="abc", items=40, labels="human"))
>>> inner = jurist.LLMJudge(jurist.get_model("mock:j", outputs=["3", "??"]), template="likert")
>>> judge = CalibratedJudge(inner, cal)
>>> out = judge.judge_sync([{"prompt": "q", "response": "a"}] * 2)
>>> out[0].raw_verdict, out[0].verdict, out[0].score
(3.0, 2.0, 0.25)
>>> out[1].score is None, out[1].error[:6]
(True, 'parse:')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict

from jurist.errors import ConfigError
from jurist.judges._codecs import Member
from jurist.judges._declare import Declared, JudgeConfig, option, register
from jurist.judges._many import ManyItemsJudge, OutcomeResults, map_items
from jurist.judges._protocol import ItemJudge, ModelFn, models_of, with_models_of
from jurist.models import Model
from jurist.models._backends import scripted_spec
from jurist.trust._calibrate import Calibration
from jurist.types import Usage

__all__ = ["CalibratedConfig", "CalibratedJudge", "CalibratedJudgment", "CalibratedResults"]


class CalibratedJudgment(BaseModel):
    """One item's calibrated judgment (see the module docs)."""

    model_config = ConfigDict(frozen=True)

    score: float | None
    verdict: float | None = None
    value: float | None = None
    """The mapped score before rounding to a label value."""
    error: str | None = None
    raw_score: float | None = None
    raw_verdict: Any = None
    usage: Usage = Usage()
    judgment: dict[str, Any] | None = None


class CalibratedConfig(JudgeConfig):
    """A :class:`CalibratedJudge`'s options (catalog kind ``calibrated_judge``), as
    ``jurist calibrate --save`` writes them."""

    keeps_alignment = True

    judge: Annotated[Any, Member()] = option(example=lambda: _example_judge(), describe="never")
    calibration: Calibration = option(example=lambda: _example_calibration(), describe="always")
    name: str | None = option(None, example="mine", describe="never")


class CalibratedJudge(Declared, ManyItemsJudge[CalibratedJudgment, "CalibratedResults"]):
    """``judge`` with ``calibration`` applied to its scores."""

    config: CalibratedConfig
    """The declared options (the one place they are kept)."""

    def __init__(self, judge: ItemJudge, calibration: Calibration, *, name: str | None = None):
        if not isinstance(judge, ItemJudge):
            raise ConfigError(f"CalibratedJudge needs a judge, got {type(judge).__name__}")
        if not isinstance(calibration, Calibration):
            raise ConfigError(
                f"CalibratedJudge needs a Calibration, got {type(calibration).__name__}"
            )
        self.config = CalibratedConfig(judge=judge, calibration=calibration, name=name)
        self.name = name or f"{judge.name}+calibrated"
        self.concurrency = int(getattr(judge, "concurrency", 16))

    @property
    def inner(self) -> ItemJudge:
        """The judge whose scores are calibrated."""
        return self.config.judge  # type: ignore[no-any-return]

    @property
    def calibration(self) -> Calibration:
        return self.config.calibration

    def summary(self) -> str:
        """One line about this judge (a catalog entry's default description)."""
        fitted = self.calibration.fitted_on
        return (
            f"{self.inner.name} calibrated to {fitted.labels} on {fitted.items} items "
            f"(data {fitted.fingerprint})"
        )

    def __repr__(self) -> str:
        return f"CalibratedJudge({self.inner!r}, fitted on {self.calibration.fitted_on.items})"

    @property
    def required_fields(self) -> tuple[str, ...]:
        return tuple(self.inner.required_fields)

    def models(self) -> tuple[Model, ...]:
        """The inner judge's models."""
        return models_of(self.inner)

    def with_models(self, fn: ModelFn) -> CalibratedJudge:
        """A copy whose inner judge calls ``fn(model)`` instead of each model."""
        return CalibratedJudge(with_models_of(self.inner, fn), self.calibration, name=self.name)

    def describe(self) -> dict[str, Any]:
        """The configuration as JSON (for run manifests): the judge's and the calibration."""
        return {
            "kind": "calibrated",
            "name": self.name,
            "judge": self.inner.describe(),
            **self.config.described(),  # calibration
        }

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> CalibratedJudgment:
        """The inner judge on ``item``, its score mapped; a failure stays a failure."""
        map_items([item], None, self.required_fields, self._who())
        outcome = await self.inner.judge(item, retries=retries)
        raw = getattr(outcome, "score", None)
        usage = getattr(outcome, "usage", Usage())
        kept = outcome.model_dump(mode="json") if isinstance(outcome, BaseModel) else None
        if raw is None:
            return CalibratedJudgment(
                score=None,
                error=getattr(outcome, "error", None) or "error: the judge gave no score",
                raw_verdict=getattr(outcome, "verdict", None),
                usage=usage,
                judgment=kept,
            )
        cal = self.calibration
        return CalibratedJudgment(
            score=cal.score(raw),
            verdict=cal.verdict(raw),
            value=cal.value(raw),
            raw_score=raw,
            raw_verdict=getattr(outcome, "verdict", None),
            usage=usage,
            judgment=kept,
        )

    def _results(
        self, outcomes: list[CalibratedJudgment], rows: list[dict[str, Any]]
    ) -> CalibratedResults:
        return CalibratedResults(outcomes, rows)


class CalibratedResults(OutcomeResults[CalibratedJudgment]):
    """Calibrated judgments of a batch, in input order."""

    def __init__(
        self,
        judgments: Sequence[CalibratedJudgment],
        items: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(judgments, items)

    def _columns(self, outcome: CalibratedJudgment) -> dict[str, Any]:
        """The calibrated and raw figures, as ``judge_*`` columns."""
        j = outcome
        return {
            "judge_score": j.score,
            "judge_verdict": j.verdict,
            "judge_value": j.value,
            "judge_raw_score": j.raw_score,
            "judge_raw_verdict": j.raw_verdict,
            "judge_error": j.error,
        }


def _example_judge() -> Any:
    from jurist.judges import LLMJudge

    return LLMJudge(scripted_spec("a"), template="likert")


def _example_calibration() -> Calibration:
    from jurist.metrics._calibration import IsotonicMap
    from jurist.trust._calibrate import FittedOn

    return Calibration(
        map=IsotonicMap(x=(0.0, 1.0), y=(1.0, 5.0)),
        values=(1.0, 2.0, 3.0, 4.0, 5.0),
        low=1.0,
        high=5.0,
        fitted_on=FittedOn(fingerprint="abc", items=40, labels="human"),
    )


register("calibrated_judge", CalibratedConfig, CalibratedJudge)
