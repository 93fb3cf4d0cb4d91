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
from typing import Annotated, Any, Literal

from jurist.errors import ConfigError
from jurist.judges._codecs import JudgeModel, ModelSpec, TemplateRef
from jurist.judges._declare import Declared, JudgeConfig, checked, default_of, option, register
from jurist.judges._llm_config import DEFAULT_MAX_THINKING_TOKENS, ReasoningOption
from jurist.judges._llm_judge import LLMJudge, LLMJudgeConfig
from jurist.judges._many import ManyItemsJudge, map_items
from jurist.judges._pairwise_results import (
    PairJudgment,
    PairwiseResults,
    PairwiseSummary,
    Winner,
    side,
)
from jurist.judges._spec import judge_model
from jurist.judges._thinking import ThinkingRecovery
from jurist.models import Model
from jurist.models._backends import scripted_spec
from jurist.templates import DEFAULT_MAX_TOOL_CHARS, Template, Turn, get_template
from jurist.types import Judgment, Reasoning, Usage

__all__ = [
    "Consistency",
    "PairJudgment",
    "PairwiseConfig",
    "PairwiseJudge",
    "PairwiseResults",
    "PairwiseSummary",
    "Winner",
    "side",
]

Consistency = Literal["tie", "inconsistent"]


class PairwiseConfig(JudgeConfig):
    """A :class:`PairwiseJudge`'s options (catalog kind ``pairwise_judge``); those it
    shares with :class:`~jurist.judges.LLMJudge` by name go to the judge that asks."""

    model: Annotated[JudgeModel, ModelSpec(rate_key="max_calls_per_min")] = option(
        example=lambda: scripted_spec("other"), describe="never"
    )
    template: Annotated[str | Template, TemplateRef()] = option(
        "mt_bench_pair", example="arena_hard", describe="never"
    )
    swap: bool = option(True, example=False, describe="always")
    consistency: Consistency = option("tie", example="inconsistent", describe="always")
    explanations: bool = option(False, example=True, describe="never")
    temperature: float | None = option(0.0, example=0.7, describe="never")
    max_tokens: int | None = option(None, example=64, describe="never", ge=1)
    reasoning: ReasoningOption = option(None, example=Reasoning(effort="low"))
    keep_reasoning: bool = option(True, example=False, describe="never")
    thinking_recovery: ThinkingRecovery = option("continue", example="off")
    max_thinking_tokens: int = option(DEFAULT_MAX_THINKING_TOKENS, example=4096, ge=1)
    max_calls_per_min: int | None = option(None, example=30, describe="never", ge=1)
    concurrency: int = option(16, example=4, describe="never", ge=1)
    name: str | None = option(None, example="mine", describe="never")
    turn: Turn = option("last", example="all", describe="never")
    max_tool_chars: int | None = option(DEFAULT_MAX_TOOL_CHARS, example=50, describe="never", ge=1)


class PairwiseJudge(Declared, ManyItemsJudge[PairJudgment, PairwiseResults]):
    """Compare two responses to one prompt, in both orders by default.

    Args:
        model: a :class:`~jurist.models.Model`, ``"provider:name"``, a LangChain chat model,
            or ``None`` for the default model.
        template: a pairwise template name (``"mt_bench_pair"``, ``"arena_hard"``) or a
            :class:`~jurist.templates.Template` of kind ``"pairwise"``.
        swap: also judge with the responses swapped (position-bias control).
        consistency: what a pair whose two orders disagree becomes, ``"tie"`` or
            ``"inconsistent"`` (see the module doc).
        explanations, temperature, max_tokens, max_calls_per_min, concurrency, name: as
            for :class:`~jurist.judges.LLMJudge`.
        reasoning, keep_reasoning, thinking_recovery, max_thinking_tokens: a thinking
            judge's settings, as for :class:`~jurist.judges.LLMJudge` (docs/reasoning.md).
        turn, max_tool_chars: how items holding two conversations (``messages_a``,
            ``messages_b``) are judged, as for :class:`~jurist.judges.LLMJudge`: each
            one's judged turn is its response, and their context (the same) the prompt;
            ``turn="all"`` compares them whole.
        **model_options: as for :class:`~jurist.judges.LLMJudge`.
    """

    config: PairwiseConfig
    """The declared options (the one place they are kept)."""

    def __init__(
        self,
        model: Model | str | Any | None = None,
        template: str | Template | None = None,
        swap: bool = default_of(PairwiseConfig, "swap"),
        consistency: Consistency | None = None,
        **options: Any,
    ) -> None:
        fields = PairwiseConfig.model_fields
        given = {k: options.pop(k) for k in list(options) if k in fields}
        base = judge_model(model, options, "PairwiseJudge")
        named = {"template": template, "consistency": consistency}
        given.update({k: v for k, v in named.items() if v is not None})  # None: the default
        given.update(model=base, swap=swap)
        self._setup(checked(PairwiseConfig, given, "PairwiseJudge"))

    @classmethod
    def from_config(cls, config: PairwiseConfig) -> PairwiseJudge:
        """The judge ``config`` declares."""
        judge = cls.__new__(cls)
        judge._setup(config)
        return judge

    def _setup(self, config: PairwiseConfig) -> None:
        self.config = config
        tpl = get_template(config.template) if isinstance(config.template, str) else config.template
        _check_pairwise(tpl)
        shared = {  # the options the judge that asks takes, by name
            k: v
            for k, v in config.arguments().items()
            if k in LLMJudgeConfig.model_fields and k not in ("name", "concurrency")
        }
        self.llm_judge = LLMJudge.from_config(
            checked(LLMJudgeConfig, {**shared, "template": tpl}, "PairwiseJudge")
        )
        self.template = self.llm_judge.template
        self.name = config.name or f"pairwise:{tpl.name}@{self.llm_judge.model.spec}"

    @property
    def swap(self) -> bool:
        return self.config.swap

    @property
    def consistency(self) -> Consistency:
        return self.config.consistency

    @property
    def concurrency(self) -> int:  # type: ignore[override]
        return self.config.concurrency

    def summary(self) -> str:
        """One line about this judge (a catalog entry's default description)."""
        return self.llm_judge.summary()

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
            **self.config.described(),  # swap, consistency
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


register("pairwise_judge", PairwiseConfig, PairwiseJudge)
