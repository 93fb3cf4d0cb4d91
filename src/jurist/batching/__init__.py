"""Batch mode in the model layer: requests sent in provider batch files instead of calls.

- :class:`Batcher`: a model wrapper that parks each request, streams its line to the
  round's request file, and answers from the journal once its batch is read back;
- :class:`BatchSession`: the parked requests of one run and the rounds that send them
  (upload, create, poll, read results), every step recorded in a :class:`Journal`;
- the backend side is :class:`~jurist.models._batch_hooks.BatchHooks` (OpenAI's Batch
  API in :mod:`jurist.models._openai_batch`, Anthropic's Message Batches in
  :mod:`jurist.models._anthropic_batch`); no backend imports this package.

The engine (:mod:`jurist.engines._batch_api`) only builds the session over the run
store's journal and wraps the judge's models (:meth:`BatchSession.wrap`). See
``docs/batch-api.md``.
"""

from jurist.batching._files import request_key
from jurist.batching._journal import Chunk, Journal, Response
from jurist.batching._options import BatchAPIOptions
from jurist.batching._session import Batcher, BatchSession, Scope, drain

__all__ = [
    "BatchAPIOptions",
    "BatchSession",
    "Batcher",
    "Chunk",
    "Journal",
    "Response",
    "Scope",
    "drain",
    "request_key",
]
