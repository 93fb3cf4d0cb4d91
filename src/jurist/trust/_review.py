"""After a cascade's run: the items left for people, and the figures per tier.

A run of a :class:`~jurist.trust.CascadeJudge` through :func:`jurist.evaluate` stores each
item's :class:`~jurist.trust.CascadeJudgment` like any outcome (``judge_tier``,
``judge_confidence``, ``judge_abstained``, ``judge_steps`` in its records). Nothing in the
engines knows about cascades; these read the records back:

- :func:`write_review` writes the items no tier decided to a JSON Lines file for human
  review (each line: the item's fields, the reason, and each tier's score and confidence);
  :func:`jurist.evaluate` writes it as ``review.jsonl`` in a cascade's run folder after
  every session;
- :func:`cascade_summary` gives, per tier, how many items reached it (its calls), how many
  it decided (its coverage), their agreement with labels, and its tokens and cost.

Both take ``run.records()`` (or the store rows, ``run.rows()``), so they work the same
whichever engine ran the items, and again on a resumed run (the records are the store's,
not a side file kept during the run).

>>> recs = [{"q": "a", "judge_score": 1.0, "judge_tier": 0, "judge_abstained": False,
...          "judge_steps": [{"tier": 0, "name": "cheap", "score": 1.0, "confidence": 0.99,
...                           "usage": {"calls": 1}}]},
...         {"q": "b", "judge_score": None, "judge_tier": None, "judge_abstained": True,
...          "judge_error": "abstain: ...",
...          "judge_steps": [{"tier": 0, "name": "cheap", "score": 0.0, "confidence": 0.6,
...                           "usage": {"calls": 1}}]}]
>>> s = cascade_summary(recs, labels=[1.0, 0.0], tier_names=["cheap"])
>>> s.coverage, s.abstained, s.tiers[0].reached, s.tiers[0].decided, s.tiers[0].agreement
(0.5, 1, 2, 1, 1.0)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from jurist.errors import DataError, OutputError

__all__ = ["CascadeSummary", "TierSummary", "cascade_summary", "write_review"]


class TierSummary(BaseModel):
    """One tier over a run: ``reached`` items came to it (its calls), it decided
    ``decided`` (``coverage`` of all items), ``agreement`` among those (with labels), its
    tokens, and ``cost`` (USD) when prices were given."""

    model_config = ConfigDict(frozen=True)

    name: str
    reached: int
    decided: int
    coverage: float
    agreement: float | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None


class CascadeSummary(BaseModel):
    """A cascade's run per tier, and overall: ``coverage`` (items decided by some tier),
    ``agreement`` over them (with labels), ``abstained`` (items for people), ``failed``
    (items no tier decided because a tier failed: an API error, a timeout, an unreadable
    verdict; counted apart from the abstentions)."""

    model_config = ConfigDict(frozen=True)

    n: int
    coverage: float
    agreement: float | None
    abstained: int
    tiers: tuple[TierSummary, ...]
    failed: int = 0


def _view(record: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """``(outcome, item)`` of a run record (``judge_``-prefixed outcome fields, as
    ``Run.records()`` gives them) or of a store row (``outcome`` and ``item`` mappings,
    as ``Run.rows()`` gives them)."""
    outcome, item = record.get("outcome"), record.get("item")
    if isinstance(outcome, Mapping) and isinstance(item, Mapping):
        return outcome, item
    fields = {k.removeprefix("judge_"): v for k, v in record.items() if k.startswith("judge_")}
    return fields, {k: v for k, v in record.items() if not k.startswith("judge_")}


def _abstained(record: Mapping[str, Any]) -> bool:
    return bool(_view(record)[0].get("abstained"))


def write_review(records: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write the records of the items no tier decided to ``path`` (JSON Lines); returns
    how many. Each line holds the item's own fields, ``reason`` (the abstention) and
    ``tiers`` (each asked tier's name, score, confidence and threshold)."""
    out = Path(path)
    n = 0
    try:
        with out.open("w", encoding="utf-8") as f:
            for record in records:
                if not _abstained(record):
                    continue
                outcome, item = _view(record)
                tiers = [
                    {k: s.get(k) for k in ("name", "score", "confidence", "threshold", "error")}
                    for s in outcome.get("steps") or []
                ]
                line = {**item, "reason": outcome.get("error"), "tiers": tiers}
                f.write(json.dumps(line, default=str) + "\n")
                n += 1
    except OSError as e:
        raise OutputError(f"{out}: cannot write the review file: {e}") from e
    return n


