"""jurist's rewards through verl 0.9.1's reward loop, as its trainer builds it.

The trainer's config is composed by hydra from verl's own ``ppo_trainer.yaml`` (the
overrides a user passes on the command line), the reward manager is resolved the way
``RewardLoopManager`` resolves it, and verl's own ``RewardLoopWorker`` (the class each
Ray reward worker runs) scores a real ``DataProto``: rollouts tokenised by a tiny local
tokenizer, judged by a loopback judge server (:class:`tests.rewards.test_rewards_batch.ScoreServer`:
``good`` -> ``Score: 0.9``, ``api-fail`` -> HTTP 500, ``garbage`` -> no score, ``hair`` ->
``Score: 1.03``). verl is not a jurist dependency: CI installs it (``.ci/run``); without
it the verl tests skip and the router tests at the end still run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jurist.errors import ConfigError
from jurist.rewards._verl import router_kwargs
from tests.rewards.test_rewards_batch import ScoreServer

TEXTS = ["good", "api-fail", "garbage", "hair"]
SCORES = [0.9, 0.0, 0.0, 1.0]


@pytest.fixture(scope="module")
def server() -> Iterator[ScoreServer]:
    with ScoreServer(delay=0.05) as s:
        yield s


@pytest.fixture
def verl() -> Any:
    """verl, or a skip when it is not installed (CI installs it)."""
    return pytest.importorskip("verl")


def trainer_config(
    tmp_path: Path, tokenizer_dir: Path, overrides: list[str], name: str = "compute_score_async"
) -> Any:
    """verl's PPO trainer config as ``python -m verl.trainer.main_ppo ...`` composes it."""
    import verl
    from hydra import compose, initialize_config_dir

    reward_file = tmp_path / "my_reward.py"
    reward_file.write_text(f"from jurist.rewards import {name}\n")
    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(
            "ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={tokenizer_dir}",
                f"reward.custom_reward_function.path={reward_file}",
                f"reward.custom_reward_function.name={name}",
                *overrides,
            ],
        )


def judge_overrides(server: ScoreServer, concurrency: int = 8) -> list[str]:
    kw = "+reward.custom_reward_function.reward_kwargs"
    return [
        f"{kw}.model=openai:x",
        f"{kw}.base_url={server.url}",
        f"{kw}.api_key=k",
        f"{kw}.max_retries=0",
        f"{kw}.concurrency={concurrency}",
    ]


def rollouts(tokenizer: Any, texts: list[str], infos: list[dict[str, Any]] | None = None) -> Any:
    """A ``DataProto`` as verl's rollout hands it to the reward loop (right-padded)."""
    import torch
    from verl import DataProto

    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    for t, i in zip(texts, ids, strict=True):
        assert tokenizer.decode(i, skip_special_tokens=True) == t
    n, width = len(texts), max(len(i) for i in ids)
    responses = torch.zeros((n, width), dtype=torch.long)
    mask = torch.zeros((n, 2 + width), dtype=torch.long)
    mask[:, :2] = 1
    for row, i in enumerate(ids):
        responses[row, : len(i)] = torch.tensor(i)
        mask[row, 2 : 2 + len(i)] = 1
    return DataProto.from_dict(
        tensors={
            "prompts": torch.ones((n, 2), dtype=torch.long),
            "responses": responses,
            "attention_mask": mask,
        },
        non_tensors={
            "data_source": np.array(["gsm8k"] * n, dtype=object),
            "reward_model": np.array([{"ground_truth": "42"} for _ in texts], dtype=object),
            "extra_info": np.array(infos or [{"question": "6*7?"} for _ in texts], dtype=object),
        },
    )


def score(worker: Any, data: Any) -> list[dict[str, Any]]:
    """What a Ray reward worker runs: ``compute_score_batch`` on the worker's loop."""
    return list(worker.loop.run_until_complete(worker.compute_score_batch(data)))


def test_reward_loop_worker_scores_with_compute_score_async(
    verl: Any, server: ScoreServer, tmp_path: Path, tiny_model_dir: Path
) -> None:
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    config = trainer_config(tmp_path, tiny_model_dir, judge_overrides(server))
    worker = RewardLoopWorker(config)
    assert type(worker.reward_manager).__name__ == "NaiveRewardManager"
    assert worker.reward_manager.is_async_reward_score  # awaited, not run in threads
    out = score(worker, rollouts(worker.input_tokenizer, TEXTS))
    assert [o["reward_score"] for o in out] == SCORES
    extras = [o["reward_extra_info"] for o in out]
    assert [e["failed"] for e in extras] == [0.0, 1.0, 1.0, 0.0]
    assert [e["parse_failed"] for e in extras] == [0.0, 0.0, 1.0, 0.0]
    assert [e["raw_score"] for e in extras] == [0.9, None, None, 1.03]
    # RewardLoopManager.compute_rm_score builds each extra column from the first keys
    assert all(list(e) == list(extras[0]) for e in extras)


