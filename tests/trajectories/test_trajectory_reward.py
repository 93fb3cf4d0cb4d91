"""Trajectory rewards over multi-turn rollouts: the registry, and verl's compute_score path
with num_turns and the rollout's messages in extra_info."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jurist.errors import ConfigError, DataError
from jurist.rewards import (
    TrajectoryGate,
    batch_compute_score,
    compute_score_async,
    get_reward_from_name,
)
from jurist.trajectories import load_traces

DATA = Path(__file__).parents[1] / "fixtures" / "traces"
KEYS = {"score", "raw_score", "parse_failed", "clamped", "failed", "checks_passed", "num_turns"}


def _rollouts() -> dict[str, list[dict[str, Any]]]:
    good, hasty = load_traces(DATA / "flights_genai.json")
    return {"good": good.to_messages(), "hasty": hasty.to_messages()}


class Seen:
    """A scripted judge that keeps the prompts it was sent."""

    def __init__(self, verdict: str) -> None:
        self.verdict = verdict
        self.prompts: list[str] = []

    def __call__(self, request: Any) -> str:
        self.prompts.append(request.messages[-1].content)
        return self.verdict


def test_registered_reward_checks_then_judges() -> None:
    fn = get_reward_from_name("trajectory_reward")
    msgs = _rollouts()["good"]
    judge = Seen("5")
    sequence = [{"kind": "tool_sequence", "tools": ["search_flights", "book_flight"]}]
    out = fn(
        "Booked IB3234.", "IB3234", messages=msgs, model="mock:traj-reg", outputs=judge,
        checks=sequence,
    )  # fmt: skip
    assert out["reward"] == 1.0 and out["checks_passed"] and out["error"] is None
    (prompt,) = judge.prompts
    assert "<task>\nBook the cheapest direct flight" in prompt
    assert '-> book_flight({"flight_id": "IB3234", "passengers": 1})' in prompt
    assert "<expected>\nIB3234\n</expected>" in prompt
    # no messages: the rollout's text is judged as it is
    out = fn("search, then book IB3234", None, model="mock:traj-reg", outputs=judge)
    assert out["reward"] == 1.0 and judge.prompts[-1].endswith(
        "<trajectory>\nsearch, then book IB3234\n</trajectory>"
    )


def test_verl_async_path_reads_num_turns_and_messages() -> None:
    rollouts = _rollouts()
    judge = Seen("4")
    kwargs = {
        "model": "mock:traj-verl",
        "outputs": judge,
        "template": "trajectory",
        "checks": [{"kind": "tool_used", "tool": "search_flights"}],
        "max_turns": 8,
    }
    info = {"question": "Book MAD-FCO", "num_turns": np.int64(6),
            "messages": np.array(rollouts["good"], dtype=object)}  # verl's arrays  # fmt: skip
    out = asyncio.run(compute_score_async("flights", "decoded rollout", "IB3234", info, **kwargs))
    assert set(out) == KEYS
    assert out["score"] == 0.75 and out["checks_passed"] == 1.0 and out["num_turns"] == 6.0
    assert judge.prompts[-1].startswith("<task>\nBook MAD-FCO\n</task>")
    hasty = {**info, "messages": rollouts["hasty"]}
    out = asyncio.run(compute_score_async("flights", "decoded", "IB3234", hasty, **kwargs))
    assert out == {"score": 0.0, "raw_score": None, "parse_failed": 0.0, "clamped": 0.0,
                   "failed": 0.0, "checks_passed": 0.0, "num_turns": 6.0}  # fmt: skip
    assert len(judge.prompts) == 1  # a failed check costs no judge call
    long = {**info, "num_turns": 12}
    out = asyncio.run(compute_score_async("flights", "decoded", "IB3234", long, **kwargs))
    assert out["checks_passed"] == 0.0 and out["score"] == 0.0


def test_verl_batch_path_keeps_every_dict_the_same_shape() -> None:
    rollouts = _rollouts()
    judge = Seen("Score: 2")
    infos = [
        {"num_turns": 4, "messages": rollouts["good"]},
        {"num_turns": 2, "messages": rollouts["hasty"]},
        {"num_turns": 3},
    ]
    out = batch_compute_score(["flights"] * 3, ["a", "b", "c"], ["IB3234"] * 3, infos,
                              model="mock:traj-batch", outputs=judge, template="trajectory",
                              min_turns=3, check_failure_value=-1.0)  # fmt: skip
    assert [set(o) for o in out] == [KEYS] * 3
    assert [o["score"] for o in out] == [0.25, -1.0, 0.25]
    assert [o["checks_passed"] for o in out] == [1.0, 0.0, 1.0]
    assert judge.prompts[-1].endswith(
        "<trajectory>\nc\n</trajectory>\n\n<expected>\nIB3234\n</expected>"
    )


def test_checks_without_messages_and_bad_options_are_clear() -> None:
    kwargs = {
        "model": "mock:traj-err",
        "outputs": ["3"],
        "checks": [{"kind": "tool_used", "tool": "x"}],
    }
    with pytest.raises(
        DataError, match=r"compute_score_async \(src\): the checks need the rollout's messages"
    ):
        asyncio.run(compute_score_async("src", "text", "gt", {"num_turns": 2}, **kwargs))
    with pytest.raises(DataError, match="min_turns / max_turns need num_turns"):
        asyncio.run(compute_score_async("src", "t", "gt", {}, model="mock:traj-err", max_turns=3))
    with pytest.raises(
        ConfigError, match=r"trajectory reward: checks\.0\.tool_used\.tool: Field required"
    ):
        TrajectoryGate.pop_from({"checks": [{"kind": "tool_used"}]})
    assert TrajectoryGate.pop_from({"model": "x"}) is None


def test_plain_reward_template_keeps_its_path() -> None:
    """Without a trajectory template or checks, verl's path is unchanged."""
    out = asyncio.run(
        compute_score_async("gsm8k", "42", "42", None, model="mock:plain", outputs=["Score: 1.0"])
    )
    assert set(out) == {"score", "raw_score", "parse_failed", "clamped", "failed"}


