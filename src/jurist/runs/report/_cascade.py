"""The report's section for a cascade's run: per tier, its calls, decisions and tokens.

A :class:`~jurist.trust.CascadeJudge` run stores one :class:`~jurist.trust.CascadeJudgment`
per item; :func:`jurist.trust.cascade_summary` counts, per tier, the items that reached it
(its calls), the items it decided (its coverage) and its tokens; with labels, the report's
own comparison of each item's verdict with its label (the agreement section's) gives the
agreement of the items each tier decided. The items no tier decided are the run's
``abstain`` failures (for people: :func:`jurist.trust.write_review`), or, where a tier
failed (an API error, a timeout, an unreadable verdict), that failure's: a row of their
own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from jurist.trust import cascade_summary

__all__ = ["cascade_section"]

Table = Callable[..., str]
Agrees = Callable[[dict[str, Any]], bool | None]
"""Whether a stored row's verdict agrees with its label (``None``: it has no label)."""


def _agreement(rows: list[dict[str, Any]], k: int, agrees: Agrees | None) -> list[float | None]:
    right, seen = [0] * k, [0] * k
    for row in rows if agrees is not None else []:
        tier = row["outcome"].get("tier")
        verdict = agrees(row) if tier is not None and agrees is not None else None
        if verdict is not None:
            seen[int(tier)] += 1
            right[int(tier)] += verdict
    return [right[i] / seen[i] if seen[i] else None for i in range(k)]


def cascade_section(
    rows: Iterable[dict[str, Any]], judge: dict[str, Any], agrees: Agrees | None, table: Table
) -> str:
    """The HTML section of a cascade run's tiers (``judge``: the manifest's judge;
    ``agrees``: the report's comparison with the labels, when it has labels)."""
    kept = list(rows)
    tiers: Sequence[Any] = judge.get("tiers") or []
    names = [str(t.get("name", f"tier {i + 1}")) for i, t in enumerate(tiers)]
    s = cascade_summary(kept, tier_names=names)
    agreement = _agreement(kept, len(names), agrees)
    thresholds = judge.get("thresholds") or [None] * len(names)
    body: list[tuple[Any, ...]] = [
        (
            t.name,
            thresholds[i] if i < len(thresholds) else None,
            t.reached,
            t.decided,
            t.coverage,
            agreement[i],
            t.prompt_tokens + t.completion_tokens,
        )
        for i, t in enumerate(s.tiers)
    ]
    share = s.abstained / s.n if s.n else 0.0
    body.append(("(abstained: for people)", None, None, s.abstained, share, None, None))
    if s.failed:
        failed = s.failed / s.n if s.n else 0.0
        body.append(("(failed: a tier could not judge)", None, None, s.failed, failed, None, None))
    header = [
        "tier",
        "threshold",
        "items reached (calls)",
        "decided",
        "coverage",
        "agreement",
        "tokens",
    ]
    note = (
        "<p>Each tier judges the items the tiers before it passed on and decides those it "
        f"is confident of; overall coverage {s.coverage:.4f}. Agreement (with labels) is "
        "the share of a tier's decided items whose verdict agrees with the label, compared "
        "as in the agreement section.</p>"
    )
    return '<h2 id="cascade">Cascade</h2>' + table(header, body, table_id="cascade") + note
