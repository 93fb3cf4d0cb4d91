"""A request file whose batch was never recorded, on a server that cannot list batches.

The batch-API mode records a file's ``file_id`` before it creates the batch, and the
``batch_id`` as soon as the create call answers. A process stopped in between (or a
create whose answer was lost) leaves a file *uploaded* with no batch id; the next
session looks the batch up with ``GET /batches`` by its metadata and input file, so
nothing is sent twice (:meth:`jurist.batching._rounds.Transfers.recover`). A server
without that endpoint (HTTP 404 or 405, or 501) leaves no way to know whether the batch
was made. Then the run stops with :func:`stuck`, which names the two ways on:

- adopt a batch by id (``BatchAPIOptions(adopt=[ID])``, ``--batch-adopt ID``): the batch
  is taken only if what the server says of it matches what the run store says was
  submitted (:func:`differences`: its input file, its ``jurist_run`` / ``jurist_file``
  metadata, its request count); else it is refused, naming each difference;
- create it again (``BatchAPIOptions(resubmit=True)``, ``--batch-resubmit``): if the
  first create went through, the file's requests run and are billed twice; the error
  and the notice say how many, and what they cost where the price is known
  (:func:`resend_cost`).

Either is recorded in the run store (``batch_recoveries``), and the file's chunk gets
its batch id, so a later session polls that batch and asks nothing again.

>>> from jurist.batching._journal import Chunk
>>> chunk = Chunk("c1", 1, "uploaded", {}, 12, 900, 0, 11, "file-3", None, None, None)
>>> differences({"id": "b9", "input_file_id": "file-7", "metadata": {"jurist_run": "r"},
...              "request_counts": {"total": 5}}, chunk, run_id="r")
['its input file is file-7, not file-3', 'it holds 5 requests, not 12']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from jurist._secrets import scrub
from jurist.batching._journal import Chunk, Journal
from jurist.errors import APIStatusError, ConfigError, JuristRuntimeError, NotFoundError
from jurist.models._limits import HIGH_DETAIL_IMAGE_TOKENS, LOW_DETAIL_IMAGE_TOKENS


class Prices(Protocol):
    """A price table (:class:`jurist.runs.PriceTable`): ``price_for(spec)`` gives a
    price with ``batch_rates`` (per million prompt, cached and completion tokens) or
    ``None``."""

    def price_for(self, spec: str) -> Any: ...


class Adopter(Protocol):
    """What :func:`adopt` uses of the round's :class:`~jurist.batching._rounds.Transfers`."""

    run_id: str

    def adopt(self, chunk: Chunk, batch: Any) -> Chunk: ...


__all__ = [
    "LIST_REFUSED",
    "adopt",
    "check_adoptable",
    "differences",
    "list_refused",
    "resend_cost",
    "stuck",
    "where",
]

LIST_REFUSED = frozenset({404, 405, 501})
"""Statuses of ``GET /batches`` that say the server has no such endpoint."""

DEFAULT_COMPLETION_TOKENS = 256
"""Completion tokens assumed for a request without ``max_tokens`` (as the rate limiter)."""


def list_refused(error: BaseException) -> int | None:
    """The HTTP status when ``error`` says the server cannot list batches, else ``None``."""
    if isinstance(error, APIStatusError) and error.status_code in LIST_REFUSED:
        return error.status_code
    return None


def where(chunk: Chunk) -> str:
    """``request file C (12 requests, uploaded as file-3)``."""
    return (
        f"request file {chunk.chunk_id} ({chunk.requests} request"
        f"{'s' if chunk.requests != 1 else ''}, uploaded as {chunk.file_id})"
    )