def _labels(
    records: list[Mapping[str, Any]], labels: str | Sequence[Any] | None
) -> list[Any] | None:
    if labels is None:
        return None
    if isinstance(labels, str):
        items = [_view(r)[1] for r in records]
        missing = [i for i, item in enumerate(items) if labels not in item]
        if missing:
            raise DataError(f"record {missing[0]}: no label column {labels!r}")
        return [item[labels] for item in items]
    if len(labels) != len(records):
        raise DataError(f"{len(labels)} labels for {len(records)} records")
    return list(labels)


def _same(score: float, label: Any) -> bool:
    return label is not None and math.isclose(score, float(label), abs_tol=1e-9)


def cascade_summary(
    records: Iterable[Mapping[str, Any]],
    *,
    tier_names: Sequence[str],
    labels: str | Sequence[Any] | None = None,
    agree: Callable[[float, Any], bool] | None = None,
    prices: Sequence[tuple[float, float]] | None = None,
) -> CascadeSummary:
    """Per-tier coverage, agreement, tokens and cost of a cascade's run (module docs).

    Args:
        records: ``run.records()`` (or ``run.rows()``) of a cascade's run.
        tier_names: the cascade's ``tier_names`` (every tier is listed, asked or not).
        labels: a record column holding the human label, or one label per record.
        agree: ``agree(score, label)`` (default: equal to 1e-9).
        prices: per tier, USD per million ``(prompt, completion)`` tokens.
    """
    rows = list(records)
    gold = _labels(rows, labels)
    same = agree or _same
    k = len(tier_names)
    if prices is not None and len(prices) != k:
        raise DataError(f"{len(prices)} prices for {k} tiers")
    reached, decided, right = [0] * k, [0] * k, [0] * k
    calls, prompt, completion = [0] * k, [0] * k, [0] * k
    for j, row in enumerate(rows):
        outcome = _view(row)[0]
        for step in outcome.get("steps") or []:
            i = int(step["tier"])
            usage = step.get("usage") or {}
            reached[i] += 1
            calls[i] += int(usage.get("calls", 0))
            prompt[i] += int(usage.get("prompt_tokens", 0))
            completion[i] += int(usage.get("completion_tokens", 0))
        tier = outcome.get("tier")
        if tier is not None:
            decided[int(tier)] += 1
            if gold is not None and same(float(outcome["score"]), gold[j]):
                right[int(tier)] += 1
    n = len(rows)
    tiers = []
    for i, name in enumerate(tier_names):
        cost = None
        if prices is not None:
            cost = (prompt[i] * prices[i][0] + completion[i] * prices[i][1]) / 1e6
        tiers.append(
            TierSummary(
                name=name,
                reached=reached[i],
                decided=decided[i],
                coverage=decided[i] / n if n else 0.0,
                agreement=right[i] / decided[i] if gold is not None and decided[i] else None,
                calls=calls[i],
                prompt_tokens=prompt[i],
                completion_tokens=completion[i],
                cost=cost,
            )
        )
    kept = sum(decided)
    abstained = sum(1 for r in rows if _abstained(r))
    return CascadeSummary(
        n=n,
        coverage=kept / n if n else 0.0,
        agreement=sum(right) / kept if gold is not None and kept else None,
        abstained=abstained,
        tiers=tuple(tiers),
        failed=n - kept - abstained,
    )
