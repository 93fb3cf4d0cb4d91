"""A stub OpenAI-compatible server for throughput benchmarks: fixed latency, fixed verdict.

Endpoints (all on 127.0.0.1):

- ``POST /v1/chat/completions``: records the arrival time, sleeps ``latency`` seconds,
  then answers ``verdict`` with a usage block. No streaming, no logprobs.
- ``GET /v1/models``: the one model, ``stub``.
- ``GET /stats``: ``{"count": n, "arrivals": [...], "prompt_chars": ..., "prompt_tokens": ...,
  "completion_tokens": ..., "body_bytes": ...}``; arrival times are ``time.time()`` seconds,
  taken when the request's handler starts. ``prompt_chars`` sums the characters of every
  message's content; ``prompt_tokens`` sums, per request, ``ceil(chars / 4)`` (one estimate
  for every client, so tools compare fairly); ``body_bytes`` sums the request bodies.
- ``POST /stats/reset``: forgets the arrivals and counters recorded so far.

With ``answer="schema"`` (``--answer schema``) a request that carries a JSON schema in
``response_format`` is answered with a JSON instance of that schema instead of ``verdict``
(the first enum value, the first non-null variant, ``1`` for integers, ``"ok"`` for
strings; an array of objects with a ``criterion_id`` gets one entry per ``id="cN"`` found in
the prompt). Rubric graders that ask for structured output then always get a valid answer.

The server runs in its own process, so its CPU never counts as the client's:
:class:`StubServer` starts ``python _stub_server.py --port 0 ...`` as a subprocess, waits
for the ``READY <port>`` line it prints and stops it on exit::

    with StubServer(latency=0.2) as server:
        url = server.base_url          # http://127.0.0.1:<port>/v1
        ...
        arrivals = server.arrivals()   # list[float]

Run it by hand with ``python benchmarks/_stub_server.py --port 8000``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["StubServer", "serve"]

_BACKLOG = 4096


def _completion_body(verdict: str, model: str, prompt_chars: int) -> dict[str, Any]:
    prompt_tokens = max(1, prompt_chars // 4)
    completion_tokens = max(1, len(verdict) // 4)
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": verdict},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


def _response(status: int, payload: Any, keep_alive: bool) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode() + body


class _State:
    def __init__(self, latency: float, verdict: str, answer: str = "verdict") -> None:
        self.latency = latency
        self.verdict = verdict
        self.answer = answer
        self.arrivals: list[float] = []
        self.reset_counters()

    def reset_counters(self) -> None:
        self.prompt_chars = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.body_bytes = 0

    def stats(self) -> dict[str, Any]:
        return {
            "count": len(self.arrivals),
            "arrivals": self.arrivals,
            "prompt_chars": self.prompt_chars,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "body_bytes": self.body_bytes,
        }


_CRITERION_ID = re.compile(r'id="(c\d+)"')


def _resolve(node: Any, root: dict[str, Any]) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = root
        for part in str(node["$ref"]).lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def schema_instance(schema: Any, root: dict[str, Any] | None = None, prompt: str = "") -> Any:
    """A small JSON value that satisfies ``schema`` (the subset structured outputs use)."""
    root = root if root is not None else schema
    node = _resolve(schema, root)
    if not isinstance(node, dict):
        return "ok"
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if node.get(key):
            variants = [_resolve(v, root) for v in node[key]]
            usable = [v for v in variants if not (isinstance(v, dict) and v.get("type") == "null")]
            return schema_instance(usable[0] if usable else variants[0], root, prompt)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in node:
        props = node.get("properties", {})
        return {k: schema_instance(v, root, prompt) for k, v in props.items()}
    if kind == "array":
        items = _resolve(node.get("items", {}), root)
        if isinstance(items, dict) and "criterion_id" in items.get("properties", {}):
            out = []
            for cid in dict.fromkeys(_CRITERION_ID.findall(prompt)):
                entry = schema_instance(items, root, prompt)
                entry["criterion_id"] = cid
                out.append(entry)
            return out
        return [schema_instance(items, root, prompt)]
    if kind == "integer":
        return int(node.get("minimum", 1))
    if kind == "number":
        return float(node.get("minimum", 0.5))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "ok"


def _text(message: dict[str, Any]) -> str:
    """A message's text: its content string, or the text parts of a content list."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _schema_of(payload: dict[str, Any]) -> Any:
    fmt = payload.get("response_format")
    if not isinstance(fmt, dict):
        return None
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        return spec.get("schema")
    if fmt.get("type") == "json_object":
        return fmt.get("schema")
    return None


