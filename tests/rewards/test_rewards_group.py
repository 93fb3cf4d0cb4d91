"""Groupwise rewards: the completions of one prompt ranked against each other.

The judge is a loopback OpenAI-compatible server (:class:`PairServer`) that reads the two
answers of a pairwise prompt (``mt_bench_pair``: ``<answer_a>``, ``<answer_b>``); each
planted completion carries its quality as ``q=N``. Its ``mode`` says how it judges:
``fair`` prefers the higher quality (``[[C]]`` for equal); ``close`` is position-biased on
close calls (``[[A]]`` whenever the qualities differ by at most 1); ``first`` always says
``[[A]]``; an answer holding ``boom`` gets HTTP 500.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web

from jurist.errors import ConfigError
from jurist.judges import PairwiseJudge
from jurist.rewards import (
    GroupReward,
    group_reward_from_kwargs,
    trl_group_reward_func,
    trl_group_reward_func_async,
)
from jurist.rewards._group import pair_schedule
from tests._fault_server import _completion
from tests._loopback import Loopback

_A = re.compile(r"<answer_a>\n(.*?)\n</answer_a>", re.S)
_B = re.compile(r"<answer_b>\n(.*?)\n</answer_b>", re.S)
_Q = re.compile(r"q=(\d+)")


class PairServer(Loopback):
    """A pairwise judge server answering from the planted qualities (module doc)."""

    def __init__(self) -> None:
        super().__init__(self._handle)
        self.mode = "fair"
        self.calls = 0
        self._lock = threading.Lock()

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        user = body["messages"][-1]["content"]
        a, b = _A.search(user), _B.search(user)
        assert a is not None and b is not None
        with self._lock:
            self.calls += 1
        if "boom" in a.group(1) or "boom" in b.group(1):
            return web.json_response({"error": {"message": "judge down"}}, status=500)
        qa, qb = (int(_Q.search(m.group(1)).group(1)) for m in (a, b))  # type: ignore[union-attr]
        if self.mode == "first" or (self.mode == "close" and abs(qa - qb) <= 1):
            verdict = "A"
        else:
            verdict = "A" if qa > qb else "B" if qb > qa else "C"
        return web.json_response(_completion(body, f"Both are fine.\n[[{verdict}]]"))


@pytest.fixture(scope="module")
def judge_server() -> Iterator[PairServer]:
    with PairServer() as s:
        yield s


def kwargs(server: PairServer, **extra: Any) -> dict[str, Any]:
    return {
        "model": "openai:pair",
        "base_url": server.url,
        "api_key": "k",
        "max_retries": 0,
        **extra,
    }


PLANTED = [3, 5, 1, 4, 2]  # completion i has quality PLANTED[i]
TEXTS = [f"answer {i}: q={q}" for i, q in enumerate(PLANTED)]


def ranks(values: list[float]) -> list[int]:
    """The rank of each value, 0 = lowest (ties would share, none expected here)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0] * len(values)
    for r, i in enumerate(order):
        out[i] = r
    return out


def test_rewards_rank_the_completions_as_planted(judge_server: PairServer) -> None:
    judge_server.mode, judge_server.calls = "fair", 0
    group = group_reward_from_kwargs(**kwargs(judge_server))
    records = group.score_group_sync(TEXTS, prompt="Write a poem.")
    rewards = [r["reward"] for r in records]
    assert ranks(rewards) == ranks([float(q) for q in PLANTED])
    # the win rate: quality q beats q - 1 of the other 4
    assert rewards == [(q - 1) / 4 for q in PLANTED]
    assert judge_server.calls == 2 * 10  # all 10 pairs, each in both orders
    assert all(r["pairs"] == 4 and r["inconsistent_pairs"] == 0 for r in records)
    assert all(r["error"] is None for r in records)


