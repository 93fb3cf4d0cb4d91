"""A run's figure corrected by people's labels: what ``jurist estimate`` computes.

It lives with the run store (it reads a run, its ``labels.jsonl`` and its ``plan.jsonl``);
the statistics are :mod:`jurist.metrics._ppi`'s.

:func:`estimate_run` reads a finished run and its labels, from an item field
(``labels="human"``) or a labels file (``labels.jsonl`` in the run folder, or a path),
and gives the PPI++ estimate (:func:`jurist.metrics.ppi_mean`) of:

- ``mean``: the mean label. The judge's prediction is its verdict when every label is on
  the judge's verdict scale (1-5 labels for a 1-5 judge), else its 0-1 score;
- ``win_rate``: a pairwise run's win rate of A (ties half): the judge's preference for A
  against labels ``A`` / ``B`` / ``tie`` (or A's win as a number in [0, 1]);
- ``agreement``: how often the judge's verdict equals the label (the judge's own
  prediction of it: its confidence where the run recorded one).

``kind="auto"`` picks ``win_rate`` for a pairwise run and ``mean`` otherwise.

**Which labels are trusted.** Labels in an item field are taken as a uniform random
subset of the items and checked for balance (the labelled items' judge scores must not sit
far from the rest's). Labels from a labels file are used as the plan drew them: the
items of the run's ``plan.jsonl`` (``jurist review RUN --plan N``) are weighted by their
inclusion probabilities; labels given before the plan are a second, uniform batch only
when ``random_subset=True`` says they were drawn at random (the two batches' estimates are
then weighted by their share of the labels); labels on items a person picked outside a plan are
left out, and the result says how many. Without a plan, labels from a file are refused
unless ``random_subset=True``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from jurist.errors import ConfigError, UntrustedEstimateError
from jurist.metrics._ppi import Method, PPIEstimate, agreement_hits, ppi_mean, win_value

__all__ = ["EstimateKind", "RunEstimate", "estimate_run", "judge_values"]

EstimateKind = Literal["auto", "mean", "win_rate", "agreement"]


class RunEstimate(BaseModel):
    """The estimate of one run and where its labels came from."""

    model_config = ConfigDict(frozen=True)

    run: str
    kind: Literal["mean", "win_rate", "agreement"]
    source: str
    """The item field or the labels file."""
    judge_on: str
    """What the judge's prediction is: ``verdict``, ``score`` or ``confidence``."""
    result: PPIEstimate
    left_out: int = 0
    """Labels not used: on items outside the plan, or before it without ``random_subset``."""
    notes: list[str] = []
    judge: list[float | None] = Field(default=[], exclude=True, repr=False)
    """Per item, the judge's prediction the estimate used (what a plan draws from)."""
    values: list[float | None] = Field(default=[], exclude=True, repr=False)
    """Per item, the label as the number the estimate used (``None``: unlabelled)."""

    def as_json(self) -> dict[str, Any]:
        out = self.result.as_json()
        out.update(
            run=self.run,
            kind=self.kind,
            source=self.source,
            judge_on=self.judge_on,
            left_out=self.left_out,
            notes=[*self.result.notes, *self.notes],
        )
        return out


def _is_pairwise(outcomes: list[dict[str, Any]]) -> bool:
    return any(isinstance(o, dict) and "winner" in o for o in outcomes)


def judge_values(
    scores: list[float | None], verdicts: list[Any], labels: list[Any], scale: Any
) -> tuple[list[float | None], list[float | None], str]:
    """The judge's prediction and the labels as numbers on one footing for ``mean``: the
    verdicts when every label is on the verdict scale, else the 0-1 scores."""
    from jurist.runs.report._scale import _on_verdict_scale, as_number

    present = [t for t in labels if t is not None]
    bad = [t for t in present if as_number(t) is None and not _is_numeric_text(t)]
    if bad:
        raise ConfigError(f"a mean needs numeric labels; got {bad[0]!r} (see --kind)")
    nums = [None if t is None else float(t) for t in labels]
    on_verdict = (
        scale is not None
        and hasattr(scale, "contains")
        and all(_on_verdict_scale(t, scale) for t in nums if t is not None)
        and all(
            as_number(v) is not None for v, s in zip(verdicts, scores, strict=True) if s is not None
        )
    )
    if on_verdict:
        pred = [None if s is None else as_number(v) for v, s in zip(verdicts, scores, strict=True)]
        return pred, nums, "verdict"
    return [None if s is None else float(s) for s in scores], nums, "score"


