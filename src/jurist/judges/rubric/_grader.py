""":class:`CriterionGrader`: grade submissions against a rubric with one judge or an ensemble.

>>> import jurist
>>> rubric = jurist.Rubric.from_dict([
...     {"name": "answer", "requirement": "Gives the answer 4"},
...     {"name": "tone", "requirement": "How is the tone?", "scale_type": "nominal",
...      "options": [{"label": "Rude", "value": 0}, {"label": "Polite", "value": 1}]},
... ])
>>> answer = '{"c1": {"verdict": "MET"}, "c2": {"option": 1}}'
>>> model = jurist.get_model("mock:judge", outputs=[answer], cycle=True)
>>> grader = jurist.CriterionGrader(judges=[model], shuffle_options=False)
>>> report = grader.grade_sync(rubric, "2 + 2 = 4, my friend.", query="What is 2 + 2?")
>>> report.score, report.verdicts
(0.5, ['MET', 'Rude'])
"""

from __future__ import annotations

import asyncio
import copy
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from jurist._sync import run_sync
from jurist.data._item_names import item_name
from jurist.errors import ConfigError, DataError
from jurist.judges._declare import register
from jurist.judges._items import as_item_dicts
from jurist.judges._many import run_items
from jurist.judges.rubric._aggregate import BINARY_AGGREGATIONS
from jurist.judges.rubric._assemble import Strategies, assemble
from jurist.judges.rubric._calls import CallSettings, ItemInput, JudgeCalls
from jurist.judges.rubric._criteria import (
    NOMINAL_AGGREGATIONS,
    ORDINAL_AGGREGATIONS,
    Criterion,
)
from jurist.judges.rubric._inputs import item_input
from jurist.judges.rubric._item_judge import RubricJudge
from jurist.judges.rubric._judge_config import BINDING, RubricJudgeConfig
from jurist.judges.rubric._judge_spec import JudgeSpec, resolve_judges
from jurist.judges.rubric._report import GradeReport
from jurist.judges.rubric._rubric import Rubric
from jurist.judges.rubric._scoring import CANNOT_ASSESS_STRATEGIES, CannotAssess
from jurist.judges.rubric._shuffle import item_key
from jurist.models import Model
from jurist.models._reasoning import refuse_reasoning
from jurist.templates import DEFAULT_MAX_TOOL_CHARS, Turn, get_template
from jurist.types import Reasoning, Usage

__all__ = ["CriterionGrader", "JudgeSpec"]

Calls = Literal["per_item", "per_criterion"]
Submission = str | Mapping[str, Any] | list[Mapping[str, Any]]


def _check_rubric(method: str, rubric: object, second: object = None) -> None:
    """A clear error for a call whose rubric is not a :class:`Rubric` (arguments swapped)."""
    if isinstance(rubric, Rubric):
        return
    if isinstance(second, Rubric):
        named = f" {second.name!r}" if second.name else ""
        raise ConfigError(
            f"CriterionGrader.{method}(rubric, submission, ...) takes the rubric first: got a "
            f"{type(rubric).__name__} first and the rubric{named} second; swap the two arguments"
        )
    raise ConfigError(
        f"CriterionGrader.{method}: the first argument must be a Rubric (Rubric.from_yaml(...)), "
        f"not a {type(rubric).__name__}"
    )


def _check_choice(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}={value!r} is not one of {', '.join(allowed)}")


