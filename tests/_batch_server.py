"""A stand-in OpenAI Batch API server on 127.0.0.1, for the batch-mode tests.

Real HTTP (aiohttp, in a thread of its own like :mod:`tests._loopback`), with the
endpoints a batch client uses: ``POST /v1/files`` (multipart, ``purpose=batch``; every
request line validated as the real API does, a bad one refused with HTTP 400 naming its
line), ``GET /v1/files/{id}`` and ``/content``, ``POST /v1/batches``, ``GET
/v1/batches/{id}``, ``GET /v1/batches`` (newest first, ``after``, ``limit``,
``has_more``), ``POST /v1/batches/{id}/cancel``, and a live ``POST /v1/chat/completions``
answering from the same function, so live and batch answers can be compared.

Answers come from one deterministic function of the request body (``answer``; by
default "Correct" or "Incorrect" chosen by a checksum of the messages). A batch goes
``validating -> in_progress -> finalizing -> completed`` as ``delay`` seconds pass after
its creation (measured with ``clock``: tests may pass a fake one), looked at lazily when a
client asks. :class:`Knobs` (for the whole server, or queued for the next batches
created with :meth:`BatchServer.next_batch`) make a batch fail, expire after N lines
(the rest go to the error file as ``batch_expired`` lines, as OpenAI writes them), drop
lines, answer lines with an error status, or write broken lines.

With ``list_batches=False`` the server has no ``GET /v1/batches`` (as some
OpenAI-compatible servers): that call answers HTTP 405 Method Not Allowed, counted in
``refused_lists``.

Counters for the tests: ``uploads``, ``creations``, ``submissions`` (per ``custom_id``,
counted when a batch is created), ``live_calls``, ``polls`` (``GET /v1/batches/{id}``),
``lists``, ``refused_lists``, ``downloads``, ``cancels``.

    with BatchServer(delay=0.0) as server:
        model = OpenAIModel("judge", base_url=server.base_url)
        client = model.batch_client()
"""

from __future__ import annotations

import math
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests._loopback import Loopback

Answer = Callable[[dict[str, Any]], str]
CHAT = "/v1/chat/completions"
EXPIRED = "This request could not be executed before the completion window expired."
CANCELLED = "This request was not executed because the batch was cancelled."


def answer_from(choices: tuple[str, ...]) -> Answer:
    """An answer function that picks one of ``choices`` by a checksum of the messages."""

    def answer(body: dict[str, Any]) -> str:
        key = orjson.dumps(body.get("messages"))
        return choices[zlib.crc32(key) % len(choices)]

    return answer


default_answer = answer_from(("Correct", "Incorrect"))


@dataclass
class Knobs:
    """How a batch misbehaves. ``fail``: the batch fails (status ``failed``, this message in
    ``errors``); ``expire_after``: it expires after its first N lines; ``drop``: these
    custom_ids get no line at all; ``line_errors``: these custom_ids get this HTTP status
    in the error file; ``malformed``: these custom_ids get a truncated line; ``delay``:
    this batch's processing time instead of the server's."""

    fail: str | None = None
    expire_after: int | None = None
    drop: set[str] = field(default_factory=set)
    line_errors: dict[str, int] = field(default_factory=dict)
    malformed: set[str] = field(default_factory=set)
    delay: float | None = None


@dataclass
class _File:
    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int
    lines: list[dict[str, Any]] = field(default_factory=list)

    def view(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
        }


@dataclass
class _Batch:
    id: str
    input_file_id: str
    metadata: dict[str, str] | None
    knobs: Knobs
    started: float
    created_at: int
    total: int
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    errors: list[dict[str, Any]] | None = None
    stamps: dict[str, int] = field(default_factory=dict)
    cancel_asked: bool = False

    def view(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": CHAT,
            "errors": None if self.errors is None else {"object": "list", "data": self.errors},
            "input_file_id": self.input_file_id,
            "completion_window": "24h",
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "expires_at": self.created_at + 86400,
            **{f"{name}_at": at for name, at in self.stamps.items()},
            "request_counts": {
                "total": self.total,
                "completed": self.completed,
                "failed": self.failed,
            },
            "metadata": self.metadata,
        }


