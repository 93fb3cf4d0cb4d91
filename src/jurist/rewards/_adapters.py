"""Registered rewards in the call shapes of TRL and verl.

**TRL**: :func:`trl_reward_func` and :func:`trl_reward_func_async` live in
:mod:`jurist.rewards._trl` (batch judging on one event loop; see there) and are re-exported
here.

**verl** (``custom_reward_function.path`` / ``.name`` in its config) calls
``compute_score(data_source, solution_str, ground_truth, extra_info=None, **reward_kwargs)``
and takes a float or a dict with a ``"score"`` key plus extra fields it logs.
:func:`verl_compute_score` builds one over a registered reward; :func:`compute_score` is the
ready-made one for the judge ``reward_kwargs`` describe (see :mod:`jurist.rewards._verl`
for the batch and async forms, which are what a training run should use).

A failed judgment gives ``failure_value`` (0.0 by default, as the reward itself does); with
``failure_value=None`` the TRL function returns ``None`` for it, which TRL skips. The
adapters read ``llm_as_judge_reward`` strictly: a score further than ``tolerance`` (default
0.05) outside [0, 1], or a number that is not the verdict, is a failure; the seed's lenient
clamping (``lenient=True`` on the reward itself) is never used here, since a policy
trained on it learns to make the judge print large numbers.

The TRL functions live in :mod:`jurist.rewards._trl` (examples there); verl's in
:mod:`jurist.rewards._verl`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jurist.models import Model
from jurist.rewards._backend import RewardBackend
from jurist.rewards._judge_reward import (
    DEFAULT_TOLERANCE,
    llm_as_judge_reward,
)
from jurist.rewards._registry import RewardFunction, get_reward_from_name
from jurist.rewards._trl import trl_reward_func, trl_reward_func_async
from jurist.rewards._verl import batch_compute_score, verl_record

__all__ = ["compute_score", "trl_reward_func", "trl_reward_func_async", "verl_compute_score"]

Backend = RewardBackend | Model | str | None


def verl_compute_score(
    reward_name: str = "llm_as_judge_reward",
    *,
    failure_value: float = 0.0,
    llm_backend: Backend = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Callable[..., dict[str, float | None]]:
    """A verl ``compute_score`` over the registered reward ``reward_name``.

    ``tolerance`` applies to ``llm_as_judge_reward`` (strict reading; never lenient).

    It returns ``{"score", "raw_score", "parse_failed", "clamped", "failed"}``: floats, and
    ``raw_score`` ``None`` when the judge gave no number (verl drops ``None`` before
    averaging; a NaN would make the mean NaN).
    """
    target: RewardFunction = get_reward_from_name(reward_name)

    def compute(
        data_source: Any,
        solution_str: str,
        ground_truth: Any,
        extra_info: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, float | None]:
        extra: dict[str, Any] = {"llm_backend": llm_backend} if llm_backend is not None else {}
        if target is llm_as_judge_reward:
            extra.update(tolerance=tolerance, lenient=False)
        result = target(solution_str, str(ground_truth), **extra)
        if not isinstance(result, dict):
            return {"score": float(result)}
        failed = bool(result.get("error"))
        record = {
            **result,
            "reward": failure_value if failed else result["reward"],
            "error": str(result["error"]) if failed else None,
        }
        return verl_record(record)

    compute.__name__ = "compute_score"
    return compute


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float | None]:
    """verl's per-sample ``compute_score``, judged by the judge ``kwargs`` describe.

    ``kwargs`` are verl's ``reward_kwargs`` (see :mod:`jurist.rewards._reward_judge`); the same
    cached judge serves every call. One sample per call: a training run should use
    :func:`~jurist.rewards.batch_compute_score` or :func:`~jurist.rewards.compute_score_async`.
    """
    infos = None if extra_info is None else [extra_info]
    return batch_compute_score([data_source], [solution_str], [ground_truth], infos, **kwargs)[0]
