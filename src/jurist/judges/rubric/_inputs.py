"""Conversation submissions for the rubric grader: the judged turn is the submission.

A submission may be a conversation (a list of messages in OpenAI's chat format, or an
item with ``messages``): the grader grades its judged turn (see
:meth:`~jurist.templates.Template.with_turn`) as the submission, with the rest of the
conversation as the query, and sends the item's images (its ``images`` field and the
conversation's image parts) after the text.

>>> text, query, images = conversation_input(
...     {"messages": [{"role": "user", "content": "2+2?"},
...                   {"role": "assistant", "content": "4"}]}, where="item 0")
>>> text, query, images
('4', '2+2?', ())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jurist.errors import DataError
from jurist.judges.rubric._calls import ItemInput
from jurist.judges.rubric._shuffle import item_key
from jurist.templates import DEFAULT_MAX_TOOL_CHARS, Turn, conversation_fields
from jurist.templates._conversation import IMAGES, place_of
from jurist.templates._images import load_images
from jurist.types import ImagePart

__all__ = ["conversation_input", "item_input"]


def item_input(
    submission: Any,
    query: str | None,
    reference: str | None,
    images: Sequence[Any] | None,
    where: str,
    *,
    messages: Any = None,
    turn: Turn = "last",
    max_tool_chars: int | None = DEFAULT_MAX_TOOL_CHARS,
) -> ItemInput:
    """One item to grade: text as it is; a conversation (``messages``, or a list
    ``submission``) gives the submission and, where none is given, the query; its shuffle
    key covers the images' hashes."""
    if isinstance(submission, list | tuple):
        messages, submission = submission, None
    if messages is None and not images:
        if not isinstance(submission, str):
            raise DataError(
                f"{where} must be text or a conversation (a list of messages), got "
                f"{type(submission).__name__}"
            )
        return ItemInput(submission, query, reference, item_key(query, submission))
    values = {"messages": messages, "response": submission, "prompt": query}
    values["images"] = list(images or [])
    text, asked, parts = conversation_input(
        values, turn=turn, max_tool_chars=max_tool_chars, where=where
    )
    key = item_key(asked, text + "".join(p.sha256 for p in parts))
    return ItemInput(text, asked, reference, key, parts)


def conversation_input(
    values: Mapping[str, Any],
    *,
    turn: Turn = "last",
    max_tool_chars: int | None = DEFAULT_MAX_TOOL_CHARS,
    where: str,
    submission_field: str = "response",
    query_field: str | None = "prompt",
) -> tuple[str, str | None, tuple[ImagePart, ...]]:
    """The submission text, the query and the images of one item (see the module)."""
    where = place_of(values, where)
    expanded = conversation_fields(values, turn=turn, max_tool_chars=max_tool_chars, where=where)
    text = expanded.get(submission_field)
    if not isinstance(text, str):
        got = "nothing" if text is None else f"a {type(text).__name__}"
        raise DataError(
            f"{where}: field {submission_field!r} must hold the submission text, got {got}"
        )
    query = expanded.get(query_field) if query_field else None
    images = load_images(expanded.get(IMAGES) or [], where=where)
    return text, None if query is None else str(query), images
