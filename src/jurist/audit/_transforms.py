"""The answer rewrites the bias probes pair an answer with: same content, different surface.

- :func:`pad`: the answer followed by sentences that add nothing (no fact, no step, no
  claim about the question), until it is about ``factor`` times longer. A judge that prefers
  the padded copy rewards length, not content.
- :func:`as_markdown`: the answer's sentences as a markdown list under a bold heading. A
  judge that prefers it rewards formatting.

Both are deterministic, so a probe run twice asks the same questions (and hits the cache).

>>> pad("Paris is the capital of France.", factor=0.5)
'Paris is the capital of France. I hope this helps.'
>>> print(as_markdown("Paris is the capital. It is on the Seine."))
**Answer**
<BLANKLINE>
- Paris is the capital.
- It is on the Seine.
"""

from __future__ import annotations

import re

__all__ = ["FILLER", "as_markdown", "pad"]

FILLER = (
    "I hope this helps.",
    "Let me know if you have any other questions.",
    "The points above sum up the answer to the question as it was asked.",
    "Each part of the answer above has been laid out with care so that it is easy to follow.",
    "Taken together, everything written above forms the complete response to this request.",
    "Thank you for the question, and please feel free to ask for any further clarification.",
)
"""Content-free sentences, shortest first: they neither add to nor take from an answer."""

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _words(text: str) -> int:
    return len(text.split())


def pad(text: str, *, factor: float = 1.0) -> str:
    """``text`` plus filler sentences adding at least ``factor`` times its word count (at
    least one sentence), cycling through :data:`FILLER` in order."""
    if factor <= 0:
        raise ValueError(f"factor must be > 0, got {factor}")
    target = max(1, round(factor * _words(text)))
    added: list[str] = []
    n = 0
    i = 0
    while n < target:
        sentence = FILLER[i % len(FILLER)]
        added.append(sentence)
        n += _words(sentence)
        i += 1
    return text.rstrip() + " " + " ".join(added)


def as_markdown(text: str, *, heading: str = "Answer") -> str:
    """``text``'s sentences as a markdown bullet list under a bold ``heading``; a text that
    is already a markdown list is returned with the heading only."""
    body = text.strip()
    lines = [s.strip() for s in _SENTENCE.split(body) if s.strip()]
    if not lines or any(
        line.lstrip().startswith(("- ", "* ", "1. ")) for line in body.splitlines()
    ):
        return f"**{heading}**\n\n{body}"
    return f"**{heading}**\n\n" + "\n".join(f"- {line}" for line in lines)
