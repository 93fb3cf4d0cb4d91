"""Confidence after thought: the verdict's distribution read after what the judge wrote.

A judge that thinks first (a ``<think>`` trace before its answer) or explains first writes
its verdict last, and sometimes not at all: a small model answers the question instead of
grading it, a thinking model spends its tokens and stops. On a backend that scores
candidate continuations after an assistant prefix
(:attr:`~jurist.models.Capabilities.candidate_scores`: ``hf``, ``vllm``, and a server
given a ``prefill`` mode, :mod:`jurist.models._prefill`), the verdict does not have to be
in the text to be weighed: one extra forward pass (a prefill) scores every verdict right
where the template puts it, given everything the judge wrote before.

The assistant prefix is built from the answer (:func:`prefill_after`):

- the thinking trace as generated, through its closing tag (``</think>``), and the
  whitespace the model wrote after it (``"\\n\\n"`` when it wrote none);
- for a template whose verdict follows a lead-in (``Score: ``, ``Verdict: ``,
  ``[RESULT] ``, ``[[``), whatever the model wrote after its thinking, then a new line and
  the lead-in; for a template whose answer is the verdict alone, nothing more: the verdict
  is read where the answer starts.

A trace that was never closed (cut by the token limit inside its thinking) gives no
prefix: the verdict cannot be read after a thought that did not end (the judgment says
``truncated in thinking``). The whitespace at the end of the lead-in moves into the scored
strings (``"Score:"`` + ``" 4"``), as tokenizers write it.

>>> from jurist.templates import get_template
>>> p = prefill_after("<think>2+2 is 4</think>\\n\\nThe answer is fine.", get_template("reward"))
>>> p.prefix, p.gap
('<think>2+2 is 4</think>\\n\\nThe answer is fine.\\nScore:', ' ')
>>> prefill_after("</think>\\n\\nParis.", get_template("likert")).prefix
'</think>\\n\\n'
>>> prefill_after("<think>still going", get_template("likert"))
'truncated in thinking: the trace has no closing </think>'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jurist.templates import Template

__all__ = ["Prefill", "prefill_after"]

_OPEN = re.compile(r"<think>", re.IGNORECASE)
_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_SPACE = re.compile(r"\s*")


@dataclass(frozen=True, slots=True)
class Prefill:
    """The assistant prefix to score the verdicts after, and the whitespace that starts
    each scored string."""

    prefix: str
    gap: str


def prefill_after(
    text: str, template: Template, *, bare: bool | None = None, reasoning: str | None = None
) -> Prefill | str:
    """The prefill that reads the verdict after ``text`` (the judge's answer), or why
    there is none. ``bare``: the answer asked for is the verdict alone (default: the
    template's plain format says so). ``reasoning``: the thinking a server returned apart
    from the text (``reasoning_content``), put back before the answer as the block hybrid
    thinkers' templates write, ``<think>\\n...\\n</think>\\n\\n``.

    >>> from jurist.templates import get_template
    >>> prefill_after("Paris.", get_template("likert"), reasoning="Spiders: 8 legs.").prefix
    '<think>\\nSpiders: 8 legs.\\n</think>\\n\\n'
    """
    if bare is None:
        bare = template.verdict_alone()
    if reasoning and reasoning.strip() and not _CLOSE.search(text):
        text = f"<think>\n{reasoning.strip()}\n</think>\n\n{text.lstrip()}"
    closes = list(_CLOSE.finditer(text))
    end = closes[-1].end() if closes else 0
    opened = [m.start() for m in _OPEN.finditer(text)]
    if opened and opened[-1] >= end:
        return "truncated in thinking: the trace has no closing </think>"
    trace = text[:end]
    rest = text[end:]
    space = _SPACE.match(rest)
    ws = space.group(0) if space is not None else ""
    if trace and not ws:
        ws = "\n\n"
    body = rest[len(ws) :].rstrip() if rest.startswith(ws) else rest.strip()
    if bare:
        return Prefill(prefix=trace + ws, gap="")
    lead = template.verdict_open
    head = lead.rstrip()
    written = f"{body}\n" if body else ""
    return Prefill(prefix=trace + ws + written + head, gap=lead[len(head) :])
