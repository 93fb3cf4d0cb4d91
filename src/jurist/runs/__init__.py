"""Run folders: the run store, resume, exports, cost and the HTML report.

A run folder holds ``manifest.json`` and ``run.sqlite`` (one owner: :mod:`jurist.runs._store`).
:class:`Run` reads a folder back at any time (records, JSONL / Parquet / pandas, summary,
report, and :class:`RunState`: where it stands); :class:`PriceTable` prices a run's usage;
:func:`leaderboard` ranks the systems of pairwise runs. The engines in :mod:`jurist.engines` write
runs; nothing here calls a model. See ``docs/evaluate.md``.
"""

from jurist.runs._cost import Price, PriceTable
from jurist.runs._leaderboard import Leaderboard, LeaderboardRow, LeaderboardRun, leaderboard
from jurist.runs._manifest import DatasetInfo, Manifest
from jurist.runs._run import Run, RunSummary
from jurist.runs._state import RunState

__all__ = [
    "DatasetInfo",
    "Leaderboard",
    "LeaderboardRow",
    "LeaderboardRun",
    "Manifest",
    "Price",
    "PriceTable",
    "Run",
    "RunState",
    "RunSummary",
    "leaderboard",
]