def _error(status: int, message: str, *, param: str | None = None) -> web.Response:
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return web.json_response(body, status=status)


class BatchServer(Loopback):
    """The fake Batch API (see the module docs); a context manager, or start/stop."""

    def __init__(
        self,
        *,
        answer: Answer = default_answer,
        delay: float = 0.05,
        knobs: Knobs | None = None,
        api_key: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_requests: int = 50_000,
        max_bytes: int = 200_000_000,
        list_batches: bool = True,
    ) -> None:
        super().__init__(self._live, shutdown_timeout=2.0)
        self.answer = answer
        self.delay = delay
        self.knobs = knobs or Knobs()
        self.api_key = api_key
        self.clock = clock
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.list_batches = list_batches
        self.refused_lists = 0
        self.files: dict[str, _File] = {}
        self.batches: dict[str, _Batch] = {}
        self.queued: list[Knobs] = []
        self.uploads = self.creations = self.live_calls = 0
        self.polls = self.lists = self.downloads = self.cancels = 0
        self.submissions: Counter[str] = Counter()
        self.faults: list[tuple[str, str, int, float | None]] = []
        self.lost: list[tuple[str, str]] = []
        self._ids = 0

    def fail_next(
        self,
        method: str,
        path: str,
        status: int,
        *,
        times: int = 1,
        retry_after: float | None = None,
    ) -> None:
        """Answer the next ``times`` calls of ``method path`` (a prefix) with ``status``
        before they reach their endpoint (nothing is counted or changed)."""
        self.faults += [(method, path, status, retry_after)] * times

    def lose_next_answer(self, method: str, path: str) -> None:
        """Let the next call of ``method path`` (a prefix) do its work, then answer HTTP
        502 instead of its result: a client sees an error although the server acted (a
        batch was created), as when a gateway drops an answer."""
        self.lost.append((method, path))

    def next_batch(self, knobs: Knobs) -> None:
        """Use ``knobs`` for the next batch created (queued: one per call, in order)."""
        self.queued.append(knobs)

    def completion(self, body: dict[str, Any], *, request_id: str) -> dict[str, Any]:
        """The chat completion answering ``body``: the same live and in a batch."""
        text = self.answer(body)
        prompt = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        tokens = text.split(" ")
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
            "logprobs": None,
        }
        if body.get("logprobs"):
            choice["logprobs"] = {"content": _logprobs(tokens, int(body.get("top_logprobs") or 0))}
        return {
            "id": f"chatcmpl-{request_id}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body["model"],
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": len(tokens),
                "total_tokens": prompt + len(tokens),
            },
        }

    # -- the app ------------------------------------------------------------------------

    async def _serve(self) -> None:
        import asyncio

        self._stopping = asyncio.Event()
        app = web.Application(middlewares=[self._auth], client_max_size=self.max_bytes + 2**20)
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{id}", self._file)
        app.router.add_get("/v1/files/{id}/content", self._content)
        app.router.add_post("/v1/batches", self._create)
        if self.list_batches:
            app.router.add_get("/v1/batches", self._list)
        app.router.add_get("/v1/batches/{id}", self._retrieve)
        app.router.add_post("/v1/batches/{id}/cancel", self._cancel)
        app.router.add_post(CHAT, self._live)
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=2.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    @web.middleware
    async def _auth(
        self, request: web.Request, handler: Callable[[web.Request], Any]
    ) -> web.StreamResponse:
        wanted = f"Bearer {self.api_key}"
        if self.api_key is not None and request.headers.get("Authorization") != wanted:
            return _error(401, "Incorrect API key provided.")
        for i, (method, path, status, retry_after) in enumerate(self.faults):
            if request.method == method and request.path.startswith(path):
                del self.faults[i]
                fault = _error(status, f"injected HTTP {status}")
                if retry_after is not None:
                    fault.headers["Retry-After"] = f"{retry_after:g}"
                return fault
        if request.method == "GET" and request.path == "/v1/batches" and not self.list_batches:
            self.refused_lists += 1
        response: web.StreamResponse = await handler(request)
        for i, (method, path) in enumerate(self.lost):
            if request.method == method and request.path.startswith(path):
                del self.lost[i]
                return _error(502, "injected: the answer was lost on the way back")
        return response

    def _new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}-{self._ids:06d}"

    async def _upload(self, request: web.Request) -> web.Response:
        try:
            form = await request.post()
        except ValueError as exc:
            return _error(400, f"the upload is not a multipart form: {exc}")
        if form.get("purpose") != "batch":
            return _error(
                400, f"purpose must be 'batch', got {form.get('purpose')!r}", param="purpose"
            )
        upload = form.get("file")
        if not isinstance(upload, web.FileField):
            return _error(400, "the form has no file field", param="file")
        data = upload.file.read()
        lines, problem = self._validate(data)
        if problem is not None:
            return _error(400, problem, param="file")
        self.uploads += 1
        file = _File(self._new_id("file"), upload.filename, "batch", data, int(time.time()), lines)
        self.files[file.id] = file
        return web.json_response(file.view())

    def _validate(self, data: bytes) -> tuple[list[dict[str, Any]], str | None]:
        """The request lines of an input file, or the first problem (naming its line)."""
        if len(data) > self.max_bytes:
            return [], f"the file is {len(data)} bytes, more than {self.max_bytes}"
        lines: list[dict[str, Any]] = []
        seen: set[str] = set()
        model: str | None = None
        for number, raw in enumerate(data.split(b"\n"), 1):
            if not raw.strip():
                continue
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError:
                return [], f"line {number}: not valid JSON"
            if not isinstance(line, dict):
                return [], f"line {number}: not a JSON object"
            cid = line.get("custom_id")
            if not isinstance(cid, str) or not cid:
                return [], f"line {number}: custom_id must be a non-empty string"
            if cid in seen:
                return [], f"line {number}: duplicate custom_id {cid!r}"
            seen.add(cid)
            if line.get("method") != "POST":
                return [], f"line {number} ({cid}): method must be 'POST'"
            if line.get("url") != CHAT:
                return [], f"line {number} ({cid}): url must be {CHAT!r}"
            body = line.get("body")
            if not isinstance(body, dict) or not isinstance(body.get("model"), str):
                return [], f"line {number} ({cid}): body must be an object with a model"
            if not _messages_ok(body.get("messages")):
                return (
                    [],
                    f"line {number} ({cid}): body.messages must be a non-empty list of messages",
                )
            if model is not None and body["model"] != model:
                return [], f"line {number} ({cid}): model {body['model']!r} differs from {model!r}"
            model = body["model"]
            lines.append(line)
        if not lines:
            return [], "the file holds no request lines"
        if len(lines) > self.max_requests:
            return [], f"the file holds {len(lines)} requests, more than {self.max_requests}"
        return lines, None

    async def _file(self, request: web.Request) -> web.Response:
        file = self.files.get(request.match_info["id"])
        if file is None:
            return _error(404, f"No such File object: {request.match_info['id']}")
        return web.json_response(file.view())

    async def _content(self, request: web.Request) -> web.Response:
        file = self.files.get(request.match_info["id"])
        if file is None:
            return _error(404, f"No such File object: {request.match_info['id']}")
        self.downloads += 1
        return web.Response(body=file.data, content_type="application/octet-stream")

    async def _create(self, request: web.Request) -> web.Response:
        try:
            body = await request.json(loads=orjson.loads)
        except ValueError:
            return _error(400, "the body is not JSON")
        file = self.files.get(body.get("input_file_id"))
        if file is None or file.purpose != "batch":
            return _error(400, f"No such batch input file: {body.get('input_file_id')!r}")
        if body.get("endpoint") != CHAT:
            return _error(400, f"endpoint must be {CHAT!r}", param="endpoint")
        if body.get("completion_window") != "24h":
            return _error(400, "completion_window must be '24h'", param="completion_window")
        metadata = body.get("metadata")
        if metadata is not None and (
            not isinstance(metadata, dict)
            or len(metadata) > 16
            or not all(isinstance(v, str) for v in metadata.values())
        ):
            return _error(400, "metadata must map at most 16 keys to strings", param="metadata")
        knobs = self.queued.pop(0) if self.queued else self.knobs
        self.creations += 1
        self.submissions.update(line["custom_id"] for line in file.lines)
        batch = _Batch(
            self._new_id("batch"),
            file.id,
            metadata,
            knobs,
            self.clock(),
            int(time.time()),
            len(file.lines),
        )
        self.batches[batch.id] = batch
        return web.json_response(batch.view())

    async def _retrieve(self, request: web.Request) -> web.Response:
        self.polls += 1
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, f"No batch found with id {request.match_info['id']!r}")
        self._advance(batch)
        return web.json_response(batch.view())

    async def _list(self, request: web.Request) -> web.Response:
        self.lists += 1
        try:
            limit = int(request.query.get("limit", "20"))
        except ValueError:
            return _error(400, "limit must be an integer", param="limit")
        if not 1 <= limit <= 100:
            return _error(400, "limit must be between 1 and 100", param="limit")
        order = list(reversed(self.batches.values()))
        after = request.query.get("after")
        if after is not None:
            ids = [b.id for b in order]
            if after not in ids:
                return _error(400, f"after: no batch {after!r}", param="after")
            order = order[ids.index(after) + 1 :]
        page = order[:limit]
        for batch in page:
            self._advance(batch)
        data = [b.view() for b in page]
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": len(order) > limit,
            }
        )

    async def _cancel(self, request: web.Request) -> web.Response:
        self.cancels += 1
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, f"No batch found with id {request.match_info['id']!r}")
        self._advance(batch)
        if batch.status in ("completed", "failed", "expired"):
            return _error(400, f"Cannot cancel a batch with status {batch.status!r}")
        if batch.status != "cancelled":
            batch.cancel_asked = True
            batch.status = "cancelling"
            batch.stamps["cancelling"] = int(time.time())
        return web.json_response(batch.view())

    async def _live(self, request: web.Request) -> web.Response:
        self.live_calls += 1
        try:
            body = await request.json(loads=orjson.loads)
        except ValueError:
            return _error(400, "the body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return _error(400, "the body must be an object with a model", param="model")
        if not _messages_ok(body.get("messages")):
            return _error(400, "messages must be a non-empty list of messages", param="messages")
        return web.json_response(self.completion(body, request_id=f"live-{self.live_calls}"))

    # -- processing ---------------------------------------------------------------------

    def _advance(self, batch: _Batch) -> None:
        """Move ``batch`` to where its age says it is (finishing it writes its files)."""
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return
        delay = batch.knobs.delay if batch.knobs.delay is not None else self.delay
        elapsed = self.clock() - batch.started
        done = 1.0 if delay <= 0 else min(1.0, elapsed / delay)
        now = int(time.time())
        file = self.files[batch.input_file_id]
        if batch.cancel_asked:
            self._finish(batch, file.lines[: int(len(file.lines) * done)], "cancelled")
        elif batch.knobs.fail is not None:
            batch.status = "failed"
            batch.stamps["failed"] = now
            batch.errors = [
                {"code": "failed_by_test", "message": batch.knobs.fail, "param": None, "line": None}
            ]
        elif done >= 1.0:
            limit = batch.knobs.expire_after
            if limit is None:
                self._finish(batch, file.lines, "completed")
            else:
                self._finish(batch, file.lines[:limit], "expired")
        elif done >= 0.8:
            batch.status = "finalizing"
            batch.stamps.setdefault("in_progress", now)
            batch.stamps.setdefault("finalizing", now)
            batch.completed = batch.total
        elif done >= 0.2:
            batch.status = "in_progress"
            batch.stamps.setdefault("in_progress", now)
            batch.completed = int(batch.total * (done - 0.2) / 0.6)

    def _finish(self, batch: _Batch, ran: list[dict[str, Any]], status: str) -> None:
        output: list[bytes] = []
        errors: list[bytes] = []
        knobs = batch.knobs
        for number, line in enumerate(ran, 1):
            cid = line["custom_id"]
            if cid in knobs.drop:
                continue
            line_id = f"{batch.id}-req-{number}"
            if cid in knobs.line_errors:
                code = knobs.line_errors[cid]
                error = {
                    "message": f"test error {code} for {cid}",
                    "type": "test_error",
                    "param": None,
                    "code": str(code),
                }
                response = {"status_code": code, "request_id": line_id, "body": {"error": error}}
                errors.append(
                    orjson.dumps(
                        {"id": line_id, "custom_id": cid, "response": response, "error": None}
                    )
                )
                continue
            body = self.completion(line["body"], request_id=line_id)
            response = {"status_code": 200, "request_id": line_id, "body": body}
            raw = orjson.dumps(
                {"id": line_id, "custom_id": cid, "response": response, "error": None}
            )
            if cid in knobs.malformed:
                raw = raw[: raw.index(b'"response"') + 20]  # cut: the custom_id still readable
            output.append(raw)
        message = EXPIRED if status == "expired" else CANCELLED
        reason = "batch_expired" if status == "expired" else "batch_cancelled"
        for line in self.files[batch.input_file_id].lines[len(ran) :]:
            cid = line["custom_id"]
            errors.append(
                orjson.dumps(
                    {
                        "id": self._new_id("req"),
                        "custom_id": cid,
                        "response": None,
                        "error": {"code": reason, "message": message},
                    }
                )
            )
        now = int(time.time())
        if output:
            batch.output_file_id = self._store_output(batch, "output", output)
        if errors:
            batch.error_file_id = self._store_output(batch, "errors", errors)
        batch.completed = len(output)
        batch.failed = len(errors)
        batch.status = status
        batch.stamps.setdefault("in_progress", now)
        batch.stamps[status] = now

    def _store_output(self, batch: _Batch, kind: str, lines: list[bytes]) -> str:
        file = _File(
            self._new_id("file"),
            f"{batch.id}_{kind}.jsonl",
            "batch_output",
            b"".join(line + b"\n" for line in lines),
            int(time.time()),
        )
        self.files[file.id] = file
        return file.id


def _messages_ok(messages: Any) -> bool:
    """A non-empty list of objects, each with a string ``role``."""
    return (
        isinstance(messages, list)
        and bool(messages)
        and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages)
    )


def _logprobs(tokens: list[str], top: int) -> list[dict[str, Any]]:
    """A deterministic logprobs block: each token at probability 0.9, the rest of the mass
    spread over fixed alternatives."""
    pool = ["Correct", "Incorrect", "Uncertain", "1", "2", "3", "4", "5", "Yes", "No"]
    content = []
    for i, token in enumerate(tokens):
        text = token if i == 0 else f" {token}"
        others = [t for t in pool if t != token][: max(0, top - 1)]
        alts = [{"token": text, "logprob": math.log(0.9), "bytes": None}]
        alts += [
            {"token": t, "logprob": math.log(0.1 / len(others)), "bytes": None} for t in others
        ]
        content.append(
            {"token": text, "logprob": math.log(0.9), "bytes": None, "top_logprobs": alts[:top]}
        )
    return content
