""":class:`Panel`: several judges on every item, their scores combined.

The judges run concurrently on each item. Judges that fail (an API error, an unreadable
verdict, even an exception from a custom judge) are skipped by the aggregation, and each
result says how many judges counted (``n_counted``) and how many failed (``n_failed``);
every judge's own judgment is kept. When no judge scored, the panel's score is ``None``
and its ``error`` says so. Aggregations and the majority tie rule are described in
:mod:`jurist.judges._aggregate`.

>>> import jurist
>>> a = jurist.LLMJudge(jurist.get_model("mock:a", outputs=["Correct"], cycle=True), name="a")
>>> b = jurist.LLMJudge(jurist.get_model("mock:b", outputs=["Incorrect"], cycle=True), name="b")
>>> c = jurist.LLMJudge(jurist.get_model("mock:c", outputs=["Correct"], cycle=True), name="c")
>>> panel = jurist.Panel([a, b, c], aggregation="majority")
>>> out = panel.judge_one_sync({"prompt": "2+2?", "response": "4"})
>>> out.score, out.n_counted, out.judge_scores
(1.0, 3, [1.0, 0.0, 1.0])
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict

from jurist.errors import JuristError, UserError
from jurist.judges._aggregate import aggregate, check_weights, is_scored
from jurist.judges._codecs import Members
from jurist.judges._declare import Declared, JudgeConfig, checked, default_of, option, register
from jurist.judges._many import ManyItemsJudge, OutcomeResults, map_items
from jurist.judges._protocol import (
    ItemJudge,
    ModelFn,
    fields_of,
    judges_given,
    models_of,
    with_models_of,
)
from jurist.models import Model
from jurist.models._backends import scripted_spec
from jurist.types import Usage

__all__ = [
    "FailedOutcome",
    "Panel",
    "PanelConfig",
    "PanelJudgment",
    "PanelResults",
    "judge_or_failed",
]


class FailedOutcome(BaseModel):
    """Stands in for the outcome of a judge that raised instead of returning one."""

    model_config = ConfigDict(frozen=True)

    score: float | None = None
    error: str
    usage: Usage = Usage()


async def judge_or_failed(judge: ItemJudge, item: Mapping[str, Any], retries: int) -> Any:
    """``judge``'s outcome on ``item``, or a :class:`FailedOutcome` saying why it failed
    (a panel member's or a cascade tier's): a usage error still raises; a judge that broke
    its contract by raising something else is recorded, not allowed to lose the item."""
    try:
        return await judge.judge(item, retries=retries)
    except UserError:
        raise
    except JuristError as e:
        return FailedOutcome(error=f"{e.category}: {e}")
    except Exception as e:
        return FailedOutcome(error=f"error: {type(e).__name__}: {e}")


class PanelJudgment(BaseModel):
    """A panel's verdict on one item.

    ``judgments`` holds each judge's own outcome, in panel order (a
    :class:`~jurist.types.Judgment` for an :class:`~jurist.judges.LLMJudge`). ``usage`` is
    the sum over the judges. ``spread`` is ``max - min`` of the counted scores; ``tie`` is
    set by the majority aggregation when the top vote was shared.
    """

    model_config = ConfigDict(frozen=True)

    score: float | None
    error: str | None = None
    aggregation: str = "mean"
    n_counted: int = 0
    n_failed: int = 0
    spread: float | None = None
    tie: bool = False
    judgments: tuple[Any, ...] = ()
    usage: Usage = Usage()

    @property
    def ok(self) -> bool:
        return self.score is not None

    @property
    def judge_scores(self) -> list[float | None]:
        """Each judge's score in panel order (``None`` where it failed)."""
        return [_score_of(j) for j in self.judgments]

    @property
    def judge_errors(self) -> list[str | None]:
        return [getattr(j, "error", None) for j in self.judgments]


class PanelConfig(JudgeConfig):
    """A :class:`Panel`'s options (catalog kind ``panel``)."""

    judges: Annotated[tuple[Any, ...], Members(drop_kind=True)] = option(
        example=lambda: _example_judges(), describe="never"
    )
    aggregation: str = option("mean", example="weighted", describe="always")
    weights: tuple[float, ...] | None = option(None, example=(2.0, 1.0), describe="always")
    concurrency: int = option(16, example=4, describe="never", ge=1)
    name: str | None = option(None, example="mine", describe="never")


