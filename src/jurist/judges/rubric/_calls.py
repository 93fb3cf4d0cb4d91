"""One judge's calls on one item, turned into one vote per criterion.

``per_item``: one call for the whole rubric; a failed call fails every criterion, a missing
or malformed entry fails only its criterion. ``per_criterion``: one call per criterion, all
at once. A failed call never raises: its votes carry the error (``"category: message"``)
and abstain.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from jurist.errors import JuristError, ParseError
from jurist.judges._llm_config import DEFAULT_MAX_THINKING_TOKENS
from jurist.judges._thinking import bounded, cut_in_thinking, recover
from jurist.judges.rubric._criteria import Criterion, CriterionVerdict
from jurist.judges.rubric._prompts import (
    criterion_id,
    criterion_schema,
    criterion_system,
    criterion_user,
    item_schema,
    item_system,
    item_user,
    parse_answer,
    split_thinking,
)
from jurist.judges.rubric._report import Vote
from jurist.judges.rubric._shuffle import option_order
from jurist.models import Model
from jurist.models._reasoning import headroom
from jurist.models._retry import attempts_of
from jurist.types import Completion, ImagePart, Message, Reasoning, Request, Usage

__all__ = ["CallSettings", "ItemInput", "JudgeCalls", "JudgeRun"]

Calls = Literal["per_item", "per_criterion"]


@dataclass(frozen=True, slots=True)
class ItemInput:
    """One item to grade: the submission and its context, and its shuffle key."""

    submission: str
    query: str | None
    reference: str | None
    key: str
    images: tuple[ImagePart, ...] = ()  # sent after the text of each call's user message


@dataclass(frozen=True, slots=True)
class CallSettings:
    """Everything about calls that the grader fixes once."""

    calls: Calls
    explanations: bool
    shuffle_seed: int | None  # None: no shuffling
    max_tokens: int | None
    guidelines: str | None
    instructions: str | None = None
    reasoning: Reasoning | None = None
    keep_reasoning: bool = True


@dataclass(slots=True)
class JudgeRun:
    """One judge's votes on one item (one per criterion), with what the calls cost and
    the backend's notes on them (a JSON schema sent in a fallback form)."""

    votes: list[Vote]
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    notes: set[str] = field(default_factory=set)


def _max_tokens(criteria: Sequence[Criterion], explanations: bool, per_item: bool) -> int:
    each = 120 if explanations else 24
    return 32 + each * (len(criteria) if per_item else 1)