def test_worker_samples_share_one_judge_bound_and_pool(
    verl: Any, server: ScoreServer, tmp_path: Path, tiny_model_dir: Path
) -> None:
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    config = trainer_config(tmp_path, tiny_model_dir, judge_overrides(server, concurrency=4))
    worker = RewardLoopWorker(config)
    texts = [f"good {i}" for i in range(24)]
    server.reset()
    out = score(worker, rollouts(worker.input_tokenizer, texts))
    assert [o["reward_score"] for o in out] == [0.2] * 24  # "good N" -> Score: 0.2
    assert len(server.bodies) == 24
    # 24 samples gathered at once, at most 4 judgments in flight, over at most 4 connections
    assert server.peak == 4
    assert len(server.peers) <= 4
    again = score(worker, rollouts(worker.input_tokenizer, texts[:8]))
    assert len(again) == 8
    assert len(server.peers) <= 4  # the next batch reuses the pool


def test_verl_reward_router_is_the_judge_endpoint(
    verl: Any, server: ScoreServer, tmp_path: Path, tiny_model_dir: Path
) -> None:
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    # verl runs its own reward servers: no base_url or model in reward_kwargs
    config = trainer_config(
        tmp_path,
        tiny_model_dir,
        [
            "reward.reward_model.enable=True",
            f"reward.reward_model.model_path={tiny_model_dir}",
            "+reward.custom_reward_function.reward_kwargs.max_retries=0",
        ],
    )
    worker = RewardLoopWorker(config, reward_router_address=f"127.0.0.1:{server.port}")
    server.reset()
    out = score(worker, rollouts(worker.input_tokenizer, TEXTS))
    assert [o["reward_score"] for o in out] == SCORES
    assert {b["model"] for b in server.bodies} == {str(tiny_model_dir)}
    assert len(server.bodies) == 4


def test_trainer_resolves_reward_loop_managers_only(
    verl: Any, tmp_path: Path, tiny_model_dir: Path
) -> None:
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    naive = trainer_config(tmp_path, tiny_model_dir, [])
    assert resolve_reward_manager_cls(naive).__name__ == "NaiveRewardManager"
    limited = trainer_config(tmp_path, tiny_model_dir, ["reward.reward_manager.name=rate_limited"])
    assert resolve_reward_manager_cls(limited).__name__ == "RateLimitedRewardManager"
    # max_concurrent is not a RewardConfig field: it defaults to 1 unless set with '+'
    assert limited.reward.get("max_concurrent", 1) == 1
    batch = trainer_config(tmp_path, tiny_model_dir, ["reward.reward_manager.name=batch"])
    with pytest.raises(ValueError, match="Unknown reward manager: batch"):
        resolve_reward_manager_cls(batch)


def test_reward_loop_worker_ranks_each_group(
    verl: Any, tmp_path: Path, tiny_model_dir: Path
) -> None:
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    from tests.rewards.test_rewards_group import PairServer

    kw = "+reward.custom_reward_function.reward_kwargs"
    with PairServer() as pairs:
        overrides = [
            f"{kw}.model=openai:pair",
            f"{kw}.base_url={pairs.url}",
            f"{kw}.api_key=k",
            f"{kw}.max_retries=0",
            f"{kw}.group_size=4",
        ]
        config = trainer_config(tmp_path, tiny_model_dir, overrides, "group_compute_score_async")
        worker = RewardLoopWorker(config)
        # two prompts, each rolled out 4 times (verl repeats a prompt's rows together);
        # verl's example data keeps the prompt's index in extra_info
        quality = [3, 1, 4, 2, 2, 4, 1, 3]
        infos = [{"index": k // 4, "question": f"task {k // 4}"} for k in range(8)]
        texts = [f"attempt {k} q={q}" for k, q in enumerate(quality)]
        out = score(worker, rollouts(worker.input_tokenizer, texts, infos))
        assert pairs.calls == 2 * 6 * 2  # 6 pairs per group, both orders
    scores = [o["reward_score"] for o in out]
    assert scores == [(q - 1) / 3 for q in quality]
    extras = [o["reward_extra_info"] for o in out]
    assert all(e["group_incomplete"] == 0.0 and e["pairs"] == 3.0 for e in extras)


# -- verl's router address, without verl -----------------------------------------------


def test_router_address_takes_the_model_name_from_the_tokenizer() -> None:
    class Tok:
        name_or_path = "/models/genrm-7b"

    kw = router_kwargs({"concurrency": 64}, "10.0.0.5:30000", Tok())
    assert kw == {
        "concurrency": 64,
        "model": "openai:/models/genrm-7b",
        "base_url": "http://10.0.0.5:30000/v1",
    }
    assert router_kwargs({"model": "judge"}, "http://h:1/", None)["base_url"] == "http://h:1/v1"


def test_router_address_with_a_second_endpoint_is_refused() -> None:
    with pytest.raises(ConfigError, match="one judge takes one endpoint"):
        router_kwargs({"base_url": "http://127.0.0.1:8000/v1"}, "h:1", None)
    with pytest.raises(ConfigError, match="speaks the OpenAI API"):
        router_kwargs({"model": "hf:Qwen/Qwen2.5-0.5B-Instruct"}, "h:1", None)
    with pytest.raises(ConfigError, match="no model name"):
        router_kwargs({}, "h:1", None)
