"""A reply cut inside its thinking: recognised, recovered, never read as a verdict.

A thinking model spends its ``max_tokens`` on its thinking first. When the thinking runs
past them, the reply ends (``finish_reason: "length"``, Anthropic's ``stop_reason:
"max_tokens"``) inside it: an unclosed ``<think>`` block, or a ``reasoning_content`` /
thinking block with no answer after it. Such a reply holds no verdict, and text inside
the unfinished thinking ("...so maybe Correct...") must not be read as one
(:func:`cut_in_thinking` is asked before any parsing).

A judge recovers it (``thinking_recovery``):

- ``"continue"`` (default): one continuation, the request's messages plus the thinking so
  far (as the assistant's turn: the trace kept as context) and a user turn that closes the
  thinking and asks for the verdict alone (:data:`CONTINUE_PROMPT`), sent with
  ``reasoning="none"`` where the judge asked for thinking; if that reply is still cut, a
  retry with a larger budget, as below;
- ``"grow"``: the same request again with twice the ``max_tokens``, up to
  ``max_thinking_tokens``;
- ``"off"``: none (the judge's ordinary re-asks).

Every recovery call is a request like any other: counted in the judgment's ``attempts``
and ``usage``, and told in its ``thinking_note``. A verdict that still cannot be read is
``score=None`` with ``parse: truncated in thinking ...`` as its error.

>>> from jurist.types import Completion, Usage
>>> cut_in_thinking(Completion(text="<think>So the answer is Corr", finish_reason="length"))
True
>>> cut_in_thinking(Completion(text="", reasoning="Hmm...", finish_reason="max_tokens"))
True
>>> cut_in_thinking(Completion(text="<think>ok</think>Correct", finish_reason="length"))
False
>>> trace_of(Completion(text="<think>step one", finish_reason="length"))
'step one'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from jurist.errors import JuristError
from jurist.models import Model
from jurist.models._retry import attempts_of
from jurist.templates import split_reasoning
from jurist.types import Completion, Message, Reasoning, Request, Usage

__all__ = [
    "CONTINUE_PROMPT",
    "CUT_REASONS",
    "MAX_REASONING_CHARS",
    "Recovered",
    "ThinkingRecovery",
    "bounded",
    "cut_in_thinking",
    "recover",
    "trace_of",
]

ThinkingRecovery = Literal["continue", "grow", "off"]

CONTINUE_PROMPT = (
    "Your reasoning above was cut off by the length limit. Stop reasoning now: do not "
    "think further, and answer with your verdict alone, in exactly the format asked for."
)
MAX_REASONING_CHARS = 20_000
"""The most characters of a thinking trace a judgment keeps (head and tail, cut between)."""

CUT_REASONS = ("length", "max_tokens")
"""The finish reasons of a reply stopped at its token limit."""
_CUT = CUT_REASONS
_OPEN = "<think>"
_CLOSE = "</think>"


def cut_in_thinking(completion: Completion) -> bool:
    """Whether ``completion`` ended at its token limit inside its thinking: an unclosed
    ``<think>``, or thinking (a trace, or reasoning tokens) with no answer text after it."""
    if completion.finish_reason not in _CUT:
        return False
    text = completion.text
    lower = text.lower()
    opened = lower.rfind(_OPEN)
    if opened >= 0 and lower.rfind(_CLOSE) < opened:
        return True
    thought = bool(completion.reasoning) or completion.usage.reasoning_tokens > 0
    return thought and not split_reasoning(text)[0].strip()


def trace_of(completion: Completion) -> str | None:
    """The thinking ``completion`` holds: its ``reasoning``, its ``<think>`` blocks, or the
    text of an unclosed ``<think>`` (``None`` when it holds none)."""
    text = completion.text
    if not completion.reasoning and "<" not in text:  # no trace and no tag: the usual case
        return None
    parts = [completion.reasoning or ""]
    lower = text.lower()
    opened = lower.rfind(_OPEN)
    if opened >= 0 and lower.rfind(_CLOSE) < opened:  # cut inside: the open block's text
        parts.append(split_reasoning(text[:opened])[1] or "")
        parts.append(text[opened + len(_OPEN) :])
    else:
        parts.append(split_reasoning(text)[1] or "")
    joined = "\n".join(p.strip() for p in parts if p and p.strip())
    return joined or None


def bounded(text: str | None, limit: int = MAX_REASONING_CHARS) -> str | None:
    """``text`` with at most ``limit`` of its characters: its head and tail, a marker
    between them saying how many were cut.

    >>> bounded("a" * 10 + "b" * 10, 12)
    'aaaaaa\\n[... 8 characters cut ...]\\nbbbbbb'
    """
    if text is None or len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


@dataclass
class Recovered:
    """What a recovery spent and ended with: the last completion (the one a verdict is
    read from, when ``readable``), every call's usage and attempts, the traces seen."""

    completion: Completion | None
    usage: Usage
    attempts: int
    latency: float
    note: str
    traces: list[str] = field(default_factory=list)
    error: JuristError | None = None


def _continuation(request: Request, trace: str | None) -> Request:
    messages: tuple[Message, ...] = request.messages
    if trace:
        messages = (*messages, Message(role="assistant", content=bounded(trace) or ""))
    messages = (*messages, Message(role="user", content=CONTINUE_PROMPT))
    closed = Reasoning(effort="none") if request.reasoning is not None else None
    return request.model_copy(update={"messages": messages, "reasoning": closed})


async def recover(
    model: Model,
    request: Request,
    cut: Completion,
    *,
    mode: ThinkingRecovery,
    cap: int,
    readable: Callable[[Completion], bool],
) -> Recovered:
    """Recover the verdict of ``request``, whose reply ``cut`` ended inside its thinking
    (see the module docs); ``readable`` says whether a completion holds a verdict."""
    out = Recovered(None, Usage(), 0, 0.0, "", [t for t in (trace_of(cut),) if t])
    steps: list[str] = []
    plan: list[Request | None] = []  # None: a retry at twice the last max_tokens
    if mode == "continue":
        plan.append(_continuation(request, trace_of(cut)))
    size = grown = request.max_tokens or 0
    while mode != "off" and size and size * 2 <= cap:
        size *= 2
        plan.append(None)
    for step in plan:
        if step is None:
            grown *= 2
            step = request.model_copy(update={"max_tokens": grown})
            what = f"a retry at max_tokens={grown}"
        else:
            what = "a continuation"
        started = time.perf_counter()
        try:
            completion = await model.complete(step)
        except JuristError as e:
            out.attempts += attempts_of(e)
            out.usage += Usage(attempts=attempts_of(e))
            out.latency += time.perf_counter() - started
            out.error = e
            steps.append(f"{what} failed")
            break
        out.latency += completion.latency
        out.attempts += completion.attempts
        out.usage += completion.billed_usage
        trace = trace_of(completion)
        if trace:
            out.traces.append(trace)
        if not cut_in_thinking(completion) and readable(completion):
            out.completion = completion
            steps.append(f"verdict from {what}")
            break
        steps.append(f"{what} {'cut again' if cut_in_thinking(completion) else 'unreadable'}")
    if not plan:
        steps.append("no recovery (thinking_recovery='off')")
    limit = request.max_tokens
    out.note = f"cut in its thinking at max_tokens={limit}: " + "; ".join(steps)
    return out
