"""Trajectory rewards for multi-turn rollouts: deterministic checks, then a trajectory judge.

A multi-turn rollout (an agent calling tools) is scored in two stages:

1. **Checks** (optional): the deterministic checks of :mod:`jurist.trajectories` (tool used,
   tool sequence, arguments, step count) on the rollout's messages, and bounds on its
   number of turns. A rollout that fails one gets ``check_failure_value`` (default 0.0)
   and no judge call; the record says which check failed.
2. **The judge**: the ``trajectory`` template (or any template; one with a ``trajectory``
   field gets the rollout rendered as numbered steps, any other gets the rollout text as
   ``response``), with the question as ``prompt`` and the ground truth as ``reference``.

**verl.** A multi-turn rollout reaches ``compute_score`` as ``solution_str`` (the decoded
response: assistant turns and tool results) and ``extra_info``, to which verl's reward
loop adds ``num_turns`` (from ``__num_turns__``) and the agent loop's ``tool_extra_fields``
(its ``extra_fields``: an agent loop that records the conversation there as ``messages``,
OpenAI-format dicts, gets it judged step by step). :func:`jurist.rewards.compute_score_async`
and :func:`jurist.rewards.batch_compute_score` take this path when ``reward_kwargs`` name a
trajectory template (``template: trajectory``) or a check (``checks``, ``min_turns``,
``max_turns``); their records then carry ``checks_passed`` (1.0 / 0.0) and ``num_turns``
besides verl's usual keys. Checks are dicts as in a rubric file:
``{"kind": "tool_used", "tool": "search"}``.

**The registry**: ``get_reward_from_name("trajectory_reward")`` (:func:`trajectory_reward`).

>>> msgs = [{"role": "user", "content": "Capital of Peru?"},
...         {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "search",
...             "arguments": '{"q": "capital of Peru"}'}}]},
...         {"role": "tool", "tool_call_id": "1", "content": "Lima is the capital of Peru."},
...         {"role": "assistant", "content": "Lima."}]
>>> out = trajectory_reward("Lima.", "Lima", messages=msgs, model="mock:t", outputs=["5"],
...                         checks=[{"kind": "tool_used", "tool": "search"}])
>>> out["reward"], out["checks_passed"]
(1.0, True)
>>> out = trajectory_reward("Lima.", "Lima", messages=msgs, model="mock:t", outputs=["5"],
...                         checks=[{"kind": "tool_used", "tool": "wiki"}])
>>> out["reward"], out["checks"][0]["reason"]
(0.0, "'wiki' was called 0 times, expected at least 1")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from jurist.errors import ConfigError, DataError
from jurist.rewards._registry import reward
from jurist.rewards._reward_judge import RewardJudge, reward_judge_from_kwargs, run_in_background
from jurist.trajectories import CheckResult, CheckSpec, Trajectory, render_trajectory

__all__ = [
    "TRAJECTORY_KWARGS",
    "TrajectoryGate",
    "judge_rollout",
    "rollout_text",
    "score_rollouts_sync",
    "trajectory_reward",
    "wants_trajectory",
]

TRAJECTORY_KWARGS = ("checks", "min_turns", "max_turns", "check_failure_value")
"""The keyword arguments (verl ``reward_kwargs``) that configure the checks stage."""

_CHECKS: TypeAdapter[list[CheckSpec]] = TypeAdapter(list[CheckSpec])


class TrajectoryGate(BaseModel):
    """The checks stage: checks on the messages, bounds on the number of turns."""

    model_config = ConfigDict(frozen=True)

    checks: tuple[CheckSpec, ...] = ()
    min_turns: int | None = Field(default=None, ge=0)
    max_turns: int | None = Field(default=None, ge=0)
    failure_value: float = 0.0

    @classmethod
    def pop_from(cls, kwargs: dict[str, Any]) -> TrajectoryGate | None:
        """The gate that ``kwargs`` configure (its keys removed from them), or None."""
        given = {k: kwargs.pop(k) for k in TRAJECTORY_KWARGS if k in kwargs}
        given = {k: v for k, v in given.items() if v is not None}
        if not given:
            return None
        try:
            checks = _CHECKS.validate_python(list(given.get("checks") or []))
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"] if "[" not in str(p))
            raise ConfigError(f"trajectory reward: checks.{where}: {first['msg']}") from None
        try:
            return cls(
                checks=tuple(checks),
                min_turns=given.get("min_turns"),
                max_turns=given.get("max_turns"),
                failure_value=given.get("check_failure_value", 0.0),
            )
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"] if "[" not in str(p))
            raise ConfigError(f"trajectory reward: {where}: {first['msg']}") from None

    def run(
        self, trajectory: Trajectory | None, num_turns: int | None, where: str
    ) -> list[CheckResult]:
        """Every check's result, turn bounds first."""
        results: list[CheckResult] = []
        if self.min_turns is not None or self.max_turns is not None:
            if num_turns is None:
                raise DataError(f"{where}: min_turns / max_turns need num_turns in extra_info")
            low = self.min_turns is None or num_turns >= self.min_turns
            high = self.max_turns is None or num_turns <= self.max_turns
            bounds = f"[{self.min_turns or 0}, {'∞' if self.max_turns is None else self.max_turns}]"
            results.append(
                CheckResult(
                    check="num_turns",
                    passed=low and high,
                    reason=f"{num_turns} turns, {'within' if low and high else 'outside'} {bounds}",
                )
            )
        if self.checks:
            if trajectory is None:
                raise DataError(
                    f"{where}: the checks need the rollout's messages (extra_info['messages'], "
                    "OpenAI chat format)"
                )
            results += [c.check(trajectory) for c in self.checks]
        return results


