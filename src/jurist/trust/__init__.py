"""Trust a judge: selective judging with a guarantee, and cascades of judges."""

from jurist.trust._fit import (
    CascadeFit,
    CascadeReplay,
    DeltaSplit,
    TierFit,
    TierReplay,
    fit_cascade,
    replay_cascade,
)

__all__ = [
    "CascadeFit",
    "CascadeReplay",
    "DeltaSplit",
    "TierFit",
    "TierReplay",
    "fit_cascade",
    "replay_cascade",
]