def differences(batch: Any, chunk: Chunk, *, run_id: str) -> list[str]:
    """How batch ``batch`` (a :class:`~jurist.models._openai_batch.BatchObject` or its
    JSON) differs from what the run store says ``chunk`` submitted; empty when it is the
    chunk's batch. A batch the server says nothing checkable about (no input file, no
    jurist metadata) differs too: it cannot be tied to the file."""
    view = batch.model_dump() if hasattr(batch, "model_dump") else dict(batch)
    found: list[str] = []
    tied = False
    input_file = view.get("input_file_id")
    if input_file is not None:
        tied = True
        if input_file != chunk.file_id:
            found.append(f"its input file is {input_file}, not {chunk.file_id}")
    meta = view.get("metadata") or {}
    for key, wanted in (("jurist_run", run_id), ("jurist_file", chunk.chunk_id)):
        if key in meta:
            tied = True
            if meta[key] != wanted:
                found.append(f"its metadata {key} is {meta[key]!r}, not {wanted!r}")
    total = int((view.get("request_counts") or {}).get("total") or 0)
    if total and total != chunk.requests:  # 0 while a batch validates: not known yet
        found.append(f"it holds {total} requests, not {chunk.requests}")
    if not tied:
        found.append(
            "the server names neither its input file nor jurist metadata, so it cannot "
            "be checked against this file"
        )
    return found


def resend_cost(
    bodies: Iterable[Mapping[str, Any]], requests: int, spec: str, table: Prices
) -> str:
    """What sending ``requests`` requests again may cost: their tokens, estimated from
    ``bodies`` (some of them: the mean is scaled to ``requests``; prompt characters / 4
    plus each image part as the rate limiter counts it, completion ``max_tokens`` or 256),
    and the price at the batch rates of ``spec`` where the table has them.

    >>> body = {"messages": [{"role": "user", "content": "x" * 400}], "max_tokens": 50}
    >>> from jurist.runs import PriceTable
    >>> print(resend_cost([body], 10, "openai:gpt-4o-mini", PriceTable.default()))
    10 requests (about 1,000 prompt and 500 completion tokens: about $0.0002 at the batch
    rates of openai:gpt-4o-mini)
    >>> print(resend_cost([body], 10, "openai:judge", PriceTable.default()))
    10 requests (about 1,000 prompt and 500 completion tokens; no batch price is known
    for openai:judge)
    >>> low = {"type": "image_url", "image_url": {"url": "data:,", "detail": "low"}}
    >>> body["messages"][0]["content"] = [{"type": "text", "text": "x" * 400}, low]
    >>> print(resend_cost([body], 10, "openai:judge", PriceTable.default()))
    10 requests (about 1,850 prompt and 500 completion tokens; no batch price is known
    for openai:judge)
    """
    seen = list(bodies)
    plural = "s" if requests != 1 else ""
    if not seen:
        return f"{requests} request{plural}"
    prompt = sum(
        math.ceil(_chars(b.get("messages")) / 4) + _images(b.get("messages")) for b in seen
    )
    completion = sum(_completion_cap(b) for b in seen)
    scale = requests / len(seen)
    prompt, completion = round(prompt * scale), round(completion * scale)
    tokens = f"about {prompt:,} prompt and {completion:,} completion tokens"
    price = table.price_for(spec)
    rates = price.batch_rates if price is not None else None
    if rates is None:
        return f"{requests} request{plural} ({tokens}; no batch price is known for {spec})"
    dollars = (prompt * rates[0] + completion * rates[2]) / 1_000_000
    shown = f"${dollars:,.2f}" if dollars >= 1 else f"${dollars:.4f}"
    return f"{requests} request{plural} ({tokens}: about {shown} at the batch rates of {spec})"


def _chars(messages: Any) -> int:
    if not isinstance(messages, list):
        return 0
    total = 0
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):  # parts: count their text
            total += sum(len(str(p.get("text", ""))) for p in content if isinstance(p, dict))
    return total


def _images(messages: Any) -> int:
    """The tokens of the image parts of ``messages`` (OpenAI's ``image_url`` parts, at
    their ``detail``; Anthropic's ``image`` parts, whose size is not known here, at the
    high-detail bound), as :func:`jurist.models._limits.image_tokens` counts them."""
    if not isinstance(messages, list):
        return 0
    total = 0
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        for part in content if isinstance(content, list) else ():
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "image_url":
                url = part.get("image_url")
                low = isinstance(url, dict) and url.get("detail") == "low"
                total += LOW_DETAIL_IMAGE_TOKENS if low else HIGH_DETAIL_IMAGE_TOKENS
            elif kind == "image":
                total += HIGH_DETAIL_IMAGE_TOKENS
    return total