def test_position_bias_on_close_calls_is_controlled(judge_server: PairServer) -> None:
    judge_server.mode = "close"
    group = group_reward_from_kwargs(**kwargs(judge_server), seed=1)
    records = group.score_group_sync(TEXTS, prompt="Write a poem.")
    rewards = [r["reward"] for r in records]
    # close calls swayed by position become ties: the planted order survives
    assert ranks(rewards) == ranks([float(q) for q in PLANTED])
    assert [r["inconsistent_pairs"] for r in records] == [2, 1, 1, 2, 2]


def test_a_judge_that_follows_position_ranks_nothing(judge_server: PairServer) -> None:
    judge_server.mode = "first"
    model = group_reward_from_kwargs(**kwargs(judge_server), seed=2).judge.model
    records = GroupReward(PairwiseJudge(model)).score_group_sync(TEXTS, prompt="?")
    assert [r["reward"] for r in records] == [0.5] * 5  # every pair a tie, flagged
    assert [r["inconsistent_pairs"] for r in records] == [4] * 5
    # one order only would have ranked by position: the first listed wins everything
    one_order = PairwiseJudge(model, swap=False)
    pairs = pair_schedule(5)
    wins = [0.0] * 5
    for i, j in pairs:
        out = one_order.judge_one_sync(
            {"prompt": "?", "response_a": TEXTS[i], "response_b": TEXTS[j]}
        )
        assert out.score is not None
        wins[i] += out.score
        wins[j] += 1 - out.score
    assert wins == [4.0, 3.0, 2.0, 1.0, 0.0]
    with pytest.raises(ConfigError, match="both orders"):
        GroupReward(one_order)


def test_max_pairs_bounds_the_cost_and_balances_the_pairs(judge_server: PairServer) -> None:
    judge_server.mode, judge_server.calls = "fair", 0
    group = group_reward_from_kwargs(**kwargs(judge_server), max_pairs=8)
    texts = [f"c{i}: q={i}" for i in range(8)]
    records = group.score_group_sync(texts, prompt="?")
    assert judge_server.calls == 16  # 8 pairs, both orders
    assert [r["pairs"] for r in records] == [2] * 8


def test_failed_pairs_are_left_out_and_flagged(judge_server: PairServer) -> None:
    judge_server.mode = "fair"
    group = group_reward_from_kwargs(**kwargs(judge_server), failure_value=-1.0)
    records = group.score_group_sync(["a q=1", "b q=2", "boom q=3"], prompt="?")
    assert [r["reward"] for r in records[:2]] == [0.0, 1.0]  # only their own pair counts
    assert [r["failed_pairs"] for r in records] == [1, 1, 2]
    assert records[2]["reward"] == -1.0
    assert records[2]["error"].startswith("api:")
    alone = group.score_group_sync(["only q=1"], prompt="?")[0]
    assert alone["reward"] == -1.0 and alone["error"] == "group: no pair (a group of one)"


def test_trl_batch_is_grouped_by_prompt(judge_server: PairServer) -> None:
    judge_server.mode = "fair"
    fn = trl_group_reward_func(name="rank", **kwargs(judge_server))
    # GRPOTrainer's batch: each prompt repeated num_generations (3) times, conversational
    prompts = [[{"role": "user", "content": f"task {t}"}] for t in (0, 0, 0, 1, 1, 1)]
    quality = [2, 9, 5, 1, 3, 2]
    completions = [[{"role": "assistant", "content": f"q={q}"}] for q in quality]
    logged: dict[str, float] = {}
    out = fn(
        prompts=prompts,
        completions=completions,
        completion_ids=[[1]] * 6,
        log_metric=lambda k, v: logged.update({k: v}),
    )
    assert out == [0.0, 1.0, 0.5, 0.0, 1.0, 0.5]
    assert logged == {"rank/failed": 0.0, "rank/inconsistent": 0.0}


async def test_trl_async_group_reward(judge_server: PairServer) -> None:
    judge_server.mode = "fair"
    fn = trl_group_reward_func_async(**kwargs(judge_server))
    out = await fn(prompts=["p"] * 3, completions=["q=1", "q=3", "q=2"])
    assert out == [0.0, 1.0, 0.5]


