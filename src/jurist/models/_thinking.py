"""Thinking on local backends (``hf``, ``vllm``): the chat template's switch and a budget.

A :class:`~jurist.types.Reasoning` on a request is translated for a model run in process:

- **The switch.** Hybrid thinkers (Qwen3 and its kin) read ``enable_thinking`` in their chat
  template: ``effort="none"`` renders the prompt with ``enable_thinking=False``, any other
  setting with ``enable_thinking=True``. A backend declares
  :attr:`~jurist.models.Capabilities.thinking` only when the tokenizer's chat template reads
  that variable (:func:`template_thinks`: the template's text names ``enable_thinking``);
  a request with ``reasoning`` set on any other model is refused before it is run
  (:func:`refuse_reasoning`), never run without its thinking.
- **The budget.** ``budget_tokens`` is the most tokens the thinking may spend, counted from
  the opening tag (``<think>``, whether the template opened it in the prompt or the model
  wrote it). When a row reaches the budget still inside its thinking, the closing tag is
  forced as its next tokens and generation goes on to the verdict, within the request's
  ``max_tokens`` (the budget is part of them, as with Anthropic's ``budget_tokens``).
  An effort level stands for a budget
  (:data:`~jurist.models._reasoning.EFFORT_BUDGETS`: the budgets jurist gives the efforts
  on every backend, docs/reasoning.md), so ``low`` thinks less than ``high``
  here too.

>>> template_thinks("{% if enable_thinking is false %}<think>\\n\\n</think>{% endif %}")
True
>>> template_thinks("{{ messages[0]['content'] }}"), template_thinks(None)
(False, False)
>>> from jurist.types import Reasoning
>>> template_options(Reasoning(effort="none")), template_options(Reasoning(budget_tokens=64))
({'enable_thinking': False}, {'enable_thinking': True})
>>> thinking_budget(Reasoning(effort="low")), thinking_budget(Reasoning(budget_tokens=64))
(1024, 64)
>>> thinking_budget(Reasoning(effort="none")) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jurist.errors import CapabilityError
from jurist.models._reasoning import EFFORT_BUDGETS
from jurist.models._reasoning import thinking_budget as budget_of
from jurist.types import Reasoning, Request

__all__ = [
    "EFFORT_BUDGETS",
    "THINK_CLOSE",
    "THINK_OPEN",
    "ThinkingLegs",
    "open_at_end",
    "refuse_reasoning",
    "template_options",
    "template_thinks",
    "thinking_budget",
]

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def template_thinks(template: str | Mapping[str, str] | None) -> bool:
    """Whether a chat template has a thinking switch: its text reads ``enable_thinking``
    (a tokenizer with several named templates: any of them)."""
    if template is None:
        return False
    if isinstance(template, Mapping):
        return any(template_thinks(t) for t in template.values())
    return "enable_thinking" in template


def template_options(reasoning: Reasoning | None) -> dict[str, Any]:
    """The chat template's keyword arguments for ``reasoning`` (``{}`` when unset)."""
    if reasoning is None:
        return {}
    return {"enable_thinking": reasoning.effort != "none"}


def thinking_budget(reasoning: Reasoning | None) -> int | None:
    """The most tokens the thinking may spend (an effort level's budget is
    :data:`~jurist.models._reasoning.EFFORT_BUDGETS`' on every backend), or ``None`` (no
    thinking asked, or none)."""
    return budget_of(reasoning) or None


def refuse_reasoning(spec: str, request: Request, thinks: bool) -> None:
    """Stop a request that asks for thinking on a model whose template has no switch.

    >>> from jurist.types import Message
    >>> low = Reasoning(effort="low")
    >>> r = Request(messages=(Message(role="user", content="q"),), reasoning=low)
    >>> refuse_reasoning("hf:tiny", r, thinks=False)
    Traceback (most recent call last):
    ...
    jurist.errors.CapabilityError: hf:tiny cannot honour reasoning=low ...
    """
    if request.reasoning is None or thinks:
        return
    r = request.reasoning
    shown = r.effort if r.effort is not None else str(r.budget_tokens)
    raise CapabilityError(
        f"{spec} cannot honour reasoning={shown} (capabilities.thinking is False): its "
        "tokenizer's chat template has no enable_thinking switch; leave reasoning unset for "
        "this model, or use a model whose chat template reads enable_thinking (Qwen3, ...)",
        model=spec,
    )


