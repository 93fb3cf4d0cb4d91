"""Options of the provider batch-API mode (:class:`~jurist.engines.BatchAPIEngine`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from jurist.models._transport import DEFAULT_MAX_RETRIES

__all__ = ["BatchAPIOptions"]


class BatchAPIOptions(BaseModel):
    """How requests travel in files instead of calls (see ``docs/batch-api.md``).

    ``followup``: where an item's requests go once a batch has answered it (re-asks of
    unreadable verdicts, retries): another batch, or live calls; ``on_expired``: what
    becomes of the requests a batch that expired, failed or was cancelled did not finish
    (sent again in the next round, or recorded as the item's error); ``max_resubmits``: how
    many times one request is sent again after batches ended without its answer (default:
    a live call's retries, ``DEFAULT_MAX_RETRIES``); ``max_requests_per_file`` /
    ``max_bytes_per_file``: the provider's limits for one batch file (OpenAI's by
    default); ``poll_interval``: seconds between status checks; ``completion_window``: the
    window asked for; ``file_out``: write the request file there and stop with the status
    ``awaiting results``, for an offline engine (:func:`jurist.engines.ingest` reads its
    results back).

    Two ways on for a request file whose batch id was never recorded (the process stopped
    between creating the batch and recording it) on a server that cannot list batches
    (``GET /batches`` answers 404 or 405), where the usual look-up cannot run:
    ``adopt``: ids of batches to take as those files' batches, each checked against what
    the run store says was submitted (input file, metadata, request count) and refused,
    naming the difference, when it does not match; ``resubmit``: create the batch again
    from the uploaded file, which runs (and bills) its requests twice if the first batch
    was made. Either is recorded in the run store.

    >>> BatchAPIOptions(poll_interval=60).followup
    'batch'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    followup: Literal["batch", "live"] = "batch"
    on_expired: Literal["resubmit", "error"] = "resubmit"
    max_resubmits: int = Field(default=DEFAULT_MAX_RETRIES, ge=0)
    max_requests_per_file: int = Field(default=50_000, ge=1)
    max_bytes_per_file: int = Field(default=200 * 1024 * 1024, ge=1024)
    poll_interval: float = Field(default=30.0, gt=0)
    completion_window: str = "24h"
    file_out: Path | None = None
    adopt: tuple[str, ...] = ()
    resubmit: bool = False
