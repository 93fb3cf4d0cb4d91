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

Every judge call is counted: the plan (:class:`AlignPlan`) states the most the alignment
may take before any call, and ``budget`` bounds the calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from jurist._sync import run_sync
from jurist.errors import ConfigError, DataError
from jurist.judges import LLMJudge
from jurist.judges._examples import Example
from jurist.metrics import agreement
from jurist.metrics._agreement import metric_functions
from jurist.metrics._calibration import isotonic_fit, paired_gain
from jurist.metrics._measures import paired
from jurist.models import Model, get_model
from jurist.trust._align_data import LabelSpace, Row, Splits, label_space, split_rows
from jurist.trust._align_report import AlignPlan, AlignReport, Candidate
from jurist.trust._calibrate import HEADLINE, Calibration, FittedOn, fingerprint, nearest
from jurist.trust._calibrated import CalibratedJudge
from jurist.trust._propose import Disagreement, propose_instructions

__all__ = ["Alignment", "align", "align_sync"]

_LOWER_IS_BETTER = frozenset({"rmse", "mae"})
_CONVERSATION_KEYS = ("messages", "messages_a", "messages_b", "images")


@dataclass(frozen=True)
class Alignment:
    """The aligned judge (the starting one when nothing helped) and the report."""

    judge: LLMJudge | CalibratedJudge
    report: AlignReport


