"""A stand-in Anthropic Message Batches API on 127.0.0.1, for the batch-mode tests.

Real HTTP (aiohttp, in a thread of its own), the documented endpoints, checked as the
real API checks them (``x-api-key`` and ``anthropic-version`` headers; each request a
``custom_id`` of 1-64 characters ``[A-Za-z0-9_-]``, unique in the batch, and ``params``
with ``model``, ``max_tokens`` and ``messages``):

- ``POST /v1/messages/batches`` ``{"requests": [{"custom_id", "params"}]}``: a
  ``message_batch`` (``processing_status: in_progress``);
- ``GET /v1/messages/batches/{id}``: ``ended`` once ``delay`` seconds passed (or it was
  canceled), with ``request_counts`` and ``results_url``;
- ``GET /v1/messages/batches/{id}/results``: JSONL, one ``{"custom_id", "result"}`` per
  request, in reverse order (the API does not promise the request order);
- ``POST /v1/messages/batches/{id}/cancel``: ``canceling``, then ``ended`` with the
  requests not run ``canceled``;
- ``POST /v1/messages``: a live call answered by the same function.

Knobs per batch (:meth:`AnthropicBatchServer.next_batch`): ``expire`` (custom ids whose
results are ``expired``), ``errors`` (custom id -> error type, an ``errored`` result).
Counters: ``creations``, ``submissions`` (per custom id), ``polls``, ``downloads``,
``cancels``, ``live_calls``.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests._loopback import Loopback

VERSION_HEADER = "anthropic-version"
_CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def default_answer(params: dict[str, Any]) -> str:
    return "Correct"


@dataclass
class BatchKnobs:
    expire: set[str] = field(default_factory=set)
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class _Batch:
    id: str
    requests: list[dict[str, Any]]
    created: float
    knobs: BatchKnobs
    canceled: bool = False


def _error(status: int, kind: str, message: str) -> web.Response:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return web.json_response(body, status=status)


class AnthropicBatchServer(Loopback):
    """The fake Message Batches API (see the module docs)."""

    def __init__(
        self,
        *,
        answer: Callable[[dict[str, Any]], str] = default_answer,
        delay: float = 0.05,
        api_key: str = "sk-ant-test",
    ) -> None:
        super().__init__(self._live, shutdown_timeout=2.0)
        self.answer = answer
        self.delay = delay
        self.api_key = api_key
        self.batches: dict[str, _Batch] = {}
        self.queued: list[BatchKnobs] = []
        self.creations = self.polls = self.downloads = self.cancels = self.live_calls = 0
        self.submissions: Counter[str] = Counter()

    def next_batch(self, knobs: BatchKnobs) -> None:
        self.queued.append(knobs)

    async def _serve(self) -> None:
        import asyncio

        self._stopping = asyncio.Event()
        app = web.Application(middlewares=[self._auth], client_max_size=256 * 2**20)
        app.router.add_post("/v1/messages/batches", self._create)
        app.router.add_get("/v1/messages/batches/{id}", self._retrieve)
        app.router.add_get("/v1/messages/batches/{id}/results", self._results)
        app.router.add_post("/v1/messages/batches/{id}/cancel", self._cancel)
        app.router.add_post("/v1/messages", self._live)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    @web.middleware
    async def _auth(
        self, request: web.Request, handler: Callable[[web.Request], Any]
    ) -> web.StreamResponse:
        if request.headers.get("x-api-key") != self.api_key:
            return _error(401, "authentication_error", "invalid x-api-key")
        if not request.headers.get(VERSION_HEADER):
            return _error(400, "invalid_request_error", "anthropic-version: header is required")
        response: web.StreamResponse = await handler(request)
        return response

    # -- messages -------------------------------------------------------------------------

    def _message(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": params.get("model"),
            "content": [{"type": "text", "text": self.answer(params)}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 12, "output_tokens": 3},
        }

    @staticmethod
    def _check_params(params: Any) -> str | None:
        if not isinstance(params, dict):
            return "params: must be an object"
        for key in ("model", "max_tokens", "messages"):
            if key not in params:
                return f"params.{key}: Field required"
        return None

    async def _live(self, request: web.Request) -> web.Response:
        params = await request.json()
        wrong = self._check_params(params)
        if wrong:
            return _error(400, "invalid_request_error", wrong)
        self.live_calls += 1
        return web.json_response(self._message(params))

    # -- batches --------------------------------------------------------------------------

    async def _create(self, request: web.Request) -> web.Response:
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError as exc:
            return _error(400, "invalid_request_error", f"the body is not JSON: {exc}")
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return _error(400, "invalid_request_error", "requests: a non-empty list is required")
        seen: set[str] = set()
        for n, item in enumerate(requests):
            cid = item.get("custom_id") if isinstance(item, dict) else None
            if not isinstance(cid, str) or not _CUSTOM_ID.match(cid) or cid in seen:
                return _error(400, "invalid_request_error", f"requests.{n}.custom_id: {cid!r}")
            wrong = self._check_params(item.get("params"))
            if wrong:
                return _error(400, "invalid_request_error", f"requests.{n}.{wrong}")
            seen.add(cid)
        self.creations += 1
        batch_id = f"msgbatch_{self.creations:04d}"
        knobs = self.queued.pop(0) if self.queued else BatchKnobs()
        self.batches[batch_id] = _Batch(batch_id, requests, time.monotonic(), knobs)
        self.submissions.update(r["custom_id"] for r in requests)
        return web.json_response(self._describe(self.batches[batch_id], request))

    def _ended(self, batch: _Batch) -> bool:
        return batch.canceled or time.monotonic() - batch.created >= self.delay

    def _result(self, batch: _Batch, item: dict[str, Any]) -> dict[str, Any]:
        cid = item["custom_id"]
        if cid in batch.knobs.expire:
            return {"type": "expired"}
        if batch.canceled:
            return {"type": "canceled"}
        kind = batch.knobs.errors.get(cid)
        if kind is not None:
            error = {"type": kind, "message": f"test {kind} for {cid}"}
            return {"type": "errored", "error": {"type": "error", "error": error}}
        return {"type": "succeeded", "message": self._message(item["params"])}

    def _describe(self, batch: _Batch, request: web.Request) -> dict[str, Any]:
        ended = self._ended(batch)
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        for item in batch.requests:
            if not ended:
                counts["processing"] += 1
                continue
            kind = self._result(batch, item)["type"]
            counts["canceled" if kind == "canceled" else kind] += 1
        base = f"http://{request.host}/v1/messages/batches/{batch.id}"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T00:01:00Z" if ended else None,
            "results_url": f"{base}/results" if ended else None,
        }

    async def _retrieve(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, "not_found_error", "no such batch")
        self.polls += 1
        return web.json_response(self._describe(batch, request))

    async def _results(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, "not_found_error", "no such batch")
        if not self._ended(batch):
            return _error(400, "invalid_request_error", "the batch is still processing")
        self.downloads += 1
        lines = [
            orjson.dumps({"custom_id": item["custom_id"], "result": self._result(batch, item)})
            for item in reversed(batch.requests)
        ]
        return web.Response(body=b"\n".join(lines) + b"\n", content_type="application/binary")

    async def _cancel(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, "not_found_error", "no such batch")
        self.cancels += 1
        batch.canceled = True
        return web.json_response(self._describe(batch, request))