def _is_numeric_text(v: Any) -> bool:
    try:
        return isinstance(v, str) and math.isfinite(float(v))
    except ValueError:
        return False


def _from_file(
    run: Any, path: Path | None, random_subset: bool, notes: list[str]
) -> tuple[list[Any], list[float | None] | None, list[Any] | None, int, str]:
    """Labels per item from a labels file, with probabilities (a plan), the pre-plan
    batch (or ``None``), how many labels were left out, and the file."""
    from jurist.data._item_names import item_label
    from jurist.runs._labels import run_labels
    from jurist.runs._plan import read_plan

    got = run_labels(run, path)
    if got.torn:
        notes.append(f"{got.torn} torn last line in {got.path} left out")
    if got.ties:
        notes.append(f"{got.ties} items whose annotators tie have no label")
    values = list(got.values)
    plan = read_plan(run.run_dir)
    carried = [got.probabilities[i] for i, v in enumerate(values) if v is not None]
    if plan is None and carried and all(p is not None for p in carried):
        notes.append("every label carries its inclusion probability: weighted by them")
        return values, list(got.probabilities), None, 0, got.path
    if plan is None:
        if not random_subset:
            raise UntrustedEstimateError(
                f"{got.path}: {got.labelled} labels but no plan: items a person picked are "
                "not a random sample, and an estimate from them may be biased; draw the items "
                "to label with jurist review RUN --plan N (or, if these were drawn uniformly "
                "at random, say so with --random-subset)"
            )
        return values, None, None, 0, got.path
    index = {item_label(r["idx"], r["item"]): r["idx"] for r in run.rows()}
    planned: dict[int, float] = {}
    for e in plan:
        idx = e.item if isinstance(e.item, int) else index.get(str(e.item))
        if idx is None:
            raise UntrustedEstimateError(f"plan.jsonl: item {e.item!r} is not in the run")
        planned[idx] = e.inclusion_probability
    have = [i for i in planned if values[i] is not None]
    k, m = len(have), len(planned)
    if k == 0:
        raise UntrustedEstimateError(f"{got.path}: none of the {m} planned items has a label")
    if k < m:
        notes.append(
            f"{k} of {m} planned items labelled: each weighted as drawn with probability x {k}/{m}"
        )
    probs: list[float | None] = [None] * len(values)
    for i in have:
        probs[i] = planned[i] * k / m
    outside = [i for i, v in enumerate(values) if v is not None and i not in planned]
    earlier = [values[i] if i in outside else None for i in range(len(values))]
    plan_vals = [values[i] if i in planned else None for i in range(len(values))]
    if outside and not random_subset:
        notes.append(
            f"{len(outside)} labels outside the plan left out (--random-subset "
            "uses them as a uniform batch)"
        )
        return plan_vals, probs, None, len(outside), got.path
    return plan_vals, probs, (earlier if outside else None), 0, got.path


