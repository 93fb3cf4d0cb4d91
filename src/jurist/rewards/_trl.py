"""TRL reward functions that judge a whole batch of completions at once.

``GRPOTrainer(reward_funcs=[...])`` calls each reward with keyword arguments:
``prompts``, ``completions`` (strings, or for conversational data lists of message dicts),
``completion_ids``, ``trainer_state``, ``log_extra``, ``log_metric`` and the dataset's other
columns as lists; it wants one float per completion back, ``None`` where the reward does
not apply (TRL turns it into NaN and leaves it out of the means and the advantages).

:func:`trl_reward_func` builds a :class:`TRLReward`: a sync callable that judges the batch
concurrently on an event loop of its own, started in a daemon thread on the first call and
kept for the reward's lifetime, so an HTTP judge keeps one connection pool across steps.
:func:`trl_reward_func_async` builds an :class:`AsyncTRLReward`, whose ``__call__`` is a
coroutine function: TRL (1.x) sees that and awaits it, together with its other async
rewards, on the trainer's own event loop, which also lives as long as the trainer.

Instead of ``llm_backend=``, keyword options such as ``model=``, ``template=``, ``rpm=``
(:data:`JUDGE_OPTIONS`) describe the judge as verl's ``reward_kwargs`` do: they build the
process's cached :class:`~jurist.rewards.RewardJudge` for that configuration. With a
trajectory template (``template="trajectory"``) a conversational completion, a multi-turn
rollout with tool calls and results, is judged whole, rendered step by step
(:mod:`jurist.rewards._trajectory`).

A failed judgment (API error, unreadable or far out-of-range verdict) gives
``failure_value``: 0.0 by default, as :func:`~jurist.rewards.llm_as_judge_reward` does;
``None`` makes TRL skip the completion (a completion every reward skips gets advantage 0,
so a broken judge does not teach the policy anything). When TRL passes ``log_extra`` and
``log_metric``, each call logs the columns ``<name>/raw_score`` and ``<name>/error`` to
the completions table and the batch fractions ``<name>/failed``, ``<name>/parse_failed``
and ``<name>/clamped`` as metrics (the same keys on every call, as TRL needs across ranks).

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
>>> fn.close()
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, Unpack

from jurist._sync import LoopThread
from jurist.errors import ConfigError, DataError
from jurist.judges._many import run_items
from jurist.models import Model
from jurist.rewards._backend import RewardBackend
from jurist.rewards._judge_reward import (
    DEFAULT_TOLERANCE,
    llm_as_judge_reward,
    llm_as_judge_rewards_async,
)
from jurist.rewards._registry import RewardFunction, get_reward_from_name
from jurist.rewards._reward_judge import (
    DEFAULT_CONCURRENCY,
    REWARD_KWARGS,
    RewardJudge,
    reward_judge_from_kwargs,
)
from jurist.rewards._trajectory import rollout_text, wants_trajectory

__all__ = ["AsyncTRLReward", "TRLReward", "trl_reward_func", "trl_reward_func_async"]

Backend = RewardBackend | Model | str | None


def _text(x: Any, what: str) -> str:
    """A completion or prompt as text: a string, or the last message's content."""
    if isinstance(x, str):
        return x
    if isinstance(x, Sequence) and x and isinstance(x[-1], Mapping) and "content" in x[-1]:
        return str(x[-1]["content"])
    if isinstance(x, Mapping) and "content" in x:
        return str(x["content"])
    raise DataError(
        f"{what}: cannot read text from a {type(x).__name__}: expected a string or a list of "
        "message dicts with 'content'"
    )


class TRLOptions(TypedDict, total=False):
    """The keyword options of :func:`trl_reward_func` and :func:`trl_reward_func_async`."""

    answer_column: str
    include_prompt: bool
    failure_value: float | None
    llm_backend: Backend
    tolerance: float
    concurrency: int
    retries: int
    name: str | None
    model: str
    base_url: str
    api_key: str
    template: str
    judge: str
    rpm: float
    tpm: float
    max_retries: int
    timeout: float
    temperature: float
    max_tokens: int
    squash: str
    outputs: list[str]
    cycle: bool


JUDGE_OPTIONS = tuple(
    k for k in REWARD_KWARGS if k not in {"concurrency", "retries", "failure_value", "tolerance"}
)
"""The options that build the judge as :func:`~jurist.rewards.reward_judge_from_kwargs` does."""


