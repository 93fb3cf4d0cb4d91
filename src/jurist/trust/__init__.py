"""Trust a judge: repeats, selective judging with a guarantee, cascades, calibration, gates.

- :class:`CascadeJudge`: judges in tiers, cheapest first; each tier decides the items it
  is confident on and passes the rest on; items no tier decides are left for people.
  :meth:`CascadeJudge.fit` fits its thresholds on labelled items so the items it decides
  agree with people at a chosen level, with a chosen confidence (Jung et al., 2025);
- :func:`fit_cascade` / :func:`replay_cascade`: the same fit and its evaluation offline,
  from recorded confidences, with no model call; :func:`fit_recorded` /
  :func:`replay_recorded` the same from recorded outcomes (a panel run of the tiers);
- :func:`guarantee_study`: the guarantee checked over random calibration/test splits;
- :func:`write_review` / :func:`cascade_summary`: after a run, the human-review file and the
  figures per tier (coverage, agreement, calls, tokens, cost);
- :func:`fit_calibration` fits a monotone map from a judge's score to the labels' scale on
  one part of the labelled items and reports agreement before and after on the rest;
  :class:`CalibratedJudge` applies a fitted :class:`Calibration` to any judge;
- :func:`align` / :func:`align_sync`: few-shot examples (and optionally new instructions
  from a proposer model) chosen on a train slice of labelled items to raise an
  :class:`~jurist.LLMJudge`'s agreement, checked once on held-out items (an
  :class:`AlignReport` that claims no gain its interval does not support).

- :class:`RepeatModel` / :func:`judge_for_repeat`: a judge asked again (``repeats=N`` in
  :func:`jurist.evaluate`), each repeat its own cache key; :func:`gate_scores`: the CI gate
  behind ``jurist gate`` (pass, fail or inconclusive from an interval);
  :func:`gate_corrected` the same on an interval corrected by people's labels (a run's
  is :func:`jurist.runs._estimate.estimate_run`, behind ``jurist estimate``).

The threshold of one judge alone is :func:`jurist.metrics.selective_threshold`.
"""

from jurist.trust._align import Alignment, align, align_sync
from jurist.trust._align_data import LabelSpace
from jurist.trust._align_report import AlignPlan, AlignReport, Candidate
from jurist.trust._calibrate import Calibration, CalibrationReport, FittedOn, fit_calibration
from jurist.trust._calibrated import CalibratedJudge, CalibratedJudgment, CalibratedResults
from jurist.trust._cascade import CascadeJudge
from jurist.trust._fit import (
    CascadeFit,
    CascadeReplay,
    DeltaSplit,
    TierFit,
    TierReplay,
    fit_cascade,
    replay_cascade,
)
from jurist.trust._gate import Bar, GateResult, gate_corrected, gate_scores
from jurist.trust._outcome import (
    CascadeJudgment,
    CascadeResults,
    ConfidenceFn,
    NotAsked,
    TierStep,
    outcome_confidence,
    outcome_field,
)
from jurist.trust._recorded import fit_recorded, replay_recorded
from jurist.trust._repeats import RepeatModel, RepeatPlan, aggregate_repeats, judge_for_repeat
from jurist.trust._review import CascadeSummary, TierSummary, cascade_summary, write_review
from jurist.trust._study import GuaranteeStudy, guarantee_study

__all__ = [
    "AlignPlan",
    "AlignReport",
    "Alignment",
    "Bar",
    "CalibratedJudge",
    "CalibratedJudgment",
    "CalibratedResults",
    "Calibration",
    "CalibrationReport",
    "Candidate",
    "CascadeFit",
    "CascadeJudge",
    "CascadeJudgment",
    "CascadeReplay",
    "CascadeResults",
    "CascadeSummary",
    "ConfidenceFn",
    "DeltaSplit",
    "FittedOn",
    "GateResult",
    "GuaranteeStudy",
    "LabelSpace",
    "NotAsked",
    "RepeatModel",
    "RepeatPlan",
    "TierFit",
    "TierReplay",
    "TierStep",
    "TierSummary",
    "aggregate_repeats",
    "align",
    "align_sync",
    "cascade_summary",
    "fit_calibration",
    "fit_cascade",
    "fit_recorded",
    "gate_corrected",
    "gate_scores",
    "guarantee_study",
    "judge_for_repeat",
    "outcome_confidence",
    "outcome_field",
    "replay_cascade",
    "replay_recorded",
    "write_review",
]