class _Search:
    """The state of one alignment: the splits, the objective and the calls spent."""

    def __init__(self, splits: Splits, space: LabelSpace, metric: str, budget: int) -> None:
        self.splits = splits
        self.space = space
        self.metric = metric
        self.sign = -1 if metric in _LOWER_IS_BETTER else 1
        self.fn = dict(metric_functions(space.kind))[metric]
        self.truth = [r.label for r in splits.score]
        self.budget = budget
        self.spent = 0

    def value(self, preds: Sequence[float | None]) -> float:
        xs, ys = paired(preds, self.truth)
        return self.fn(xs, ys) if xs else math.nan

    def better(self, a: float, b: float) -> bool:
        """Whether metric value ``a`` beats ``b`` (NaN never beats anything)."""
        if math.isnan(a):
            return False
        return math.isnan(b) or self.sign * (a - b) > 1e-12

    async def judge(self, judge: LLMJudge, rows: Sequence[Row]) -> list[float | None]:
        results = await judge.judge_items([r.item for r in rows])
        self.spent += len(rows)
        return list(results.scores)


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
    their positions from 1). ``say`` receives the plan's lines before the first call.
    """
    if not isinstance(judge, LLMJudge):
        raise ConfigError(f"align needs an LLMJudge, got {type(judge).__name__}")
    if len(items) != len(labels) or (scores is not None and len(scores) != len(items)):
        raise DataError(
            f"align: {len(items)} items, {len(labels)} labels"
            + ("" if scores is None else f", {len(scores)} scores")
        )
    for name, value, least in (("max_examples", max_examples, 1), ("pool", pool, 1)):
        if value < least:
            raise ConfigError(f"{name} must be at least {least}, not {value}")
    keys = [str(k) for k in (range(1, len(items) + 1) if keys is None else keys)]
    space, values = label_space(labels, judge.template, kind=kind, keys=keys)
    headline = metric or {**HEADLINE, "nominal": ("cohen_kappa", 1)}[space.kind][0]
    known = [n for n, _ in metric_functions(space.kind)]
    if headline not in known:
        raise ConfigError(f"metric {headline!r} is not one of {', '.join(known)} ({space.kind})")
    rows = [
        Row(key=k, item=dict(it), label=y, score=None if scores is None else scores[i])
        for i, (k, it, y) in enumerate(zip(keys, items, values, strict=True))
        if y is not None
    ]
    if len(rows) < 10:
        raise DataError(f"align needs at least 10 labelled items; {len(rows)} have a label")
    splits = split_rows(rows, held_out=held_out, pick=pick, score_items=score_items, seed=seed)
    candidates = _pool(splits.pick, space, pool, recorded=scores is not None)
    plan = _plan(splits, candidates, max_examples, proposer, proposer_rounds, budget, scores)
    least = plan.baseline_calls + plan.score + plan.held_out
    if budget < least:
        raise ConfigError(
            f"budget {budget} is below the least an alignment takes here ({least}: one "
            f"candidate on the {plan.score}-item score slice and the {plan.held_out}-item "
            "held-out check" + (", and the baseline" if plan.baseline_calls else "") + ")"
        )
    for line in plan.lines():
        (say or (lambda _: None))(line)
    search = _Search(splits, space, headline, budget)
    reserve = plan.held_out
    if scores is None:
        base_score = await search.judge(judge, splits.score)
        base_test = await search.judge(judge, splits.held_out)
    else:
        base_score = [r.score for r in splits.score]
        base_test = [r.score for r in splits.held_out]
    best = _Best(judge, base_score, search)
    train_before = best.metric
    stopped = await _greedy(search, best, candidates, max_examples, reserve)
    if proposer is not None:
        model = get_model(proposer) if isinstance(proposer, str) else proposer
        note = await _propose(search, best, model, proposer_rounds, show, reserve)
        stopped = f"{stopped}; {note}" if note else stopped
    tried = list(best.tried)
    final_judge: LLMJudge = best.judge
    changed = final_judge is not judge
    calibration = None
    if calibrate and not space.named and space.kind != "nominal":
        calibration = _calibration(search, best.scores, label_field, source)
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


def align_sync(
    judge: LLMJudge, items: Sequence[Mapping[str, Any]], labels: Sequence[Any], **options: Any
) -> Alignment:
    """Sync twin of :func:`align`; works inside a running event loop too."""
    return run_sync(align(judge, items, labels, **options))


class _Best:
    """The best judge so far, its score-slice scores and metric, and every candidate tried."""

    def __init__(self, judge: LLMJudge, scores: list[float | None], search: _Search) -> None:
        self.judge = judge
        self.scores = scores
        self.search = search
        self.metric = search.value(self.preds)
        self.failed = sum(p is None for p in self.preds)
        self.example_keys: list[str] = []
        self.instructions: str | None = None
        self.tried: list[Candidate] = []

    @property
    def preds(self) -> list[float | None]:
        return [self.search.space.of_score(s) for s in self.scores]

    def take(self, judge: LLMJudge, scores: list[float | None]) -> None:
        self.judge, self.scores = judge, scores
        self.metric = self.search.value(self.preds)
        self.failed = sum(p is None for p in self.preds)


async def _greedy(
    search: _Search, best: _Best, pool: list[Row], max_examples: int, reserve: int
) -> str:
    """Greedy forward selection of examples (see the module docs); why it stopped."""
    template = best.judge.template
    chosen: list[Example] = []
    left = list(pool)
    for step in range(1, max_examples + 1):
        pick: tuple[Row, LLMJudge, list[float | None], float] | None = None
        for row in left:
            if search.spent + len(search.splits.score) + reserve > search.budget:
                return f"the budget ({search.budget} calls) stopped it at step {step}"
            shot = Example(
                item=_example_item(row.item, template), verdict=_verdict(search, row, template)
            )
            candidate = best.judge.with_options(examples=[*chosen, shot])
            scores = await search.judge(candidate, search.splits.score)
            preds = [search.space.of_score(s) for s in scores]
            value = search.value(preds)
            failed = sum(p is None for p in preds)
            best.tried.append(
                Candidate(step=step, kind="example", key=row.key, metric=value, failed=failed)
            )
            fits = failed <= best.failed
            if fits and search.better(value, best.metric if pick is None else pick[3]):
                pick = (row, candidate, scores, value)
        if pick is None:
            return f"no candidate raised {search.metric} at step {step}"
        row, candidate, scores, _ = pick
        chosen.append(candidate.examples[-1])
        left.remove(row)
        best.take(candidate, scores)
        best.example_keys.append(row.key)
        _mark(best, step, row.key)
        if not left:
            return "the pool ran out"
    return f"{max_examples} examples chosen (max_examples)"


def _mark(best: _Best, step: int, key: str | None) -> None:
    for i in range(len(best.tried) - 1, -1, -1):
        c = best.tried[i]
        if c.step == step and c.key == key:
            best.tried[i] = c.model_copy(update={"accepted": True})
            return


async def _propose(
    search: _Search, best: _Best, model: Model, rounds: int, show: int, reserve: int
) -> str:
    """Proposer rounds (see the module docs); a note on how they ended."""
    template = best.judge.template
    step0 = max((c.step for c in best.tried), default=0)
    for r in range(1, rounds + 1):
        if search.spent + 1 + len(search.splits.score) + reserve > search.budget:
            return f"the budget stopped the proposer at round {r}"
        shown: list[Disagreement] = []
        for row, pred in zip(search.splits.score, best.preds, strict=True):
            if pred != row.label and len(shown) < show:
                judged = (
                    "no verdict" if pred is None else _say(search.space.verdict(pred, template))
                )
                shown.append(
                    (
                        template.render_item(row.item),
                        judged,
                        _say(search.space.verdict(row.label, template)),
                    )
                )
        if not shown:
            return "no disagreement left for the proposer"
        text, _ = await propose_instructions(model, template.instructions, shown)
        search.spent += 1
        if text is None or text.strip() == template.instructions.strip():
            continue
        candidate = best.judge.with_options(instructions=text)
        scores = await search.judge(candidate, search.splits.score)
        preds = [search.space.of_score(s) for s in scores]
        value = search.value(preds)
        failed = sum(p is None for p in preds)
        keep = failed <= best.failed and search.better(value, best.metric)
        best.tried.append(
            Candidate(
                step=step0 + r, kind="instructions", metric=value, failed=failed, accepted=keep
            )
        )
        if keep:
            best.take(candidate, scores)
            best.instructions = text
            template = candidate.template
    return ""


def _calibration(
    search: _Search, scores: list[float | None], label_field: str, source: str | None
) -> Calibration | None:
    """A monotone map on the score slice, when its cross-fitted metric beats the plain one."""
    space = search.space
    pairs = [
        (i, s, r.label)
        for i, (s, r) in enumerate(zip(scores, search.splits.score, strict=True))
        if s is not None
    ]
    if len(pairs) < 10:
        return None
    folds = [pairs[0::2], pairs[1::2]]
    crossed: list[float | None] = [None] * len(scores)
    for k in (0, 1):
        fit = isotonic_fit([s for _, s, _ in folds[1 - k]], [y for _, _, y in folds[1 - k]])
        for i, s, _ in folds[k]:
            crossed[i] = nearest(fit(s), space.values)
    plain = [space.of_score(s) for s in scores]
    if not search.better(search.value(crossed), search.value(plain)):
        return None
    fitted = isotonic_fit([s for _, s, _ in pairs], [y for _, _, y in pairs])
    return Calibration(
        map=fitted,
        values=space.values,
        low=space.low,
        high=space.high,
        fitted_on=FittedOn(
            fingerprint=fingerprint(
                [search.splits.score[i].key for i, _, _ in pairs],
                [s for _, s, _ in pairs],
                [y for _, _, y in pairs],
            ),
            items=len(pairs),
            labels=label_field,
            source=source,
        ),
    )


def _pool(pick: Sequence[Row], space: LabelSpace, size: int, *, recorded: bool) -> list[Row]:
    """Up to ``size`` candidates: round-robin over the label values, each value's items the
    judge got wrong first (when its recorded scores say so), in the split's seeded order."""
    groups: dict[float, list[Row]] = {}
    for row in pick:
        groups.setdefault(row.label, []).append(row)
    queues = []
    for value in sorted(groups):
        rows = groups[value]
        if recorded:
            rows = sorted(rows, key=lambda r: space.of_score(r.score) == r.label)
        queues.append(rows)
    out: list[Row] = []
    while len(out) < size and any(queues):
        for q in queues:
            if q and len(out) < size:
                out.append(q.pop(0))
    return out


