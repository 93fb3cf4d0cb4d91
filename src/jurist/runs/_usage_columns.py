"""The usage columns the run store's tables share, named once.

``results``, ``repeats`` and ``superseded`` each keep what their rows spent in the same
count columns (:data:`COUNTS`); :data:`SPENT` is what a row that leaves ``results`` or
``repeats`` carries into ``superseded`` (see :mod:`jurist.runs._store_schema` and
:mod:`jurist.runs._repeat_store`).
"""

from __future__ import annotations

__all__ = ["COUNTS", "SPENT"]

COUNTS = ("prompt_tokens", "completion_tokens", "cached_tokens", "calls", "cache_hits", "attempts")
"""The request and token counts every table keeps, in this order."""

SPENT = (*COUNTS, "cost", "reasoning_tokens")
"""The columns of ``superseded``: what a replaced, refused or set-aside row had spent."""
