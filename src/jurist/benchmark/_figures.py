"""Every figure of one setup on one dataset, read from its run's stored outcomes.

**Pairwise.** Each pair was judged in two orders. An order's *decision* is the response
its score prefers, named by the original sides: a score above 0.5 prefers the response
shown first (``A`` in order ``ab``, ``B`` in order ``ba``), below 0.5 the second, exactly
0.5 is a tie; a failed or unreadable judgment decides nothing (an *abstention*).

- ``accuracy`` (the two-order rule, JudgeBench's): each decision counts +1 toward the
  side it names and a tie or abstention 0; the pair's decision is the side with the
  positive net (``tie`` at 0). A pair is correct when that equals its label, so for an A/B
  label: one right order and one tie is correct, one right and one wrong is not;
- ``first_order_accuracy``: the decision of the order as given equals the label;
- both with a percentile bootstrap interval over pairs (:func:`jurist.metrics.bootstrap_ci`,
  ``n_resamples`` draws, fixed seed); abstentions count as wrong, and are counted;
- ``position_consistency``: the share of pairs decided in both orders whose two
  decisions agree (:func:`jurist.metrics.position_consistency`);
- ``first_position_wins``: among the orders that named a winner, the share won by the
  response shown first (0.5 for a judge without position bias), with the two-sided exact
  binomial p-value against 0.5; ``longer_wins``: among decided pairs of responses of
  unequal length, the share won by the longer one, with its p-value
  (:func:`jurist.metrics.length_bias_pairwise`);
- ``position_probe``: the audit's position probe (:class:`jurist.audit.ProbeResult`) on
  the bench's own two orders: per pair decided in both, ``p_ab + p_ba - 1`` (the two
  preferences for the response shown first, less one: 0 without position bias, 1 when
  the first shown always wins), its mean with a bootstrap interval, and ``pass`` /
  ``fail`` / ``inconclusive`` against the audit's default threshold (0.1). The audit's
  verbosity and format probes need the judge to see rewritten copies: ``jurist audit``.

**Pointwise.** Categorical labels: ``accuracy`` of the judge's verdict (the scale's label
name, compared case-insensitively), abstentions wrong. Labels all 0 or 1: ``accuracy``
of ``score >= 0.5``. Other numeric labels: :func:`jurist.metrics.agreement` at the
interval level (headline ``spearman``), abstentions left out (``dropped``).

**Cost.** Summed over the run: calls, prompt and completion tokens, cost (USD, from the
run's price table; ``None`` when no call was priced) and latency (seconds, the calls'
own); each per item (a pair counts both its orders) and per correct decision.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from jurist.audit import DEFAULT_THRESHOLD, ProbeResult
from jurist.benchmark._data import BenchDataset
from jurist.metrics import (
    Estimate,
    accuracy,
    agreement,
    bootstrap_ci,
    length_bias_pairwise,
    position_consistency,
)
from jurist.metrics._stats import binom_test

__all__ = [
    "CostFigures",
    "PairOutcome",
    "SourceFigures",
    "TableFigures",
    "pair_outcomes",
    "table_figures",
]

ABSTAIN = "(none)"
"""What an abstention is compared as: never equal to a label."""


class CostFigures(BaseModel):
    """Calls, tokens, cost and latency, in total, per item and per correct decision."""

    model_config = ConfigDict(frozen=True)

    items: int
    correct: int | None
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    latency: float
    tokens_per_item: float
    cost_per_item: float | None
    latency_per_item: float
    tokens_per_correct: float | None
    cost_per_correct: float | None
    latency_per_correct: float | None


class SourceFigures(BaseModel):
    """The headline figure on the rows of one ``source``."""

    model_config = ConfigDict(frozen=True)

    source: str
    n: int
    value: Estimate


class TableFigures(BaseModel):
    """One setup on one dataset: the headline (``accuracy``, or ``spearman`` for numeric
    labels) and every other figure of the module doc."""

    model_config = ConfigDict(frozen=True)

    setup: str
    dataset: str
    kind: str
    n: int
    headline: str
    value: Estimate
    first_order_accuracy: Estimate | None = None
    position_consistency: float | None = None
    consistent_pairs: int | None = None
    first_position_wins: float | None = None
    first_position_p: float | None = None
    longer_wins: float | None = None
    longer_p: float | None = None
    position_probe: ProbeResult | None = None
    abstained: int
    abstained_items: int
    errors: dict[str, int]
    agreement: dict[str, Estimate] | None = None
    cost: CostFigures
    sources: list[SourceFigures]


class PairOutcome(BaseModel):
    """One pair's two orders, for cascades: ``decisions`` (original sides), the pair's
    ``decision`` by the two-order rule, its ``score`` (``0.5 + net / 4``: 1 both orders
    for A, 0 both for B) and ``confidence`` (the orders' mean, when they give one)."""

    model_config = ConfigDict(frozen=True)

    id: str
    label: str
    decisions: tuple[str | None, str | None]
    decision: str | None
    score: float | None
    confidence: float | None


def _side(score: float | None, order: str) -> str | None:
    if score is None:
        return None
    if score == 0.5:
        return "tie"
    first_wins = score > 0.5
    return ("A" if first_wins else "B") if order == "ab" else ("B" if first_wins else "A")


def _confidence(outcome: Mapping[str, Any], score: float | None) -> float | None:
    conf = outcome.get("confidence")
    if isinstance(conf, int | float):
        return float(conf)
    return None if score is None else max(score, 1.0 - score)


def pair_outcomes(dataset: BenchDataset, rows: Iterable[Mapping[str, Any]]) -> list[PairOutcome]:
    """Each pair's outcome from its run's rows (every row of ``dataset``, in its order;
    an order the run lacks counts as an abstention)."""
    by_id = {str(r["item"].get("id")): r for r in rows}
    out = []
    for row in dataset.rows:
        sides: list[str | None] = []
        confs: list[float] = []
        for order in ("ab", "ba"):
            got = by_id.get(f"{row['id']}:{order}")
            score = got["score"] if got is not None else None
            sides.append(_side(score, order))
            conf = _confidence(got["outcome"], score) if got is not None else None
            if conf is not None:
                confs.append(conf)
        net = sum({"A": 1, "B": -1}.get(s or "", 0) for s in sides)
        decided = any(s is not None for s in sides)
        decision = ("A" if net > 0 else "B" if net < 0 else "tie") if decided else None
        out.append(
            PairOutcome(
                id=row["id"],
                label=row["label"],
                decisions=(sides[0], sides[1]),
                decision=decision,
                score=0.5 + net / 4 if decided else None,
                confidence=sum(confs) / len(confs) if confs else None,
            )
        )
    return out


def _estimate(decisions: Sequence[Any], labels: Sequence[Any], n_resamples: int) -> Estimate:
    return bootstrap_ci(accuracy, decisions, labels, n_resamples=n_resamples, seed=0)


def _cost(rows: list[Mapping[str, Any]], items: int, correct: int | None) -> CostFigures:
    calls = prompt = completion = 0
    cost = 0.0
    priced = False
    latency = 0.0
    for r in rows:
        usage = r["usage"]
        calls += usage.calls
        prompt += usage.prompt_tokens
        completion += usage.completion_tokens
        if r.get("cost") is not None:
            cost += float(r["cost"])
            priced = priced or usage.calls > 0
        latency += float(r.get("latency") or 0.0)
    tokens = prompt + completion

    def per(total: float | None, n: int | None) -> float | None:
        return None if total is None or not n else total / n

    total_cost = cost if priced else None
    return CostFigures(
        items=items,
        correct=correct,
        calls=calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost=total_cost,
        latency=latency,
        tokens_per_item=tokens / items if items else 0.0,
        cost_per_item=per(total_cost, items),
        latency_per_item=latency / items if items else 0.0,
        tokens_per_correct=per(float(tokens), correct),
        cost_per_correct=per(total_cost, correct),
        latency_per_correct=per(latency, correct),
    )


def _errors(rows: list[Mapping[str, Any]]) -> dict[str, int]:
    kinds = Counter(str(r["error"]).split(":", 1)[0] for r in rows if r["score"] is None)
    return dict(sorted(kinds.items()))


def _sources(
    dataset: BenchDataset, decisions: Sequence[Any], labels: Sequence[Any], n_resamples: int
) -> list[SourceFigures]:
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(dataset.rows):
        if row.get("source") is not None:
            groups.setdefault(row["source"], []).append(i)
    return [
        SourceFigures(
            source=name,
            n=len(idx),
            value=_estimate([decisions[i] for i in idx], [labels[i] for i in idx], n_resamples),
        )
        for name, idx in sorted(groups.items())
    ]


def _pairwise(
    setup: str, dataset: BenchDataset, rows: list[Mapping[str, Any]], n_resamples: int
) -> TableFigures:
    pairs = pair_outcomes(dataset, rows)
    labels = [p.label for p in pairs]
    decisions = [p.decision or ABSTAIN for p in pairs]
    first = [p.decisions[0] or ABSTAIN for p in pairs]
    both = [p for p in pairs if None not in p.decisions]
    orders = [
        (s == ("A" if k == 0 else "B"))
        for p in pairs
        for k, s in enumerate(p.decisions)
        if s in ("A", "B")
    ]
    winners = [p.decision for p in pairs]
    by_id = {str(r["item"].get("id")): r["score"] for r in rows}
    effects: list[float] = []
    for row in dataset.rows:
        ab, ba = by_id.get(f"{row['id']}:ab"), by_id.get(f"{row['id']}:ba")
        if ab is not None and ba is not None:
            effects.append(ab + ba - 1.0)
    probe = ProbeResult.measured(
        "position",
        effects,
        threshold=DEFAULT_THRESHOLD,
        n_failed=len(pairs) - len(effects),
        n_resamples=n_resamples,
    )
    a = [r["response_a"] for r in dataset.rows]
    b = [r["response_b"] for r in dataset.rows]
    lengths = length_bias_pairwise(winners, a, b)
    correct = sum(1 for d, y in zip(decisions, labels, strict=True) if d == y)
    return TableFigures(
        setup=setup,
        dataset=dataset.name,
        kind="pairwise",
        n=len(pairs),
        headline="accuracy",
        value=_estimate(decisions, labels, n_resamples),
        first_order_accuracy=_estimate(first, labels, n_resamples),
        position_consistency=(
            position_consistency([p.decisions[0] for p in both], [p.decisions[1] for p in both])
            if both
            else None
        ),
        consistent_pairs=len(both),
        first_position_wins=sum(orders) / len(orders) if orders else None,
        first_position_p=binom_test(sum(orders), len(orders)) if orders else None,
        longer_wins=lengths.longer_wins,
        longer_p=lengths.p_value,
        position_probe=probe,
        abstained=sum(1 for p in pairs if p.decision is None),
        abstained_items=sum(1 for r in rows if r["score"] is None),
        errors=_errors(rows),
        cost=_cost(rows, len(pairs), correct),
        sources=_sources(dataset, decisions, labels, n_resamples),
    )


def _pointwise(
    setup: str, dataset: BenchDataset, rows: list[Mapping[str, Any]], n_resamples: int
) -> TableFigures:
    by_id = {str(r["item"].get("id")): r for r in rows}
    got = [by_id.get(row["id"]) for row in dataset.rows]
    labels = dataset.labels
    scores = [g["score"] if g is not None else None for g in got]
    agree = None
    if dataset.numeric and set(labels) <= {0.0, 1.0}:
        decisions: list[Any] = [ABSTAIN if s is None else float(s >= 0.5) for s in scores]
        headline = "accuracy"
    elif dataset.numeric:
        headline = "spearman"
        decisions = scores
        agree = agreement(scores, labels, kind="interval", n_resamples=n_resamples).metrics
    else:
        headline = "accuracy"
        labels = [str(v).lower() for v in labels]
        decisions = [
            ABSTAIN if g is None or g["score"] is None else str(g["outcome"].get("verdict")).lower()
            for g in got
        ]
    if agree is not None:
        value = agree["spearman"]
        correct = None
        sources: list[SourceFigures] = []
    else:
        value = _estimate(decisions, labels, n_resamples)
        correct = sum(1 for d, y in zip(decisions, labels, strict=True) if d == y)
        sources = _sources(dataset, decisions, labels, n_resamples)
    return TableFigures(
        setup=setup,
        dataset=dataset.name,
        kind="pointwise",
        n=len(dataset.rows),
        headline=headline,
        value=value,
        abstained=sum(1 for s in scores if s is None),
        abstained_items=sum(1 for s in scores if s is None),
        errors=_errors([g for g in got if g is not None]),
        agreement=agree,
        cost=_cost([g for g in got if g is not None], len(dataset.rows), correct),
        sources=sources,
    )


def table_figures(
    setup: str,
    dataset: BenchDataset,
    rows: Iterable[Mapping[str, Any]],
    *,
    n_resamples: int = 1000,
) -> TableFigures:
    """Every figure of ``setup`` on ``dataset`` from its run's ``rows``."""
    kept = list(rows)
    if dataset.kind == "pairwise":
        return _pairwise(setup, dataset, kept, n_resamples)
    return _pointwise(setup, dataset, kept, n_resamples)


def finite(value: float | None) -> float | None:
    """``value`` unless it is NaN (for JSON)."""
    return None if value is None or math.isnan(value) else value
