"""Trusting a judge: calibration against labels (more in ``docs/trust.md``).

- :func:`fit_calibration` fits a monotone map from a judge's score to the labels' scale on
  one part of the labelled items and reports agreement before and after on the rest;
- :class:`CalibratedJudge` applies a fitted :class:`Calibration` to any judge.
"""

from jurist.trust._calibrate import Calibration, CalibrationReport, FittedOn, fit_calibration
from jurist.trust._calibrated import CalibratedJudge, CalibratedJudgment, CalibratedResults

__all__ = [
    "CalibratedJudge",
    "CalibratedJudgment",
    "CalibratedResults",
    "Calibration",
    "CalibrationReport",
    "FittedOn",
    "fit_calibration",
]
