"""jurist's verl rewards as verl 0.9.1 calls them.

The first test calls ``batch_compute_score`` exactly the way
``verl.workers.reward_manager.batch.BatchRewardManager.verify`` does (copied from verl
0.9.1's source) and reads the result the way its ``__call__`` does; it runs without verl.
The others import verl's own managers and feed them jurist's functions; they are skipped
when verl is not installed (it is not a dependency; ``pip install verl==0.9.1`` installs
and imports on CPU).
"""

from __future__ import annotations

import asyncio
import inspect
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jurist.rewards import batch_compute_score
from tests.rewards.test_rewards_batch import ScoreServer


@pytest.fixture(scope="module")
def server() -> Iterator[ScoreServer]:
    with ScoreServer() as s:
        yield s


def reward_kwargs(server: ScoreServer) -> dict[str, Any]:
    return {
        "model": "openai:x",
        "base_url": server.url,
        "api_key": "k",
        "max_retries": 0,
        "concurrency": 8,
    }


TEXTS = ["good", "api-fail", "garbage", "hair"]
SCORES = [0.9, 0.0, 0.0, 1.0]


def test_called_like_verl_batch_reward_manager(server: ScoreServer) -> None:
    # BatchRewardManager.verify, verl 0.9.1: the non-tensor columns are numpy object arrays
    data_sources = np.array(["gsm8k"] * 4, dtype=object)
    responses_str = list(TEXTS)
    reward_model = [{"ground_truth": "42"} for _ in TEXTS]
    ground_truths = [rm.get("ground_truth") for rm in reward_model]
    rollout_reward_scores: list[dict[str, Any]] = [{} for _ in TEXTS]
    extras = np.array([{"question": "6*7?"} for _ in TEXTS], dtype=object)
    for i in range(len(TEXTS)):
        extras[i]["rollout_reward_scores"] = rollout_reward_scores[i]
    compute_score = batch_compute_score
    self_reward_kwargs = reward_kwargs(server)
    scores = compute_score(
        data_sources=data_sources,
        solution_strs=responses_str,
        ground_truths=ground_truths,
        extra_infos=extras,
        **self_reward_kwargs,
    )
    # BatchRewardManager.__call__
    rewards = []
    reward_extra_info: dict[str, list[Any]] = defaultdict(list)
    for i in range(len(TEXTS)):
        score = scores[i]
        assert isinstance(score, dict)
        rewards.append(score["score"])
        for key, value in score.items():
            reward_extra_info[key].append(value)
    assert rewards == SCORES
    assert reward_extra_info["failed"] == [0.0, 1.0, 1.0, 0.0]
    assert reward_extra_info["parse_failed"] == [0.0, 0.0, 1.0, 0.0]
    assert reward_extra_info["clamped"] == [0.0, 0.0, 0.0, 1.0]
    assert reward_extra_info["raw_score"] == [0.9, None, None, 1.03]


# -- with verl installed -----------------------------------------------------------------


class CharTokenizer:
    """Token ids are character codes; 0 is padding."""

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return "".join(chr(int(i)) for i in ids if int(i) != 0)


def make_batch(texts: list[str]) -> Any:
    torch = pytest.importorskip("torch")
    from verl import DataProto

    width = max(len(t) for t in texts)
    prompts = torch.full((len(texts), 2), ord("q"))
    responses = torch.zeros((len(texts), width), dtype=torch.long)
    mask = torch.zeros((len(texts), 2 + width), dtype=torch.long)
    mask[:, :2] = 1
    for i, t in enumerate(texts):
        responses[i, : len(t)] = torch.tensor([ord(c) for c in t])
        mask[i, 2 : 2 + len(t)] = 1
    n = len(texts)
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask},
        non_tensors={
            "data_source": np.array(["gsm8k"] * n, dtype=object),
            "reward_model": np.array([{"ground_truth": "42"} for _ in texts], dtype=object),
            "extra_info": np.array([{"question": "6*7?"} for _ in texts], dtype=object),
        },
    )


def load_from_config(tmp_path: Path, name: str, kwargs: dict[str, Any]) -> Any:
    """The reward function the way verl's ``get_custom_reward_fn`` loads it from config."""
    pytest.importorskip("verl")
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    path = tmp_path / "my_reward.py"
    path.write_text(f"from jurist.rewards import {name}\n")
    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {"path": str(path), "name": name, "reward_kwargs": kwargs}
            }
        }
    )
    return get_custom_reward_fn(config)


def test_verl_batch_reward_manager(server: ScoreServer, tmp_path: Path) -> None:
    fn = load_from_config(tmp_path, "batch_compute_score", reward_kwargs(server))
    from verl.workers.reward_manager.batch import BatchRewardManager

    manager = BatchRewardManager(tokenizer=CharTokenizer(), num_examine=0, compute_score=fn)
    out = manager(make_batch(TEXTS), return_dict=True)
    tensor = out["reward_tensor"]
    lengths = [len(t) for t in TEXTS]
    assert [float(tensor[i, lengths[i] - 1]) for i in range(4)] == pytest.approx(SCORES)
    assert float(tensor.sum()) == pytest.approx(sum(SCORES))
    info = out["reward_extra_info"]
    assert info["failed"] == [0.0, 1.0, 1.0, 0.0]
    assert info["raw_score"] == [0.9, None, None, 1.03]


def test_verl_reward_loop_awaits_the_async_form(server: ScoreServer, tmp_path: Path) -> None:
    fn = load_from_config(tmp_path, "compute_score_async", reward_kwargs(server))
    assert inspect.iscoroutinefunction(fn)
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager

    data = make_batch(TEXTS)

    async def run() -> list[dict[str, Any]]:
        manager = NaiveRewardManager(config=None, tokenizer=CharTokenizer(), compute_score=fn)
        assert manager.is_async_reward_score
        # RewardLoopWorker.compute_score_batch: one task per sample, gathered
        tasks = [asyncio.create_task(manager.run_single(data[i : i + 1])) for i in range(4)]
        return list(await asyncio.gather(*tasks))

    outputs = asyncio.run(run())
    assert [o["reward_score"] for o in outputs] == SCORES
    assert [o["reward_extra_info"]["parse_failed"] for o in outputs] == [0.0, 0.0, 1.0, 0.0]
    # verl's reward loop builds each extra column from the first sample's keys
    keys = list(outputs[0]["reward_extra_info"])
    assert np.array([o["reward_extra_info"][k] for o in outputs for k in keys]).shape == (20,)
