"""One thinking setting, translated into each provider's own parameters.

A judge's ``reasoning=`` (:class:`~jurist.types.Reasoning`: an effort ``none``, ``low``,
``medium``, ``high``, or a token budget) travels as :attr:`jurist.types.Request.reasoning`;
each backend turns it into what its API documents (docs/reasoning.md has the table):

- OpenAI and servers that speak its wire format (:func:`openai_fields`), in one of two
  forms. ``"effort"``: OpenAI's ``reasoning_effort`` (``none``, ``low``, ``medium``,
  ``high`` as given; a token budget becomes the effort of the same size in
  :data:`EFFORT_BUDGETS`, and the budget itself is the cap on the completion, see
  :func:`headroom`). ``"template"``: a server whose model is a hybrid thinker (Qwen3,
  DeepSeek-R1 distills, gpt-oss on vLLM, SGLang, llama.cpp): ``chat_template_kwargs:
  {"enable_thinking": ...}``, with ``reasoning_effort`` for an effort and vLLM's
  ``thinking_token_budget`` for a budget. :func:`openai_form` says which form a base URL
  gets when none is chosen.
- Anthropic's Messages API (:func:`anthropic_thinking`): ``thinking: {"type": "enabled",
  "budget_tokens": N}`` (at least 1024), with ``max_tokens`` above the budget and no
  ``temperature`` or ``top_p``; ``none`` sends no ``thinking`` (no extended thinking).
- LiteLLM (:func:`litellm_fields`): its ``reasoning_effort``, and its Anthropic-style
  ``thinking`` for a budget.

>>> from jurist.types import Reasoning
>>> openai_fields(Reasoning(effort="high"), "effort")
{'reasoning_effort': 'high'}
>>> openai_fields(Reasoning(effort="none"), "template")
{'chat_template_kwargs': {'enable_thinking': False}}
>>> anthropic_thinking(Reasoning(budget_tokens=2048))
{'type': 'enabled', 'budget_tokens': 2048}
>>> headroom(64, Reasoning(effort="medium"))
2112
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from jurist.errors import CapabilityError
from jurist.types import Reasoning

__all__ = [
    "ANTHROPIC_MIN_BUDGET",
    "EFFORT_BUDGETS",
    "ReasoningForm",
    "anthropic_thinking",
    "effort_of",
    "headroom",
    "litellm_fields",
    "openai_fields",
    "openai_form",
    "refuse_reasoning",
    "samples",
    "thinking_budget",
    "thinking_share",
    "with_extra",
]

ReasoningForm = Literal["effort", "template"]

EFFORT_BUDGETS: dict[str, int] = {"low": 1024, "medium": 2048, "high": 4096}
"""The thinking budget of each effort level: what Anthropic's ``budget_tokens`` is sent as
(LiteLLM maps the levels to the same numbers) and the headroom a judge adds for it."""

ANTHROPIC_MIN_BUDGET = 1024
"""The smallest ``budget_tokens`` Anthropic's Messages API takes."""

# OpenAI's own API and the providers whose OpenAI-compatible endpoints document
# ``reasoning_effort`` (Gemini's): the "effort" form; any other server gets "template"
_EFFORT_HOSTS = ("api.openai.com", "generativelanguage.googleapis.com")


def thinking_budget(reasoning: Reasoning | None) -> int:
    """The most tokens ``reasoning`` lets a model think (0 for none or no setting).

    >>> thinking_budget(Reasoning(effort="low")), thinking_budget(Reasoning(budget_tokens=500))
    (1024, 500)
    >>> thinking_budget(Reasoning(effort="none")), thinking_budget(None)
    (0, 0)
    """
    if reasoning is None:
        return 0
    if reasoning.budget_tokens is not None:
        return reasoning.budget_tokens
    return EFFORT_BUDGETS.get(reasoning.effort or "none", 0)


def headroom(verdict_tokens: int, reasoning: Reasoning | None) -> int:
    """The ``max_tokens`` a request needs: the verdict's budget plus the thinking's."""
    return verdict_tokens + thinking_budget(reasoning)


def effort_of(reasoning: Reasoning) -> str:
    """The effort level of ``reasoning``: its own, or the smallest level whose budget in
    :data:`EFFORT_BUDGETS` holds its token budget (``high`` past the largest).

    >>> effort_of(Reasoning(budget_tokens=1500)), effort_of(Reasoning(budget_tokens=9000))
    ('medium', 'high')
    """
    if reasoning.effort is not None:
        return reasoning.effort
    budget = reasoning.budget_tokens or 0
    return next((e for e, b in EFFORT_BUDGETS.items() if budget <= b), "high")


def openai_form(base_url: str) -> ReasoningForm:
    """The form a server at ``base_url`` is sent ``reasoning`` in when the model was given
    none: ``"effort"`` for OpenAI's and Gemini's APIs, ``"template"`` for any other server
    (vLLM, SGLang, llama.cpp, Ollama... serving a hybrid thinker).

    >>> openai_form("https://api.openai.com/v1"), openai_form("http://127.0.0.1:8000/v1")
    ('effort', 'template')
    """
    host = (urlsplit(base_url).hostname or "").lower()
    return "effort" if host in _EFFORT_HOSTS else "template"