class _HTTPProtocol(asyncio.Protocol):
    """A minimal HTTP/1.1 server (keep-alive, Content-Length or chunked bodies).

    Raw asyncio rather than a framework so that the server spends a few tens of
    microseconds of CPU per request and is never the bottleneck of a benchmark.
    Responses on one connection go out in request order: every chat answer is delayed
    by the same latency, and the other endpoints answer at once only when nothing is
    pending on that connection (clients do not pipeline in practice).
    """

    def __init__(self, state: _State) -> None:
        self.state = state
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()
        self.pending = 0
        self.closing = False
        self.headers: dict[str, str] = {}  # the request being dispatched (names lower-case)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while self._one_request():
            pass

    def _one_request(self) -> bool:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return False
        lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            self._send(_response(400, {"error": {"message": "bad request line"}}, False))
            return False
        method, path, version = parts
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        start = end + 4
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body, consumed = self._chunked(start)
            if body is None:
                return False
        else:
            length = int(headers.get("content-length", "0") or 0)
            if len(self.buf) < start + length:
                return False
            body, consumed = bytes(self.buf[start : start + length]), start + length
        del self.buf[:consumed]
        conn = headers.get("connection", "").lower()
        keep_alive = conn != "close" and (version == "HTTP/1.1" or conn == "keep-alive")
        self.headers = headers
        self._dispatch(method, path.split("?", 1)[0], body, keep_alive)
        return True

    def _chunked(self, pos: int) -> tuple[bytes | None, int]:
        out = bytearray()
        while True:
            eol = self.buf.find(b"\r\n", pos)
            if eol < 0:
                return None, 0
            size = int(bytes(self.buf[pos:eol]).split(b";")[0], 16)
            pos = eol + 2
            if size == 0:
                trailer_end = self.buf.find(b"\r\n\r\n", pos - 2)
                if trailer_end < 0:
                    return None, 0
                return bytes(out), trailer_end + 4
            if len(self.buf) < pos + size + 2:
                return None, 0
            out += self.buf[pos : pos + size]
            pos += size + 2

    def _dispatch(self, method: str, path: str, body: bytes, keep_alive: bool) -> None:
        state = self.state
        if path == "/v1/chat/completions" and method == "POST":
            state.arrivals.append(time.time())
            try:
                payload = json.loads(body)
            except ValueError:
                self._send(_response(400, {"error": {"message": "invalid JSON"}}, keep_alive))
                return
            if payload.get("stream"):
                msg = {"error": {"message": "the stub server does not stream"}}
                self._send(_response(400, msg, keep_alive))
                return
            model = str(payload.get("model", "stub"))
            contents = [_text(m) for m in payload.get("messages", []) if isinstance(m, dict)]
            chars = sum(len(c) for c in contents)
            answer = state.verdict
            schema = _schema_of(payload) if state.answer == "schema" else None
            if schema is not None:
                answer = json.dumps(schema_instance(schema, prompt="\n".join(contents)))
            completion = _completion_body(answer, model, len(body))
            state.prompt_chars += chars
            state.prompt_tokens += -(-chars // 4)
            state.completion_tokens += completion["usage"]["completion_tokens"]
            state.body_bytes += len(body)
            data = _response(200, completion, keep_alive)
            self.pending += 1
            self.loop.call_later(state.latency, self._send_later, data, keep_alive)
            return
        if path == "/v1/models" and method == "GET":
            models = {"object": "list", "data": [{"id": "stub", "object": "model"}]}
            self._send(_response(200, models, keep_alive))
        elif path == "/stats" and method == "GET":
            self._send(_response(200, state.stats(), keep_alive))
        elif path == "/stats/reset" and method == "POST":
            state.arrivals = []
            state.reset_counters()
            self._send(_response(200, {"count": 0}, keep_alive))
        else:
            self._send(_response(404, {"error": {"message": f"no route {path}"}}, keep_alive))
        if not keep_alive:
            self.closing = True

    def _send_later(self, data: bytes, keep_alive: bool) -> None:
        self.pending -= 1
        self._send(data)
        if not keep_alive:
            self.closing = True
        if self.closing and self.pending == 0 and self.transport is not None:
            self.transport.close()

    def _send(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)
        if self.closing and self.pending == 0 and self.transport is not None:
            self.transport.close()


async def serve(
    port: int = 0,
    latency: float = 0.2,
    verdict: str = "Correct",
    ready: Any = None,
    answer: str = "verdict",
) -> None:
    """Serve until cancelled; print ``READY <port>`` to ``ready`` (stdout by default)."""
    state = _State(latency, verdict, answer)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(_BACKLOG)
    bound = int(sock.getsockname()[1])
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _HTTPProtocol(state), sock=sock, backlog=_BACKLOG)
    print(f"READY {bound}", file=ready or sys.stdout, flush=True)
    async with server:
        await server.serve_forever()