class JudgeCalls:
    """How one judge (a model, an id, a weight, sampling) is asked about an item."""

    def __init__(
        self,
        model: Model,
        judge_id: str,
        weight: float,
        *,
        temperature: float | None,
        seed: int | None,
        settings: CallSettings,
        semaphore: asyncio.Semaphore | None = None,
    ) -> None:
        self.model = model
        self.judge_id = judge_id
        self.weight = weight
        self.temperature = temperature
        self.seed = seed
        self.settings = settings
        self.semaphore = semaphore
        self._json = model.capabilities.json_schema

    def orders(self, criteria: Sequence[Criterion], item: ItemInput) -> list[list[int] | None]:
        """The option order this judge is shown, per criterion (``None`` for binary)."""
        return [
            None
            if c.options is None
            else option_order(
                self.settings.shuffle_seed, item.key, i, self.judge_id, len(c.options)
            )
            for i, c in enumerate(criteria)
        ]

    async def run(self, criteria: Sequence[Criterion], item: ItemInput, retries: int) -> JudgeRun:
        orders = self.orders(criteria, item)
        if self.settings.calls == "per_item":
            return await self._per_item(criteria, orders, item, retries)
        runs = await asyncio.gather(
            *(self._one_criterion(i, c, orders[i], item, retries) for i, c in enumerate(criteria))
        )
        out = JudgeRun(votes=[])
        for run in runs:
            out.votes.extend(run.votes)
            out.usage = out.usage + run.usage
            out.latency = max(out.latency, run.latency)
            out.notes |= run.notes
        return out

    # -- the two call shapes -----------------------------------------------------------------

    async def _per_item(
        self,
        criteria: Sequence[Criterion],
        orders: list[list[int] | None],
        item: ItemInput,
        retries: int,
    ) -> JudgeRun:
        s = self.settings
        system = item_system(
            criteria,
            guidelines=s.guidelines,
            explanations=s.explanations,
            instructions=s.instructions,
        )
        user = item_user(
            criteria, orders, query=item.query, submission=item.submission, reference=item.reference
        )
        schema = item_schema(criteria, s.explanations) if self._json else None
        max_tokens = s.max_tokens or _max_tokens(criteria, s.explanations, per_item=True)
        ids = [criterion_id(i) for i in range(len(criteria))]
        answer, run, error = await self._ask(
            system, user, schema, max_tokens, retries, ids, item.images
        )
        for i, c in enumerate(criteria):
            if answer is None:
                run.votes.append(self.failed(c, orders[i], error))
                continue
            data, reasoning = answer
            run.votes.append(self._vote(c, orders[i], data.get(ids[i]), reasoning))
        return run

    async def _one_criterion(
        self,
        index: int,
        criterion: Criterion,
        order: list[int] | None,
        item: ItemInput,
        retries: int,
    ) -> JudgeRun:
        s = self.settings
        system = criterion_system(explanations=s.explanations, instructions=s.instructions)
        user = criterion_user(
            criterion,
            order,
            guidelines=s.guidelines,
            query=item.query,
            submission=item.submission,
            reference=item.reference,
        )
        schema = criterion_schema(criterion, s.explanations) if self._json else None
        max_tokens = s.max_tokens or _max_tokens([criterion], s.explanations, per_item=False)
        answer, run, error = await self._ask(
            system, user, schema, max_tokens, retries, None, item.images
        )
        if answer is None:
            run.votes.append(self.failed(criterion, order, error))
        else:
            data, reasoning = answer
            run.votes.append(self._vote(criterion, order, data, reasoning))
        return run

    async def _ask(
        self,
        system: str,
        user: str,
        schema: dict[str, Any] | None,
        max_tokens: int,
        retries: int,
        ids: Sequence[str] | None,
        images: tuple[ImagePart, ...] = (),
    ) -> tuple[tuple[dict[str, Any], str | None] | None, JudgeRun, str]:
        """Call until the answer is a JSON object (at most ``retries`` re-asks)."""
        messages = (
            Message(role="system", content=system),
            Message(role="user", content=user, images=images),
        )
        run = JudgeRun(votes=[])
        error = "parse: no attempt made"
        for attempt in range(retries + 1):
            request = Request(
                messages=messages,
                max_tokens=headroom(max_tokens, self.settings.reasoning),
                reasoning=self.settings.reasoning,
                temperature=self.temperature,
                seed=self.seed,
                json_schema=schema,
                attempt=attempt,
            )
            started = time.perf_counter()
            try:
                if self.semaphore is None:
                    completion = await self.model.complete(request)
                else:
                    async with self.semaphore:
                        completion = await self.model.complete(request)
            except JuristError as e:
                run.latency += time.perf_counter() - started
                run.usage = run.usage + Usage(attempts=attempts_of(e))
                return None, run, f"{e.category}: {e}"
            run.latency += completion.latency or (time.perf_counter() - started)
            run.usage = run.usage + completion.billed_usage
            if completion.format_note:
                run.notes.add(completion.format_note)
            if cut_in_thinking(completion):  # nothing in it is an answer: recover one
                rec = await recover(
                    self.model,
                    request,
                    completion,
                    mode="continue",
                    cap=DEFAULT_MAX_THINKING_TOKENS,
                    readable=partial(_readable, ids=ids),
                )
                run.latency += rec.latency
                run.usage = run.usage + rec.usage
                if rec.completion is None:
                    return None, run, f"parse: truncated in thinking ({rec.note})"
                run.notes.add(rec.note)
                completion = rec.completion
            thinking, text = split_thinking(completion.text)
            reasoning = bounded(completion.reasoning or thinking)
            if not self.settings.keep_reasoning:
                reasoning = None
            try:
                return (parse_answer(text, ids), reasoning), run, ""
            except ParseError as e:
                error = f"parse: {e}"
                if completion.finish_reason == "length":
                    error += f" (the answer was cut at max_tokens={max_tokens})"
        return None, run, error

    # -- votes -----------------------------------------------------------------------------

    def failed(self, criterion: Criterion, order: list[int] | None, error: str) -> Vote:
        """The abstaining vote that stands in for a failed call or an unusable answer."""
        if criterion.options is None:
            return Vote(
                judge_id=self.judge_id,
                verdict=CriterionVerdict.CANNOT_ASSESS,
                selected_label=CriterionVerdict.CANNOT_ASSESS.value,
                na=True,
                weight=self.weight,
                error=error,
            )
        na = criterion.na_index
        return Vote(
            judge_id=self.judge_id,
            selected_index=na,
            selected_label=None if na is None else criterion.options[na].label,
            na=True,
            weight=self.weight,
            shuffle_order=self._recorded(order),
            error=error,
        )

    def _recorded(self, order: list[int] | None) -> list[int] | None:
        return order if self.settings.shuffle_seed is not None else None

    def _vote(
        self, criterion: Criterion, order: list[int] | None, entry: Any, reasoning: str | None
    ) -> Vote:
        if not isinstance(entry, dict):
            what = "no entry" if entry is None else f"a {type(entry).__name__}"
            return self.failed(criterion, order, f"parse: the answer has {what} for it")
        reason = entry.get("explanation")
        reason = reason if isinstance(reason, str) else None
        if criterion.options is None:
            raw = entry.get("verdict")
            try:
                verdict = CriterionVerdict(str(raw).strip().upper().replace(" ", "_"))
            except ValueError:
                msg = f"parse: verdict {raw!r} is not MET, UNMET or CANNOT_ASSESS"
                return self.failed(criterion, order, msg)
            na = verdict is CriterionVerdict.CANNOT_ASSESS
            return Vote(
                judge_id=self.judge_id,
                verdict=verdict,
                selected_label=verdict.value,
                value=None if na else float(verdict is CriterionVerdict.MET),
                na=na,
                reason=reason,
                weight=self.weight,
                reasoning=reasoning,
            )
        assert order is not None
        raw = entry.get("option")
        if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= len(order):
            msg = f"parse: option {raw!r} is not a number from 1 to {len(order)}"
            return self.failed(criterion, order, msg)
        index = order[raw - 1]
        option = criterion.options[index]
        return Vote(
            judge_id=self.judge_id,
            selected_index=index,
            selected_label=option.label,
            value=None if option.na else option.value,
            na=option.na,
            reason=reason,
            weight=self.weight,
            shuffle_order=self._recorded(order),
            reasoning=reasoning,
        )


def _readable(completion: Completion, *, ids: Sequence[str] | None) -> bool:
    """Whether ``completion`` holds an answer :func:`parse_answer` reads."""
    try:
        parse_answer(split_thinking(completion.text)[1], ids)
    except ParseError:
        return False
    return True
