"""The shapes a finished run is read through: its totals and what a report reads of it.

:class:`RunSummary` is what :meth:`jurist.Run.summary` returns; :class:`ReportSource` is
what :func:`jurist.runs.report._page.write_report` needs of a run (a :class:`jurist.Run`
has it). They live here, apart from both, so that ``_run`` imports ``_report`` (for
:meth:`jurist.Run.report`) and ``_report`` imports nothing of ``_run``: the dependency
points one way (mypy checks that a :class:`jurist.Run` is a :class:`ReportSource`, where
:meth:`jurist.Run.report` passes itself to ``write_report``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from jurist.runs._coverage import CoverageSummary
from jurist.runs._manifest import Manifest

__all__ = ["RepeatSummary", "ReportSource", "RunSummary"]


class RepeatSummary(BaseModel):
    """A run with repeats: how stable its judge was (see :mod:`jurist.metrics._repeats`)."""

    repeats: int
    """The repeats each item gets (adaptive: the most)."""
    adaptive: bool
    min_repeats: int
    judgments: int
    """Repeats stored, over every item (an adaptive run spends fewer than items x repeats)."""
    failed: int = 0
    """Repeats stored without a score (judged again on resume, unless ``retry_failed``)."""
    unstable_items: int
    """Items whose repeats did not all agree (flip rate > 0)."""
    mean_flip_rate: float | None
    """Over the items with two scored repeats or more: the chance two repeats disagree."""
    self_consistency: float | None
    """Krippendorff's alpha across repeats (``None``: undefined, e.g. all alike)."""
    level: float = 0.95
    mean_low: float | None = None
    mean_high: float | None = None
    """The mean score's interval with the judge's own variance (items, then repeats)."""
    items_low: float | None = None
    items_high: float | None = None
    """The mean score's interval over items alone (each item at its mean), for contrast."""

    def rows(self, items: int) -> list[tuple[str, str]]:
        """``(what, value)`` lines for a summary table (the CLI's, the report's)."""
        per = (
            f"{self.min_repeats} to {self.repeats} per item (adaptive)"
            if self.adaptive
            else f"{self.repeats} per item"
        )

        def num(value: float | None) -> str:
            return "-" if value is None else f"{value:.4f}"

        return [
            (
                "repeats",
                f"{per}: {self.judgments} judgments"
                + (f", {self.failed} failed" if self.failed else ""),
            ),
            (
                "unstable items (flip rate > 0)",
                f"{self.unstable_items} of {items}, mean flip rate {num(self.mean_flip_rate)}",
            ),
            ("self-consistency (alpha)", num(self.self_consistency)),
            (
                f"mean score {self.level:.0%} interval",
                f"[{num(self.mean_low)}, {num(self.mean_high)}] with the judge variance; "
                f"[{num(self.items_low)}, {num(self.items_high)}] items only",
            ),
        ]


class RunSummary(BaseModel):
    """The totals of a run."""

    run_dir: str
    judge: str
    data: str
    items: int
    expected_items: int | None
    status: str
    scored: int
    failed: int
    mean_score: float | None
    verdicts: dict[str, int]
    errors: dict[str, int]
    calls: int
    attempts: int
    """Every request sent to a backend, in every session of the run: failed ones, retries
    and those of results a later session replaced (a failure judged again on resume)."""
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost: float | None
    cost_of_priced_items: float
    cost_unknown_items: int
    cost_estimated_items: int
    seconds: float
    cache_write_tokens: int = 0
    """Prompt tokens the provider wrote to its prompt cache (part of ``prompt_tokens``, as
    ``cached_tokens``, the ones it read from it, are)."""
    cost_without_prompt_cache: float | None = None
    """What ``cost`` would have been with no provider prompt caching (every prompt token
    at the input price); ``prompt_cache_saved`` is the difference (``None``: unknown)."""
    prompt_cache_saved: float | None = None
    sessions: int
    notes: dict[str, int] = {}
    coverage: CoverageSummary | None = None
    """Logprob runs: the probability the judge put on its verdicts, over the weighed
    judgments, and how many fell below its ``min_coverage`` (``None``: nothing weighed)."""
    superseded: int = 0
    """Stored results a later session replaced (failures judged again on resume); their
    calls, attempts, tokens and cost are in the totals above."""
    batch_calls: int = 0
    """Completions a provider's batch API served (billed at the batch rate)."""
    decisions: list[str] = []
    """What the judge's models decided during the run from their servers' answers (JSON
    output turned off, the JSON form a server refused), one line each; a resumed session
    starts from them."""
    repeats: RepeatSummary | None = None
    """A run with repeats (``repeats=N``): stability and intervals with the judge's variance."""
    systems: dict[str, str] | None = None
    """A pairwise run's two systems by side (``{"A": "model-x", "B": "model-y"}``), as
    ``jurist compare`` records them (:func:`jurist.runs._run.record_systems`)."""
    template: str | None = None
    """The judge's template name (a panel's templates, joined; ``None``: it has none, a
    rubric grade)."""
    scoring: str | None = None
    """How verdicts were read: ``parse``, ``logprobs`` or ``auto`` (``None``: not an LLM
    judge's choice, a rubric grade)."""
    reasoning_tokens: int = 0
    """Completion tokens the judge spent thinking (part of ``completion_tokens``)."""
    reasoning_cost: float | None = 0.0
    """What the thinking cost, part of ``cost`` (``None``: unknown: an unpriced model)."""
    batch_files: list[str] = []
    """Request files written for an offline engine and not read back yet (status
    ``awaiting results``: answer them, then ``jurist ingest``)."""


class ReportSource(Protocol):
    """What the HTML report reads of a run: its folder, manifest, rows and totals."""

    @property
    def run_dir(self) -> Path: ...

    @property
    def manifest(self) -> Manifest: ...

    def rows(
        self, *, failed_only: bool = False, limit: int | None = None
    ) -> Iterator[dict[str, Any]]: ...

    def summary(self) -> RunSummary: ...
