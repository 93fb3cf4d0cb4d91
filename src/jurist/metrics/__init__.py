"""Agreement, bias and ranking statistics; knows nothing of models.

numpy alone, so everything here works on the base install (``pip install jurist``); the
figures match scipy, scikit-learn and krippendorff, which tests/metrics/test_stats_differential.py
checks against on random and real data.

>>> import jurist.metrics as m
>>> round(m.accuracy([1, 0, 1], [1, 1, 1]), 4)
0.6667
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
from jurist.metrics._binomial import binomial_cdf, clopper_pearson_upper
from jurist.metrics._bradley_terry import (
    BradleyTerryResult,
    BradleyTerryRow,
    StyleCoefficient,
    bootstrap_interval,
    bradley_terry,
    win_rate_from_ratings,
)
from jurist.metrics._length_control import LengthControlledWinRate, length_controlled_win_rate
from jurist.metrics._length_control_joint import LengthControlledFit, fit_length_controlled
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
from jurist.metrics._ppi import (
    PPIEstimate,
    PPIInterval,
    ppi_agreement,
    ppi_mean,
    ppi_win_rate,
    win_value,
)
from jurist.metrics._ppi_plan import (
    draw_plan,
    inclusion_probabilities,
    labels_for_width,
    residual_spread,
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
from jurist.metrics._selective import (
    Confidences,
    SelectiveThreshold,
    confidence_from_logprobs,
    confidence_from_panel,
    confidence_from_probs,
    confidence_from_repeats,
    selective_agreement,
    selective_threshold,
)
from jurist.metrics._style import MarkdownCounts, markdown_counts, style_differences
from jurist.metrics._winrate import WinRate, preference_from_alpaca, win_rate

__all__ = [
    "Agreement",
    "BradleyTerryResult",
    "BradleyTerryRow",
    "Confidences",
    "CriterionInfo",
    "CriterionMetrics",
    "Estimate",
    "ItemRepeats",
    "Kind",
    "LengthBias",
    "LengthControlledFit",
    "LengthControlledWinRate",
    "MarkdownCounts",
    "PPIEstimate",
    "PPIInterval",
    "RubricMetrics",
    "SelectiveThreshold",
    "StyleCoefficient",
    "WinRate",
    "accuracy",
    "agreement",
    "binomial_cdf",
    "bootstrap_ci",
    "bootstrap_interval",
    "bradley_terry",
    "clopper_pearson_upper",
    "cohen_kappa",
    "confidence_from_logprobs",
    "confidence_from_panel",
    "confidence_from_probs",
    "confidence_from_repeats",
    "confusion",
    "criteria_info",
    "draw_plan",
    "fit_length_controlled",
    "fleiss_kappa",
    "flip_rate",
    "inclusion_probabilities",
    "kendall_tau",
    "krippendorff_alpha",
    "labels_for_width",
    "length_bias",
    "length_bias_pairwise",
    "length_controlled_win_rate",
    "mae",
    "markdown_counts",
    "pearson",
    "position_consistency",
    "ppi_agreement",
    "ppi_mean",
    "ppi_win_rate",
    "preference_from_alpaca",
    "repeat_stats",
    "residual_spread",
    "rmse",
    "rubric_metrics",
    "selective_agreement",
    "selective_threshold",
    "self_consistency",
    "spearman",
    "style_differences",
    "two_level_difference",
    "two_level_interval",
    "win_rate",
    "win_rate_from_ratings",
    "win_value",
]