def test_group_options_are_checked(judge_server: PairServer) -> None:
    with pytest.raises(ConfigError, match="max_pairs"):
        group_reward_from_kwargs(**kwargs(judge_server), max_pairs=0)
    with pytest.raises(ConfigError, match="timeout"):
        group_reward_from_kwargs(**kwargs(judge_server), timeout=5)
    with pytest.raises(ConfigError, match="pairwise"):
        group_reward_from_kwargs(**kwargs(judge_server), template="reward")


async def test_reward_server_ranks_groups(judge_server: PairServer) -> None:
    from jurist.rewards import reward_judge_from_kwargs
    from jurist.rewards._server import RewardService
    from tests.rewards.test_reward_server import _client

    judge_server.mode = "fair"
    options = kwargs(judge_server, concurrency=7)  # a judge of its own: the client closes it
    service = RewardService(
        reward_judge_from_kwargs(**options),
        concurrency=7,
        group=group_reward_from_kwargs(**options),
    )
    groups = [
        {"prompt": "task 0", "responses": ["q=2", "q=7", "q=4"]},
        {"prompt": "task 1", "reference": "r", "responses": ["q=1", "q=0"]},
    ]
    async with _client(service) as client:
        resp = await client.post("/v1/group_rewards", json={"groups": groups})
        assert resp.status == 200
        body = await resp.json()
        bad = await client.post("/v1/group_rewards", json={"groups": [{"responses": [1]}]})
        assert bad.status == 400
        assert "groups[0].responses" in (await bad.json())["error"]
        # the sample bound counts the responses of every group (issue 31)
        many = [{"prompt": "t", "responses": ["q=1"] * 50_001}] * 2
        over = await client.post("/v1/group_rewards", json={"groups": many})
        assert over.status == 400
        assert (await over.json())["error"].startswith("groups: 100002 samples in one request")
    assert [g["rewards"] for g in body["groups"]] == [[0.0, 1.0, 0.5], [1.0, 0.0]]
    assert body["groups"][0]["records"][1]["pairs"] == 2


def test_trl_group_reward_pickles_as_its_options(judge_server: PairServer) -> None:
    import pickle

    judge_server.mode = "fair"
    fn = trl_group_reward_func(name="rank", **kwargs(judge_server))
    copy = pickle.loads(pickle.dumps(fn))
    assert copy.__name__ == "rank" and copy.group is fn.group  # the process's cached judge
    assert copy(prompts=["p"] * 2, completions=["q=2", "q=1"]) == [1.0, 0.0]


async def test_verl_samples_meet_their_group_or_are_flagged_short(judge_server: PairServer) -> None:
    from jurist.errors import DataError
    from jurist.rewards import group_compute_score_async

    judge_server.mode = "fair"
    kw = {**kwargs(judge_server), "group_size": 3}
    full = [
        group_compute_score_async("d", f"q={q}", "r", {"uid": "u1", "question": "?"}, **kw)
        for q in (1, 3, 2)
    ]
    # a group of which only 2 of 3 samples ever arrive is judged after group_wait
    short = [
        group_compute_score_async("d", f"q={q}", "r", {"index": 7}, **kw, group_wait=0.05)
        for q in (5, 4)
    ]
    out = await asyncio.gather(*full, *short)
    assert [o["score"] for o in out] == [0.0, 1.0, 0.5, 1.0, 0.0]
    assert [o["group_incomplete"] for o in out] == [0.0, 0.0, 0.0, 1.0, 1.0]
    assert [o["pairs"] for o in out] == [2.0, 2.0, 2.0, 1.0, 1.0]
    with pytest.raises(DataError, match="neither 'uid' nor 'index'"):
        await group_compute_score_async("d", "q=1", "r", {"question": "?"}, **kw)
    with pytest.raises(ConfigError, match="group_size"):
        await group_compute_score_async("d", "q=1", "r", {"uid": 1}, **{**kw, "group_size": 1})
