"""The bars a suite's cells must clear, checked on each finished cell's run.

Every bar is checked like ``jurist gate`` checks its bar (:func:`jurist.trust.gate_scores`):
against an interval at ``settings.level`` that resamples the items (and an item's
repeats). A bar ``fail``\\ s when the whole interval lies below it, ``pass``\\ es when
the whole interval clears it, and is ``inconclusive`` when the interval straddles it,
which passes unless ``settings.strict`` is set. A cell with fewer than two scored items
misses every bar (there is no interval to read).

- ``mean_score: X``: the mean score (0..1);
- ``pass_rate: R`` (with ``threshold: T``, default 0.5): the share of scored items whose
  score is at least ``T``;
- ``max_drop: D`` with ``baseline: FOLDER``: the fall of the mean score from the same
  cell of a baseline suite run (``FOLDER/<dataset>/<judge>``), or from the run in
  ``FOLDER`` itself; paired over items when both judged the same data;
- ``corrected_mean: X`` with ``labels: FIELD``: the mean corrected with a few human
  labels (PPI++, :func:`jurist.runs._estimate.estimate_run`, the items with a label taken
  as a uniform random subset, as ``jurist gate --labels FIELD`` takes them); labels that
  cannot be trusted (too few, all alike, a subset that does not look random) fail the bar
  with the reason.

>>> r = BarResult(dataset="qa", judge="j", bar="mean score ≥ 0.6", value=0.5, low=0.4,
...               high=0.55, outcome="fail")
>>> r.passed
False
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from jurist.errors import ConfigError, DataError
from jurist.pipeline.suites._model import (
    CorrectedMeanBar,
    MaxDropBar,
    MeanScoreBar,
    PassRateBar,
    Settings,
)
from jurist.runs import Run

__all__ = ["BarResult", "bar_text", "baseline_folder", "check_bars"]


class BarResult(BaseModel):
    """One bar on one cell: the figure, its interval, the outcome."""

    model_config = ConfigDict(frozen=True)

    dataset: str
    judge: str
    bar: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    outcome: Literal["pass", "fail", "inconclusive"]
    strict: bool = False
    note: str | None = None

    @property
    def passed(self) -> bool:
        return self.outcome == "pass" or (self.outcome == "inconclusive" and not self.strict)


def baseline_folder(base: Path, dataset: str, judge: str) -> Path:
    """The baseline run of a cell: ``base`` itself when it is a run folder, else the same
    cell of the suite run in ``base``."""
    return base if (base / "manifest.json").is_file() else base / dataset / judge


def bar_text(bar: Any) -> str:
    if isinstance(bar, MeanScoreBar):
        return f"mean score ≥ {bar.mean_score:g}"
    if isinstance(bar, PassRateBar):
        return f"pass rate (score ≥ {bar.threshold:g}) ≥ {bar.pass_rate:g}"
    if isinstance(bar, MaxDropBar):
        return f"drop from baseline ≤ {bar.max_drop:g}"
    assert isinstance(bar, CorrectedMeanBar)
    return f"corrected mean ({bar.labels}) ≥ {bar.corrected_mean:g}"


def _passes(scores: list[list[float | None]], threshold: float) -> list[list[float | None]]:
    return [
        [(1.0 if s >= threshold else 0.0) if s is not None else None for s in item]
        for item in scores
    ]


def check_bars(
    run: Run,
    bars: list[Any],
    settings: Settings,
    *,
    dataset: str,
    judge: str,
    resolve: Any,
) -> list[BarResult]:
    """Check ``bars`` on the finished cell ``run``; ``resolve`` turns a suite path into a
    folder (the baseline's)."""
    from jurist.runs._state import require_finished
    from jurist.trust import Bar, gate_scores

    out: list[BarResult] = []
    scores = run.item_scores()
    for bar in bars:
        text = bar_text(bar)
        base: dict[str, Any] = {"dataset": dataset, "judge": judge, "bar": text}
        baseline = None
        try:
            if isinstance(bar, MeanScoreBar):
                gate = Bar(min_score=bar.mean_score, level=settings.level, strict=settings.strict)
                result = gate_scores(scores, gate)
            elif isinstance(bar, PassRateBar):
                gate = Bar(min_score=bar.pass_rate, level=settings.level, strict=settings.strict)
                result = gate_scores(_passes(scores, bar.threshold), gate)
            elif isinstance(bar, MaxDropBar):
                baseline = Run(baseline_folder(resolve(bar.baseline), dataset, judge))
                require_finished(baseline, "baseline run")
                gate = Bar(max_drop=bar.max_drop, level=settings.level, strict=settings.strict)
                a, b = run.manifest.dataset, baseline.manifest.dataset
                paired = a.hash is not None and a.hash == b.hash and a.items == b.items
                result = gate_scores(scores, gate, baseline=baseline.item_scores(), paired=paired)
            else:
                assert isinstance(bar, CorrectedMeanBar)
                from jurist.runs._estimate import estimate_run
                from jurist.trust import gate_corrected

                gate = Bar(
                    min_score=bar.corrected_mean, level=settings.level, strict=settings.strict
                )
                estimate = estimate_run(run, bar.labels, kind="mean", level=settings.level)
                result = gate_corrected(
                    estimate.result,
                    gate,
                    items=len(scores),
                    scored=sum(any(s is not None for s in item) for item in scores),
                )
        except (DataError, ConfigError) as e:  # a bar that cannot be read fails, with why
            out.append(BarResult(**base, outcome="fail", strict=settings.strict, note=str(e)))
            continue
        check = result.checks[0]
        out.append(
            BarResult(
                **base,
                value=check.value,
                low=check.low,
                high=check.high,
                outcome=check.outcome,
                strict=settings.strict,
                note=f"baseline {baseline.run_dir}" if baseline is not None else None,
            )
        )
    return out
