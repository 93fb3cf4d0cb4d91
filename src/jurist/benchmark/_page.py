"""The bench page: the setups side by side, one self-contained HTML file.

Per dataset: the ranked table (headline figure with its interval drawn as a bar, first-
order accuracy, position consistency, the position and length probes, abstentions,
tokens, cost and latency per item and per correct decision), the accuracy-vs-cost plot
with its front (the setups no other beats on both), and the per-source breakdown; then
the cascades. Like the run report and the leaderboard: no script, nothing from outside
(the same Content-Security-Policy), every text escaped, jurist's own text scrubbed of keys.

>>> svg = front_plot([("a", 0.0, 0.6), ("b", 2.0, 0.8), ("c", 3.0, 0.7)], x_label="USD")
>>> svg.count("<circle"), svg.count('class="front"')
(3, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from jurist._files import replaced_atomically
from jurist._secrets import redact_known, scrub
from jurist._version import __version__
from jurist.benchmark._figures import TableFigures
from jurist.metrics import Estimate
from jurist.runs.report._charts import tick_text, ticks
from jurist.runs.report._leaderboard_page import CSP

if TYPE_CHECKING:
    from jurist.benchmark._result import BenchResult

__all__ = ["front_plot", "write_bench_page"]

_W, _H, _L, _B, _T, _R = 560, 320, 60, 44, 20, 150

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: .5em 0; font-size: .85em; }
th, td { border: 1px solid #ddd; padding: .25em .5em; text-align: left; vertical-align: middle; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #777; } .chart { background: #fafafa; border: 1px solid #eee; }
table.sources th { max-width: 9em; overflow-wrap: anywhere; }
table.sources td.num { white-space: nowrap; }
"""


def _pct(e: Estimate | None) -> str:
    if e is None or e.value != e.value:
        return "-"
    if e.low is None or e.high is None:
        return f"{100 * e.value:.1f}"
    return f"{100 * e.value:.1f} [{100 * e.low:.1f}, {100 * e.high:.1f}]"


def _num(v: float | None, digits: int = 3) -> str:
    if v is None or v != v:
        return "-"
    return f"{v:.{digits}g}" if abs(v) < 1000 else f"{v:,.0f}"


def _bar(e: Estimate) -> str:
    """The interval as a bar on 0-1, the value a dot (no axis: the table gives numbers)."""
    w = 160

    def x(v: float) -> float:
        return 4 + max(0.0, min(1.0, v)) * (w - 8)

    low, high = e.low if e.low is not None else e.value, e.high if e.high is not None else e.value
    return (
        f'<svg width="{w}" height="14" role="img"><line x1="4" y1="7" x2="{w - 4}" y2="7" '
        f'stroke="#e4e4e4"/><line x1="{x(low):.1f}" y1="7" x2="{x(high):.1f}" y2="7" '
        f'stroke="#4a78b5" stroke-width="4"/><circle cx="{x(e.value):.1f}" cy="7" r="4" '
        f'fill="#1d3f73"/></svg>'
    )


def _probe(t: TableFigures) -> str:
    """The audit's position probe: effect [interval] and verdict; the share of decisive
    orders the first shown won, with its p-value, below."""
    p = t.position_probe
    if p is None or p.effect is None:
        return "-"
    shown = (
        f"<br><span class='muted'>1st won {_num(t.first_position_wins)} "
        f"(p {_num(t.first_position_p, 2)})</span>"
        if t.first_position_wins is not None
        else ""
    )

    def signed(v: float | None) -> str:
        return "-" if v is None else f"{round(v, 3) + 0.0:+.3f}"  # no "-0.000"

    return (
        f"{signed(p.effect)} <b>{escape(p.verdict)}</b><br>[{signed(p.lower)}, "
        f"{signed(p.upper)}]{shown}"
    )


