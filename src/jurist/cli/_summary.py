"""The summary table printed at the end of a run (``jurist judge``, ``compare``, ``grade``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

__all__ = ["cost_text", "print_summary"]


# what `jurist compare` adds to its summary (jurist.runs.report._page.pair_figures), in print order
_PAIRWISE = (
    ("win_rate_a", "win rate of A (ties half)"),
    ("consistency", "consistency of the two orders"),
    ("first_position_win_rate", "first-position win rate"),
)


def print_summary(
    console: Console, summary: dict[str, Any], failures: list[tuple[str, str]]
) -> None:
    """Print a run's summary (``RunSummary`` fields plus ``model``/``template``/``results``);
    ``failures`` are the first failed items' names (:func:`~jurist.data._item_names.item_name`)
    and errors."""
    from rich.table import Table

    table = Table(title=f"jurist: {escape(str(summary['data']))}", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    mean = summary["mean_score"]
    rows = [
        *((k, str(summary[k])) for k in ("model", "note", "template", "rubric") if summary.get(k)),
        ("judge", str(summary.get("judge", ""))),
        *((("systems", _systems_text(summary["systems"])),) if summary.get("systems") else ()),
        *(("scoring", str(summary[k])) for k in ("scoring",) if summary.get(k)),
        ("items", str(summary["items"])),
        ("scored", str(summary["scored"])),
        ("failed", str(summary["failed"])),
        ("mean score", "-" if mean is None else f"{mean:.4f}"),
        ("verdicts", ", ".join(f"{k}: {v}" for k, v in summary["verdicts"].items())),
        *(
            (label, "-" if summary[key] is None else f"{summary[key]:.4f}")
            for key, label in _PAIRWISE
            if key in summary
        ),
        *_coverage_rows(summary),
        *_repeat_rows(summary),
        (
            "calls / attempts / cache hits",
            f"{summary['calls']} / {summary.get('attempts', '-')} / {summary['cache_hits']}",
        ),
        *(
            (("through the batch API", f"{summary['batch_calls']} calls"),)
            if summary.get("batch_calls")
            else ()
        ),
        (
            "tokens (prompt / completion)",
            f"{summary['prompt_tokens']} / {summary['completion_tokens']}",
        ),
        *_reasoning_rows(summary),
        ("cost", cost_text(summary)),
        *((("prompt cache", cached),) if (cached := _cache_text(summary)) else ()),
        ("time", f"{summary['seconds']:.2f} s"),
        ("run", str(summary.get("run_dir", ""))),
        ("results", str(summary["results"])),
    ]
    for k, v in rows:
        table.add_row(k, escape(v))
    console.print(table)
    for note, count in sorted((summary.get("notes") or {}).items()):
        # said once for the run, however many judgments carry it
        # emoji=False: a spec such as "openai:x: ..." holds ":x:", not an emoji
        text = f"note ({count} item(s)): {note}"
        console.print(text, highlight=False, markup=False, emoji=False)
    for line in summary.get("decisions") or ():
        # taken from the servers' answers during the run; a resumed session starts there
        console.print(f"decided: {line}", highlight=False, markup=False, emoji=False)
    if summary["failed"]:
        console.print(
            f"[yellow]{summary['failed']} item(s) got no score[/]; first {len(failures)}:"
        )
        for name, error in failures:
            # one line each: a server's message may hold its traceback (results keep it all)
            line = f"  {name}: {_one_line(error)}"
            console.print(line, highlight=False, markup=False, emoji=False)


def _reasoning_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The thinking's tokens and cost, of a run whose judge thought (none otherwise).

    >>> _reasoning_rows({"reasoning_tokens": 300, "completion_tokens": 400,
    ...                  "reasoning_cost": 0.003, "cost": 0.004})
    [('reasoning tokens', '300 of 400 completion tokens (75%)'), ('reasoning cost', '$0.0030 (75% of the cost)')]
    """  # noqa: E501
    tokens = int(summary.get("reasoning_tokens") or 0)
    if not tokens:
        return []
    completion = int(summary.get("completion_tokens") or 0)
    share = f" ({tokens / completion:.0%})" if completion else ""
    rows = [("reasoning tokens", f"{tokens} of {completion} completion tokens{share}")]
    cost, total = summary.get("reasoning_cost"), summary.get("cost")
    if cost is None:
        rows.append(("reasoning cost", "unknown (a model without a price)"))
    else:
        part = f" ({cost / total:.0%} of the cost)" if total else ""
        rows.append(("reasoning cost", f"${cost:.4f}{part}"))
    return rows


