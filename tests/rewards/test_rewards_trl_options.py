"""TRL rewards whose judge is built from options (model=, template=, rpm=...), as verl's is."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Iterator
from typing import Any

import pytest

from jurist.errors import ConfigError
from jurist.models import MockModel
from jurist.rewards import (
    RewardBackend,
    reward,
    reward_judge_from_kwargs,
    trl_reward_func,
    trl_reward_func_async,
)
from tests._fault_server import FaultServer, ok

PARIS = [[{"role": "assistant", "content": "Paris"}], [{"role": "assistant", "content": "Lyon"}]]


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv


def test_options_build_the_shared_cached_judge() -> None:
    fn = trl_reward_func(model="mock:trl-opt-a", outputs=["Score: 0.8"], cycle=True)
    try:
        assert fn(completions=PARIS, answer=["Paris", "Paris"]) == [0.8, 0.8]
        # the same RewardJudge verl's batch_compute_score and the reward server get
        same = reward_judge_from_kwargs(
            model="mock:trl-opt-a",
            outputs=["Score: 0.8"],
            cycle=True,
            concurrency=256,
            retries=0,
            failure_value=0.0,
            tolerance=0.05,
        )
        assert fn._reward_judge is same
    finally:
        fn.close()


def test_failures_keep_failure_value_and_log_flags() -> None:
    logged: dict[str, Any] = {}
    fn = trl_reward_func(
        model="mock:trl-opt-b", outputs=["no verdict here"], cycle=True, failure_value=None
    )
    try:
        out = fn(
            completions=PARIS,
            answer=["Paris", "Paris"],
            log_extra=lambda column, values: logged.__setitem__(column, values),
            log_metric=lambda name, value: logged.__setitem__(name, value),
        )
    finally:
        fn.close()
    assert out == [None, None]
    assert logged["llm_as_judge_reward/failed"] == 1.0
    assert logged["llm_as_judge_reward/parse_failed"] == 1.0
    assert all(e.startswith("parse") for e in logged["llm_as_judge_reward/error"])


def test_http_judge_from_options_one_loop_and_pickles(server: FaultServer) -> None:
    fn = trl_reward_func(
        model="openai:trl-opt-c", base_url=server.url, api_key="k", max_retries=0, rpm=6000
    )
    server.script(ok("Score: 0.6"), ok("Score: 0.7"))
    try:
        assert fn(completions=["Paris"], answer=["Paris"]) == [0.6]
        loop = fn.loop
        assert fn(completions=["Paris"], answer=["Paris"]) == [0.7]
        assert fn.loop is loop is not None
    finally:
        fn.close()
    copy = pickle.loads(pickle.dumps(fn))
    assert copy.loop is None and copy.judge_options == fn.judge_options
    server.script(ok("Score: 0.4"))
    try:
        assert copy(completions=["Lyon"], answer=["Paris"]) == [0.4]
    finally:
        copy.close()
    assert [b["model"] for b in server.bodies] == ["trl-opt-c"] * 3


def test_async_variant_takes_the_same_options() -> None:
    afn = trl_reward_func_async(model="mock:trl-opt-d", outputs=["Score: 0.3"], cycle=True)
    assert asyncio.run(afn(completions=PARIS, answer=["Paris", "Paris"])) == [0.3, 0.3]


def test_option_errors_name_the_option() -> None:
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['modle'\]"):
        trl_reward_func(modle="mock:x")  # type: ignore[call-arg]
    backend = RewardBackend(MockModel("j", outputs=["Score: 1"]))
    with pytest.raises(ConfigError, match=r"llm_backend= or the judge options \['model'\]"):
        trl_reward_func(model="mock:x", llm_backend=backend)

    @reward(name="trl_opt_other", overwrite=True)
    def other(prediction: str, golden_answer: str, llm_backend: Any = None) -> float:
        return 1.0

    with pytest.raises(ConfigError, match="'trl_opt_other' takes llm_backend="):
        trl_reward_func("trl_opt_other", model="mock:x")
    with pytest.raises(ConfigError, match="rpm must be a number"):
        trl_reward_func(model="mock:x", rpm="fast")  # type: ignore[arg-type]
