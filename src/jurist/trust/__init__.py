"""Trust a judge: repeats with variance, CI gates (and, from other branches, selective
judging with a guarantee, cascades, calibration, alignment)."""

from jurist.trust._gate import Bar, GateResult, gate_scores
from jurist.trust._repeats import RepeatModel, RepeatPlan, aggregate_repeats, judge_for_repeat

__all__ = [
    "Bar",
    "GateResult",
    "RepeatModel",
    "RepeatPlan",
    "aggregate_repeats",
    "gate_scores",
    "judge_for_repeat",
]