def open_at_end(prompt: str) -> bool:
    """Whether ``prompt`` ends inside a thinking block the template opened (the last
    ``<think>`` comes after the last ``</think>``).

    >>> open_at_end("<|im_start|>assistant\\n<think>\\n")
    True
    >>> open_at_end("<think>\\n\\n</think>\\n\\n")
    False
    """
    return prompt.rfind(THINK_OPEN) > prompt.rfind(THINK_CLOSE)


class ThinkingLegs:
    """The budget enforced on an engine without a per-request logits processor (``vllm``):
    generation in legs, each a request that goes on from the tokens so far.

    A leg is as long as the thinking may still run (``budget`` minus the tokens spent
    inside the block; the opening tag's length more while the block is not open yet), or
    the rest of ``max_tokens`` once the thinking closed or never opened. When a leg ends
    with the budget spent inside the block, :meth:`take` returns the closing tag's tokens
    to append (forced, as the ``hf`` backend forces them) before the next leg.

    >>> legs = ThinkingLegs(budget=4, open_ids=(7,), close_ids=(8,), opened=True, max_tokens=10)
    >>> legs.next_leg()
    4
    >>> legs.take([1, 2, 3, 4], finished=False)
    (8,)
    >>> legs.next_leg()
    5
    >>> legs.take([5, 6], finished=True), legs.next_leg() is None
    ((), True)
    """

    def __init__(
        self,
        *,
        budget: int,
        open_ids: Sequence[int],
        close_ids: Sequence[int],
        opened: bool,
        max_tokens: int,
    ) -> None:
        self.budget = budget
        self.open_ids = tuple(open_ids)
        self.close_ids = tuple(close_ids)
        self.tokens: list[int] = []  # everything after the prompt, forced tags included
        self.start: int | None = 0 if opened else None  # where the thinking starts
        self.closed = False
        self.finished = False
        self.forced = 0
        self.max_tokens = max_tokens

    def _find(self, seq: tuple[int, ...], since: int) -> int | None:
        for i in range(since, len(self.tokens) - len(seq) + 1):
            if tuple(self.tokens[i : i + len(seq)]) == seq:
                return i
        return None

    def _update(self) -> None:
        if self.start is None:
            at = self._find(self.open_ids, 0)
            if at is not None:
                self.start = at + len(self.open_ids)
        if self.start is not None and not self.closed:
            self.closed = self._find(self.close_ids, self.start) is not None

    @property
    def spent(self) -> int:
        """Tokens spent inside the thinking so far."""
        return 0 if self.start is None else len(self.tokens) - self.start

    def next_leg(self) -> int | None:
        """The most tokens of the next request, or ``None``: the answer is complete."""
        left = self.max_tokens - len(self.tokens)
        if self.finished or left <= 0:
            return None
        if self.closed:
            return left
        if self.start is None:
            return min(left, self.budget + len(self.open_ids))
        return min(left, max(1, self.budget - self.spent))

    def take(self, generated: Sequence[int], *, finished: bool) -> tuple[int, ...]:
        """Take in a leg's tokens (``finished``: it ended by itself, not at its length);
        returns the tokens to append before the next leg (the forced closing tag, or none)."""
        self.tokens.extend(int(t) for t in generated)
        self.finished = finished
        self._update()
        if finished or self.closed or self.start is None or self.spent < self.budget:
            return ()
        if self.max_tokens - len(self.tokens) < len(self.close_ids):
            return ()  # no room left to close it: cut inside the thinking
        self.tokens.extend(self.close_ids)
        self.closed = True
        self.forced += 1
        return self.close_ids