def openai_fields(reasoning: Reasoning | None, form: ReasoningForm) -> dict[str, Any]:
    """The body fields of an OpenAI-compatible request for ``reasoning`` in ``form``.

    >>> openai_fields(Reasoning(budget_tokens=3000), "effort")
    {'reasoning_effort': 'high'}
    >>> openai_fields(Reasoning(effort="low"), "template")
    {'chat_template_kwargs': {'enable_thinking': True}, 'reasoning_effort': 'low'}
    >>> openai_fields(Reasoning(budget_tokens=512), "template")
    {'chat_template_kwargs': {'enable_thinking': True}, 'thinking_token_budget': 512}
    """
    if reasoning is None:
        return {}
    if form == "effort":
        return {"reasoning_effort": effort_of(reasoning)}
    if reasoning.effort == "none":
        return {"chat_template_kwargs": {"enable_thinking": False}}
    out: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": True}}
    if reasoning.effort is not None:
        out["reasoning_effort"] = reasoning.effort
    else:
        out["thinking_token_budget"] = reasoning.budget_tokens
    return out


def anthropic_thinking(
    reasoning: Reasoning | None, spec: str = "anthropic"
) -> dict[str, Any] | None:
    """The Messages API's ``thinking`` for ``reasoning`` (``None``: send none). A budget
    under Anthropic's minimum (1024) is refused, never raised without a word.

    >>> anthropic_thinking(Reasoning(effort="high"))
    {'type': 'enabled', 'budget_tokens': 4096}
    >>> anthropic_thinking(Reasoning(effort="none")) is None
    True
    """
    budget = thinking_budget(reasoning)
    if budget == 0:
        return None
    if budget < ANTHROPIC_MIN_BUDGET:
        raise CapabilityError(
            f"{spec}: reasoning={budget} is under the Messages API's smallest thinking budget "
            f"({ANTHROPIC_MIN_BUDGET} tokens); give {ANTHROPIC_MIN_BUDGET} or more, or an "
            "effort (low, medium, high)",
            model=spec,
        )
    return {"type": "enabled", "budget_tokens": budget}


def litellm_fields(reasoning: Reasoning | None, budgets: bool = True) -> dict[str, Any]:
    """The ``litellm.acompletion`` keywords for ``reasoning``: LiteLLM's
    ``reasoning_effort`` for an effort, its ``thinking`` for a token budget where the
    route takes one (``budgets``), else the effort of the budget's size.

    >>> litellm_fields(Reasoning(effort="medium"))
    {'reasoning_effort': 'medium'}
    >>> litellm_fields(Reasoning(budget_tokens=2048))
    {'thinking': {'type': 'enabled', 'budget_tokens': 2048}}
    >>> litellm_fields(Reasoning(budget_tokens=2048), budgets=False)
    {'reasoning_effort': 'medium'}
    """
    if reasoning is None:
        return {}
    if reasoning.effort is not None or not budgets:
        return {"reasoning_effort": effort_of(reasoning)}
    return {"thinking": {"type": "enabled", "budget_tokens": reasoning.budget_tokens}}


def samples(reasoning: Reasoning | None) -> bool:
    """Whether a request with ``reasoning`` may carry ``temperature`` and ``top_p``: not
    when the model thinks on an API that takes only its default sampling with thinking
    (Anthropic's extended thinking, OpenAI's reasoning models).

    >>> samples(None), samples(Reasoning(effort="none")), samples(Reasoning(effort="low"))
    (True, True, False)
    """
    return thinking_budget(reasoning) == 0


def refuse_reasoning(spec: str, thinking: bool, reasoning: Reasoning | None) -> None:
    """Stop a thinking setting before a backend that cannot honour it ignores it.

    >>> refuse_reasoning("hf:tiny", False, Reasoning(effort="high"))
    Traceback (most recent call last):
    ...
    jurist.errors.CapabilityError: hf:tiny cannot honour reasoning='high' (capabilities.thinking is False); ...
    """  # noqa: E501
    if reasoning is None or thinking:
        return
    shown = reasoning.effort or reasoning.budget_tokens
    raise CapabilityError(
        f"{spec} cannot honour reasoning={shown!r} (capabilities.thinking is False); "
        "judge without it, or use a backend that can think (openai, anthropic, litellm)",
        model=spec,
    )


def with_extra(body: dict[str, Any], extra: dict[str, Any]) -> None:
    """Add a request's ``extra`` fields to ``body``; a ``chat_template_kwargs`` in both is
    merged (the extra's keys win), so ``extra_body`` and ``reasoning=`` go together.

    >>> body = {"chat_template_kwargs": {"enable_thinking": True}}
    >>> with_extra(body, {"chat_template_kwargs": {"x": 1}, "top_k": 5}); body
    {'chat_template_kwargs': {'enable_thinking': True, 'x': 1}, 'top_k': 5}
    """
    kwargs = body.get("chat_template_kwargs")
    body.update(extra)
    given = extra.get("chat_template_kwargs")
    if isinstance(kwargs, dict) and isinstance(given, dict):
        body["chat_template_kwargs"] = {**kwargs, **given}


def thinking_share(output_tokens: int, thought: str, text: str) -> int:
    """The thinking's part of ``output_tokens`` where an API bills it without counting it
    apart (Anthropic): the output tokens split by the characters of the thinking and of
    the text (an estimate; all of them when there is no text).

    >>> thinking_share(100, "x" * 300, "y" * 100), thinking_share(40, "think", "")
    (75, 40)
    """
    if not thought or output_tokens <= 0:
        return 0
    return round(output_tokens * len(thought) / (len(thought) + len(text)))
