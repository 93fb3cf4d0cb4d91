"""The search inside :func:`~jurist.trust.align`: its state, greedy few-shot selection,
proposer rounds, the calibration check, the candidate pool and the plan.

See :mod:`jurist.trust._align` for what each step does and why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from jurist.judges import LLMJudge
from jurist.judges._examples import Example
from jurist.metrics._agreement import metric_functions
from jurist.metrics._calibration import isotonic_fit
from jurist.metrics._measures import paired
from jurist.models import Model
from jurist.trust._align_data import LabelSpace, Row, Splits
from jurist.trust._align_report import AlignPlan, Candidate
from jurist.trust._calibrate import Calibration, FittedOn, fingerprint, nearest
from jurist.trust._propose import Disagreement, propose_instructions

__all__ = ["Best", "Search", "calibration_on", "greedy", "plan_of", "pool_of", "propose_rounds"]

_LOWER_IS_BETTER = frozenset({"rmse", "mae"})
_CONVERSATION_KEYS = ("messages", "messages_a", "messages_b", "images")


class Search:
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


class Best:
    """The best judge so far, its score-slice scores and metric, and every candidate tried."""

    def __init__(self, judge: LLMJudge, scores: list[float | None], search: Search) -> None:
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


async def greedy(
    search: Search, best: Best, pool: list[Row], max_examples: int, reserve: int
) -> str:
    """Greedy forward selection of examples (see the module docs); why it stopped."""
    if max_examples == 0:
        return "no examples asked for"
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
    return f"{max_examples} example(s) chosen (max_examples)"


def _mark(best: Best, step: int, key: str | None) -> None:
    for i in range(len(best.tried) - 1, -1, -1):
        c = best.tried[i]
        if c.step == step and c.key == key:
            best.tried[i] = c.model_copy(update={"accepted": True})
            return


async def propose_rounds(
    search: Search, best: Best, model: Model, rounds: int, show: int, reserve: int
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


def calibration_on(
    search: Search, scores: list[float | None], label_field: str, source: str | None
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


def pool_of(pick: Sequence[Row], space: LabelSpace, size: int, *, recorded: bool) -> list[Row]:
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


def plan_of(
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


def _verdict(search: Search, row: Row, template: Any) -> str | float:
    return search.space.verdict(row.label, template)


def _say(verdict: str | float) -> str:
    return verdict if isinstance(verdict, str) else f"{verdict:g}"