def estimate_run(
    run: Any,
    labels: str | Path,
    *,
    kind: EstimateKind = "auto",
    random_subset: bool = False,
    strata: str | None = None,
    level: float = 0.95,
    method: Method = "analytic",
    n_resamples: int = 2000,
    seed: int = 0,
    min_labels: int = 30,
) -> RunEstimate:
    """The corrected estimate of ``run`` (a :class:`~jurist.runs.Run`) from ``labels``: an
    item field, or a labels file (a path, or ``"labels.jsonl"`` for the run folder's)."""
    from jurist.metrics._labels import label_missing
    from jurist.runs.report._scale import scale_of

    rows = list(run.rows())
    if not rows:
        raise UntrustedEstimateError(f"{run.run_dir}: the run has no judged items")
    outcomes = [r["outcome"] for r in rows]
    scores = [r["score"] for r in rows]
    verdicts = [o.get("verdict") if isinstance(o, dict) else None for o in outcomes]
    notes: list[str] = []
    as_file = isinstance(labels, Path) or str(labels).endswith(".jsonl")
    probs: list[float | None] | None = None
    earlier: list[Any] | None = None
    left_out = 0
    if as_file:
        path = Path(labels)
        if not path.is_absolute() and not path.exists():
            path = Path(run.run_dir) / path
        values, probs, earlier, left_out, source = _from_file(run, path, random_subset, notes)
    else:
        field = str(labels)
        if not any(field in r["item"] for r in rows):
            raise ConfigError(f"{run.run_dir}: no item has a field {field!r}")
        values = [None if label_missing(r["item"].get(field)) else r["item"][field] for r in rows]
        source = f"field {field!r}"
    chosen = ("win_rate" if _is_pairwise(outcomes) else "mean") if kind == "auto" else kind
    keys = None
    if strata is not None:
        keys = [str(r["item"].get(strata)) for r in rows]
    opts: dict[str, Any] = dict(
        strata=keys,
        level=level,
        method=method,
        n_resamples=n_resamples,
        seed=seed,
        min_labels=min_labels,
        where=f"{run.run_dir}: {source}",
    )

    def numbers(vals: list[Any]) -> tuple[list[float | None], list[float | None], str]:
        if chosen == "win_rate":
            return [win_value(s) for s in scores], [win_value(v) for v in vals], "score"
        if chosen == "agreement":
            conf = [o.get("confidence") if isinstance(o, dict) else None for o in outcomes]
            hits = agreement_hits(verdicts, vals)
            if any(c is not None for c in conf):
                return conf, hits, "confidence"
            return [0.0] * len(hits), hits, "none"
        return judge_values(scores, verdicts, vals, scale_of(run.manifest.judge))

    def one(vals: list[Any], p: list[float | None] | None) -> PPIEstimate:
        pred, nums, on = numbers(vals)
        res = ppi_mean(pred, nums, probabilities=p, **opts)
        if on == "none":  # no prediction of agreement: the labels' figure alone
            res = res.model_copy(update={"judge_only": None, "power": 0.0})
        return res

    pred, nums, judge_on = numbers(values)
    result = one(values, probs)
    if earlier is not None:
        result = _two_batches(result, one(earlier, None), scores)
        nums = [a if a is not None else b for a, b in zip(nums, numbers(earlier)[1], strict=True)]
        notes.append("labels outside the plan used as a uniform batch, weighted by their share")
    return RunEstimate(
        run=str(run.run_dir),
        kind=chosen,
        source=source,
        judge_on=judge_on,
        result=result,
        left_out=left_out,
        notes=notes,
        judge=pred,
        values=nums,
    )


def _two_batches(a: PPIEstimate, b: PPIEstimate, scores: list[Any]) -> PPIEstimate:
    """Combine a plan's estimate ``a`` with an earlier uniform batch's ``b`` (analytic,
    each weighted by its share of the labels)."""
    import numpy as np

    from jurist.metrics._ppi_core import combine_batches

    f = np.array([s for s in scores if s is not None], dtype=float)
    jv = float(f.var(ddof=1)) / f.size if f.size > 1 else 0.0
    half = _half_z(a.level)
    va, vb = (a.width / (2 * half)) ** 2, (b.width / (2 * half)) ** 2
    est, var = combine_batches(
        (np.array([b.estimate]), np.array([a.estimate])),
        (np.array([vb]), np.array([va])),
        (np.array([b.power]), np.array([a.power])),
        jv,
        b.labels / (a.labels + b.labels),
    )
    e, h = float(est[0]), half * math.sqrt(float(var[0]))
    return a.model_copy(
        update={"estimate": e, "lower": e - h, "upper": e + h, "labels": a.labels + b.labels}
    )


def _half_z(level: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2)
