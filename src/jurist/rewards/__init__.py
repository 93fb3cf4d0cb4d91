"""Rewards for RL loops: a registry of reward functions and the judge-based seed reward.

>>> from jurist.rewards import RewardBackend, get_reward_from_name, list_rewards
>>> from jurist.models import MockModel
>>> "llm_as_judge_reward" in list_rewards()
True
>>> fn = get_reward_from_name("llm_as_judge_reward")
>>> backend = RewardBackend(MockModel("judge", outputs=["Score: 0.95"]))
>>> fn(prediction="Paris is the capital of France", golden_answer="Paris",
...    llm_backend=backend)["reward"]
0.95
"""

from jurist.rewards._adapters import (
    compute_score,
    trl_reward_func,
    trl_reward_func_async,
    verl_compute_score,
)
from jurist.rewards._backend import (
    DEFAULT_JUDGE_MODEL,
    DEFAULT_LLM_CONFIG,
    RewardBackend,
    build_backend,
)
from jurist.rewards._group import GroupReward
from jurist.rewards._group_adapters import (
    AsyncGroupTRLReward,
    GroupTRLReward,
    group_compute_score_async,
    group_reward_from_kwargs,
    trl_group_reward_func,
    trl_group_reward_func_async,
)
from jurist.rewards._judge_reward import (
    DEFAULT_TOLERANCE,
    judgment_to_reward,
    llm_as_judge_reward,
    llm_as_judge_reward_async,
    llm_as_judge_rewards,
    llm_as_judge_rewards_async,
    read_raw_score,
)
from jurist.rewards._registry import (
    RewardFunction,
    UnknownRewardError,
    get_reward_from_name,
    list_rewards,
    register_reward,
    reward,
)
from jurist.rewards._reward_judge import RewardJudge, reward_judge_from_kwargs
from jurist.rewards._trajectory import TrajectoryGate, trajectory_reward
from jurist.rewards._trl import AsyncTRLReward, TRLReward
from jurist.rewards._verl import batch_compute_score, compute_score_async

__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_LLM_CONFIG",
    "DEFAULT_TOLERANCE",
    "AsyncGroupTRLReward",
    "AsyncTRLReward",
    "GroupReward",
    "GroupTRLReward",
    "RewardBackend",
    "RewardFunction",
    "RewardJudge",
    "TRLReward",
    "TrajectoryGate",
    "UnknownRewardError",
    "batch_compute_score",
    "build_backend",
    "compute_score",
    "compute_score_async",
    "get_reward_from_name",
    "group_compute_score_async",
    "group_reward_from_kwargs",
    "judgment_to_reward",
    "list_rewards",
    "llm_as_judge_reward",
    "llm_as_judge_reward_async",
    "llm_as_judge_rewards",
    "llm_as_judge_rewards_async",
    "read_raw_score",
    "register_reward",
    "reward",
    "reward_judge_from_kwargs",
    "trajectory_reward",
    "trl_group_reward_func",
    "trl_group_reward_func_async",
    "trl_reward_func",
    "trl_reward_func_async",
    "verl_compute_score",
]
