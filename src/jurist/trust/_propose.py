"""The proposer: a model that rewrites a judge's instructions from its disagreements.

The proposer sees the judge's current instructions and a few items of the score slice
where the judge and people disagreed (the item, the judge's verdict, the people's), and
answers new instructions between ``<instructions>`` tags. An alignment keeps a proposal
only when it raises agreement on the score slice; the held-out part is never shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jurist.models import Model
from jurist.types import Message, Request, Usage

__all__ = ["PROPOSER_SYSTEM", "Disagreement", "propose_instructions"]

PROPOSER_SYSTEM = (
    "You improve the instructions of an automatic judge so that its verdicts agree with "
    "people's. You are given the judge's current instructions and items on which the judge "
    "and people disagreed. Write new instructions for the same task and the same verdicts: "
    "keep what works, and add or change only the guidance that would lead the judge to the "
    "people's verdicts on items like these. Describe kinds of items, never these particular "
    "items. Say nothing about the reply format (it is added separately). Reply with only "
    "the new instructions between <instructions> and </instructions>."
)

Disagreement = tuple[str, str, str]
"""One item's text, the judge's verdict and the people's verdict."""

_TAGGED = re.compile(r"<instructions>(.*?)</instructions>", re.DOTALL | re.IGNORECASE)


def proposer_messages(current: str, disagreements: Sequence[Disagreement]) -> tuple[Message, ...]:
    """The messages the proposer is sent."""
    parts = [f"Current instructions:\n<current>\n{current.strip()}\n</current>", "Disagreements:"]
    for i, (text, judged, people) in enumerate(disagreements, 1):
        parts.append(
            f"### Item {i}\n{text}\nThe judge's verdict: {judged}\nPeople's verdict: {people}"
        )
    return (
        Message(role="system", content=PROPOSER_SYSTEM),
        Message(role="user", content="\n\n".join(parts)),
    )


async def propose_instructions(
    model: Model, current: str, disagreements: Sequence[Disagreement], *, max_tokens: int = 1024
) -> tuple[str | None, Usage]:
    """The proposer's new instructions (None when its reply holds none) and its usage."""
    request = Request(
        messages=proposer_messages(current, disagreements), max_tokens=max_tokens, temperature=0.0
    )
    completion = await model.complete(request)
    found = _TAGGED.findall(completion.text)
    text = (found[-1] if found else "").strip()
    return (text or None), completion.usage
