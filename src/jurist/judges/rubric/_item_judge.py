""":class:`RubricJudge`: a grader bound to a rubric, as an item judge for the batch engine.

It meets :class:`jurist.judges.ItemJudge`: ``name``, ``required_fields``, ``describe()`` and
``judge(item)``, which returns the item's :class:`GradeReport` (``score``, ``error``,
``usage`` and the whole per-criterion breakdown) and never raises for a failed call.

>>> import jurist
>>> from jurist.judges import ItemJudge
>>> rubric = jurist.Rubric.from_dict([{"name": "ok", "requirement": "Answers the question"}])
>>> grader = jurist.CriterionGrader(
...     judges=[jurist.get_model("mock:j", outputs=['{"c1": {"verdict": "MET"}}'], cycle=True)])
>>> judge = grader.for_rubric(rubric, submission_field="answer", query_field="question")
>>> isinstance(judge, ItemJudge), judge.required_fields
(True, ('answer',))
>>> judge.judge_sync({"question": "2+2?", "answer": "4"}).score
1.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from jurist._sync import run_sync
from jurist.errors import DataError
from jurist.judges._declare import judge_kinds
from jurist.judges.rubric._judge_config import RubricJudgeConfig, config_of, refuse_weights
from jurist.judges.rubric._report import GradeReport
from jurist.judges.rubric._rubric import Rubric
from jurist.models import Model
from jurist.templates import field_text, image_refs
from jurist.templates._conversation import has_conversation

__all__ = ["RubricGrader", "RubricJudge"]


class RubricGrader(Protocol):
    """What :class:`RubricJudge` needs of its grader (:class:`~jurist.CriterionGrader` has it).

    A protocol, so that this module needs nothing from the grader's module: the grader
    builds a :class:`RubricJudge` (:meth:`~jurist.CriterionGrader.for_rubric`), never the
    other way round.
    """

    @property
    def name(self) -> str: ...

    def describe(self, rubric: Rubric | None = None) -> dict[str, Any]: ...

    def models(self) -> tuple[Model, ...]: ...

    def with_models(self, fn: Callable[[Model], Model]) -> RubricGrader: ...

    async def grade(
        self,
        rubric: Rubric,
        submission: str | Sequence[Mapping[str, Any]] | None,
        *,
        query: str | None = None,
        reference: str | None = None,
        retries: int = 0,
        images: Sequence[Any] | None = None,
        messages: Sequence[Mapping[str, Any]] | str | None = None,
    ) -> GradeReport: ...


class RubricJudge:
    """A grader (a :class:`~jurist.CriterionGrader`) and a :class:`Rubric`, judging one item
    (a mapping) at a time.

    ``submission_field`` is required in every item; ``query_field`` and
    ``reference_field`` are used when the item has them.
    """

    def __init__(
        self,
        grader: RubricGrader,
        rubric: Rubric,
        *,
        submission_field: str = "response",
        query_field: str | None = "prompt",
        reference_field: str | None = None,
    ) -> None:
        self.grader = grader
        self.rubric = rubric
        self.submission_field = submission_field
        self.query_field = query_field
        self.reference_field = reference_field

    def __repr__(self) -> str:
        return f"RubricJudge({self.name!r}, criteria={len(self.rubric)})"

    def summary(self) -> str:
        """One line about this judge (a catalog entry's default description)."""
        return f"rubric of {len(self.rubric)} criteria"

    @property
    def config(self) -> RubricJudgeConfig:
        """The declaration of this judge (:class:`RubricJudgeConfig`), read from its grader."""
        return config_of(self)

    @classmethod
    def from_config(cls, config: RubricJudgeConfig) -> RubricJudge:
        """The grader ``config`` declares, bound to its rubric (the registered builder)."""
        kind = next(k for k in judge_kinds().values() if k.judge is cls)
        return kind.make(config)  # type: ignore[no-any-return]

    def with_options(self, **changes: Any) -> RubricJudge:
        """A new judge with the same configuration except ``changes`` (the grader's
        keywords, and ``rubric``, ``models``, the item fields)."""
        return self.from_config(self.config.updated("RubricJudge", changes))

    def refuse_entry(self) -> None:
        """Refuse to be stored where the entry cannot say it all (weighted judges)."""
        refuse_weights(self)

    @property
    def name(self) -> str:
        return self.grader.name

    @property
    def required_fields(self) -> tuple[str, ...]:
        return (self.submission_field,)

    def models(self) -> tuple[Model, ...]:
        """The grader's models, in its judges' order."""
        return self.grader.models()

    def with_models(self, fn: Callable[[Model], Model]) -> RubricJudge:
        """A copy of this judge whose grader calls ``fn(model)`` instead of each model."""
        return RubricJudge(
            self.grader.with_models(fn),
            self.rubric,
            submission_field=self.submission_field,
            query_field=self.query_field,
            reference_field=self.reference_field,
        )

    def describe(self) -> dict[str, Any]:
        """The grader's configuration, the rubric and the field mapping (JSON-able)."""
        out = self.grader.describe(self.rubric)
        out["fields"] = {
            "submission": self.submission_field,
            "query": self.query_field,
            "reference": self.reference_field,
        }
        return out

    def _text(self, item: Mapping[str, Any], field: str | None) -> str | None:
        if field is None:
            return None
        value = item.get(field)
        return None if value is None else field_text(value)  # lists and dicts as JSON

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> GradeReport:
        """Grade one item; a missing submission is a report with a ``data:`` error.

        An item with ``messages`` (a conversation) is graded at the grader's ``turn`` when
        it has no submission text, and as context of its submission otherwise; its
        ``images`` are sent with it.
        """
        submission = item.get(self.submission_field)
        if has_conversation(item) or item.get("images") is not None:
            try:
                return await self.grader.grade(
                    self.rubric,
                    submission if isinstance(submission, str) else None,
                    query=self._text(item, self.query_field),
                    reference=self._text(item, self.reference_field),
                    retries=retries,
                    images=image_refs(item.get("images"), where="item"),
                    messages=item.get("messages"),
                )
            except DataError as e:
                return GradeReport(score=None, error=f"data: {e}")
        if not isinstance(submission, str):
            got = "nothing" if submission is None else f"a {type(submission).__name__}"
            return GradeReport(
                score=None,
                error=f"data: field {self.submission_field!r} must hold the submission text, "
                f"got {got}",
            )
        return await self.grader.grade(
            self.rubric,
            submission,
            query=self._text(item, self.query_field),
            reference=self._text(item, self.reference_field),
            retries=retries,
        )

    def judge_sync(self, item: Mapping[str, Any], *, retries: int = 0) -> GradeReport:
        """Sync twin of :meth:`judge`."""
        return run_sync(self.judge(item, retries=retries))