class Panel(Declared, ManyItemsJudge[PanelJudgment, "PanelResults"]):
    """Several judges on each item, combined by ``aggregation``.

    Args:
        judges: :class:`~jurist.judges.LLMJudge` objects or any
            :class:`~jurist.judges.ItemJudge` whose outcome has a ``score``.
        aggregation: ``"mean"`` (default), ``"median"``, ``"min"``, ``"max"``,
            ``"majority"`` or ``"weighted"``.
        weights: one non-negative weight per judge; required by (and only allowed with)
            ``"weighted"``.
        name: the panel's name (default ``"panel:<aggregation>"``).
        concurrency: the most items in flight at once in a batch (each item runs all its
            judges concurrently).
    """

    config: PanelConfig
    """The declared options (the one place they are kept)."""

    def __init__(
        self,
        judges: Sequence[ItemJudge],
        aggregation: str = default_of(PanelConfig, "aggregation"),
        weights: Sequence[float] | None = None,
        name: str | None = None,
        *,
        concurrency: int = default_of(PanelConfig, "concurrency"),
    ) -> None:
        judges = judges_given(
            judges,
            whole="a Panel",
            each="panel judge",
            hint="pass LLMJudge objects (jurist.LLMJudge(model, template=...)) or other ItemJudges",
        )
        self.config = checked(
            PanelConfig,
            {
                "judges": tuple(judges),
                "aggregation": aggregation,
                "weights": check_weights(aggregation, weights, len(judges)),
                "concurrency": concurrency,
                "name": name,
            },
            "Panel",
        )
        self.name = name or f"panel:{aggregation}"
        self.judge_names: tuple[str, ...] = _unique_names([j.name for j in judges])

    @property
    def judges(self) -> tuple[ItemJudge, ...]:
        return self.config.judges

    @property
    def aggregation(self) -> str:
        return self.config.aggregation

    @property
    def weights(self) -> tuple[float, ...] | None:
        return self.config.weights

    @property
    def concurrency(self) -> int:  # type: ignore[override]
        return self.config.concurrency

    def summary(self) -> str:
        """One line about this panel (a catalog entry's default description)."""
        return f"panel of {len(self.judges)} judges ({self.aggregation})"

    def __repr__(self) -> str:
        return f"Panel({list(self.judge_names)!r}, aggregation={self.aggregation!r})"

    def models(self) -> tuple[Model, ...]:
        """Every judge's models, judge by judge in panel order."""
        return tuple(m for judge in self.judges for m in models_of(judge))

    def with_models(self, fn: ModelFn) -> Panel:
        """A copy of this panel whose judges call ``fn(model)`` instead of each model."""
        return Panel(
            [with_models_of(judge, fn) for judge in self.judges],
            self.aggregation,
            self.weights,
            self.name,
            concurrency=self.concurrency,
        )

    @property
    def required_fields(self) -> tuple[str, ...]:
        """Every field any of the judges needs, in first-seen order."""
        return fields_of(self.judges)

    def describe(self) -> dict[str, Any]:
        """The panel's whole configuration as JSON-able data (for run manifests)."""
        return {
            "kind": "panel",
            "name": self.name,
            **self.config.described(),  # aggregation, weights
            "judges": [j.describe() for j in self.judges],
        }

    # -- one item ---------------------------------------------------------------------------

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> PanelJudgment:
        """Every judge on ``item`` concurrently, combined; never raises for a failed judge."""
        map_items([item], None, self.required_fields, self._who())
        outcomes = await asyncio.gather(*(judge_or_failed(j, item, retries) for j in self.judges))
        return self._combine(outcomes)

    def _combine(self, outcomes: Sequence[Any]) -> PanelJudgment:
        scores = [_score_of(o) for o in outcomes]
        agg = aggregate(scores, self.aggregation, self.weights)
        usage = Usage()
        for o in outcomes:
            u = getattr(o, "usage", None)
            if isinstance(u, Usage):
                usage = usage + u
        error = None
        if agg.score is None:
            error = self._no_score_error(outcomes, agg.n_counted)
        return PanelJudgment(
            score=agg.score,
            error=error,
            aggregation=self.aggregation,
            n_counted=agg.n_counted,
            n_failed=agg.n_failed,
            spread=agg.spread,
            tie=agg.tie,
            judgments=tuple(outcomes),
            usage=usage,
        )

    def _no_score_error(self, outcomes: Sequence[Any], n_counted: int) -> str:
        if n_counted:
            return "panel: the judges that scored all have weight 0"
        first = next((getattr(o, "error", None) for o in outcomes if getattr(o, "error", None)), "")
        detail = f"; first error: {first}" if first else ""
        n = len(outcomes)
        return f"panel: no judge scored this item ({n} of {n} failed{detail})"

    # -- batches (judge_items and the sync twins come from ManyItemsJudge) ----------------------

    def _who(self) -> str:
        return f"panel {self.name!r}"

    def _results(self, outcomes: list[PanelJudgment], rows: list[dict[str, Any]]) -> PanelResults:
        return PanelResults(outcomes, rows, judge_names=self.judge_names)