class CriterionGrader:
    """Grades a submission on every criterion of a rubric with one or more judges.

    Args:
        judges: models, ``"provider:name"`` specs, ``(model, weight)`` pairs or
            :class:`JudgeSpec`; ids default to the model's spec (``#2``, ``#3`` added to
            repeats).
        aggregation: binary criteria: ``majority``, ``weighted``, ``unanimous``, ``any``.
        ordinal_aggregation: ``mean``, ``median``, ``weighted_mean``, ``mode``, ``min``, ``max``.
        nominal_aggregation: ``mode``, ``weighted_mode``, ``unanimous``.
        shuffle_options: show each judge the options in an order drawn from (seed, item,
            criterion, judge); answers are mapped back and the order is recorded.
        seed: pins the shuffles; ``None`` draws one (see :attr:`seed`).
        auto_na_option: add a "Cannot assess" option to multi-choice criteria that have no
            NA option; ``False`` is forced choice (a failed call then abstains with no
            option selected).
        calls: ``"per_item"`` (the whole rubric in one call per judge) or ``"per_criterion"``.
        cannot_assess: ``skip``, ``zero``, ``partial`` (``partial_credit`` x weight), ``fail``.
        explanations: ask each judge for a short explanation per criterion.
        instructions: replace the task description and answering rules at the top of the
            system message (the answer format and the rubric are always added).
        temperature, max_tokens: sampling (``max_tokens`` defaults to a size that fits
            the answer); a :class:`JudgeSpec` may set its own temperature and seed.
        reasoning: a thinking effort or budget, as :class:`~jurist.judges.LLMJudge` takes
            it (its budget added to ``max_tokens``; a reply cut inside its thinking gets one
            continuation, see :mod:`jurist.judges._thinking`); refused by a judge whose
            backend cannot think. ``keep_reasoning=False`` keeps no vote's thinking trace.
        concurrency: the most model calls in flight in :meth:`grade_many`.
        turn, max_tool_chars: how a conversation submission is graded: its judged turn
            (``"last"`` by default) is the submission and what comes before it the query
            (see :mod:`jurist.judges.rubric._inputs`).
    """

    def __init__(
        self,
        judges: Sequence[Any] | Any,
        *,
        aggregation: str = "majority",
        ordinal_aggregation: str = "mean",
        nominal_aggregation: str = "mode",
        shuffle_options: bool = True,
        seed: int | None = None,
        auto_na_option: bool = True,
        calls: Calls = "per_item",
        cannot_assess: CannotAssess = "skip",
        partial_credit: float = 0.5,
        explanations: bool = True,
        instructions: str | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        reasoning: Reasoning | str | int | None = None,
        keep_reasoning: bool = True,
        concurrency: int = 32,
        name: str | None = None,
        turn: Turn = "last",
        max_tool_chars: int | None = DEFAULT_MAX_TOOL_CHARS,
    ) -> None:
        _check_choice("aggregation", aggregation, BINARY_AGGREGATIONS)
        _check_choice("ordinal_aggregation", ordinal_aggregation, ORDINAL_AGGREGATIONS)
        _check_choice("nominal_aggregation", nominal_aggregation, NOMINAL_AGGREGATIONS)
        _check_choice("calls", calls, ("per_item", "per_criterion"))
        _check_choice("cannot_assess", cannot_assess, CANNOT_ASSESS_STRATEGIES)
        if not 0.0 <= partial_credit <= 1.0:
            raise ConfigError(f"partial_credit must be in [0, 1], got {partial_credit}")
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
        self._specs = resolve_judges(judges)
        self.strategies = Strategies(
            aggregation, ordinal_aggregation, nominal_aggregation, cannot_assess, partial_credit
        )
        self.shuffle_options = shuffle_options
        self._seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
        self.auto_na_option = auto_na_option
        self.calls: Calls = calls
        self.explanations = explanations
        self.instructions = instructions
        self.temperature = temperature
        self.max_tokens = max_tokens
        try:
            self.reasoning = Reasoning.parse(reasoning)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        self.keep_reasoning = keep_reasoning
        for model, _, _ in self._specs:  # before the first call
            refuse_reasoning(model.spec, model.capabilities.thinking, self.reasoning)
        # checked once, as a template checks them
        get_template("likert").with_turn(turn, max_tool_chars=max_tool_chars)
        self.turn: Turn = turn
        self.max_tool_chars = max_tool_chars
        self.concurrency = concurrency
        self.name = name or "rubric@" + ",".join(self.judge_ids)

    def __repr__(self) -> str:
        return f"CriterionGrader(judges={self.judge_ids!r}, calls={self.calls!r})"

    @property
    def seed(self) -> int:
        """The seed of the option shuffles (drawn at construction when none was given)."""
        return self._seed

    def models(self) -> tuple[Model, ...]:
        """The judges' models, in order.

        >>> CriterionGrader(judges=["mock:a", ("mock:b", 2.0)]).models()
        (MockModel('mock:a'), MockModel('mock:b'))
        """
        return tuple(model for model, _, _ in self._specs)

    def with_models(self, fn: Callable[[Model], Model]) -> CriterionGrader:
        """A copy of this grader (same ids, weights, seed and settings) whose judges call
        ``fn(model)`` instead of each model."""
        other = copy.copy(self)
        other._specs = [(fn(model), spec, judge_id) for model, spec, judge_id in self._specs]
        return other

    @property
    def judge_ids(self) -> list[str]:
        return [judge_id for _, _, judge_id in self._specs]

    def effective_criteria(self, rubric: Rubric) -> list[Criterion]:
        """The criteria as judged: with the "Cannot assess" option when ``auto_na_option``."""
        if not self.auto_na_option:
            return list(rubric.criteria)
        return [c.with_na_option() for c in rubric.criteria]

    def describe(self, rubric: Rubric | None = None) -> dict[str, Any]:
        """The grader's whole configuration as JSON-able data (for run manifests)."""
        s = self.strategies
        out: dict[str, Any] = {
            "kind": "rubric_grader",
            "name": self.name,
            "judges": [
                {
                    "id": judge_id,
                    "model": model.identity(),
                    "weight": spec.weight,
                    "temperature": self.temperature
                    if spec.temperature is None
                    else spec.temperature,
                    "seed": spec.seed,
                }
                for model, spec, judge_id in self._specs
            ],
            "aggregation": s.binary,
            "ordinal_aggregation": s.ordinal,
            "nominal_aggregation": s.nominal,
            "cannot_assess": s.cannot_assess,
            "partial_credit": s.partial_credit,
            "shuffle_options": self.shuffle_options,
            "seed": self.seed,
            "auto_na_option": self.auto_na_option,
            "calls": self.calls,
            "explanations": self.explanations,
            "instructions": self.instructions,
            "max_tokens": self.max_tokens,
        }
        if self.reasoning is not None:  # written only when set: older runs still resume
            out["reasoning"] = self.reasoning.effort or self.reasoning.budget_tokens
        if self.turn != "last" or self.max_tool_chars != DEFAULT_MAX_TOOL_CHARS:
            out["turn"], out["max_tool_chars"] = self.turn, self.max_tool_chars
        if rubric is not None:
            out["rubric"] = rubric.to_dict()
        return out

    # -- one submission -------------------------------------------------------------------

    def _callers(self, rubric: Rubric, semaphore: asyncio.Semaphore | None) -> list[JudgeCalls]:
        settings = CallSettings(
            calls=self.calls,
            explanations=self.explanations,
            shuffle_seed=self.seed if self.shuffle_options else None,
            max_tokens=self.max_tokens,
            guidelines=rubric.guidelines,
            reasoning=self.reasoning,
            keep_reasoning=self.keep_reasoning,
            instructions=self.instructions,
        )
        return [
            JudgeCalls(
                model,
                judge_id,
                spec.weight,
                temperature=self.temperature if spec.temperature is None else spec.temperature,
                seed=spec.seed,
                settings=settings,
                semaphore=semaphore,
            )
            for model, spec, judge_id in self._specs
        ]

    async def _grade_one(
        self,
        rubric: Rubric,
        criteria: list[Criterion],
        callers: list[JudgeCalls],
        item: ItemInput,
        retries: int,
    ) -> GradeReport:
        started = time.perf_counter()
        runs = await asyncio.gather(*(c.run(criteria, item, retries) for c in callers))
        usage = Usage()
        notes: set[str] = set()
        for run in runs:
            usage = usage + run.usage
            notes |= run.notes
        return assemble(
            criteria,
            {caller.judge_id: run.votes for caller, run in zip(callers, runs, strict=True)},
            self.strategies,
            names=rubric.criterion_names(),
            usage=usage,
            latency=time.perf_counter() - started,
            calls=self.calls,
            seed=self.seed if self.shuffle_options else None,
            output_note="; ".join(sorted(notes)) or None,
        )

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
    ) -> GradeReport:
        """Grade one submission; never raises for a failed call (see the report's errors).

        ``submission`` is text, or a conversation (a list of messages in OpenAI's chat
        format) whose judged turn (the grader's ``turn``) is graded with the rest as the
        query. ``images`` (paths, URLs, data URIs) are sent after the text, with the
        conversation's own. ``messages`` is the conversation given apart: with a text
        ``submission`` all of it is context (the query), with ``submission=None`` its judged
        turn is graded. ``retries`` re-asks a judge whose answer is not a JSON object
        at most that many more times; API errors are left to the retry wrapper.
        """
        _check_rubric("grade", rubric, submission)
        item = self._input(
            submission, query, reference, images, "the submission", messages=messages
        )
        criteria = self.effective_criteria(rubric)
        return await self._grade_one(rubric, criteria, self._callers(rubric, None), item, retries)

    def grade_sync(
        self,
        rubric: Rubric,
        submission: str | Sequence[Mapping[str, Any]] | None,
        *,
        query: str | None = None,
        reference: str | None = None,
        retries: int = 0,
        images: Sequence[Any] | None = None,
        messages: Sequence[Mapping[str, Any]] | str | None = None,
    ) -> GradeReport:
        """Sync twin of :meth:`grade`; works inside a running event loop too."""
        _check_rubric("grade_sync", rubric, submission)
        return run_sync(
            self.grade(
                rubric,
                submission,
                query=query,
                reference=reference,
                retries=retries,
                images=images,
                messages=messages,
            )
        )

    # -- batches --------------------------------------------------------------------------

    async def grade_many(
        self,
        rubric: Rubric,
        submissions: Iterable[Submission],
        *,
        queries: Sequence[str | None] | None = None,
        retries: int = 0,
        concurrency: int | None = None,
        progress: bool = False,
    ) -> list[GradeReport]:
        """Grade many submissions concurrently, in input order.

        ``submissions``: strings, or mappings (or a DataFrame's rows) with ``submission``
        (or ``response``) and optional ``query`` (or ``prompt``) and ``reference``. At most
        ``concurrency`` model calls are in flight (default: the grader's).
        """
        _check_rubric("grade_many", rubric, submissions)
        if type(submissions).__module__.startswith("pandas"):
            submissions = as_item_dicts(submissions)
        items = [self._item(s, i, queries) for i, s in enumerate(submissions)]
        limit = concurrency or self.concurrency
        semaphore = asyncio.Semaphore(limit)
        callers = self._callers(rubric, semaphore)
        criteria = self.effective_criteria(rubric)

        async def one(i: int) -> GradeReport:
            return await self._grade_one(rubric, criteria, callers, items[i], retries)

        return await run_items(
            one, len(items), concurrency=limit, progress=progress, ok=lambda r: r.ok
        )

    def grade_many_sync(
        self,
        rubric: Rubric,
        submissions: Iterable[Submission],
        *,
        queries: Sequence[str | None] | None = None,
        retries: int = 0,
        concurrency: int | None = None,
        progress: bool = False,
    ) -> list[GradeReport]:
        """Sync twin of :meth:`grade_many`."""
        return run_sync(
            self.grade_many(
                rubric,
                submissions,
                queries=queries,
                retries=retries,
                concurrency=concurrency,
                progress=progress,
            )
        )

    def _input(
        self,
        submission: Any,
        query: str | None,
        reference: str | None,
        images: Sequence[Any] | None,
        where: str,
        *,
        messages: Any = None,
    ) -> ItemInput:
        """One item to grade (see :func:`~jurist.judges.rubric._inputs.item_input`)."""
        return item_input(
            submission,
            query,
            reference,
            images,
            where,
            messages=messages,
            turn=self.turn,
            max_tool_chars=self.max_tool_chars,
        )

    def _item(self, s: Submission, i: int, queries: Sequence[str | None] | None) -> ItemInput:
        query = queries[i] if queries is not None else None
        reference = None
        if isinstance(s, Mapping) and (s.get("messages") is not None or s.get("images")):
            q = s.get("query", s.get("prompt", query))
            return self._input(
                s.get("submission", s.get("response")),
                None if q is None else str(q),
                s.get("reference"),
                s.get("images"),
                item_name(i, s),
                messages=s.get("messages"),
            )
        if isinstance(s, list):
            return self._input(s, query, None, None, item_name(i))
        if isinstance(s, Mapping):
            text = s.get("submission", s.get("response"))
            query = s.get("query", s.get("prompt", query))
            reference = s.get("reference")
        else:
            text = s
        if not isinstance(text, str):
            where = item_name(i, s if isinstance(s, Mapping) else None)
            raise DataError(
                f"{where}: the submission must be text (a string, or a mapping with "
                f"'submission' or 'response'), got {type(text).__name__}"
            )
        query = None if query is None else str(query)
        return ItemInput(text, query, reference, item_key(query, text))

    def for_rubric(
        self,
        rubric: Rubric,
        *,
        submission_field: str = "response",
        query_field: str | None = "prompt",
        reference_field: str | None = None,
    ) -> RubricJudge:
        """This grader bound to a rubric, as an item judge for :func:`jurist.evaluate`
        (an item with ``messages`` is graded at the grader's ``turn``)."""
        return RubricJudge(
            self,
            rubric,
            submission_field=submission_field,
            query_field=query_field,
            reference_field=reference_field,
        )


def _judge_of(config: RubricJudgeConfig) -> RubricJudge:
    """The grader ``config`` declares, bound to its rubric."""
    options = config.arguments()
    rubric, models = options.pop("rubric"), options.pop("models")
    binding = {k: options.pop(k) for k in BINDING}
    return CriterionGrader(list(models), **options).for_rubric(rubric, **binding)


register("rubric_judge", RubricJudgeConfig, RubricJudge, _judge_of)
