"""TRL reward functions: batch judging on one event loop, both data formats, async, failures."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Iterator
from typing import Any

import pytest

from jurist.errors import APIConnectionError, DataError
from jurist.models import MockModel, get_model
from jurist.rewards import RewardBackend, trl_reward_func, trl_reward_func_async
from jurist.types import Request
from tests._fault_server import FaultServer, ok, status

Q = "What is the capital of France?"


def _response_of(request: Request) -> str:
    """The completion the judge is asked about (between the template's response tags)."""
    text = request.messages[-1].content
    assert isinstance(text, str)
    return text.split("<response>")[-1]


def _scripted(answers: dict[str, Any], *, latency: float = 0.0) -> tuple[MockModel, dict[str, Any]]:
    """A judge answering by the completion in its prompt; records loops and concurrency."""
    seen: dict[str, Any] = {"loops": set(), "in_flight": 0, "max_in_flight": 0, "prompts": []}

    async def answer(request: Request) -> Any:
        seen["loops"].add(id(asyncio.get_running_loop()))
        prompt = _response_of(request)
        seen["prompts"].append(request.messages[-1].content)
        seen["in_flight"] += 1
        seen["max_in_flight"] = max(seen["max_in_flight"], seen["in_flight"])
        try:
            await asyncio.sleep(latency)
        finally:
            seen["in_flight"] -= 1
        for key, out in answers.items():
            if key in prompt:
                return out
        raise AssertionError(f"no scripted answer for {prompt!r}")

    return MockModel("judge", outputs=answer), seen


@pytest.fixture
def logs() -> dict[str, Any]:
    return {"extra": {}, "metric": {}}


def _trl_kwargs(logs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments GRPOTrainer passes besides prompts, completions and columns."""

    def log_extra(column: str, values: list[Any]) -> None:
        logs["extra"][column] = values

    def log_metric(name: str, value: float) -> None:
        logs["metric"][name] = value

    return {
        "completion_ids": [[1, 2]],
        "trainer_state": object(),
        "log_extra": log_extra,
        "log_metric": log_metric,
    }


def test_one_event_loop_for_the_reward_lifetime() -> None:
    model, seen = _scripted({"Paris": "Score: 1.0", "Lyon": "Score: 0.0"})
    fn = trl_reward_func(llm_backend=RewardBackend(model))
    try:
        for _ in range(3):
            assert fn(completions=["Paris", "Lyon"], answer=["Paris", "Paris"]) == [1.0, 0.0]
        assert len(seen["loops"]) == 1
        assert fn.loop is not None and id(fn.loop) in seen["loops"]
    finally:
        fn.close()
    assert fn.loop is None


def test_the_batch_is_judged_concurrently() -> None:
    model, seen = _scripted({"c": "Score: 0.5"}, latency=0.02)
    fn = trl_reward_func(llm_backend=RewardBackend(model), concurrency=6)
    try:
        out = fn(completions=[f"c{i}" for i in range(10)], answer=["x"] * 10)
    finally:
        fn.close()
    assert out == [0.5] * 10
    assert seen["max_in_flight"] == 6


def test_standard_format_strings() -> None:
    model, seen = _scripted({"Paris": "Score: 0.9", "Nice": "Score: 0.1"})
    fn = trl_reward_func(answer_column="solution", llm_backend=RewardBackend(model))
    try:
        out = fn(prompts=[Q, Q], completions=[" Paris", " Nice"], solution=["Paris", "Paris"])
    finally:
        fn.close()
    assert out == [0.9, 0.1]
    assert all(Q in p for p in seen["prompts"])


def test_conversational_format_messages() -> None:
    model, seen = _scripted({"Paris": "Score: 0.8", "Lyon": "Score: 0.3"})
    fn = trl_reward_func(llm_backend=RewardBackend(model))
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": Q}]
    try:
        out = fn(
            prompts=[prompt, prompt],
            completions=[
                [{"role": "assistant", "content": "Paris"}],
                [{"role": "assistant", "content": "Lyon"}],
            ],
            answer=["Paris", "Paris"],
        )
    finally:
        fn.close()
    assert out == [0.8, 0.3]
    assert all(Q in p and "Be brief." not in p for p in seen["prompts"])


def test_without_the_prompt_the_judge_does_not_see_it() -> None:
    model, seen = _scripted({"Paris": "Score: 0.8"})
    fn = trl_reward_func(llm_backend=RewardBackend(model), include_prompt=False)
    try:
        assert fn(prompts=[Q], completions=["Paris"], answer=["Paris"]) == [0.8]
    finally:
        fn.close()
    assert Q not in seen["prompts"][0]


def _mixed_judge() -> MockModel:
    model, _ = _scripted(
        {
            "good": "Score: 0.75",
            "edge": "Score: 1.03",
            "garbage": "Score: 99",
            "broken": APIConnectionError("judge down", model="mock:judge"),
        }
    )
    return model


MIXED = ["good", "garbage", "edge", "broken"]


@pytest.mark.parametrize("failure_value", [0.0, None, -1.0])
def test_failed_judgments_get_the_failure_value_and_flags(
    failure_value: float | None, logs: dict[str, Any]
) -> None:
    fn = trl_reward_func(llm_backend=RewardBackend(_mixed_judge()), failure_value=failure_value)
    try:
        out = fn(prompts=[Q] * 4, completions=MIXED, answer=["x"] * 4, **_trl_kwargs(logs))
    finally:
        fn.close()
    assert out == [0.75, failure_value, 1.0, failure_value]
    assert logs["extra"]["llm_as_judge_reward/raw_score"] == [0.75, None, 1.03, None]
    errors = logs["extra"]["llm_as_judge_reward/error"]
    assert errors[0] is None and errors[2] is None
    assert errors[1].startswith("parse: 99 is outside [0, 1]")
    assert errors[3] == "connection: judge down"
    assert logs["metric"] == {
        "llm_as_judge_reward/failed": 0.5,
        "llm_as_judge_reward/parse_failed": 0.25,
        "llm_as_judge_reward/clamped": 0.25,
    }


def test_sync_reward_called_inside_a_running_loop() -> None:
    model, _ = _scripted({"good": "Score: 0.5"})
    fn = trl_reward_func(llm_backend=RewardBackend(model))

    async def inside() -> list[float | None]:
        return fn(completions=["good"], answer=["x"])

    try:
        assert asyncio.run(inside()) == [0.5]
    finally:
        fn.close()


def test_empty_batch_judges_nothing() -> None:
    model, seen = _scripted({})
    fn = trl_reward_func_async(llm_backend=RewardBackend(model))
    assert asyncio.run(fn(completions=[], prompts=[], answer=[])) == []
    assert seen["prompts"] == []


def test_bad_inputs_name_the_problem() -> None:
    model, _ = _scripted({})
    fn = trl_reward_func(answer_column="solution", llm_backend=RewardBackend(model))
    try:
        with pytest.raises(DataError, match=r"column 'solution'.*columns given: \['answer'\]"):
            fn(completions=["a"], answer=["b"], log_metric=print)
        with pytest.raises(DataError, match=r"'solution' has 1 values for 2 completions"):
            fn(completions=["a", "b"], solution=["b"])
        with pytest.raises(DataError, match=r"2 prompts for 1 completions"):
            fn(completions=["a"], prompts=[Q, Q], solution=["b"])
        with pytest.raises(DataError, match=r"completions\[1\]: cannot read text from a int"):
            fn(completions=["a", 3], solution=["b", "c"])
    finally:
        fn.close()
    with pytest.raises(ValueError, match="concurrency must be >= 1"):
        trl_reward_func(concurrency=0)


# -- against a local OpenAI-compatible server ---------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv


def test_openai_judge_some_samples_fail(server: FaultServer, logs: dict[str, Any]) -> None:
    model = get_model("openai:judge", base_url=server.url, api_key="k", max_retries=0)
    backend = RewardBackend(model)
    completions = ["Paris", "Lyon", "Marseille", "Nice"]

    def judge_prompt(completion: str) -> str:
        item = {"response": completion, "reference": "Paris", "prompt": Q}
        text = backend.judge.messages(item)[-1].content
        assert isinstance(text, str)
        return text

    scripts = [ok("Score: 0.9"), status(500), ok("no idea"), ok("Score: 0.2")]
    for completion, fault in zip(completions, scripts, strict=True):
        server.script_for(judge_prompt(completion), fault)
    fn = trl_reward_func(llm_backend=backend, failure_value=None)
    before = server.requests
    try:
        out = fn(
            prompts=[Q] * 4, completions=completions, answer=["Paris"] * 4, **_trl_kwargs(logs)
        )
        assert out == [0.9, None, None, 0.2]
        errors = logs["extra"]["llm_as_judge_reward/error"]
        assert errors[0] is None and errors[3] is None
        assert errors[1].startswith("api: ") and "500" in errors[1]
        assert errors[2].startswith("parse: ")
        assert logs["metric"]["llm_as_judge_reward/failed"] == 0.5
        assert logs["metric"]["llm_as_judge_reward/parse_failed"] == 0.25
        # A second step reuses the reward's loop (and so the model's session on it).
        server.script_for(judge_prompt("Paris"), ok("Score: 1.0"))
        assert fn(prompts=[Q], completions=["Paris"], answer=["Paris"]) == [1.0]
        assert len(model._pools.sessions) == 1  # type: ignore[attr-defined]
    finally:
        fn.close()
    assert server.requests - before == 5
    assert model._pools.sessions == {}  # type: ignore[attr-defined]


def test_reward_pickles_for_spawned_workers(server: FaultServer) -> None:
    model = get_model("openai:judge", base_url=server.url, api_key="k", max_retries=0)
    fn = trl_reward_func(llm_backend=RewardBackend(model), name="judge")
    copy = pickle.loads(pickle.dumps(fn))
    assert copy.__name__ == "judge" and copy.target is fn.target and copy.loop is None
    server.script(ok("Score: 0.6"))
    try:
        assert copy(completions=["Paris"], answer=["Paris"]) == [0.6]
        assert copy.loop is not None and fn.loop is None
    finally:
        copy.close()
    afn = pickle.loads(pickle.dumps(trl_reward_func_async(llm_backend=RewardBackend(model))))
    server.script(ok("Score: 0.3"))
    assert asyncio.run(afn(completions=["Lyon"], answer=["Paris"])) == [0.3]