def _completion_cap(body: Mapping[str, Any]) -> int:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return DEFAULT_COMPLETION_TOKENS


def stuck(chunk: Chunk, status: int, server: str, cost: str) -> JuristRuntimeError:
    """The error that stops a run whose uploaded file's batch cannot be looked up: it
    names the file and both ways on, with the exact flags and options."""
    return JuristRuntimeError(
        f"batch: {where(chunk)} has no recorded batch: the answer to the call that creates "
        f"it never reached the run store (the process stopped, or the answer was lost), "
        f"and {scrub(server)} cannot list batches to find out whether it was made (GET /batches "
        f"answered HTTP {status}). Nothing was sent again. Two ways on:\n"
        f"  - if the batch was made (the provider's dashboard shows it, with input file "
        f"{chunk.file_id} and metadata jurist_file={chunk.chunk_id}), run again with "
        f"--batch-adopt BATCH_ID (BatchAPIOptions(adopt=['BATCH_ID'])): it is checked "
        f"against this file before it is used;\n"
        f"  - or create it again with --batch-resubmit (BatchAPIOptions(resubmit=True)): "
        f"if the first batch was made, these {cost} run and are billed twice."
    )


def check_adoptable(ids: Sequence[str], store: Journal) -> None:
    """Refuse batch ids to adopt when no uploaded file of the run waits for its batch (an
    id already recorded, by an earlier session, is fine: the same command may run again)."""
    unknown = [b for b in ids if store.chunk_with_batch(b) is None]
    if unknown and not store.chunks("uploaded"):
        raise ConfigError(
            f"--batch-adopt {unknown[0]} (BatchAPIOptions.adopt): no request file of this "
            "run waits for its batch (every uploaded file has its batch recorded), so there "
            "is nothing to adopt; drop it"
        )


async def adopt(
    ids: Sequence[str],
    chunks: Sequence[Chunk],
    store: Journal,
    wire: Adopter,
    client_for: Callable[[dict[str, Any]], Any],
) -> list[Chunk]:
    """Take each batch of ``ids`` as the batch of the uploaded chunk (of ``chunks``) it
    matches (:func:`differences`), or refuse it, naming how it differs from each chunk
    waiting for a batch; ``chunks`` as they are after. ``client_for(model identity)``:
    the batch client of that model."""
    for batch_id in ids:
        if store.chunk_with_batch(batch_id) is not None:
            continue  # adopted (or recorded) before
        waiting = [c for c in (store.chunk(c.chunk_id) for c in chunks) if c.state == "uploaded"]
        if not waiting:
            raise ConfigError(
                f"--batch-adopt {batch_id} (BatchAPIOptions.adopt): no request file of this "
                "run waits for its batch any more, so there is nothing to adopt it for; "
                "drop it"
            )
        try:
            batch = await client_for(waiting[0].model).retrieve(batch_id)
        except NotFoundError as e:
            raise ConfigError(
                f"--batch-adopt {batch_id} (BatchAPIOptions.adopt): the server knows no such "
                f"batch ({e})"
            ) from None
        refused: list[str] = []
        for chunk in waiting:
            found = differences(batch, chunk, run_id=wire.run_id)
            if not found:
                wire.adopt(chunk, batch)
                break
            refused.append(f"{where(chunk)}: {'; '.join(found)}")
        else:
            listed = "\n  ".join(refused)
            raise ConfigError(
                f"--batch-adopt {batch_id} (BatchAPIOptions.adopt): batch {batch_id} is not "
                "the batch of any request file of this run waiting for one, so it is not "
                f"adopted:\n  {listed}\nNothing was sent. Name the batch made of that input "
                "file, or create it again with --batch-resubmit."
            )
    return [store.chunk(c.chunk_id) for c in chunks]