def _one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters.

    >>> _one_line("api: HTTP 500: bad\\n  File \\"app.py\\", line 3", limit=24)
    'api: HTTP 500: bad Fi...'
    """
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _coverage_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The coverage rows of a logprob run (none for a parsed one).

    >>> _coverage_rows({"coverage": {"n": 4, "min": 0.0028, "q1": 0.5, "median": 0.9,
    ...                 "q3": 0.95, "max": 1.0, "below": 1, "min_coverage": 0.5}})
    [('verdict coverage', 'median 0.9, quartiles 0.5-0.95, min 0.0028, max 1'),
     ('below min_coverage 0.5', '1 of 4')]
    """
    if not summary.get("coverage"):
        return []
    from jurist.runs._coverage import CoverageSummary

    c = CoverageSummary.model_validate(summary["coverage"])
    return [("verdict coverage", c.spread()), (f"below {c.threshold()}", f"{c.below} of {c.n}")]


def _systems_text(systems: dict[str, str] | list[str]) -> str:
    """A pairwise run's systems: by side for two (``A = x, B = y``), else their names.

    >>> _systems_text({"A": "x", "B": "y"}), _systems_text(["x", "y", "base"])
    ('A = x, B = y', 'x, y, base')
    """
    if isinstance(systems, dict):
        return ", ".join(f"{k} = {v}" for k, v in systems.items())
    return ", ".join(systems)


def _repeat_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The rows of a run with repeats (none without).

    >>> rows = _repeat_rows({"items": 4, "repeats": {"repeats": 5, "adaptive": True,
    ...     "min_repeats": 3, "judgments": 14, "unstable_items": 1, "mean_flip_rate": 0.1,
    ...     "self_consistency": 0.8, "level": 0.95, "mean_low": 0.5, "mean_high": 0.9,
    ...     "items_low": 0.55, "items_high": 0.85}})
    >>> for row in rows[:3]: print(row)
    ('repeats', '3 to 5 per item (adaptive): 14 judgments')
    ('unstable items (flip rate > 0)', '1 of 4, mean flip rate 0.1000')
    ('self-consistency (alpha)', '0.8000')
    >>> rows[3][1]
    '[0.5000, 0.9000] with the judge variance; [0.5500, 0.8500] items only'
    """
    r = summary.get("repeats")
    if not r:
        return []
    from jurist.runs._run_types import RepeatSummary

    return RepeatSummary.model_validate(r).rows(int(summary["items"]))


def _cache_text(summary: dict[str, Any]) -> str | None:
    from jurist.runs._cost import cache_text

    return cache_text(summary)


def cost_text(summary: dict[str, Any]) -> str:
    """The run's cost; unknown (never $0) when any item has no price.

    >>> cost_text({"cost": 0.5, "items": 2})
    '$0.5000'
    >>> cost_text({"cost": None, "items": 3, "cost_unknown_items": 3})
    'unknown (no price for this model)'
    >>> cost_text({"cost": None, "items": 3, "cost_unknown_items": 1, "cost_of_priced_items": 0.2})
    'unknown (1 of 3 items unpriced; $0.2000 for the others)'
    """
    cost = summary.get("cost")
    if cost is not None:
        return f"${cost:.4f}"
    unknown = int(summary.get("cost_unknown_items") or 0)
    items = int(summary.get("items") or 0)
    if not unknown or unknown >= items:
        return "unknown (no price for this model)"
    known = float(summary.get("cost_of_priced_items") or 0.0)
    return f"unknown ({unknown} of {items} items unpriced; ${known:.4f} for the others)"
