"""Agent trajectories: a typed trajectory, importers from OpenTelemetry spans, deterministic
checks, compact rendering for judges, rubric grading that mixes checks and LLM criteria.

>>> from jurist.trajectories import Trajectory, tool_used
>>> t = Trajectory.from_messages([{"role": "user", "content": "hi"},
...                               {"role": "assistant", "content": "hello"}])
>>> tool_used("search").check(t).reason
"'search' was called 0 times, expected at least 1"
"""

from jurist.trajectories._checks import (
    Check,
    CheckResult,
    CheckSpec,
    CustomCheck,
    StepCount,
    ToolArgs,
    ToolSequence,
    ToolUsed,
    custom_check,
    step_count,
    tool_args,
    tool_sequence,
    tool_used,
)
from jurist.trajectories._grader import CHECK_JUDGE_ID, TrajectoryGrader
from jurist.trajectories._import import load_traces, trajectories_from_spans
from jurist.trajectories._items import trajectory_from_item, trajectory_items
from jurist.trajectories._model import ChatMessage, Step, ToolCall, ToolUse, Trajectory
from jurist.trajectories._render import render_step, render_trajectory
from jurist.trajectories._rubric import CheckCriterion, StepsCriterion, TrajectoryRubric
from jurist.trajectories._steps import StepAggregation, StepJudge, StepReport, StepVerdict

__all__ = [
    "CHECK_JUDGE_ID",
    "ChatMessage",
    "Check",
    "CheckCriterion",
    "CheckResult",
    "CheckSpec",
    "CustomCheck",
    "Step",
    "StepAggregation",
    "StepCount",
    "StepJudge",
    "StepReport",
    "StepVerdict",
    "StepsCriterion",
    "ToolArgs",
    "ToolCall",
    "ToolSequence",
    "ToolUse",
    "ToolUsed",
    "Trajectory",
    "TrajectoryGrader",
    "TrajectoryRubric",
    "custom_check",
    "load_traces",
    "render_step",
    "render_trajectory",
    "step_count",
    "tool_args",
    "tool_sequence",
    "tool_used",
    "trajectories_from_spans",
    "trajectory_from_item",
    "trajectory_items",
]
