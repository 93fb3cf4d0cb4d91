"""Anthropic's Message Batches through the batcher: the second provider is one module
(issue 20, item 4), against the fake server of its documented endpoints."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.engines import BatchAPIEngine, BatchAPIOptions
from jurist.models._anthropic import AnthropicModel
from jurist.runs import Run
from tests._anthropic_batch_server import AnthropicBatchServer, BatchKnobs

ITEMS = [{"prompt": f"What is {i}+{i}?", "response": str(2 * i + (i % 3 == 0))} for i in range(6)]
FAST = BatchAPIOptions(poll_interval=0.01)
KEY = "sk-ant-test"


def right_or_wrong(params: dict[str, Any]) -> str:
    text = params["messages"][-1]["content"]
    for i in range(len(ITEMS)):
        if f"What is {i}+{i}?" in text:
            return "Correct" if f"\n{2 * i}\n" in text else "Incorrect"
    return "Incorrect"


@pytest.fixture()
def server() -> Iterator[AnthropicBatchServer]:
    with AnthropicBatchServer(delay=0.02, answer=right_or_wrong, api_key=KEY) as s:
        yield s


def judge_of(server: AnthropicBatchServer) -> jurist.LLMJudge:
    model = jurist.get_model("anthropic:claude-test", base_url=server.base_url, api_key=KEY)
    return jurist.LLMJudge(model)


def scores(run: Run) -> list[float | None]:
    return [r["judge_score"] for r in run.records()]


def ids_by_item(server: AnthropicBatchServer) -> list[str]:
    return sorted(server.submissions, key=lambda c: int(c.split("-")[0]))


def test_a_judge_runs_through_message_batches_as_it_runs_live(
    server: AnthropicBatchServer, tmp_path: Path
) -> None:
    judge = judge_of(server)
    live = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "live")
    assert server.live_calls == len(ITEMS) and server.creations == 0
    batch = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "batch", engine=BatchAPIEngine(FAST))
    summary = batch.summary()
    assert summary.status == "complete" and summary.failed == 0
    assert server.live_calls == len(ITEMS) and server.creations == 1
    assert len(server.submissions) == len(ITEMS) and set(server.submissions.values()) == {1}
    assert summary.batch_calls == summary.calls == len(ITEMS)
    assert scores(batch) == scores(live) and {0.0, 1.0} <= set(scores(live))
    assert server.downloads == 1


def test_expired_and_errored_lines_become_failures_with_reasons(
    server: AnthropicBatchServer, tmp_path: Path
) -> None:
    judge = judge_of(server)
    jurist.evaluate(ITEMS[:3], judge, run_dir=tmp_path / "probe", engine=BatchAPIEngine(FAST))
    expired, errored, _ = ids_by_item(server)
    server.next_batch(BatchKnobs(expire={expired}, errors={errored: "invalid_request_error"}))
    options = BatchAPIOptions(poll_interval=0.01, on_expired="error")
    run = jurist.evaluate(
        ITEMS[:3], judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(options)
    )
    rows = list(run.records())
    assert rows[0]["judge_score"] is None and rows[1]["judge_score"] is None
    assert "expired before this request ran" in rows[0]["judge_error"]
    assert rows[1]["judge_error"].startswith("api: ") and "HTTP 400" in rows[1]["judge_error"]
    assert (
        f"invalid_request_error: test invalid_request_error for {errored}"
        in (rows[1]["judge_error"])
    )
    assert rows[2]["judge_score"] is not None
    assert run.summary().failed == 2


def test_expired_and_overloaded_lines_are_sent_again(
    server: AnthropicBatchServer, tmp_path: Path
) -> None:
    judge = judge_of(server)
    jurist.evaluate(ITEMS[:3], judge, run_dir=tmp_path / "probe", engine=BatchAPIEngine(FAST))
    expired, overloaded, other = ids_by_item(server)
    server.next_batch(BatchKnobs(expire={expired}, errors={overloaded: "overloaded_error"}))
    run = jurist.evaluate(ITEMS[:3], judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))
    rows = list(run.records())
    assert all(r["judge_score"] is not None for r in rows)
    assert server.creations == 3  # the probe, the round, the round of the two sent again
    assert (server.submissions[expired], server.submissions[overloaded]) == (3, 3)
    assert server.submissions[other] == 2
    assert rows[1]["judge_attempts"] == 2  # the overloaded line and its resubmission


def test_a_resumed_run_sends_nothing_again(server: AnthropicBatchServer, tmp_path: Path) -> None:
    judge = judge_of(server)
    jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))
    before = (server.creations, server.polls, server.downloads, server.live_calls)
    again = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))
    assert (server.creations, server.polls, server.downloads, server.live_calls) == before
    assert again.summary().status == "complete"


async def test_the_client_creates_polls_cancels_and_reads_results(
    server: AnthropicBatchServer, tmp_path: Path
) -> None:
    server.delay = 60.0  # runs until canceled
    model = AnthropicModel("claude-test", base_url=server.base_url, api_key=KEY)
    hooks = model.batch_hooks()
    request = jurist.types.Request(messages=(jurist.types.Message(role="user", content="q"),))
    path = tmp_path / "requests.jsonl"
    path.write_bytes(b"".join(hooks.line_for(c, hooks.body_for(request)) for c in ("a", "b")))
    client = hooks.client()
    uploaded = await client.upload(path, filename="requests.jsonl")
    batch = await client.create(uploaded.id)
    assert batch.status == "in_progress" and batch.request_counts is not None
    assert batch.request_counts.total == 2
    assert (await client.retrieve(batch.id)).status == "in_progress"
    await client.cancel(batch.id)
    ended = await client.retrieve(batch.id)
    assert ended.status == "cancelled" and ended.output_file_id == batch.id
    await client.download(batch.id, tmp_path / "results.jsonl")
    lines = (tmp_path / "results.jsonl").read_bytes().splitlines()
    outs = [hooks.parse_line(line, f"results.jsonl:{n}") for n, line in enumerate(lines, 1)]
    assert sorted(o.custom_id for o in outs) == ["a", "b"] and all(o.never_ran for o in outs)
    with pytest.raises(jurist.errors.APIStatusError, match="no metadata"):
        await client.list()
    await client.aclose()
    await model.aclose()


async def test_a_wrong_key_is_refused_without_showing_it(
    server: AnthropicBatchServer, tmp_path: Path
) -> None:
    model = AnthropicModel("claude-test", base_url=server.base_url, api_key="sk-ant-wrong-1")
    client = model.batch_client()
    with pytest.raises(jurist.errors.AuthenticationError) as info:
        await client.retrieve("msgbatch_0001")
    assert "sk-ant-wrong-1" not in str(info.value) and "sk-ant-wrong-1" not in repr(client)
    await client.aclose()


def test_a_live_model_keeps_one_pool_per_loop_and_pickles_without_it(
    server: AnthropicBatchServer,
) -> None:
    """Live calls from two event loops each close their pool when their loop ends; a
    pickled copy (a spawned worker's) opens pools of its own."""
    import gc
    import pickle
    import warnings

    from jurist.models._anthropic import AnthropicModel
    from jurist.types import Message, Request

    model = AnthropicModel("claude-test", base_url=server.base_url, api_key=KEY)
    ask = Request(messages=(Message(role="user", content="Is 2+2=4? 4"),), max_tokens=8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            assert asyncio.run(model.complete(ask)).text
            assert model._pools.sessions == {}
        copy = pickle.loads(pickle.dumps(model))
        assert asyncio.run(copy.complete(ask)).text
        gc.collect()
    assert not [w for w in caught if "nclosed" in str(w.message)]