class _TRLRewardBase:
    """What both variants share: reading TRL's arguments, judging, logging."""

    def __init__(
        self,
        reward_name: str = "llm_as_judge_reward",
        *,
        answer_column: str = "answer",
        include_prompt: bool = True,
        failure_value: float | None = 0.0,
        llm_backend: Backend = None,
        tolerance: float = DEFAULT_TOLERANCE,
        concurrency: int = DEFAULT_CONCURRENCY,
        retries: int = 0,
        name: str | None = None,
        **judge_options: Any,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        self.target: RewardFunction = get_reward_from_name(reward_name)
        self.answer_column = answer_column
        self.include_prompt = include_prompt
        self.failure_value = failure_value
        self.llm_backend = llm_backend
        self.tolerance = tolerance
        self.concurrency = concurrency
        self.retries = retries
        # TRL names a reward by ``__name__`` (metrics ``rewards/<name>/mean``).
        self.__name__ = self.__qualname__ = name or self.target.name
        self.judge_options = judge_options
        self._reward_judge = self._build_reward_judge()

    def _build_reward_judge(self) -> RewardJudge | None:
        """The cached :class:`RewardJudge` that the judge options describe, if any are given."""
        if not self.judge_options:
            return None
        where = f"the TRL reward {self.__name__!r}"
        unknown = sorted(set(self.judge_options) - set(JUDGE_OPTIONS))
        if unknown:
            raise ConfigError(
                f"{where}: unknown option(s) {unknown}; the judge options are {list(JUDGE_OPTIONS)}"
            )
        if self.target is not llm_as_judge_reward:
            raise ConfigError(
                f"{where}: the judge options {sorted(self.judge_options)} build the judge of "
                f"llm_as_judge_reward; the reward {self.target.name!r} takes llm_backend="
            )
        if self.llm_backend is not None:
            raise ConfigError(
                f"{where}: give llm_backend= or the judge options "
                f"{sorted(self.judge_options)}, not both"
            )
        return reward_judge_from_kwargs(
            **self.judge_options,
            concurrency=self.concurrency,
            retries=self.retries,
            failure_value=self.failure_value,
            tolerance=self.tolerance,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.target.name!r}, answer_column={self.answer_column!r}, "
            f"failure_value={self.failure_value!r}, concurrency={self.concurrency})"
        )

    def __getstate__(self) -> dict[str, Any]:
        # TRL's async GRPO worker pickles reward functions into a spawned process. The
        # registered reward travels by name: the child imports jurist, which registers
        # it (a custom reward's module must be imported there too).
        # A judge built from options travels as its options and is rebuilt (once per
        # process and configuration) in the child.
        state = dict(self.__dict__)
        state["target"] = self.target.name
        del state["_reward_judge"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.target = get_reward_from_name(state["target"])
        self._reward_judge = self._build_reward_judge()

    def _read(
        self, completions: Sequence[Any], prompts: Sequence[Any] | None, columns: dict[str, Any]
    ) -> tuple[list[str], list[str], list[str | None] | None]:
        name = self.target.name
        scalar = self._reward_judge is not None and self._reward_judge.scalar
        if scalar and self.answer_column not in columns:  # a reward model needs no answer
            columns = {**columns, self.answer_column: [""] * len(completions)}
        if self.answer_column not in columns:
            raise DataError(
                f"the TRL reward {name!r} reads the golden answer from the dataset column "
                f"{self.answer_column!r}, which the trainer did not pass; columns given: "
                f"{sorted(k for k in columns if k not in _TRL_KWARGS)}"
            )
        answers = [str(a) for a in columns[self.answer_column]]
        if len(answers) != len(completions):
            raise DataError(
                f"the TRL reward {name!r}: column {self.answer_column!r} has {len(answers)} "
                f"values for {len(completions)} completions"
            )
        rollouts = self._reward_judge is not None and wants_trajectory(self._reward_judge)
        texts = [
            rollout_text(c, f"completions[{i}]")
            if rollouts and not isinstance(c, str)
            else _text(c, f"completions[{i}]")
            for i, c in enumerate(completions)
        ]
        questions: list[str | None] | None = None
        if self.include_prompt and prompts:
            if len(prompts) != len(completions):
                raise DataError(
                    f"the TRL reward {name!r}: {len(prompts)} prompts for "
                    f"{len(completions)} completions"
                )
            questions = [_text(p, f"prompts[{i}]") for i, p in enumerate(prompts)]
        return texts, answers, questions

    async def _judge(
        self, texts: list[str], answers: list[str], questions: list[str | None] | None
    ) -> list[Any]:
        if not texts:
            return []
        if self._reward_judge is not None:
            return await self._reward_judge.score_batch(texts, answers, questions)
        if self.target is llm_as_judge_reward:
            backend = self.llm_backend
            if backend is None:
                backend = self.target.backend()
            return await llm_as_judge_rewards_async(
                texts,
                answers,
                backend,
                prompts=questions,
                retries=self.retries,
                concurrency=self.concurrency,
                tolerance=self.tolerance,
                lenient=False,
            )
        extra = {"llm_backend": self.llm_backend} if self.llm_backend is not None else {}

        async def one(i: int) -> Any:
            return await self.target.acall(texts[i], answers[i], **extra)

        return await run_items(one, len(texts), concurrency=self.concurrency, ok=_ok)

    def _finish(self, results: list[Any], columns: dict[str, Any]) -> list[float | None]:
        values = [self._value(r) for r in results]
        records = [r if isinstance(r, Mapping) else {} for r in results]
        log_extra = columns.get("log_extra")
        log_metric = columns.get("log_metric")
        name = self.__name__
        if callable(log_extra):
            log_extra(f"{name}/raw_score", [r.get("raw_score") for r in records])
            log_extra(f"{name}/error", [r.get("error") for r in records])
        if callable(log_metric):
            n = max(1, len(records))
            failed = sum(1 for r in records if r.get("error"))
            parse_failed = sum(1 for r in records if r.get("parse_failed"))
            clamped = sum(1 for r in records if r.get("clamped"))
            log_metric(f"{name}/failed", failed / n)
            log_metric(f"{name}/parse_failed", parse_failed / n)
            log_metric(f"{name}/clamped", clamped / n)
        return values

    def _value(self, result: Any) -> float | None:
        if isinstance(result, Mapping):
            if result.get("error"):
                return self.failure_value
            return float(result["reward"])
        return float(result)


_TRL_KWARGS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric"}
)


