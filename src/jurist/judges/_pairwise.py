""":class:`PairwiseJudge`: which of two responses is better, asked in both orders.

A pairwise template's score *is* the preference for the response shown first as A: 1.0
when A is better, 0.5 for a tie, 0.0 when B is better (``arena_hard``'s five levels give
1, .75, .5, .25, 0). With ``swap=True`` (the default) every pair is judged twice: as given,
and with the responses swapped, so that B is shown first; the swapped call's preference
for the original A is ``1 - score``. Each order names a winner (preference above 0.5: A,
below: B, exactly 0.5: tie).

**Consistency rule.** When both orders name the same winner the pair is consistent:
its winner is that one and its score the mean of the two preferences for A. When they
disagree, the judge was swayed by position, and ``consistency`` decides:

- ``"tie"`` (default, as MT-bench does): winner ``"tie"``, score 0.5;
- ``"inconsistent"``: winner ``"inconsistent"`` and score the mean of the two
  preferences (the evidence as it stands); win rates leave such pairs out and count them
  apart (``n_inconsistent``).

If either call fails (API error, unreadable verdict after ``retries`` re-asks) the pair
gets ``score=None`` and an error naming the order; both judgments are kept. Nothing is
dropped silently: ``consistent`` is ``None`` only for one-order judging or a failed pair.

>>> import jurist
>>> from jurist.judges._pairwise import PairwiseJudge
>>> from jurist.templates import LabelScale, Label, Template
>>> tpl = Template(
...     name="ab", kind="pairwise", instructions="Which answer is better? Say A, B or tie.",
...     item="{prompt}\\n<a>{response_a}</a>\\n<b>{response_b}</b>",
...     fields=("prompt", "response_a", "response_b"),
...     scale=LabelScale(labels=(Label(name="A", score=1.0), Label(name="B", score=0.0),
...                              Label(name="tie", score=0.5))))
>>> model = jurist.get_model("mock:judge", outputs=["A", "B"])  # A first, then B first
>>> out = PairwiseJudge(model, template=tpl).judge_one_sync(
...     {"prompt": "2+2?", "response_a": "4", "response_b": "5"})
>>> out.winner, out.score, out.consistent
('A', 1.0, True)
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping
from typing import Any, Literal

from jurist.errors import ConfigError
from jurist.judges._llm_judge import LLMJudge
from jurist.judges._many import ManyItemsJudge, map_items
from jurist.judges._pairwise_results import (
    PairJudgment,
    PairwiseResults,
    PairwiseSummary,
    Winner,
    side,
)
from jurist.models import Model
from jurist.templates import DEFAULT_MAX_TOOL_CHARS, Template, Turn, get_template
from jurist.types import Judgment, Usage

__all__ = [
    "Consistency",
    "PairJudgment",
    "PairwiseJudge",
    "PairwiseResults",
    "PairwiseSummary",
    "Winner",
    "side",
]

Consistency = Literal["tie", "inconsistent"]


class PairwiseJudge(ManyItemsJudge[PairJudgment, PairwiseResults]):
    """Compare two responses to one prompt, in both orders by default.

    Args:
        model: a :class:`~jurist.models.Model`, ``"provider:name"``, a LangChain chat model,
            or ``None`` for the default model.
        template: a pairwise template name (``"mt_bench_pair"``, ``"arena_hard"``) or a
            :class:`~jurist.templates.Template` of kind ``"pairwise"``.
        swap: also judge with the responses swapped (position-bias control).
        consistency: what a pair whose two orders disagree becomes, ``"tie"`` or
            ``"inconsistent"`` (see the module doc).
        explanations, temperature, max_tokens, max_calls_per_min, concurrency, name,
            turn, max_tool_chars: how items holding two conversations (``messages_a``,
                ``messages_b``) are judged, as for :class:`~jurist.judges.LLMJudge`: each
                one's judged turn is its response, and their context (the same) the prompt;
                ``turn="all"`` compares them whole.
            **model_options: as for :class:`~jurist.judges.LLMJudge`.
    """

    def __init__(
        self,
        model: Model | str | Any | None = None,
        template: str | Template = "mt_bench_pair",
        swap: bool = True,
        consistency: Consistency = "tie",
        *,
        explanations: bool = False,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        max_calls_per_min: int | None = None,
        concurrency: int = 16,
        name: str | None = None,
        turn: Turn = "last",
        max_tool_chars: int | None = DEFAULT_MAX_TOOL_CHARS,
        **model_options: Any,
    ) -> None:
        tpl = get_template(template) if isinstance(template, str) else template
        _check_pairwise(tpl)
        if consistency not in ("tie", "inconsistent"):
            raise ConfigError(f"consistency must be 'tie' or 'inconsistent', got {consistency!r}")
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
        self.llm_judge = LLMJudge(
            model,
            tpl,
            explanations=explanations,
            temperature=temperature,
            max_tokens=max_tokens,
            max_calls_per_min=max_calls_per_min,
            turn=turn,
            max_tool_chars=max_tool_chars,
            **model_options,
        )
        self.template = self.llm_judge.template
        self.swap = swap
        self.consistency: Consistency = consistency
        self.concurrency = concurrency
        self.name = name or f"pairwise:{tpl.name}@{self.llm_judge.model.spec}"

    def __repr__(self) -> str:
        return (
            f"PairwiseJudge({self.llm_judge.model.spec!r}, template={self.template.name!r}, "
            f"swap={self.swap})"
        )

    @property
    def model(self) -> Model:
        return self.llm_judge.model

    def models(self) -> tuple[Model, ...]:
        """The one model this judge calls (both orders ask it)."""
        return self.llm_judge.models()

    def with_models(self, fn: Callable[[Model], Model]) -> PairwiseJudge:
        """A copy of this judge calling ``fn(model)`` instead of its model."""
        other = copy.copy(self)
        other.llm_judge = self.llm_judge.with_models(fn)
        return other

    @property
    def required_fields(self) -> tuple[str, ...]:
        """``prompt``, ``response_a``, ``response_b`` (the template's fields)."""
        return self.template.fields

    def describe(self) -> dict[str, Any]:
        """The judge's whole configuration as JSON-able data (for run manifests)."""
        return {
            "kind": "pairwise",
            "name": self.name,
            "swap": self.swap,
            "consistency": self.consistency,
            "judge": self.llm_judge.describe(),
        }

    # -- one item -------------------------------------------------------------------------

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> PairJudgment:
        """Judge one pair (``prompt``, ``response_a``, ``response_b``; or two conversations,
        ``messages_a`` and ``messages_b``, judged at the judge's ``turn``); never raises for
        a failed call."""
        map_items([item], None, self.required_fields, f"pairwise judge {self.name!r}")
        item = self.template.expand(item)  # conversations placed once, before the swap
        if not self.swap:
            return self.combine(await self.llm_judge.judge(item, retries=retries), None)
        swapped_item = {
            **item,
            "response_a": item.get("response_b"),
            "response_b": item.get("response_a"),
        }
        forward, swapped = await asyncio.gather(
            self.llm_judge.judge(item, retries=retries),
            self.llm_judge.judge(swapped_item, retries=retries),
        )
        return self.combine(forward, swapped)

    def combine(self, forward: Judgment, swapped: Judgment | None) -> PairJudgment:
        """Apply the consistency rule to the two orders' judgments."""
        usage = forward.usage + (swapped.usage if swapped is not None else Usage())
        p1 = forward.score
        p2 = None if swapped is None or swapped.score is None else 1.0 - swapped.score
        prefs = (p1,) if swapped is None else (p1, p2)

        def make(
            score: float | None,
            winner: Winner | None = None,
            consistent: bool | None = None,
            error: str | None = None,
        ) -> PairJudgment:
            return PairJudgment(
                score=score,
                winner=winner,
                consistent=consistent,
                error=error,
                preferences=prefs,
                forward=forward,
                swapped=swapped,
                usage=usage,
            )

        if p1 is None:
            return make(None, error=_order_error(forward, "first"))
        if swapped is None:
            return make(p1, side(p1))
        if p2 is None:
            return make(None, error=_order_error(swapped, "swapped"))
        w1, w2 = side(p1), side(p2)
        mean = (p1 + p2) / 2
        if w1 == w2:
            return make(mean, w1, True)
        if self.consistency == "tie":
            return make(0.5, "tie", False)
        return make(mean, "inconsistent", False)

    # -- batches (judge_items and the sync twins come from ManyItemsJudge) ----------------------

    def _who(self) -> str:
        return f"pairwise judge {self.name!r}"

    def _results(self, outcomes: list[PairJudgment], rows: list[dict[str, Any]]) -> PairwiseResults:
        return PairwiseResults(outcomes, rows)


def _check_pairwise(tpl: Template) -> None:
    kind = getattr(tpl, "kind", None)
    fields = set(tpl.fields)
    if kind not in (None, "pairwise") or not {"response_a", "response_b"} <= fields:
        raise ConfigError(
            f"template {tpl.name!r} is not a pairwise template (kind {kind!r}, fields "
            f"{list(tpl.fields)}); PairwiseJudge needs one of kind 'pairwise' with fields "
            "response_a and response_b, such as 'mt_bench_pair' or 'arena_hard'"
        )


def _order_error(j: Judgment, order: str) -> str:
    error = j.error or "parse: no verdict"
    category, sep, message = error.partition(": ")
    if not sep:
        return f"{order} order: {error}"
    return f"{category}: {order} order ({'A' if order == 'first' else 'B'} shown first): {message}"
