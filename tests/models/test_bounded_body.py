"""The openai backend reads bounded answers: a size cap per body and one deadline per call.

A local aiohttp server on 127.0.0.1 misbehaves in the ways that used to grow a call's
memory without limit: a body that streams without end, one that announces a huge
``Content-Length``, one that trickles a byte at a time and never finishes.
"""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
from collections.abc import Iterator

import pytest
from aiohttp import web

from jurist.errors import APITimeoutError, ResponseTooLargeError
from jurist.models import RetryModel
from jurist.models._openai import OpenAIModel
from jurist.models._retry import is_transient
from jurist.types import Message, Request
from tests._loopback import Loopback

REQ = Request(messages=(Message(role="user", content="q"),), temperature=0)
CHUNK = b"x" * 65536


class _Server(Loopback):
    """Serves ``/v1/chat/completions`` in one of several misbehaving modes."""

    def __init__(self, mode: str) -> None:
        super().__init__(self._handle, shutdown_timeout=0.2)
        self.mode = mode
        self.requests = 0
        self.sent = 0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.requests += 1
        if self.mode == "gzip":
            # A 4 KiB gzip that inflates to 8 MiB: the Content-Length alone says nothing.
            body = gzip.compress(b" " * (8 * 2**20))
            headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
            return web.Response(body=body, headers=headers)
        if self.mode == "announce":
            # Claims 10 GiB, then sends a little and stalls: the client must not wait for it.
            resp = web.StreamResponse(headers={"Content-Length": str(10 * 2**30)})
            await resp.prepare(request)
            await resp.write(CHUNK)
            await asyncio.sleep(30)
            return resp
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            while True:
                if self.mode == "endless":
                    await resp.write(CHUNK)
                    self.sent += len(CHUNK)
                else:  # trickle: one byte every 20 ms, forever
                    await resp.write(b" ")
                    self.sent += 1
                    await asyncio.sleep(0.02)
        except (ConnectionError, RuntimeError):  # the client hung up
            pass
        return resp


@pytest.fixture
def endless() -> Iterator[_Server]:
    with _Server("endless") as server:
        yield server


def test_endless_body_stops_at_the_cap(endless: _Server) -> None:
    model = OpenAIModel("x", base_url=endless.url, api_key="k", max_response_bytes=2**20)

    async def call() -> None:
        try:
            await model.complete(REQ)
        finally:
            await model.aclose()

    tracemalloc.start()
    try:
        with pytest.raises(ResponseTooLargeError, match="max_response_bytes=1048576") as info:
            asyncio.run(call())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert is_transient(info.value)
    assert "sent more than 1048576 bytes" in str(info.value)
    # The cap plus the pieces in flight, not what the server kept sending.
    assert peak < 8 * 2**20, peak


def test_announced_length_past_the_cap_fails_before_reading() -> None:
    with _Server("announce") as server:
        model = OpenAIModel("x", base_url=server.url, api_key="k", max_response_bytes=2**20)

        async def call() -> None:
            try:
                await model.complete(REQ.model_copy(update={"timeout": 10.0}))
            finally:
                await model.aclose()

        with pytest.raises(ResponseTooLargeError, match="announced 10737418240 bytes"):
            asyncio.run(call())


def test_compressed_body_is_capped_after_decompression() -> None:
    with _Server("gzip") as server:
        model = OpenAIModel("x", base_url=server.url, api_key="k", max_response_bytes=2**20)

        async def call() -> None:
            try:
                await model.complete(REQ)
            finally:
                await model.aclose()

        with pytest.raises(ResponseTooLargeError, match="sent more than 1048576 bytes"):
            asyncio.run(call())


def test_trickling_body_fails_at_the_call_deadline() -> None:
    with _Server("trickle") as server:
        model = OpenAIModel("x", base_url=server.url, api_key="k", timeout=0.3)

        async def call() -> None:
            try:
                await model.complete(REQ)
            finally:
                await model.aclose()

        with pytest.raises(APITimeoutError, match=r"within 0\.3 s"):
            asyncio.run(call())
        assert server.sent > 0  # the body had started: the deadline covers its read


def test_too_large_is_retried_and_counted(endless: _Server) -> None:
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    inner = OpenAIModel("x", base_url=endless.url, api_key="k", max_response_bytes=4096)
    model = RetryModel(inner, max_retries=2, sleep=record)

    async def call() -> None:
        try:
            await model.complete(REQ)
        finally:
            await model.aclose()

    with pytest.raises(ResponseTooLargeError) as info:
        asyncio.run(call())
    assert info.value.attempts == 3 and len(waits) == 2
    assert endless.requests == 3


def test_max_response_bytes_is_checked() -> None:
    from jurist.errors import ConfigError

    with pytest.raises(ConfigError, match="max_response_bytes"):
        OpenAIModel("x", base_url="http://127.0.0.1:1/v1", max_response_bytes=0)
