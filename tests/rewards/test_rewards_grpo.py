"""jurist's TRL rewards inside the real ``trl`` package: its calling convention and GRPOTrainer.

These import trl (and so torch and transformers), which takes a few seconds once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jurist.errors import APIConnectionError
from jurist.models import MockModel
from jurist.rewards import (
    RewardBackend,
    trl_group_reward_func_async,
    trl_reward_func,
    trl_reward_func_async,
)
from jurist.types import Request

Q = "What is the capital of France?"


def _judge(by_response: dict[str, Any]) -> tuple[MockModel, set[int]]:
    """A judge answering by the completion in its prompt, recording the loops it ran on."""
    loops: set[int] = set()

    def answer(request: Request) -> Any:
        loops.add(id(asyncio.get_running_loop()))
        text = request.messages[-1].content
        assert isinstance(text, str)
        response = text.split("<response>")[-1]
        return next(out for key, out in by_response.items() if key in response)

    return MockModel("judge", outputs=answer), loops


def test_async_variant_under_trls_calling_convention() -> None:
    from trl.trainer.utils import (
        get_callable_name,
        is_async_callable,
        shutdown_event_loop_in_daemon,
        start_event_loop_in_daemon,
    )

    model, loops = _judge({"good": "Score: 0.75", "broken": APIConnectionError("down")})
    fn = trl_reward_func_async(llm_backend=RewardBackend(model), failure_value=None)
    sync_fn = trl_reward_func(llm_backend=RewardBackend(model))
    assert is_async_callable(fn) and not is_async_callable(sync_fn)
    assert get_callable_name(fn) == get_callable_name(sync_fn) == "llm_as_judge_reward"
    sync_fn.close()

    metrics: dict[str, list[float]] = {}
    extra: dict[str, list[Any]] = {}
    # What GRPOTrainer does: one daemon loop for its lifetime; each batch's async rewards
    # are awaited on it through run_coroutine_threadsafe, with these keyword arguments.
    thread, loop, ready = start_event_loop_in_daemon(name="test-trainer-loop")
    ready.wait()
    try:
        for _ in range(2):
            coro = fn(
                prompts=[Q] * 3,
                completions=["good", "broken", "good"],
                completion_ids=[[1], [2], [3]],
                trainer_state=None,
                log_extra=lambda column, values: extra.setdefault(column, []).extend(values),
                log_metric=lambda name, value: metrics.setdefault(name, []).append(value),
                answer=["Paris"] * 3,
            )
            out = asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=10)
            assert out == [0.75, None, 0.75]
    finally:
        shutdown_event_loop_in_daemon(thread, loop)
    assert loops == {id(loop)}
    assert metrics["llm_as_judge_reward/failed"] == [1 / 3, 1 / 3]
    assert extra["llm_as_judge_reward/error"][1] == "connection: down"


# trl 1.16 still calls transformers 5's deprecated gradient_checkpointing names.
@pytest.mark.filterwarnings("ignore:`(is_)?gradient_checkpointing.*` is deprecated:FutureWarning")
def test_grpo_trainer_two_steps_on_the_tiny_model(tiny_model_dir: Path, tmp_path: Path) -> None:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    sync_judge, sync_loops = _judge({"": "Score: 0.25"})
    async_judge, async_loops = _judge({"": "Score: 0.75"})
    sync_fn = trl_reward_func(llm_backend=RewardBackend(sync_judge), name="judge_sync")
    async_fn = trl_reward_func_async(llm_backend=RewardBackend(async_judge), name="judge_async")
    # a groupwise reward: the 2 completions of each prompt compared, both orders (all ties)
    group_fn = trl_group_reward_func_async(
        name="rank", model="mock:grpo-pairs", outputs=["[[C]]"], cycle=True
    )
    data = Dataset.from_dict(
        {
            "prompt": [[{"role": "user", "content": Q}], [{"role": "user", "content": "2+2?"}]],
            "answer": ["Paris", "4"],
        }
    )
    config = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        max_steps=2,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=4,
        logging_steps=1,
        learning_rate=1e-4,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        eval_strategy="no",
        log_completions=False,
        dataloader_num_workers=0,
        seed=0,
        gradient_checkpointing=False,
    )
    policy = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    trainer = GRPOTrainer(
        model=policy,
        reward_funcs=[sync_fn, async_fn, group_fn],
        args=config,
        train_dataset=data,
        processing_class=tokenizer,
    )
    try:
        trainer.train()
    finally:
        sync_fn.close()
    steps = [log for log in trainer.state.log_history if "rewards/judge_sync/mean" in log]
    assert len(steps) == 2
    for log in steps:
        assert log["rewards/judge_sync/mean"] == 0.25
        assert log["rewards/judge_async/mean"] == 0.75
        assert log["rewards/rank/mean"] == 0.5
        assert log["rank/inconsistent"] == 0.0 and log["rank/failed"] == 0.0
        assert log["reward"] == 1.5
        assert log["judge_sync/failed"] == 0.0 and log["judge_async/parse_failed"] == 0.0
    # 2 steps x 2 completions each, every one judged, each reward on one loop throughout.
    assert sync_judge.calls == async_judge.calls == 4
    assert len(sync_loops) == 1 and len(async_loops) == 1 and sync_loops != async_loops


# trl 1.16 still calls transformers 5's deprecated gradient_checkpointing names.
@pytest.mark.filterwarnings("ignore:`(is_)?gradient_checkpointing.*` is deprecated:FutureWarning")
def test_grpo_with_an_openai_backend_given_base_url(
    tiny_model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 31, item 20: ``RewardBackend("openai:...", base_url=...)`` reaches a local
    OpenAI-compatible server (two real GRPO steps), and the judge's decision to stop
    asking for JSON (the server answers text) is recorded, logged as info, not a warning."""
    import logging

    from aiohttp import web
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from tests._fault_server import _completion
    from tests._loopback import Loopback

    seen: list[dict[str, Any]] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body)
        return web.json_response(_completion(body, "Score: 0.5"))

    with Loopback(handle, shutdown_timeout=0.5) as server:
        backend = RewardBackend("openai:judge", base_url=server.base_url, api_key="x")
        fn = trl_reward_func_async(llm_backend=backend, name="served")
        data = Dataset.from_dict(
            {"prompt": [[{"role": "user", "content": Q}]] * 2, "answer": ["Paris", "Paris"]}
        )
        config = GRPOConfig(
            output_dir=str(tmp_path / "grpo"),
            max_steps=2,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=4,
            logging_steps=1,
            report_to="none",
            use_cpu=True,
            save_strategy="no",
            eval_strategy="no",
            log_completions=False,
            dataloader_num_workers=0,
            seed=0,
            gradient_checkpointing=False,
        )
        trainer = GRPOTrainer(
            model=AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)),
            reward_funcs=[fn],
            args=config,
            train_dataset=data,
            processing_class=AutoTokenizer.from_pretrained(str(tiny_model_dir)),
        )
        with caplog.at_level(logging.INFO, logger="jurist"):
            trainer.train()
    steps = [log for log in trainer.state.log_history if "rewards/served/mean" in log]
    assert [log["rewards/served/mean"] for log in steps] == [0.5, 0.5]
    assert len(seen) == 4 and all(b["model"] == "judge" for b in seen)
    jurist_records = [r for r in caplog.records if r.name.startswith("jurist")]
    assert not [r.getMessage() for r in jurist_records if r.levelno >= logging.WARNING]
    decided = [r for r in jurist_records if "in a row with text" in r.getMessage()]
    assert len(decided) == 1 and decided[0].levelno == logging.INFO


def test_reward_backend_options_need_a_spec() -> None:
    from jurist.errors import ConfigError

    with pytest.raises(ConfigError, match=r"options \['base_url'\] cannot be applied"):
        RewardBackend(MockModel("j"), base_url="http://127.0.0.1:1/v1")
