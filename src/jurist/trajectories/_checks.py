"""Deterministic trajectory checks: each returns a :class:`CheckResult` with its reason.

- :func:`tool_used`: a tool was called (at least ``min_times``, at most ``max_times``);
- :func:`tool_sequence`: the tools called, against an expected list: ``"in_order"`` (the
  expected tools appear in that order, other calls between them allowed), ``"exact"`` (the
  calls are exactly the list) or ``"subset"`` (every expected tool is called, any order);
- :func:`tool_args`: a call of a tool has the expected arguments: ``"exact"`` (equal),
  ``"subset"`` (the expected keys with equal values; nested objects alike), or a Python
  function of the arguments (``match=``);
- :func:`step_count`: the number of steps (assistant turns), tool calls or messages is in
  ``[min, max]``;
- :func:`custom_check`: any Python function of the trajectory.

The checks other than :func:`custom_check` are pydantic data (``kind`` names them), so a
rubric file can list them and a run manifest records them.

>>> from jurist.trajectories import Trajectory
>>> t = Trajectory.from_messages([
...     {"role": "user", "content": "Book a table for 2 in Lyon"},
...     {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "search",
...         "arguments": '{"city": "Lyon", "party": 2}'}}]},
...     {"role": "tool", "tool_call_id": "1", "content": "3 restaurants"},
...     {"role": "assistant", "tool_calls": [{"id": "2", "function": {"name": "book",
...         "arguments": '{"restaurant": "Le Bouchon", "party": 2}'}}]},
...     {"role": "tool", "tool_call_id": "2", "content": "booked"},
...     {"role": "assistant", "content": "Booked Le Bouchon for 2."}])
>>> tool_sequence(["search", "book"]).check(t).passed
True
>>> r = tool_sequence(["book", "search"], mode="exact").check(t)
>>> r.passed, r.reason
(False, "the tools called were ['search', 'book'], not exactly ['book', 'search']")
>>> tool_args("search", {"city": "Lyon"}).check(t).passed
True
>>> step_count(max=2).check(t).reason
'3 steps, more than the 2 allowed'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from jurist.errors import ConfigError
from jurist.trajectories._model import Trajectory

__all__ = [
    "Check",
    "CheckResult",
    "CheckSpec",
    "CustomCheck",
    "StepCount",
    "ToolArgs",
    "ToolSequence",
    "ToolUsed",
    "custom_check",
    "step_count",
    "tool_args",
    "tool_sequence",
    "tool_used",
]


class CheckResult(BaseModel):
    """A check's verdict on one trajectory: passed or not, and why."""

    model_config = ConfigDict(frozen=True)

    check: str
    passed: bool
    reason: str

    @property
    def score(self) -> float:
        return 1.0 if self.passed else 0.0


def _result(check: str, passed: bool, reason: str) -> CheckResult:
    return CheckResult(check=check, passed=passed, reason=reason)


