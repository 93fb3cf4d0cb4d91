"""The Batch API client against the test server, and the openai backend's batch hooks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jurist.errors import (
    AuthenticationError,
    BadRequestError,
    InternalServerError,
    ModelError,
    NotFoundError,
    RateLimitError,
    ResponseTooLargeError,
)
from jurist.models._openai import OpenAIModel
from jurist.models._openai_batch import BatchClient, parse_output_line, request_line
from jurist.types import Message, Request
from tests._batch_server import BatchServer, Knobs

KEY = "sk-batch-secret-123"
BODY = {"model": "m", "messages": [{"role": "user", "content": "q"}]}


@pytest.fixture
def server() -> Iterator[BatchServer]:
    with BatchServer(delay=0.0, api_key=KEY) as running:
        yield running


def _model(server: BatchServer, key: str = KEY) -> OpenAIModel:
    return OpenAIModel("judge", base_url=server.base_url, api_key=key)


def _request(text: str, **options: Any) -> Request:
    return Request(messages=(Message(role="user", content=text),), **options)


def _client(server: BatchServer, waits: list[float] | None = None) -> BatchClient:
    async def record(seconds: float) -> None:
        if waits is not None:
            waits.append(seconds)

    return BatchClient(
        server.base_url,
        headers={"Authorization": f"Bearer {KEY}"},
        owner="openai:judge",
        sleep=record,
    )


# -- round trip -------------------------------------------------------------------------


async def test_round_trip_upload_create_poll_download_parse(
    server: BatchServer, tmp_path: Path
) -> None:
    server.delay = 0.02
    model = _model(server)
    client = model.batch_client()
    requests = {f"item-{i}": _request(f"question {i}", top_logprobs=2) for i in range(5)}
    data = b"".join(request_line(cid, model.request_body(r)) for cid, r in requests.items())
    uploaded = await client.upload(data, filename="round-1.jsonl")
    assert (uploaded.bytes, uploaded.filename, uploaded.purpose) == (
        len(data),
        "round-1.jsonl",
        "batch",
    )
    batch = await client.create(uploaded.id, metadata={"jurist_run": "r1"})
    assert (batch.status, batch.input_file_id, batch.metadata) == (
        "validating",
        uploaded.id,
        {"jurist_run": "r1"},
    )
    seen = {batch.status}
    while not batch.finished:
        batch = await client.retrieve(batch.id)
        seen.add(batch.status)
    assert batch.status == "completed" and batch.request_counts is not None
    assert batch.request_counts.completed == 5 and batch.error_file_id is None
    assert batch.output_file_id is not None
    dest = tmp_path / "out" / "output.jsonl"
    size = await client.download(batch.output_file_id, dest)
    assert size == dest.stat().st_size > 0
    assert [p.name for p in dest.parent.iterdir()] == ["output.jsonl"]
    for number, line in enumerate(dest.read_bytes().splitlines(), 1):
        out = parse_output_line(line, f"{dest}:{number}")
        assert out.ok and out.body is not None
        batched = model._completion(out.body, 200, 0.0)
        live = await model.complete(requests[out.custom_id])
        assert (batched.text, batched.logprobs, batched.usage) == (
            live.text,
            live.logprobs,
            live.usage,
        )
    assert server.live_calls == 5 and server.uploads == 1 and server.creations == 1
    assert dict(server.submissions) == dict.fromkeys(requests, 1)
    assert server.polls >= 1 and seen <= {"validating", "in_progress", "finalizing", "completed"}
    await client.aclose()
    await model.aclose()


async def test_list_pages_newest_first(server: BatchServer) -> None:
    client = _client(server)
    uploaded = await client.upload(request_line("a", BODY), filename="f")
    made = [(await client.create(uploaded.id, metadata={"n": str(i)})).id for i in range(3)]
    first, more = await client.list(limit=2)
    assert [b.id for b in first] == made[::-1][:2] and more
    rest, more = await client.list(after=first[-1].id, limit=2)
    assert [b.id for b in rest] == [made[0]] and not more
    assert [b.metadata for b in rest] == [{"n": "0"}]
    await client.aclose()


async def test_upload_of_a_path_and_cancel(server: BatchServer, tmp_path: Path) -> None:
    server.delay = 60.0
    client = _client(server)
    path = tmp_path / "requests.jsonl"
    path.write_bytes(request_line("a", {"model": "m", "messages": [{"role": "user"}]}))
    uploaded = await client.upload(path, filename=path.name)
    batch = await client.create(uploaded.id)
    assert (await client.cancel(batch.id)).status == "cancelling"
    final = await client.retrieve(batch.id)
    assert final.status == "cancelled" and final.error_file_id is not None
    await client.aclose()


# -- errors -----------------------------------------------------------------------------


async def test_server_validation_error_names_the_line(server: BatchServer) -> None:
    client = _client(server)
    good = request_line("a", {"model": "m", "messages": [{"role": "user", "content": "q"}]})
    bad = request_line("b", {"model": "m", "messages": []})
    with pytest.raises(BadRequestError, match=r"POST .*/v1/files \(file 'x.jsonl'\).*line 2 \(b\)"):
        await client.upload(good + bad, filename="x.jsonl")
    assert server.uploads == 0
    await client.aclose()


async def test_transient_failures_are_retried_except_create(server: BatchServer) -> None:
    waits: list[float] = []
    client = _client(server, waits)
    server.fail_next("POST", "/v1/files", 503, times=2)
    uploaded = await client.upload(request_line("a", BODY), filename="f")
    assert server.uploads == 1 and len(waits) == 2
    server.fail_next("POST", "/v1/batches", 503)
    with pytest.raises(InternalServerError, match=r"POST .*/v1/batches") as info:
        await client.create(uploaded.id)
    assert info.value.attempts == 1 and server.creations == 0 and len(waits) == 2
    batch = await client.create(uploaded.id)
    server.fail_next("GET", "/v1/batches/", 429, retry_after=0.25)
    assert (await client.retrieve(batch.id)).id == batch.id
    assert waits[-1] == 0.25
    server.fail_next("GET", "/v1/batches", 500, times=10)
    with pytest.raises(InternalServerError) as info:
        await client.list()
    assert info.value.attempts == client.max_retries + 1
    server.faults.clear()
    await client.aclose()


async def test_download_failure_leaves_nothing_behind(server: BatchServer, tmp_path: Path) -> None:
    client = _client(server)
    dest = tmp_path / "missing.jsonl"
    with pytest.raises(
        NotFoundError, match=r"GET .*/v1/files/file-nope/content \(file 'file-nope'\)"
    ):
        await client.download("file-nope", dest)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(NotFoundError, match="batch 'batch-nope'"):
        await client.retrieve("batch-nope")
    await client.aclose()


async def test_unreadable_answer_names_the_endpoint(server: BatchServer) -> None:
    client = _client(server)
    uploaded = await client.upload(request_line("a", BODY), filename="f")
    # a file object read as a batch: its status is missing
    with pytest.raises(ModelError, match=r"GET /files/file-\d+ \(file\) .*unexpected body"):
        await _as_batch(client, f"/files/{uploaded.id}", "file")
    await client.aclose()


async def _as_batch(client: BatchClient, path: str, what: str) -> Any:
    from jurist.models._openai_batch import BatchObject

    raw = await client._call("GET", path, what)
    return client._parse(BatchObject, raw, f"GET {path}", what)


async def test_the_key_stays_private(server: BatchServer) -> None:
    model = _model(server)
    client = model.batch_client()
    assert KEY not in repr(client) and KEY not in str(model.identity())
    wrong = _model(server, key="sk-wrong-key-456").batch_client()
    with pytest.raises(AuthenticationError) as info:
        await wrong.list()
    assert "sk-wrong-key-456" not in str(info.value) and "GET" in str(info.value)
    assert (await client.list()) == ([], False)
    await client.aclose()
    await wrong.aclose()


# -- the hooks ---------------------------------------------------------------------------

CANNED = (
    b'{"choices": [{"message": {"content": "Correct"}, "finish_reason": "stop"}], "model": "judge"}'
)


async def test_the_hooks_build_the_live_body_and_read_answers_as_live_mode(
    server: BatchServer,
) -> None:
    model = _model(server)
    hooks = model.batch_hooks()
    request = _request("q", seed=1)
    body = hooks.body_for(request)
    assert body == model.request_body(request)
    assert hooks.line_for("c1", body) == request_line("c1", body)
    out = hooks.completion_from(CANNED, request)
    assert out.text == "Correct" and out.usage.batch_calls == 1
    error = hooks.error_for(429, b'{"error": {"message": "try later"}}')
    assert isinstance(error, RateLimitError) and "try later" in str(error)
    assert server.live_calls == 0
    await model.aclose()


async def test_a_batcher_outside_any_item_refuses_the_request(
    server: BatchServer, tmp_path: Path
) -> None:
    from jurist.batching import BatchAPIOptions, BatchSession
    from jurist.runs._store import RunStore

    run_store = RunStore(tmp_path / "run.sqlite")
    store = run_store.batch_tables("r")
    session = BatchSession(store, BatchAPIOptions(), run_id="r", folder=tmp_path)
    model = session.wrap(_model(server))
    with pytest.raises(ModelError, match="outside any item"):
        await model.complete(_request("q"))
    assert server.live_calls == 0
    await session.aclose()
    run_store.close()


async def test_knobs_reach_the_client(server: BatchServer, tmp_path: Path) -> None:
    """An expired batch: the client reads its partial output and its error file."""
    client = _client(server)
    server.next_batch(Knobs(expire_after=1))
    data = b"".join(
        request_line(c, {"model": "m", "messages": [{"role": "user", "content": c}]}) for c in "ab"
    )
    batch = await client.create((await client.upload(data, filename="f")).id)
    batch = await client.retrieve(batch.id)
    assert batch.status == "expired" and batch.output_file_id and batch.error_file_id
    await client.download(batch.error_file_id, tmp_path / "e.jsonl")
    (line,) = (tmp_path / "e.jsonl").read_bytes().splitlines()
    out = parse_output_line(line, "e.jsonl:1")
    assert (out.custom_id, out.never_ran) == ("b", True)
    await client.aclose()


async def test_a_huge_answer_is_cut_off(
    server: BatchServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jurist.models._openai_batch_client as wire

    client = _client(server)
    uploaded = await client.upload(request_line("a", BODY), filename="f")
    await client.create(uploaded.id)
    monkeypatch.setattr(wire, "MAX_ANSWER_BYTES", 100)
    with pytest.raises(ResponseTooLargeError, match=r"GET .*/v1/batches \(batches\).*passed 100"):
        await client.list()
    assert server.lists == client.max_retries + 1
    await client.aclose()
