"""Alignment from labels: make an :class:`~jurist.LLMJudge` agree more with people.

:func:`align` splits the labelled items (seeded) into a **pick** slice, a **score** slice
and a **held-out** part (:func:`~jurist.trust._align_data.split_rows`), then:

1. **Few-shot selection** (greedy forward): a pool of candidate examples is drawn from the
   pick slice (round-robin over the label values, the items the judge got wrong first);
   each step tries every candidate left, added to the examples chosen so far, by judging
   the score slice with it, and keeps the one that raises the headline metric there most;
   the search stops at ``max_examples``, when no candidate raises it, or when the next
   candidate would pass ``budget``. A candidate whose judge fails on more items than the
   best so far is never kept (a judge that fails on hard items must not look better).
2. **Instructions** (with ``proposer``): the proposer model gets the current
   instructions and a few score-slice disagreements and proposes new instructions; a
   proposal is kept only when it raises the score-slice metric.
3. **Calibration** (numeric labels, ``calibrate=True``): a monotone map
   (:func:`~jurist.metrics._calibration.isotonic_fit`, as :func:`fit_calibration`) from
   the aligned judge's score to the labels, kept when its two-fold cross-fitted
   score-slice metric beats the plain one; fitted on the whole score slice.
4. **Held-out report**: the held-out part is judged once, by the final judge, after the
   search. Before (the starting judge: the run's recorded scores when given) and after
   come with bootstrap intervals and each metric's gain with a paired interval
   (:func:`~jurist.metrics._calibration.paired_gain`); :attr:`AlignReport.supported` says
   whether the headline gain is supported (see :mod:`jurist.trust._align_report`).

Nothing of the held-out part is read before step 4, not even the range of numeric labels
(read from the pick and score slices). Every judge call is counted: the plan
(:class:`AlignPlan`) states the most the alignment may take before any call, and
``budget`` bounds the calls.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from jurist._sync import run_sync
from jurist.errors import ConfigError, DataError
from jurist.judges import LLMJudge
from jurist.metrics import agreement
from jurist.metrics._agreement import metric_functions
from jurist.metrics._calibration import paired_gain
from jurist.metrics._labels import check_labels
from jurist.models import Model, get_model
from jurist.trust._align_data import Row, label_space, split_rows
from jurist.trust._align_report import AlignReport
from jurist.trust._align_search import (
    Best,
    Search,
    calibration_on,
    greedy,
    plan_of,
    pool_of,
    propose_rounds,
)
from jurist.trust._calibrate import HEADLINE, FittedOn, fingerprint
from jurist.trust._calibrated import CalibratedJudge

__all__ = ["Alignment", "align", "align_sync"]

MIN_LABELLED = 10
"""The fewest labelled items an alignment splits into its three parts."""


@dataclass(frozen=True)
class Alignment:
    """The aligned judge (the starting one when nothing helped) and the report."""

    judge: LLMJudge | CalibratedJudge
    report: AlignReport


async def align(
    judge: LLMJudge,
    items: Sequence[Mapping[str, Any]],
    labels: Sequence[Any],
    *,
    scores: Sequence[float | None] | None = None,
    keys: Sequence[Any] | None = None,
    max_examples: int = 4,
    pool: int = 8,
    budget: int = 2000,
    held_out: float = 0.5,
    pick: float = 0.5,
    score_items: int | None = 100,
    proposer: Model | str | None = None,
    proposer_rounds: int = 1,
    show: int = 5,
    calibrate: bool = True,
    kind: Literal["nominal", "ordinal", "interval"] | None = None,
    metric: str | None = None,
    seed: int = 0,
    label_field: str = "label",
    source: str | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    say: Callable[[str], None] | None = None,
) -> Alignment:
    """Align ``judge`` to ``labels`` on ``items`` (see the module docs).

    ``scores``: the judge's recorded 0-1 scores of the items (a run's), used as its
    "before" and to order the pool, with no call; without them the starting judge is
    judged on the score slice and the held-out part. ``keys``: the items' ids (default:
    their ``id`` field, else their positions from 1). ``say`` receives the plan's lines
    before the first call.
    """
    if not isinstance(judge, LLMJudge):
        raise ConfigError(f"align needs an LLMJudge, got {type(judge).__name__}")
    if len(items) != len(labels) or (scores is not None and len(scores) != len(items)):
        raise DataError(
            f"align: {len(items)} items, {len(labels)} labels"
            + ("" if scores is None else f", {len(scores)} scores")
        )
    for name, value, least in (("max_examples", max_examples, 0), ("pool", pool, 1)):
        if value < least:
            raise ConfigError(f"{name} must be at least {least}, not {value}")
    if keys is None:
        keys = [it.get("id", i) for i, it in enumerate(items, 1)]
    keys = [str(k) for k in keys]
    # the labels are checked before any call: finite, two classes at least, enough of them
    check_labels(labels, field=label_field, keys=keys, least=MIN_LABELLED, where=source)
    space, values = label_space(labels, judge.template, kind=kind, keys=keys)
    headline = metric or {**HEADLINE, "nominal": ("cohen_kappa", 1)}[space.kind][0]
    known = [n for n, _ in metric_functions(space.kind)]
    if headline not in known:
        raise ConfigError(f"metric {headline!r} is not one of {', '.join(known)} ({space.kind})")
    rows = [
        Row(
            key=k,
            item=dict(it),
            label=y,
            score=None if scores is None else scores[i],
            group=_group_of(judge, it, k),
        )
        for i, (k, it, y) in enumerate(zip(keys, items, values, strict=True))
        if y is not None
    ]
    if len(rows) < MIN_LABELLED:
        raise DataError(
            f"align needs at least {MIN_LABELLED} labelled items; {len(rows)} have a label"
        )
    splits = split_rows(rows, held_out=held_out, pick=pick, score_items=score_items, seed=seed)
    if not space.named:  # numeric labels: their range and values from the train part only
        train_labels = [r.label for r in (*splits.pick, *splits.score)]
        space, _ = label_space(train_labels, judge.template, kind=space.kind)
    candidates = pool_of(splits.pick, space, pool, recorded=scores is not None)
    plan = plan_of(splits, candidates, max_examples, proposer, proposer_rounds, budget, scores)
    least = plan.baseline_calls + plan.score + plan.held_out
    if budget < least:
        raise ConfigError(
            f"budget {budget} is below the least an alignment takes here ({least}: one "
            f"candidate on the {plan.score}-item score slice and the {plan.held_out}-item "
            "held-out check" + (", and the baseline" if plan.baseline_calls else "") + ")"
        )
    for line in plan.lines():
        (say or (lambda _: None))(line)
    search = Search(splits, space, headline, budget)
    reserve = plan.held_out
    if scores is None:
        base_score = await search.judge(judge, splits.score)
        base_test = await search.judge(judge, splits.held_out)
    else:
        base_score = [r.score for r in splits.score]
        base_test = [r.score for r in splits.held_out]
    best = Best(judge, base_score, search)
    train_before = best.metric
    stopped = await greedy(search, best, candidates, max_examples, reserve)
    if proposer is not None:
        model = get_model(proposer) if isinstance(proposer, str) else proposer
        note = await propose_rounds(search, best, model, proposer_rounds, show, reserve)
        stopped = f"{stopped}; {note}" if note else stopped
    tried = list(best.tried)
    final_judge: LLMJudge = best.judge
    changed = final_judge is not judge
    calibration = None
    if calibrate and not space.named and space.kind != "nominal":
        calibration = calibration_on(search, best.scores, label_field, source)
    after_scores = base_test
    if changed:
        after_scores = await search.judge(final_judge, splits.held_out)
    truth = [r.label for r in splits.held_out]
    before = [space.of_score(s) for s in base_test]
    after = [
        space.of_score(s) if calibration is None or s is None else calibration.verdict(s)
        for s in after_scores
    ]
    opts: dict[str, Any] = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
    gains = {
        n: paired_gain(fn, before, after, truth, **opts) for n, fn in metric_functions(space.kind)
    }
    gain = gains[headline]
    bound = gain.low if search.sign > 0 else gain.high
    failed_before = sum(b is None for b in before)
    failed_after = sum(a is None for a in after)
    changed = changed or calibration is not None
    supported = (
        changed and bound is not None and search.sign * bound > 0 and failed_after <= failed_before
    )
    train = [*splits.pick, *splits.score]
    report = AlignReport(
        plan=plan,
        space=space,
        headline=headline,
        fitted_on=FittedOn(
            fingerprint=fingerprint(
                [r.key for r in train],
                [-1.0 if r.score is None else r.score for r in train],
                [r.label for r in train],
            ),
            items=len(train),
            labels=label_field,
            source=source,
        ),
        examples=final_judge.examples,
        example_keys=tuple(best.example_keys),
        instructions=best.instructions,
        calibration=calibration,
        train_before=train_before,
        train_after=best.metric,
        candidates=tuple(tried),
        stopped=stopped,
        calls=search.spent,
        n_test=len(splits.held_out),
        before=agreement(before, truth, kind=space.kind, **opts),
        after=agreement(after, truth, kind=space.kind, **opts),
        failed_before=failed_before,
        failed_after=failed_after,
        gains=gains,
        supported=supported,
        changed=changed,
    )
    aligned: LLMJudge | CalibratedJudge = final_judge
    if calibration is not None:
        aligned = CalibratedJudge(final_judge, calibration, name=f"{judge.name}+aligned")
    return Alignment(judge=aligned, report=report)


def _group_of(judge: LLMJudge, item: Mapping[str, Any], key: str) -> str:
    """The item's prompt text as the judge renders it (a digest), so that duplicates stay in
    one part of the split; an item the template cannot render is its own group."""
    try:
        text = judge.template.render_item(item)
    except DataError:
        return f"key:{key}"
    return hashlib.sha256(text.encode()).hexdigest()


def align_sync(
    judge: LLMJudge, items: Sequence[Mapping[str, Any]], labels: Sequence[Any], **options: Any
) -> Alignment:
    """Sync twin of :func:`align`; works inside a running event loop too."""
    return run_sync(align(judge, items, labels, **options))
