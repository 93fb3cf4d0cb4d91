"""The fake Batch API server of tests/_batch_server.py: validation, progression, knobs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from jurist.errors import AuthenticationError, BadRequestError, DataError
from jurist.models._openai_batch import BatchClient, parse_output_line, request_line
from tests._batch_server import BatchServer, Knobs


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _body(text: str, model: str = "m") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def _file(*ids: str) -> bytes:
    return b"".join(request_line(cid, _body(cid)) for cid in ids)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock: Clock) -> Iterator[BatchServer]:
    with BatchServer(delay=10.0, clock=clock) as running:
        yield running


@pytest.fixture
async def client(server: BatchServer) -> Any:
    made = BatchClient(server.base_url, owner="openai:m")
    yield made
    await made.aclose()


async def _lines(client: BatchClient, file_id: str | None, tmp_path: Path) -> list[bytes]:
    assert file_id is not None
    dest = tmp_path / f"{file_id}.jsonl"
    await client.download(file_id, dest)
    return dest.read_bytes().splitlines()


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "holds no request lines"),
        (b"{not json\n", "line 1: not valid JSON"),
        (b"[1]\n", "line 1: not a JSON object"),
        (b'{"custom_id": "", "method": "POST"}\n', "line 1: custom_id must be"),
        (_file("a", "a"), "line 2: duplicate custom_id 'a'"),
        (
            orjson.dumps({"custom_id": "a", "method": "GET", "url": "/v1/chat/completions"}),
            "line 1 (a): method must be 'POST'",
        ),
        (
            orjson.dumps({"custom_id": "a", "method": "POST", "url": "/v1/embeddings"}),
            "line 1 (a): url must be",
        ),
        (
            request_line("a", {"messages": [{"role": "user"}]}),
            "line 1 (a): body must be an object with a model",
        ),
        (request_line("a", {"model": "m", "messages": [1]}), "line 1 (a): body.messages"),
        (_file("a") + request_line("b", _body("b", model="other")), "line 2 (b): model 'other'"),
    ],
)
async def test_upload_validates_every_line(
    server: BatchServer, client: BatchClient, data: bytes, problem: str
) -> None:
    with pytest.raises(BadRequestError) as info:
        await client.upload(data, filename="in.jsonl")
    assert problem in str(info.value) and info.value.status_code == 400
    assert server.uploads == 0


async def test_upload_limits_and_purpose(clock: Clock) -> None:
    with BatchServer(max_requests=2, clock=clock) as server:
        client = BatchClient(server.base_url)
        with pytest.raises(BadRequestError, match="3 requests, more than 2"):
            await client.upload(_file("a", "b", "c"), filename="f")
        async with aiohttp.ClientSession() as http:
            form = aiohttp.FormData({"purpose": "fine-tune"})
            form.add_field("file", _file("a"), filename="f")
            async with http.post(f"{server.base_url}/files", data=form) as resp:
                assert resp.status == 400
                assert "purpose must be 'batch'" in (await resp.json())["error"]["message"]
        await client.aclose()


async def test_create_validates_its_fields(server: BatchServer, client: BatchClient) -> None:
    uploaded = await client.upload(_file("a"), filename="f")
    with pytest.raises(BadRequestError, match="No such batch input file"):
        await client.create("file-unknown")
    with pytest.raises(BadRequestError, match="endpoint must be"):
        await client.create(uploaded.id, endpoint="/v1/embeddings")
    with pytest.raises(BadRequestError, match="completion_window"):
        await client.create(uploaded.id, completion_window="1h")
    with pytest.raises(BadRequestError, match="metadata"):
        await client.create(uploaded.id, metadata={str(i): "x" for i in range(17)})
    assert server.creations == 0 and not server.submissions


async def test_a_batch_progresses_with_time(
    server: BatchServer, client: BatchClient, clock: Clock, tmp_path: Path
) -> None:
    batch = await client.create((await client.upload(_file("a", "b"), filename="f")).id)
    assert dict(server.submissions) == {"a": 1, "b": 1}
    statuses = []
    for now in (100.5, 105.0, 109.0, 110.0, 500.0):
        clock.now = now
        batch = await client.retrieve(batch.id)
        statuses.append(batch.status)
    assert statuses == ["validating", "in_progress", "finalizing", "completed", "completed"]
    assert server.polls == 5
    assert batch.request_counts is not None and batch.request_counts.completed == 2
    assert batch.completed_at is not None and batch.error_file_id is None
    lines = await _lines(client, batch.output_file_id, tmp_path)
    outs = [parse_output_line(line, "out") for line in lines]
    assert [o.custom_id for o in outs] == ["a", "b"] and all(o.ok for o in outs)


async def test_knobs_drop_error_and_break_lines(
    server: BatchServer, client: BatchClient, tmp_path: Path
) -> None:
    server.delay = 0.0
    server.next_batch(Knobs(drop={"b"}, line_errors={"c": 500}, malformed={"d"}))
    batch = await client.create((await client.upload(_file(*"abcde"), filename="f")).id)
    batch = await client.retrieve(batch.id)
    assert batch.status == "completed"
    output = await _lines(client, batch.output_file_id, tmp_path)
    assert [parse_output_line(x, "o").custom_id for x in output if b'"d"' not in x] == ["a", "e"]
    (broken,) = [x for x in output if b'"custom_id":"d"' in x]
    with pytest.raises(DataError, match=r"out.jsonl:3 \(custom_id 'd'\)"):
        parse_output_line(broken, "out.jsonl:3")
    (error,) = await _lines(client, batch.error_file_id, tmp_path)
    failed = parse_output_line(error, "e")
    assert (failed.custom_id, failed.status_code, failed.error) == (
        "c",
        500,
        "test error 500 for c",
    )
    # the knobs were for that batch only: the next one answers everything
    again = await client.create((await client.upload(_file("b"), filename="g")).id)
    again = await client.retrieve(again.id)
    assert [
        parse_output_line(x, "o").ok for x in await _lines(client, again.output_file_id, tmp_path)
    ] == [True]
    assert server.submissions["b"] == 2


async def test_failed_and_expired_batches(
    server: BatchServer, client: BatchClient, tmp_path: Path
) -> None:
    server.delay = 0.0
    server.next_batch(Knobs(fail="quota exceeded"))
    server.next_batch(Knobs(expire_after=2))
    failed = await client.create((await client.upload(_file("a"), filename="f")).id)
    failed = await client.retrieve(failed.id)
    assert failed.status == "failed" and failed.output_file_id is None
    assert failed.error_summary() == "failed_by_test: quota exceeded"
    expired = await client.create((await client.upload(_file(*"abc"), filename="g")).id)
    expired = await client.retrieve(expired.id)
    assert expired.status == "expired" and expired.expired_at is not None
    done = [
        parse_output_line(x, "o") for x in await _lines(client, expired.output_file_id, tmp_path)
    ]
    assert [o.custom_id for o in done] == ["a", "b"]
    (rest,) = [
        parse_output_line(x, "e") for x in await _lines(client, expired.error_file_id, tmp_path)
    ]
    assert (rest.custom_id, rest.code, rest.never_ran) == ("c", "batch_expired", True)


async def test_cancel_a_finished_batch_is_refused(server: BatchServer, client: BatchClient) -> None:
    server.delay = 0.0
    batch = await client.create((await client.upload(_file("a"), filename="f")).id)
    assert (await client.retrieve(batch.id)).status == "completed"
    with pytest.raises(BadRequestError, match="Cannot cancel a batch with status 'completed'"):
        await client.cancel(batch.id)


async def test_live_endpoint_answers_as_the_batch_does(
    server: BatchServer, client: BatchClient, tmp_path: Path
) -> None:
    server.delay = 0.0
    body = {**_body("x"), "logprobs": True, "top_logprobs": 3}
    batch = await client.create((await client.upload(request_line("x", body), filename="f")).id)
    batch = await client.retrieve(batch.id)
    (line,) = await _lines(client, batch.output_file_id, tmp_path)
    batched = orjson.loads(parse_output_line(line, "o").body or b"")
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{server.base_url}/chat/completions", json=body) as resp:
            live = await resp.json()
        async with http.post(f"{server.base_url}/chat/completions", json={"model": "m"}) as resp:
            assert resp.status == 400
    assert server.live_calls == 2
    assert live["choices"] == batched["choices"] and live["usage"] == batched["usage"]
    assert len(live["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) == 3


async def test_bearer_key_is_checked(clock: Clock) -> None:
    with BatchServer(api_key="k1", clock=clock) as server:
        wrong = BatchClient(server.base_url, headers={"Authorization": "Bearer nope"})
        with pytest.raises(AuthenticationError):
            await wrong.upload(_file("a"), filename="f")
        right = BatchClient(server.base_url, headers={"Authorization": "Bearer k1"})
        assert (await right.upload(_file("a"), filename="f")).purpose == "batch"
        assert server.uploads == 1
        await wrong.aclose()
        await right.aclose()


async def test_file_metadata_and_content(server: BatchServer, client: BatchClient) -> None:
    data = _file("a", "b")
    uploaded = await client.upload(data, filename="in.jsonl")
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{server.base_url}/files/{uploaded.id}") as resp:
            assert await resp.json() == {
                "id": uploaded.id,
                "object": "file",
                "bytes": len(data),
                "created_at": uploaded.created_at,
                "filename": "in.jsonl",
                "purpose": "batch",
            }
        async with http.get(f"{server.base_url}/files/{uploaded.id}/content") as resp:
            assert await resp.read() == data
        async with http.get(f"{server.base_url}/files/file-none") as resp:
            assert resp.status == 404
    assert server.downloads == 1
