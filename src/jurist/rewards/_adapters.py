"""Registered rewards in the call shapes of TRL and verl.

**TRL** (``GRPOTrainer(reward_funcs=[...])``) calls ``fn(completions, prompts=..., **columns)``
where ``completions`` are strings or, for conversational data, lists of one message dict
(``[{"role": "assistant", "content": ...}]``), the dataset's other columns arrive as keyword
lists, and the return is one float per completion (``None`` where the reward does not apply).
:func:`trl_reward_func` builds such a function; the golden answer comes from the column
``answer_column``; the trainer logs the function's ``__name__``.

**verl** (``custom_reward_function.path`` / ``.name`` in its config) calls
``compute_score(data_source, solution_str, ground_truth, extra_info=None)`` and takes a float
or a dict with a ``"score"`` key plus extra numeric fields it logs. :func:`verl_compute_score`
builds one; :func:`compute_score` is the ready-made one for ``llm_as_judge_reward``.

A failed judgment gives ``failure_value`` (0.0 by default, as the reward itself does); with
``failure_value=None`` the TRL function returns ``None`` for it, which TRL skips. The
adapters read ``llm_as_judge_reward`` strictly: a score further than ``tolerance`` (default
0.05) outside [0, 1], or a number that is not the verdict, is a failure; the seed's lenient
clamping (``lenient=True`` on the reward itself) is never used here, since a policy
trained on it learns to make the judge print large numbers.

>>> from jurist.rewards import RewardBackend, trl_reward_func
>>> from jurist.models import MockModel
>>> backend = RewardBackend(MockModel("j", outputs=["Score: 1.0", "Score: 0.2"]))
>>> fn = trl_reward_func(answer_column="solution", llm_backend=backend)
>>> fn(completions=[[{"role": "assistant", "content": "Paris"}],
...                 [{"role": "assistant", "content": "Lyon"}]],
...    solution=["Paris", "Paris"])
[1.0, 0.2]
>>> fn.__name__
'llm_as_judge_reward'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from jurist.errors import DataError
from jurist.models import Model
from jurist.rewards._backend import RewardBackend
from jurist.rewards._judge_reward import (
    DEFAULT_TOLERANCE,
    llm_as_judge_reward,
    llm_as_judge_rewards,
)
from jurist.rewards._registry import RewardFunction, get_reward_from_name

__all__ = ["compute_score", "trl_reward_func", "verl_compute_score"]

Backend = RewardBackend | Model | str | None


def _text(x: Any) -> str:
    """A completion or prompt as text: a string, or the last message's content."""
    if isinstance(x, str):
        return x
    if isinstance(x, Sequence) and x and isinstance(x[-1], dict) and "content" in x[-1]:
        return str(x[-1]["content"])
    if isinstance(x, dict) and "content" in x:
        return str(x["content"])
    raise DataError(
        f"cannot read text from a {type(x).__name__}: expected a string or a list of "
        "message dicts with 'content'"
    )


def _value(result: Any, failure_value: float | None) -> float | None:
    if isinstance(result, dict):
        if result.get("error"):
            return failure_value
        return float(result["reward"])
    return float(result)


def trl_reward_func(
    reward_name: str = "llm_as_judge_reward",
    *,
    answer_column: str = "answer",
    include_prompt: bool = True,
    failure_value: float | None = 0.0,
    llm_backend: Backend = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Callable[..., list[float | None]]:
    """A TRL reward function over the registered reward ``reward_name`` (see module doc).

    ``tolerance`` applies to ``llm_as_judge_reward`` (strict reading; never lenient).
    """
    target: RewardFunction = get_reward_from_name(reward_name)

    def reward_func(
        completions: Sequence[Any], prompts: Sequence[Any] | None = None, **kwargs: Any
    ) -> list[float | None]:
        if answer_column not in kwargs:
            raise DataError(
                f"the TRL reward {reward_name!r} reads the golden answer from the dataset "
                f"column {answer_column!r}, which the trainer did not pass; columns given: "
                f"{sorted(kwargs)}"
            )
        answers = [str(a) for a in kwargs[answer_column]]
        texts = [_text(c) for c in completions]
        questions = [_text(p) for p in prompts] if include_prompt and prompts else None
        if target is llm_as_judge_reward:
            results: list[Any] = llm_as_judge_rewards(
                texts, answers, llm_backend, prompts=questions, tolerance=tolerance, lenient=False
            )
        else:
            extra = {"llm_backend": llm_backend} if llm_backend is not None else {}
            results = [target(t, a, **extra) for t, a in zip(texts, answers, strict=True)]
        return [_value(r, failure_value) for r in results]

    reward_func.__name__ = target.name
    reward_func.__qualname__ = target.name
    return reward_func


def verl_compute_score(
    reward_name: str = "llm_as_judge_reward",
    *,
    failure_value: float = 0.0,
    llm_backend: Backend = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Callable[..., dict[str, float]]:
    """A verl ``compute_score`` over the registered reward ``reward_name``.

    ``tolerance`` applies to ``llm_as_judge_reward`` (strict reading; never lenient).

    It returns ``{"score", "raw_score", "parse_failed", "failed"}``, all floats (NaN for a
    missing raw score) so verl can log them as arrays.
    """
    target: RewardFunction = get_reward_from_name(reward_name)

    def compute(
        data_source: Any,
        solution_str: str,
        ground_truth: Any,
        extra_info: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, float]:
        extra: dict[str, Any] = {"llm_backend": llm_backend} if llm_backend is not None else {}
        if target is llm_as_judge_reward:
            extra.update(tolerance=tolerance, lenient=False)
        result = target(solution_str, str(ground_truth), **extra)
        if not isinstance(result, dict):
            return {"score": float(result)}
        raw = result.get("raw_score")
        failed = bool(result.get("error"))
        return {
            "score": failure_value if failed else float(result["reward"]),
            "raw_score": math.nan if raw is None else float(raw),
            "parse_failed": float(bool(result.get("parse_failed"))),
            "failed": float(failed),
        }

    compute.__name__ = "compute_score"
    return compute


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """verl's ``compute_score`` for ``llm_as_judge_reward`` with its default backend."""
    return verl_compute_score()(data_source, solution_str, ground_truth, extra_info, **kwargs)
