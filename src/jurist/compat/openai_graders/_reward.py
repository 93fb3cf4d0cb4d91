"""An OpenAI grader as an RL reward: :class:`GraderReward`, in TRL's reward function shape.

``GRPOTrainer(reward_funcs=[grader_reward("grader.json")])``: TRL calls it with
``prompts``, ``completions`` (strings, or message lists whose last message is the
completion) and the dataset's other columns as lists; each completion is the ``sample``
(``output_text``), the row of the other columns the ``item``. It returns the grade as
OpenAI's grader gave it, one per completion (the reward fine-tuning used), and
``failure_value`` (0.0, as OpenAI scored an invalid grade) where a grade failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from jurist._sync import run_sync
from jurist.compat.openai_graders._judge import GraderJudge, namespaces_of

__all__ = ["GraderReward"]

_TRL_KEYS = {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric"}


def _completion_text(x: Any) -> Any:
    if isinstance(x, Sequence) and not isinstance(x, str) and x and isinstance(x[-1], Mapping):
        return str(x[-1].get("content") or "")
    return x


class GraderReward:
    """A TRL reward function over one :class:`GraderJudge`."""

    def __init__(
        self,
        judge: GraderJudge,
        *,
        failure_value: float | None = 0.0,
        concurrency: int = 32,
        name: str | None = None,
    ) -> None:
        self.judge = judge
        self.failure_value = failure_value
        self.concurrency = concurrency
        self.__name__ = name or judge.name

    def __repr__(self) -> str:
        return f"GraderReward({self.__name__!r})"

    async def acall(
        self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **columns: Any
    ) -> list[float | None]:
        """The rewards of ``completions`` (awaitable)."""
        n = len(completions)
        rows = [
            {
                k: v[i]
                for k, v in columns.items()
                if k not in _TRL_KEYS and isinstance(v, list) and len(v) == n
            }
            for i in range(n)
        ]
        limit = asyncio.Semaphore(self.concurrency)

        async def one(i: int) -> float | None:
            ns = namespaces_of({"response": _completion_text(completions[i])})
            async with limit:
                grade = await self.judge.grade(ns["sample"], rows[i])
            return grade.value if grade.value is not None else self.failure_value

        return list(await asyncio.gather(*(one(i) for i in range(n))))

    def __call__(
        self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **columns: Any
    ) -> list[float | None]:
        return run_sync(self.acall(prompts, completions, **columns))