class StubServer:
    """The stub server in a subprocess; a context manager."""

    def __init__(
        self,
        latency: float = 0.2,
        verdict: str = "Correct",
        port: int = 0,
        python: str | None = None,
        startup_timeout: float = 30.0,
        answer: str = "verdict",
    ) -> None:
        self.latency = latency
        self.verdict = verdict
        self.answer = answer
        self._port = port
        self._python = python or sys.executable
        self._startup_timeout = startup_timeout
        self._proc: subprocess.Popen[str] | None = None
        self.port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in ``/v1``."""
        return f"{self.url}/v1"

    def start(self) -> StubServer:
        cmd = [
            self._python,
            str(Path(__file__).resolve()),
            "--port",
            str(self._port),
            "--latency",
            repr(self.latency),
            "--verdict",
            self.verdict,
            "--answer",
            self.answer,
        ]
        self._proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self._proc.stdout is not None
        deadline = time.monotonic() + self._startup_timeout
        line = ""
        while time.monotonic() < deadline:
            line = self._proc.stdout.readline()
            if line.startswith("READY ") or not line:
                break
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"stub server did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()
        self._proc = None

    def _get(self, path: str, method: str = "GET") -> Any:
        data = b"" if method == "POST" else None
        req = urllib.request.Request(self.url + path, method=method, data=data)
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def arrivals(self) -> list[float]:
        """Arrival times (``time.time()``) of every chat request since the last reset."""
        return [float(t) for t in self._get("/stats")["arrivals"]]

    def count(self) -> int:
        return int(self._get("/stats")["count"])

    def stats(self) -> dict[str, Any]:
        """Everything ``GET /stats`` reports: request count, arrivals, prompt counters."""
        stats: dict[str, Any] = self._get("/stats")
        return stats

    def reset(self) -> None:
        self._get("/stats/reset", method="POST")

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per answer")
    parser.add_argument("--verdict", default="Correct", help="the text every answer carries")
    parser.add_argument(
        "--answer",
        choices=("verdict", "schema"),
        default="verdict",
        help="schema: answer requests that carry a JSON schema with an instance of it",
    )
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port, args.latency, args.verdict, answer=args.answer))


if __name__ == "__main__":
    main()
