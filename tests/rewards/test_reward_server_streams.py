"""The reward server for streaming clients: OpenRLHF's one-sample requests, slime's body.

The judge is :class:`tests.rewards.test_reward_server.ScoreServer` on 127.0.0.1 (``score=X`` ->
``Score: X``, ``garbage`` -> no score, ``boom`` -> HTTP 400). OpenRLHF's own client code
(``openrlhf/utils/agent.py`` of openrlhf 0.11.2) is driven when its wheel is at hand
(``$JURIST_OPENRLHF_WHEEL``, which ``.ci/run`` sets); installing openrlhf would pin torch
and vLLM, so only that file (and the logging helper it imports) is loaded from the wheel.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from jurist.rewards._server import RewardService
from tests._openrlhf import openrlhf_agent
from tests.rewards.test_reward_server import ScoreServer, _client, _service


@pytest.fixture(scope="module")
def llm() -> Iterator[ScoreServer]:
    server = ScoreServer().start()
    yield server
    server.stop()


def one_sample(i: int, text: str) -> dict[str, list[str]]:
    """OpenRLHF's body for one rollout: prompt + response as the query, one label."""
    prompt = f"<|user|>question {i}?<|assistant|>"
    return {"query": [prompt + text], "prompts": [prompt], "labels": [str(i)]}


async def test_concurrent_single_sample_requests_are_judged_as_one_batch(
    llm: ScoreServer,
) -> None:
    service = _service(llm, concurrency=4)
    texts = [f"answer {i} score=0.{i % 10}" for i in range(24)]
    # 24 requests of one sample each, arriving together (one event-loop turn)
    requests = [service.openrlhf_items(one_sample(i, t)) for i, t in enumerate(texts)]
    records = await asyncio.gather(*(service.score(items, "/get_reward") for items in requests))
    assert [r[0]["reward"] for r in records] == [(i % 10) / 10 for i in range(24)]
    assert service.batcher.batches == 1
    assert service.batcher.batched_items == 24
    assert service.batcher.peak == 4  # the one bound holds across the batch
    await service.aclose()


async def test_batches_of_requests_share_one_bound(llm: ScoreServer) -> None:
    service = _service(llm, concurrency=3)
    llm.reset()
    first = [service.openrlhf_items(one_sample(i, f"a{i} wait=0.05 score=0.5")) for i in range(6)]
    batch = asyncio.gather(*(service.score(items, "/get_reward") for items in first))
    while service.batcher.batches == 0:  # the first batch goes before the second arrives
        await asyncio.sleep(0.001)
    second = service.jurist_items(
        {"items": [{"response": f"b{i} wait=0.05 score=0.5", "reference": "x"} for i in range(6)]}
    )
    later = service.score(second, "/v1/rewards")
    out, more = await asyncio.gather(batch, later)
    assert [r[0]["reward"] for r in out] + [r["reward"] for r in more] == [0.5] * 12
    assert service.batcher.batches == 2
    assert llm.most_running <= 3
    await service.aclose()


async def test_openrlhf_stream_over_http_keeps_per_sample_flags(llm: ScoreServer) -> None:
    service = _service(llm)
    bodies = [one_sample(0, "score=0.7"), one_sample(1, "garbage"), one_sample(2, "boom")]
    bodies.append({**one_sample(3, "score=0.9"), "labels": [None]})
    async with _client(service) as client:

        async def post(body: dict[str, Any]) -> dict[str, Any]:
            resp = await client.post("/get_reward", json=body)
            assert resp.status == 200  # never a 400 for one bad sample
            return dict(await resp.json())

        out = await asyncio.gather(*(post(b) for b in bodies))
    assert [o["rewards"] for o in out] == [[0.7], [-1.0], [-1.0], [-1.0]]
    assert [o["extra_logs"]["parse_failed"] for o in out] == [[0], [1], [0], [0]]
    assert [o["extra_logs"]["failed"] for o in out] == [[0], [1], [1], [1]]
    assert [o["extra_logs"]["refused"] for o in out] == [[0], [0], [0], [1]]
    assert out[2]["errors"][0].startswith("api:")


async def test_empty_lists_are_answered_with_empty_lists(llm: ScoreServer) -> None:
    service = _service(llm)
    async with _client(service) as client:
        resp = await client.post("/get_reward", json={"query": [], "prompts": [], "labels": []})
        assert resp.status == 200
        body = await resp.json()
        resp = await client.post("/v1/rewards", json={"items": []})
        assert resp.status == 200
        assert await resp.json() == {"rewards": []}
    assert body["rewards"] == [] and body["scores"] == [] and body["errors"] == []
    assert body["extra_logs"] == {
        "parse_failed": [],
        "clamped": [],
        "failed": [],
        "timed_out": [],
        "refused": [],
    }