def _plan(
    splits: Splits,
    pool: list[Row],
    max_examples: int,
    proposer: Any,
    rounds: int,
    budget: int,
    scores: Any,
) -> AlignPlan:
    s = len(splits.score)
    steps = min(max_examples, len(pool))
    tries = sum(len(pool) - t for t in range(steps))
    n_rounds = rounds if proposer is not None else 0
    return AlignPlan(
        items=len(splits.pick) + len(splits.score) + len(splits.held_out) + splits.unused,
        pick=len(splits.pick),
        score=s,
        held_out=len(splits.held_out),
        pool=len(pool),
        max_examples=max_examples,
        proposer_rounds=n_rounds,
        budget=budget,
        baseline_calls=0 if scores is not None else s + len(splits.held_out),
        search_calls=tries * s + n_rounds * (1 + s),
        final_calls=len(splits.held_out),
    )


def _example_item(item: Mapping[str, Any], template: Any) -> dict[str, Any]:
    keep = (*template.fields, *template.optional_fields, *_CONVERSATION_KEYS)
    return {k: item[k] for k in keep if k in item}


def _verdict(search: _Search, row: Row, template: Any) -> str | float:
    return search.space.verdict(row.label, template)


def _say(verdict: str | float) -> str:
    return verdict if isinstance(verdict, str) else f"{verdict:g}"