def _ok(result: Any) -> bool:
    return not (isinstance(result, Mapping) and result.get("error"))


class TRLReward(_TRLRewardBase):
    """A sync TRL reward: the batch is judged concurrently on the reward's own event loop.

    The loop runs in a daemon thread started on the first call and kept until
    :meth:`close`, so the judge's HTTP sessions live on one loop for the whole training.
    It pickles (for TRL's spawned rollout workers) when its backend does, which an
    unused HTTP or local backend does; the copy starts its own loop.
    """

    def __init__(
        self, reward_name: str = "llm_as_judge_reward", **options: Unpack[TRLOptions]
    ) -> None:
        super().__init__(reward_name, **options)
        self._runner = LoopThread(f"jurist-trl-reward-{self.target.name}")

    def __call__(
        self,
        completions: Sequence[Any],
        prompts: Sequence[Any] | None = None,
        **columns: Any,
    ) -> list[float | None]:
        texts, answers, questions = self._read(completions, prompts, columns)
        results = self._runner.run(self._judge(texts, answers, questions))
        return self._finish(results, columns)

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the judgments run on (``None`` before the first call)."""
        return self._runner.loop

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        del state["_runner"]  # the copy starts a loop of its own on its first call
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._runner = LoopThread(f"jurist-trl-reward-{self.target.name}")

    def close(self) -> None:
        """Close the judge's connections opened on the reward's loop and stop the loop.

        A later call starts a new loop. Other loops' connections are left alone.
        """
        self._runner.close()


class AsyncTRLReward(_TRLRewardBase):
    """An async TRL reward: ``await fn(completions=..., ...)`` judges the batch concurrently.

    TRL 1.x detects the coroutine ``__call__`` and awaits it on the trainer's event loop.
    """

    async def __call__(
        self,
        completions: Sequence[Any],
        prompts: Sequence[Any] | None = None,
        **columns: Any,
    ) -> list[float | None]:
        texts, answers, questions = self._read(completions, prompts, columns)
        results = await self._judge(texts, answers, questions)
        return self._finish(results, columns)


def trl_reward_func(
    reward_name: str = "llm_as_judge_reward", **options: Unpack[TRLOptions]
) -> TRLReward:
    """A sync TRL reward function over the registered reward ``reward_name`` (module doc).

    The options (:class:`TRLOptions`) and their defaults: ``answer_column="answer"``,
    ``include_prompt=True``, ``failure_value=0.0``, ``llm_backend=None``,
    ``tolerance=0.05``, ``concurrency=256``, ``retries=0``, ``name=None``.
    The golden answer comes from the dataset column ``answer_column``; with
    ``include_prompt`` the judge also sees the prompt (the last message of a conversation).
    ``tolerance`` applies to ``llm_as_judge_reward``, read strictly (never lenient);
    ``retries`` re-asks an unreadable verdict; at most ``concurrency`` judgments are in
    flight per call. ``name`` (default: the reward's) is what TRL logs it under
    (``rewards/<name>/mean``) and the prefix of the columns and metrics it logs.
    """
    return TRLReward(reward_name, **options)


def trl_reward_func_async(
    reward_name: str = "llm_as_judge_reward", **options: Unpack[TRLOptions]
) -> AsyncTRLReward:
    """The async variant of :func:`trl_reward_func` (same options), for TRL's async rewards."""
    return AsyncTRLReward(reward_name, **options)