def _ranked(tables: Sequence[TableFigures]) -> str:
    h = escape(tables[0].headline)
    head = (
        f"<tr><th>#</th><th>setup</th><th>{h} [95% interval]</th><th></th>"
        "<th>first order</th><th>position consistency</th><th>position probe</th>"
        "<th>longer wins (p)</th><th>abstained</th><th>tokens / item</th>"
        "<th>cost / item</th><th>cost / correct</th><th>latency / item (s)</th></tr>"
    )
    rows = []
    for k, t in enumerate(tables, 1):
        c = t.cost
        probe = _probe(t)
        longer = f"{_num(t.longer_wins)} ({_num(t.longer_p, 2)})" if t.longer_wins else "-"
        rows.append(
            f"<tr><td class='num'>{k}</td><td>{escape(scrub(t.setup))}</td>"
            f"<td class='num'>{_pct(t.value)}</td><td>{_bar(t.value)}</td>"
            f"<td class='num'>{_pct(t.first_order_accuracy)}</td>"
            f"<td class='num'>{_num(t.position_consistency)}</td>"
            f"<td class='num'>{probe}</td><td class='num'>{longer}</td>"
            f"<td class='num'>{t.abstained} / {t.n}</td>"
            f"<td class='num'>{_num(c.tokens_per_item)}</td>"
            f"<td class='num'>{_num(c.cost_per_item)}</td>"
            f"<td class='num'>{_num(c.cost_per_correct)}</td>"
            f"<td class='num'>{_num(c.latency_per_item)}</td></tr>"
        )
    return f"<table class='ranked'>{head}{''.join(rows)}</table>"


def front_plot(points: Sequence[tuple[str, float, float]], *, x_label: str) -> str:
    """``(name, cost, accuracy)`` points with the front drawn through the setups that no
    other beats on both (cheaper or as cheap, and more accurate or as accurate)."""
    xs = [p[1] for p in points]
    ys = [p[2] for p in points]
    x0, x1 = min([0.0, *xs]), max([*xs, 1e-12])
    y0, y1 = max(0.0, min(ys) - 0.05), min(1.0, max(ys) + 0.05)
    if y1 <= y0:
        y0, y1 = max(0.0, y0 - 0.1), min(1.0, y1 + 0.1)

    def px(v: float) -> float:
        return _L + (v - x0) / ((x1 - x0) or 1.0) * (_W - _L - _R)

    def py(v: float) -> float:
        return _T + (y1 - v) / ((y1 - y0) or 1.0) * (_H - _T - _B)

    parts = [f'<svg width="{_W}" height="{_H}" role="img" class="chart">']
    for t in ticks(y0, y1):
        if y0 <= t <= y1:
            parts.append(
                f'<line x1="{_L}" y1="{py(t):.1f}" x2="{_W - _R}" y2="{py(t):.1f}" '
                f'stroke="#e4e4e4"/><text x="{_L - 6}" y="{py(t) + 4:.1f}" font-size="10" '
                f'text-anchor="end">{tick_text(100 * t)}</text>'
            )
    for t in ticks(x0, x1):
        if x0 <= t <= x1:
            parts.append(
                f'<text x="{px(t):.1f}" y="{_H - _B + 16}" font-size="10" '
                f'text-anchor="middle">{tick_text(t)}</text>'
            )
    parts.append(
        f'<text x="{(_L + _W - _R) / 2:.0f}" y="{_H - 8}" font-size="11" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text x="14" y="{(_T + _H - _B) / 2:.0f}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 14 {(_T + _H - _B) / 2:.0f})">accuracy (%)</text>'
    )
    front = sorted((p for p in points if not any(_beats(q, p) for q in points)), key=lambda p: p[1])
    if len(front) > 1:
        path = " ".join(f"{px(p[1]):.1f},{py(p[2]):.1f}" for p in front)
        parts.append(
            f'<polyline class="front" points="{path}" fill="none" stroke="#c0661a" '
            'stroke-width="2" stroke-dasharray="5 3"/>'
        )
    taken: list[tuple[float, float]] = []  # label spots used: a label never covers another
    for name, x, y in sorted(points, key=lambda p: -p[2]):
        on = any(p[0] == name for p in front)
        lx, ly = px(x) + 8, py(y) + 4
        while any(abs(lx - tx) < 120 and abs(ly - ty) < 12 for tx, ty in taken):
            ly += 12
        taken.append((lx, ly))
        parts.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="5" '
            f'fill="{"#c0661a" if on else "#4a78b5"}"><title>{escape(name)}: '
            f"{100 * y:.1f}% at {x:.4g}</title></circle>"
            f'<text x="{lx:.1f}" y="{ly:.1f}" font-size="11">'
            f"{escape(scrub(name)[:24])} {100 * y:.1f}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _beats(q: tuple[str, float, float], p: tuple[str, float, float]) -> bool:
    return q[1] <= p[1] and q[2] >= p[2] and (q[1] < p[1] or q[2] > p[2])


