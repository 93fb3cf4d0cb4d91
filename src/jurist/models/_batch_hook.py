"""The hook that lets a batch engine take over the openai backend's requests.

While a :class:`BatchCollector` is set (with :func:`collecting`, for the current task and
the tasks it starts), :meth:`OpenAIModel.complete <jurist.models._openai.OpenAIModel.complete>`
builds its request body as usual and hands it to the collector instead of posting it:

- the collector answers ``bytes``: the raw JSON body of a successful (HTTP 200) chat
  completion for this request, read from a batch output line; the model parses it exactly
  as a live answer, so the same judge code reads the same verdict either way;
- it answers ``None``: the request goes out live, on the normal HTTP path;
- it raises a :class:`~jurist.errors.ModelError` (for a failed line: use
  :meth:`OpenAIModel.error_for_status <jurist.models._openai.OpenAIModel.error_for_status>`
  to raise the class live mode raises for that status).

With no collector set the backend pays one :meth:`contextvars.ContextVar.get` per call.

>>> import asyncio
>>> from jurist.models._openai import OpenAIModel
>>> from jurist.types import Message, Request
>>> class Canned:
...     async def submit(self, model, body):
...         return b'{"choices": [{"message": {"content": "Correct"}}]}'
>>> async def main():
...     model = OpenAIModel("tiny", base_url="http://127.0.0.1:9/v1")  # nothing listens
...     with collecting(Canned()):
...         out = await model.complete(Request(messages=(Message(role="user", content="q"),)))
...     return out.text
>>> asyncio.run(main())
'Correct'
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Protocol

__all__ = ["BatchCollector", "batch_collector", "collecting"]


class BatchCollector(Protocol):
    """Takes the requests of :class:`~jurist.models._openai.OpenAIModel` while it is set."""

    async def submit(self, model: Any, body: dict[str, Any]) -> bytes | None:
        """The raw JSON body of a 200 chat completion answering ``body``, or ``None`` to
        send the request live; raises a :class:`~jurist.errors.ModelError` for a failed
        line.

        ``model`` is the :class:`~jurist.models._openai.OpenAIModel` making the request
        (typed ``Any`` here: this module must not import the backend that imports it).
        """
        ...


batch_collector: ContextVar[BatchCollector | None] = ContextVar(
    "jurist_batch_collector", default=None
)
"""The collector in effect for the current context (``None``: every request goes live)."""


@contextlib.contextmanager
def collecting(collector: BatchCollector | None) -> Iterator[None]:
    """Set ``collector`` for the block (and the tasks started inside it); restore the
    previous one on exit. ``None`` turns collecting off inside the block."""
    token = batch_collector.set(collector)
    try:
        yield
    finally:
        batch_collector.reset(token)