class ToolUsed(BaseModel):
    """The tool ``tool`` is called at least ``min_times`` (and at most ``max_times``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["tool_used"] = "tool_used"
    tool: str = Field(min_length=1)
    min_times: int = Field(default=1, ge=0)
    max_times: int | None = Field(default=None, ge=0)

    def describe(self) -> str:
        most = "" if self.max_times is None else f", at most {self.max_times} times"
        return f"calls the tool {self.tool!r} at least {self.min_times} times{most}"

    def check(self, trajectory: Trajectory) -> CheckResult:
        n = trajectory.tool_names.count(self.tool)
        times = f"{n} time{'s' * (n != 1)}"
        if n < self.min_times:
            why = f"{self.tool!r} was called {times}, expected at least {self.min_times}"
            return _result(self.kind, False, why)
        if self.max_times is not None and n > self.max_times:
            why = f"{self.tool!r} was called {times}, expected at most {self.max_times}"
            return _result(self.kind, False, why)
        return _result(self.kind, True, f"{self.tool!r} was called {times}")


SequenceMode = Literal["in_order", "exact", "subset"]


class ToolSequence(BaseModel):
    """The tools called, against ``tools``: in order, exactly, or as a subset (module doc)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["tool_sequence"] = "tool_sequence"
    tools: tuple[str, ...] = Field(min_length=1)
    mode: SequenceMode = "in_order"

    def describe(self) -> str:
        how = {"in_order": "in this order", "exact": "exactly", "subset": "each at least once"}
        return f"calls the tools {list(self.tools)} {how[self.mode]}"

    def check(self, trajectory: Trajectory) -> CheckResult:
        called = trajectory.tool_names
        want = list(self.tools)
        if self.mode == "exact":
            ok = called == want
            why = f"the tools called were {called}" + ("" if ok else f", not exactly {want}")
            return _result(self.kind, ok, why)
        if self.mode == "subset":
            missing = [t for t in dict.fromkeys(want) if t not in called]
            if missing:
                return _result(self.kind, False, f"never called {missing} (called {called})")
            return _result(self.kind, True, f"called every one of {want} (called {called})")
        pos = 0
        for name in called:  # a subsequence match: greedy is exact here
            if pos < len(want) and name == want[pos]:
                pos += 1
        if pos == len(want):
            return _result(self.kind, True, f"called {want} in order (called {called})")
        return _result(
            self.kind,
            False,
            f"called {called}: {want[pos]!r} does not follow {want[:pos]} in order"
            if pos
            else f"called {called}: no {want[0]!r} to start the sequence {want}",
        )


def _subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and _subset(v, actual[k]) for k, v in expected.items()
        )
    return bool(expected == actual)


ArgsMode = Literal["exact", "subset"]


class ToolArgs(BaseModel):
    """Some call of ``tool`` (``which="any"``) or every call (``"all"``) has the arguments
    ``arguments``, compared ``"exact"`` or as a ``"subset"``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["tool_args"] = "tool_args"
    tool: str = Field(min_length=1)
    arguments: dict[str, Any]
    mode: ArgsMode = "subset"
    which: Literal["any", "all"] = "any"

    def describe(self) -> str:
        how = "exactly" if self.mode == "exact" else "including"
        return f"calls {self.tool!r} with arguments {how} {json.dumps(self.arguments)}"

    def check(self, trajectory: Trajectory) -> CheckResult:
        calls = [u.arguments for u in trajectory.tool_uses if u.name == self.tool]
        return _args_verdict(
            self.kind, self.tool, calls, self._matches, self.which, self.describe()
        )

    def _matches(self, args: dict[str, Any] | str) -> bool:
        if self.mode == "exact":
            return args == self.arguments
        return _subset(self.arguments, args)


def _args_verdict(
    kind: str,
    tool: str,
    calls: list[dict[str, Any] | str],
    matches: Callable[[dict[str, Any] | str], bool],
    which: str,
    wanted: str,
) -> CheckResult:
    if not calls:
        return _result(kind, False, f"{tool!r} was never called")
    hits = [matches(a) for a in calls]
    shown = "; ".join(json.dumps(a, ensure_ascii=False)[:120] for a in calls)
    ok = all(hits) if which == "all" else any(hits)
    count = f"{sum(hits)} of {len(calls)} call{'s' * (len(calls) != 1)}"
    return _result(kind, ok, f"{count} of {tool!r} match ({wanted}): {shown}")


Counted = Literal["steps", "tool_calls", "messages"]


class StepCount(BaseModel):
    """The number of steps (assistant turns), tool calls or messages is in [min, max]."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["step_count"] = "step_count"
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)
    count: Counted = "steps"

    @model_validator(mode="after")
    def _bounds(self) -> StepCount:
        if self.min is None and self.max is None:
            raise ValueError("step_count needs min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"step_count: min ({self.min}) is above max ({self.max})")
        return self

    def describe(self) -> str:
        lo = "" if self.min is None else f"at least {self.min}"
        hi = "" if self.max is None else f"at most {self.max}"
        return f"takes {' and '.join(x for x in (lo, hi) if x)} {self.count.replace('_', ' ')}"

    def check(self, trajectory: Trajectory) -> CheckResult:
        if self.count == "steps":
            n = len(trajectory.steps)
        elif self.count == "tool_calls":
            n = len(trajectory.tool_uses)
        else:
            n = len(trajectory.messages)
        what = (
            f"{n} {self.count.replace('_', ' ')}"
            if n != 1
            else f"1 {self.count[:-1].replace('_', ' ')}"
        )
        if self.min is not None and n < self.min:
            return _result(self.kind, False, f"{what}, fewer than the {self.min} required")
        if self.max is not None and n > self.max:
            return _result(self.kind, False, f"{what}, more than the {self.max} allowed")
        return _result(self.kind, True, f"{what}, within bounds")


CheckSpec = Annotated[ToolUsed | ToolSequence | ToolArgs | StepCount, Field(discriminator="kind")]
"""A check that is data (a rubric file can list it)."""


@dataclass(frozen=True)
class CustomCheck:
    """A Python check: ``fn(trajectory)`` returns a bool, ``(bool, reason)`` or a
    :class:`CheckResult`; ``description`` says what it checks."""

    fn: Callable[[Trajectory], Any]
    description: str
    kind: str = "custom"

    def describe(self) -> str:
        return self.description

    def check(self, trajectory: Trajectory) -> CheckResult:
        out = self.fn(trajectory)
        if isinstance(out, CheckResult):
            return out
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], bool):
            return _result(self.kind, out[0], str(out[1]))
        if isinstance(out, bool):
            return _result(self.kind, out, f"{self.description}: {'yes' if out else 'no'}")
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        raise ConfigError(
            f"custom check {name}: must return a bool, (bool, reason) or a CheckResult, "
            f"got {type(out).__name__}"
        )