def _front(tables: Sequence[TableFigures]) -> str:
    priced = any(t.cost.cost_per_item for t in tables)
    label = "cost per item (USD)" if priced else "tokens per item"
    points = [
        (
            t.setup,
            (t.cost.cost_per_item or 0.0) if priced else t.cost.tokens_per_item,
            t.value.value,
        )
        for t in tables
        if t.value.value == t.value.value
    ]
    if not points:
        return ""
    note = ""
    if not any(p[1] for p in points):
        note = (
            "<p class='muted'>No setup here made a call (replays cost nothing): every "
            "point sits at 0 and the front is the most accurate setup.</p>"
        )
    return front_plot(points, x_label=label) + note


def _sources(tables: Sequence[TableFigures]) -> str:
    names = sorted({s.source for t in tables for s in t.sources})
    if not names:
        return "<p class='muted'>No row names a source.</p>"
    head = "<tr><th>source</th><th>n</th>" + "".join(
        f"<th>{escape(scrub(t.setup))}</th>" for t in tables
    )
    rows = []
    for name in names:
        cells = []
        n = 0
        for t in tables:
            found = next((s for s in t.sources if s.source == name), None)
            n = found.n if found else n
            cells.append(f"<td class='num'>{_pct(found.value if found else None)}</td>")
        rows.append(f"<tr><td>{escape(name)}</td><td class='num'>{n}</td>{''.join(cells)}</tr>")
    return f"<table class='sources'>{head}</tr>{''.join(rows)}</table>"


def _cascades(result: BenchResult) -> str:
    if not result.cascades:
        return ""
    rows = "".join(
        f"<tr><td>{escape(c.cheap)} &#8594; {escape(c.strong)}</td><td>{escape(c.dataset)}</td>"
        f"<td class='num'>{c.splits}</td><td class='num'>{_pct(c.accuracy)}</td>"
        f"<td class='num'>{_pct(c.sent_on)}</td><td class='num'>{_pct(c.cheap_accuracy)}</td>"
        f"<td class='num'>{_pct(c.strong_accuracy)}</td><td class='num'>{c.no_threshold}</td></tr>"
        for c in result.cascades
    )
    return (
        "<h2>Cascades</h2><p class='muted'>Threshold fitted on a random half, tested on the "
        "other; mean over the splits [2.5th, 97.5th percentile across splits].</p>"
        "<table id='cascades'><tr><th>cascade</th><th>dataset</th><th>splits</th>"
        "<th>accuracy</th><th>sent on</th><th>cheap alone</th><th>strong alone</th>"
        f"<th>splits with no threshold</th></tr>{rows}</table>"
    )


def _notes(result: BenchResult) -> str:
    if not result.notes:
        return ""
    items = "".join(f"<li>{escape(scrub(n))}</li>" for n in result.notes)
    return f"<h2>Notes</h2><ul id='notes'>{items}</ul>"


def write_bench_page(result: BenchResult, path: Path) -> Path:
    """Write ``result``'s page to ``path`` (atomically) and return the path."""
    sections = []
    for d in result.datasets:
        tables = result.ranked(d["name"])
        if not tables:
            continue
        sections.append(
            f"<h2>{escape(d['name'])} <span class='muted'>({escape(d['kind'])}, {d['rows']} "
            f"rows)</span></h2><h3>Ranking</h3>{_ranked(tables)}"
            f"<h3>Accuracy against cost</h3>{_front(tables)}"
            f"<h3>By source</h3>{_sources(tables)}"
        )
    html = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>jurist bench</title><style>{_STYLE}</style></head><body>"
        f"<h1 id='title'>jurist bench</h1><p class='muted'>Written by jurist "
        f"{escape(__version__)}: {len(result.setups)} setups on {len(result.datasets)} "
        "dataset(s). Pairs are judged in both orders; accuracy is the two-order rule "
        "(see docs/bench.md), intervals are 95% bootstrap intervals.</p>"
        f"{''.join(sections)}{_cascades(result)}{_notes(result)}</body></html>"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(path, what="the bench page") as tmp:
        tmp.write_text(redact_known(html), encoding="utf-8")
    return path