def test_every_reward_path_takes_the_trajectory_template() -> None:
    """The batch judge behind TRL, the reward server and verl judges a rollout's text as
    the trajectory when the template reads one."""
    from jurist.rewards import reward_judge_from_kwargs

    judge = Seen("4")
    rj = reward_judge_from_kwargs(model="mock:traj-any", outputs=judge, template="trajectory")
    (record,) = rj.score_batch_sync(["Step 1: searched\nStep 2: Lima"], ["Lima"], ["Peru?"])
    assert (record["reward"], record["raw_score"], record["error"]) == (0.75, 4.0, None)
    assert judge.prompts[-1] == (
        "<task>\nPeru?\n</task>\n\n<trajectory>\nStep 1: searched\nStep 2: Lima\n</trajectory>"
        "\n\n<expected>\nLima\n</expected>"
    )


def test_trl_judges_a_conversational_rollout_as_a_trajectory() -> None:
    from jurist.rewards import trl_reward_func

    judge = Seen("5")
    options: dict[str, Any] = {"outputs": judge}  # the mock model takes a function too
    fn = trl_reward_func(
        answer_column="solution", model="mock:traj-trl", template="trajectory", **options
    )
    try:
        rollout = _rollouts()["good"][2:]  # the assistant turns and tool results after the task
        scores = fn(prompts=[[{"role": "user", "content": "Book MAD-FCO"}]],
                    completions=[rollout], solution=["IB3234"])  # fmt: skip
    finally:
        fn.close()
    assert scores == [1.0]
    prompt = judge.prompts[-1]
    assert prompt.startswith("<task>\nBook MAD-FCO\n</task>\n\n<trajectory>\nStep 1:\n")
    assert '  -> book_flight({"flight_id": "IB3234", "passengers": 1})' in prompt


def test_verl_trajectory_reward_against_a_loopback_judge() -> None:
    """The judge's endpoint receives the rendered rollout: the task, each step's tool call
    with its arguments and its (cut) result, and the expected answer."""
    from aiohttp import web

    from tests._fault_server import _completion
    from tests._loopback import Loopback

    bodies: list[dict[str, Any]] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        bodies.append(body)
        return web.json_response(_completion(body, "4"))

    with Loopback(handle, shutdown_timeout=0.5) as server:
        info = {"question": "Book MAD-FCO", "num_turns": 5, "messages": _rollouts()["good"]}
        out = asyncio.run(
            compute_score_async("flights", "decoded", "IB3234", info, model="openai:traj-judge",
                                base_url=server.base_url, api_key="x", template="trajectory")
        )  # fmt: skip
    assert out["score"] == 0.75 and out["num_turns"] == 5.0
    (body,) = bodies
    assert body["model"] == "traj-judge"
    system, user = body["messages"]
    assert system["role"] == "system" and "grading an AI agent's trajectory" in system["content"]
    assert user["role"] == "user"
    lines = user["content"].splitlines()
    assert lines[:5] == [
        "<task>", "Book MAD-FCO", "</task>", "", "<trajectory>",
    ]  # fmt: skip
    assert lines[5] == "Step 1:" and lines[6].startswith('  -> search_flights({"origin": "MAD"')
    assert lines[7].startswith("  <- {") and lines[7].endswith("more characters]")
    assert user["content"].endswith("</trajectory>\n\n<expected>\nIB3234\n</expected>")