Check = ToolUsed | ToolSequence | ToolArgs | StepCount | CustomCheck
"""Any check: one that is data (:data:`CheckSpec`) or a Python one (:class:`CustomCheck`)."""


def tool_used(tool: str, *, min_times: int = 1, max_times: int | None = None) -> ToolUsed:
    """The check that ``tool`` is called (see :class:`ToolUsed`)."""
    return ToolUsed(tool=tool, min_times=min_times, max_times=max_times)


def tool_sequence(
    tools: list[str] | tuple[str, ...], *, mode: SequenceMode = "in_order"
) -> ToolSequence:
    """The check of the tools called against ``tools`` (see :class:`ToolSequence`)."""
    return ToolSequence(tools=tuple(tools), mode=mode)


def tool_args(
    tool: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    mode: ArgsMode = "subset",
    which: Literal["any", "all"] = "any",
    match: Callable[[dict[str, Any] | str], bool] | None = None,
) -> ToolArgs | CustomCheck:
    """The check of a tool's arguments: ``arguments`` compared ``mode`` (see
    :class:`ToolArgs`), or ``match(arguments) -> bool`` for a custom comparison."""
    if (arguments is None) == (match is None):
        raise ConfigError("tool_args: give arguments (exact / subset) or match (a function), one")
    if match is None:
        assert arguments is not None
        return ToolArgs(tool=tool, arguments=dict(arguments), mode=mode, which=which)
    name = getattr(match, "__qualname__", "match")
    wanted = f"arguments accepted by {name}"

    def fn(t: Trajectory) -> CheckResult:
        calls = [u.arguments for u in t.tool_uses if u.name == tool]
        return _args_verdict("tool_args", tool, calls, match, which, wanted)

    return CustomCheck(fn, f"calls {tool!r} with {wanted}", kind="tool_args")


def step_count(
    *, min: int | None = None, max: int | None = None, count: Counted = "steps"
) -> StepCount:
    """The check that the number of steps (or tool calls, or messages) is in [min, max]."""
    return StepCount(min=min, max=max, count=count)


def custom_check(fn: Callable[[Trajectory], Any], description: str) -> CustomCheck:
    """A Python check of the whole trajectory (see :class:`CustomCheck`)."""
    return CustomCheck(fn, description)
