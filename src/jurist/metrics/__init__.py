"""Agreement and bias statistics; knows nothing of models.

numpy alone, so everything here works on the base install (``pip install jurist``); the
figures match scipy, scikit-learn and krippendorff, which tests/test_stats_differential.py
checks against on random and real data.

>>> import jurist.metrics as m
>>> m.accuracy([1, 0, 1], [1, 1, 1])
0.6666666666666666
>>> res = m.agreement([0.1, 0.4, 0.8, 0.9], [1, 2, 4, 5], kind="interval", ci=False)
>>> round(res["pearson"].value, 4)
0.9877
"""

from jurist.metrics._agreement import Agreement, Estimate, Kind, agreement, bootstrap_ci
from jurist.metrics._bias import (
    LengthBias,
    length_bias,
    length_bias_pairwise,
    position_consistency,
)
from jurist.metrics._measures import (
    accuracy,
    cohen_kappa,
    confusion,
    fleiss_kappa,
    kendall_tau,
    krippendorff_alpha,
    mae,
    pearson,
    rmse,
    spearman,
)
from jurist.metrics._repeats import (
    ItemRepeats,
    flip_rate,
    repeat_stats,
    self_consistency,
    two_level_difference,
    two_level_interval,
)
from jurist.metrics._rubric import (
    CriterionInfo,
    CriterionMetrics,
    RubricMetrics,
    criteria_info,
    rubric_metrics,
)

__all__ = [
    "Agreement",
    "CriterionInfo",
    "CriterionMetrics",
    "Estimate",
    "ItemRepeats",
    "Kind",
    "LengthBias",
    "RubricMetrics",
    "accuracy",
    "agreement",
    "bootstrap_ci",
    "cohen_kappa",
    "confusion",
    "criteria_info",
    "fleiss_kappa",
    "flip_rate",
    "kendall_tau",
    "krippendorff_alpha",
    "length_bias",
    "length_bias_pairwise",
    "mae",
    "pearson",
    "position_consistency",
    "repeat_stats",
    "rmse",
    "rubric_metrics",
    "self_consistency",
    "spearman",
    "two_level_difference",
    "two_level_interval",
]