class PanelResults(OutcomeResults[PanelJudgment]):
    """The panel's judgments of a batch, in input order, with per-judge views.

    >>> from jurist.types import Judgment
    >>> r = PanelResults(
    ...     [PanelJudgment(score=0.5, n_counted=2,
    ...                    judgments=(Judgment(score=1.0), Judgment(score=0.0)))],
    ...     [{"prompt": "q"}], judge_names=("a", "b"))
    >>> r.judge_scores
    {'a': [1.0], 'b': [0.0]}
    >>> row = r.to_records()[0]
    >>> row["prompt"], row["panel_score"], row["judge_1_score"], row["judge_2_score"]
    ('q', 0.5, 1.0, 0.0)
    """

    def __init__(
        self,
        judgments: Sequence[PanelJudgment],
        items: Sequence[dict[str, Any]] | None = None,
        *,
        judge_names: Sequence[str] = (),
    ) -> None:
        super().__init__(judgments, items)
        self.judge_names = tuple(judge_names)

    def _sliced(
        self, outcomes: Sequence[PanelJudgment], items: Sequence[dict[str, Any]] | None
    ) -> PanelResults:
        return PanelResults(outcomes, items, judge_names=self.judge_names)

    def agreement(self) -> dict[str, float | None]:
        """How much the judges agreed: ``mean_spread`` (mean of max - min over the items
        where at least one judge scored) and ``unanimous_rate`` (the share of those items
        where every counted judge gave the same score)."""
        spreads = [s for s in self.spreads if s is not None]
        if not spreads:
            return {"mean_spread": None, "unanimous_rate": None}
        return {
            "mean_spread": sum(spreads) / len(spreads),
            "unanimous_rate": sum(1 for s in spreads if s <= 1e-9) / len(spreads),
        }

    @property
    def judge_scores(self) -> dict[str, list[float | None]]:
        """Each judge's scores over the batch, by judge name (panel order)."""
        names = self.judge_names or tuple(
            f"judge_{k + 1}" for k in range(max((len(p.judgments) for p in self), default=0))
        )
        return {
            name: [p.judge_scores[k] if k < len(p.judgments) else None for p in self]
            for k, name in enumerate(names)
        }

    @property
    def n_counted(self) -> list[int]:
        return [p.n_counted for p in self]

    @property
    def spreads(self) -> list[float | None]:
        """Per item, ``max - min`` of the counted judges' scores (0 when they agree)."""
        return [p.spread for p in self]

    def judge_failures(self) -> dict[str, int]:
        """How many items each judge failed on, by judge name."""
        return {name: sum(1 for s in col if s is None) for name, col in self.judge_scores.items()}

    def _columns(self, outcome: PanelJudgment) -> dict[str, Any]:
        """``panel_*`` columns, then ``judge_<k>_*``.

        Judges are numbered from 1 in panel order (``judge_1_score``, ``judge_1_error``...);
        :attr:`judge_names` gives their names. Only scalar fields of each judge's outcome
        become columns.
        """
        p = outcome
        row: dict[str, Any] = {
            "panel_score": p.score,
            "panel_error": p.error,
            "panel_aggregation": p.aggregation,
            "panel_n_counted": p.n_counted,
            "panel_n_failed": p.n_failed,
            "panel_spread": p.spread,
            "panel_tie": p.tie,
            "panel_prompt_tokens": p.usage.prompt_tokens,
            "panel_completion_tokens": p.usage.completion_tokens,
        }
        for k, judged in enumerate(p.judgments, start=1):
            for key, value in _scalars(judged).items():
                row[f"judge_{k}_{key}"] = value
        return row


def _score_of(outcome: Any) -> float | None:
    score = getattr(outcome, "score", None)
    if score is None or not isinstance(score, int | float) or not is_scored(float(score)):
        return None
    return float(score)


def _scalars(outcome: Any) -> dict[str, Any]:
    if isinstance(outcome, BaseModel):
        data = outcome.model_dump(mode="json", exclude={"usage"})
    else:
        data = {"score": _score_of(outcome), "error": getattr(outcome, "error", None)}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, float) and math.isnan(value):
            value = None
        if value is None or isinstance(value, str | int | float | bool):
            out[key] = value
    return out


def _unique_names(names: Sequence[str]) -> tuple[str, ...]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return tuple(out)


def _example_judges() -> tuple[Any, ...]:
    from jurist.judges._llm_judge import LLMJudge
    from jurist.judges._pairwise import PairwiseJudge

    return (LLMJudge(scripted_spec("a"), name="a"), PairwiseJudge(scripted_spec("b"), name="b"))


register("panel", PanelConfig, Panel)