def rollout_text(messages: Any, where: str) -> str:
    """A conversational completion (OpenAI-format messages: assistant turns, tool calls,
    tool results) as the compact trajectory a trajectory template reads."""
    listed = _messages(messages)
    if listed is None:
        raise DataError(f"{where}: no messages")
    return render_trajectory(Trajectory.from_messages(listed, where=where), task=False)


def wants_trajectory(judge: RewardJudge) -> bool:
    """Whether the judge's template reads a ``trajectory`` field."""
    t = getattr(judge.judge, "template", None)  # a scalar reward model's judge has none
    return t is not None and "trajectory" in (*t.fields, *t.optional_fields)


def _turns(value: Any, where: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: num_turns must be a whole number, got {value!r}") from None


def _messages(value: Any) -> Sequence[Mapping[str, Any]] | None:
    if value is None:
        return None
    if hasattr(value, "tolist"):  # verl's non-tensor fields are numpy arrays
        value = value.tolist()
    return list(value)


async def judge_rollout(
    judge: RewardJudge,
    gate: TrajectoryGate | None,
    *,
    solution: str,
    reference: Any = None,
    question: str | None = None,
    messages: Any = None,
    num_turns: Any = None,
    where: str = "rollout",
) -> dict[str, Any]:
    """One rollout's reward record (module doc): ``reward``, ``raw_score``, ``error``...
    plus ``checks_passed``, ``checks`` (each check's result) and ``num_turns``."""
    listed = _messages(messages)
    trajectory = None if listed is None else Trajectory.from_messages(listed, where=where)
    turns = _turns(num_turns, where)
    results = [] if gate is None else gate.run(trajectory, turns, where)
    extras = {
        "checks_passed": all(r.passed for r in results),
        "checks": [r.model_dump() for r in results],
        "num_turns": turns,
    }
    if not extras["checks_passed"]:
        assert gate is not None
        return {"reward": gate.failure_value, "raw_score": None, "judge_output": None,
                "clamped": False, "parse_failed": False, "error": None, **extras}  # fmt: skip
    task = question if question is not None or trajectory is None else trajectory.task
    item: dict[str, Any] = {"prompt": task}
    if reference is not None:
        item["reference"] = str(reference)
    if wants_trajectory(judge):
        item["trajectory"] = (
            solution if trajectory is None else render_trajectory(trajectory, task=task is None)
        )
    else:
        item["response"] = solution
    record = await judge.score_item(item)
    return {**record, **extras}


@reward(name="trajectory_reward")
async def trajectory_reward(
    prediction: str,
    golden_answer: Any = None,
    *,
    messages: Any = None,
    question: str | None = None,
    num_turns: int | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """The trajectory reward of one rollout (module doc). ``prediction`` is the rollout's
    text (judged as it is when no ``messages`` are given); ``kwargs`` are the reward
    judge's (``model``, ``template`` default ``"trajectory"``...) and the checks stage's
    (``checks``, ``min_turns``, ``max_turns``, ``check_failure_value``)."""
    options = dict(kwargs)
    gate = TrajectoryGate.pop_from(options)
    options.setdefault("template", "trajectory")
    judge = reward_judge_from_kwargs(**options)
    return await judge_rollout(
        judge,
        gate,
        solution=prediction,
        reference=golden_answer,
        question=question,
        messages=messages,
        num_turns=num_turns,
        where="trajectory_reward",
    )


def score_rollouts_sync(
    judge: RewardJudge, gate: TrajectoryGate | None, calls: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """:func:`judge_rollout` over many rollouts, concurrently, from sync code."""
    import asyncio

    async def all_of() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(judge_rollout(judge, gate, **c) for c in calls)))

    return run_in_background(all_of())
