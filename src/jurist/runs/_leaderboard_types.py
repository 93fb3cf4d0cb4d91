"""The shapes of a leaderboard (:func:`jurist.runs.leaderboard`): its rows, the runs it
read, and the table's exports. Apart from :mod:`jurist.runs._leaderboard` so that the
page (:mod:`jurist.runs.report._leaderboard_page`) reads them without importing the code
that computes them, which writes the page.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from jurist.errors import MissingDependencyError

__all__ = ["CSV_COLUMNS", "LeaderboardData", "LeaderboardRow", "LeaderboardRun", "StyleRow"]

CSV_COLUMNS = (
    "rank",
    "system",
    "score",
    "lower",
    "upper",
    "win_rate",
    "win_rate_se",
    "lc_win_rate",
    "lc_win_rate_se",
    "wins",
    "ties",
    "losses",
    "pairs_vs_baseline",
    "battles",
    "mean_length",
)


class LeaderboardRun(BaseModel):
    """One run the leaderboard read: what judged it and how many of its pairs counted."""

    run_dir: str
    judge: str
    data: str
    pairs: int
    battles: int
    failed: int
    inconsistent: int


class LeaderboardRow(BaseModel):
    """One system: its Bradley-Terry score and interval (0-100, a win rate against the
    baseline), its raw and length-controlled win rates against the baseline (0-100, with
    standard errors; ``None`` without a pair against it) and its answers' mean length."""

    rank: int
    system: str
    score: float
    lower: float
    upper: float
    battles: int
    win_rate: float | None
    win_rate_se: float | None
    lc_win_rate: float | None
    lc_win_rate_se: float | None
    wins: int
    ties: int
    losses: int
    pairs_vs_baseline: int
    mean_length: float


class StyleRow(BaseModel):
    """A style feature's coefficient in a style-controlled fit, with its 95% interval
    (Arena-Hard-Auto's features: ``length``, ``header``, ``list``, ``bold``)."""

    name: str
    value: float
    lower: float
    upper: float


class LeaderboardData(BaseModel):
    """The systems ranked by Bradley-Terry score, the baseline, the runs read."""

    baseline: str
    baseline_from: Literal["given", "every battle", "most battles"]
    rows: list[LeaderboardRow]
    runs: list[LeaderboardRun]
    bootstrap: int
    seed: int
    battles: int
    style_control: bool = False
    """The scores are style-controlled: the Bradley-Terry fit also weighs the answers'
    style differences (``style``), and a score is read at the mean style difference."""
    style: list[StyleRow] = []
    lc_difficulty: Literal["joint", "none"] = "none"
    """``joint``: the length control estimated each instruction's difficulty across the
    systems (two or more against the baseline); ``none``: fitted per system without it."""
    notes: list[str] = []

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts, in :data:`CSV_COLUMNS` order."""
        return [{c: getattr(r, c) for c in CSV_COLUMNS} for r in self.rows]

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame."""
        try:
            import pandas as pd
        except ImportError as e:
            raise MissingDependencyError("pandas", "dev", "Leaderboard.to_pandas()") from e
        return pd.DataFrame.from_records(self.records(), columns=list(CSV_COLUMNS))

    def to_csv(self, path: str | Path) -> Path:
        """Write the table as CSV (empty cells where a figure is unknown)."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(CSV_COLUMNS))
            writer.writeheader()
            writer.writerows(self.records())
        return out
