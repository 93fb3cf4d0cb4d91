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
  An effort level stands for a budget (:data:`EFFORT_BUDGETS`, the budgets Google documents
  for Gemini's ``reasoning_effort`` on its OpenAI-compatible endpoint), so ``low`` thinks
  less than ``high`` here too.

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

from collections.abc import Mapping
from typing import Any

from jurist.errors import CapabilityError
from jurist.types import Reasoning, Request

__all__ = [
    "EFFORT_BUDGETS",
    "THINK_CLOSE",
    "THINK_OPEN",
    "open_at_end",
    "refuse_reasoning",
    "template_options",
    "template_thinks",
    "thinking_budget",
]

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

EFFORT_BUDGETS: dict[str, int] = {"low": 1024, "medium": 8192, "high": 24576}
"""The thinking budget an effort level stands for on a local backend."""


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
    """The most tokens the thinking may spend, or ``None`` (no thinking asked, or none)."""
    if reasoning is None or reasoning.effort == "none":
        return None
    if reasoning.budget_tokens is not None:
        return reasoning.budget_tokens
    return EFFORT_BUDGETS[str(reasoning.effort)]


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