# -- slime ------------------------------------------------------------------------------


async def slime_remote_rm(session: aiohttp.ClientSession, url: str, sample: Any) -> Any:
    """slime's ``rm_hub.remote_rm``: the body it posts and what it keeps (``resp.json()``)."""
    payload = {"prompt": sample["prompt"], "response": sample["response"], "label": sample["label"]}
    async with session.post(url, json=payload) as resp:
        resp.raise_for_status()
        return await resp.json()


async def test_slime_posts_one_sample_and_reads_the_reward_key(llm: ScoreServer) -> None:
    service = _service(llm)
    samples = [
        {"prompt": "2+2?", "response": "score=0.8", "label": "4"},
        {"prompt": [{"role": "user", "content": "2+2?"}], "response": "score=0.6", "label": 4},
        {"prompt": "2+2?", "response": "garbage", "label": "4"},
        {"prompt": "2+2?", "response": "score=0.9", "label": None},
    ]
    async with _client(service) as client:
        url = str(client.make_url("/slime"))
        async with aiohttp.ClientSession() as session:
            out = await asyncio.gather(*(slime_remote_rm(session, url, s) for s in samples))
        bad = await client.post("/slime", json={"prompt": "q", "response": 3, "label": "4"})
        assert bad.status == 400
        assert "response: expected a string" in (await bad.json())["error"]
    # slime's Sample.get_reward_value with --reward-key reward
    assert [o["reward"] for o in out] == [0.8, 0.6, -1.0, -1.0]
    assert [o["parse_failed"] for o in out] == [0, 0, 1, 0]
    assert [o["refused"] for o in out] == [0, 0, 0, 1]
    assert [o["failed"] for o in out] == [0, 0, 1, 1]
    assert out[3]["error"].startswith("usage: label is null")
    assert out[0]["raw_score"] == 0.8 and out[0]["error"] is None
    assert service.metrics.items["/slime"] == 4


# -- OpenRLHF's own client code ---------------------------------------------------------


async def test_openrlhf_single_turn_executor_streams_to_the_server(
    llm: ScoreServer, tmp_path: Path
) -> None:
    wheel = os.environ.get("JURIST_OPENRLHF_WHEEL")
    if not wheel or not Path(wheel).is_file():
        pytest.skip("set JURIST_OPENRLHF_WHEEL to an openrlhf 0.11.2 wheel (.ci/run does)")
    agent = openrlhf_agent(Path(wheel), tmp_path)
    service: RewardService = _service(llm, concurrency=8)
    async with _client(service) as client:
        url = str(client.make_url("/get_reward"))
        executor = agent.SingleTurnAgentExecutor(remote_rm_url=url)
        bodies = [one_sample(i, f"r{i} score=0.{i % 10}") for i in range(32)]
        # each rollout's execute() calls this with its one query right after generation
        out = await asyncio.gather(
            *(
                executor._fetch_rewards_via_http(b["query"], b["prompts"], b["labels"])
                for b in bodies
            )
        )
        two = agent.SingleTurnAgentExecutor(remote_rm_url=[url, url])
        both = await two._fetch_rewards_via_http(
            ["q a score=0.3", "q b score=0.4"], ["q"] * 2, ["x"] * 2
        )
    assert [o[0]["rewards"] for o in out] == [[(i % 10) / 10] for i in range(32)]
    assert [o[0]["extra_logs"]["failed"] for o in out] == [[0]] * 32
    assert [b["rewards"] for b in both] == [[0.3], [0.4]]  # sharded one per URL
    assert service.batcher.batched_items == 34


async def test_the_listening_socket_queues_a_burst_of_connections() -> None:
    """OpenRLHF opens a connection per sample, hundreds at once: the listen backlog must
    hold them (aiohttp's default of 128 drops the rest, which retry a second later)."""
    import shutil
    import subprocess

    from jurist.judges import LLMJudge
    from jurist.rewards._reward_judge import RewardJudge
    from jurist.rewards._server_app import BACKLOG, serve

    ss = shutil.which("ss")
    if ss is None:
        pytest.skip("needs iproute2's ss to read the listen backlog")
    judge = RewardJudge(LLMJudge("mock:j", outputs=["Score: 0.8"], cycle=True, template="reward"))
    ready = asyncio.Event()
    urls: list[str] = []

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    task = asyncio.ensure_future(serve(RewardService(judge), port=0, on_ready=on_ready))
    try:
        await asyncio.wait_for(ready.wait(), 30)
        port = urls[0].rsplit(":", 1)[1]
        out = subprocess.run(
            [ss, "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
        ).stdout
        somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
        assert int(out.split()[2]) == min(BACKLOG, somaxconn) > 128
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
