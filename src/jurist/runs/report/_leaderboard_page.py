"""The leaderboard's self-contained HTML page: the ranking table, a plot of the scores with
their intervals, and the runs it was read from.

Like the run report: one file, nothing from outside (the Content-Security-Policy allows no
script and no external resource; the page needs none), every piece of text escaped, jurist's
own text scrubbed of keys. The plot is an inline SVG: one line per system, its
Bradley-Terry score as a dot on its 95% interval, its raw win rate (a cross) and its
length-controlled win rate (a diamond) against the baseline on the same 0-100 axis, and
a dashed line at 50 (the baseline's own score).

>>> svg = score_plot([("x", 60.0, 55.0, 65.0, 61.0, 58.0), ("y", 50.0, 50.0, 50.0, None, None)])
>>> svg.count("<line class=\\"interval\\"") == 2 and svg.count("<circle") == 2
True
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from jurist._files import replaced_atomically
from jurist._secrets import redact_known, scrub
from jurist._version import __version__
from jurist.runs._leaderboard_types import LeaderboardData as Leaderboard
from jurist.runs.report._charts import tick_text, ticks

__all__ = ["score_plot", "write_leaderboard"]

_W, _LEFT, _RIGHT, _ROW, _TOP = 760, 190, 30, 26, 40

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'"
"""The page's Content-Security-Policy: inline styles, no script, nothing from outside."""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>jurist leaderboard</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
h1 {{ font-size: 1.5em; }}
h2 {{ font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }}
table {{ border-collapse: collapse; margin: .5em 0; font-size: .9em; }}
th, td {{ border: 1px solid #ddd; padding: .3em .6em; text-align: left; vertical-align: top; }}
th {{ background: #f4f4f4; }} td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.baseline td {{ background: #f7f7f2; }}
.muted {{ color: #777; }} .chart {{ background: #fafafa; border: 1px solid #eee; }}
</style>
</head>
<body>
<h1 id="title">jurist leaderboard</h1>
<p class="muted">Written by jurist {version}. {n_systems} systems, {n_battles} judged pairs
from {n_runs} run(s); baseline <b id="baseline">{baseline}</b> ({baseline_from}).</p>
<h2>Ranking</h2>
{table}
<p class="muted">Score: the Bradley-Terry model's win rate against the baseline (0-100)
with its 95% bootstrap interval over {bootstrap} resamples of the battles (seed {seed}).
Win rate: the mean preference for the system over its pairs against the baseline (a tie
counts half) &plusmn; its standard error; LC: AlpacaEval 2.0's length-controlled win rate
over the same pairs (answer lengths in characters; {difficulty}). W / T / L: wins, ties and losses
against the baseline. Length: the mean length of the system's answers.</p>
{style}
{notes}
<h2>Scores and intervals</h2>
{plot}
<h2>Runs</h2>
{runs}
</body>
</html>
"""


def _num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return '<td class="num muted">-</td>'
    return f'<td class="num">{value:.{digits}f}</td>'


def _ranking(board: Leaderboard) -> str:
    head = (
        "<tr><th>rank</th><th>system</th><th>score</th><th>95% interval</th>"
        "<th>win rate</th><th>&plusmn; se</th><th>LC win rate</th><th>&plusmn; se</th>"
        "<th>W / T / L</th><th>battles</th><th>length</th></tr>"
    )
    body = []
    for r in board.rows:
        cls = ' class="baseline"' if r.system == board.baseline else ""
        record = "-" if not r.pairs_vs_baseline else f"{r.wins} / {r.ties} / {r.losses}"
        body.append(
            f'<tr{cls} data-system="{escape(r.system)}"><td class="num">{r.rank}</td>'
            f"<td>{escape(r.system)}</td>{_num(r.score)}"
            f'<td class="num">{r.lower:.1f} &ndash; {r.upper:.1f}</td>'
            f"{_num(r.win_rate)}{_num(r.win_rate_se)}{_num(r.lc_win_rate)}"
            f'{_num(r.lc_win_rate_se)}<td class="num">{record}</td>'
            f'<td class="num">{r.battles}</td>{_num(r.mean_length, 0)}</tr>'
        )
    return f'<table id="leaderboard"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


def _style(board: Leaderboard) -> str:
    """The style control's note and coefficients (nothing without style control)."""
    if not board.style_control:
        return ""
    rows = "".join(
        f'<tr><td>{escape(c.name)}</td><td class="num">{c.value:.3f}</td>'
        f'<td class="num">{c.lower:.3f} &ndash; {c.upper:.3f}</td></tr>'
        for c in board.style
    )
    return (
        '<p id="style-note">Style-controlled: the scores come from a Bradley-Terry fit that '
        "also weighs each battle's style differences (Arena-Hard-Auto's: length, markdown "
        "headers, lists, bold; standardised) and are read at the mean difference. A positive "
        "coefficient: that style wins battles by itself.</p>"
        '<table id="style"><thead><tr><th>style feature</th><th>coefficient</th>'
        f"<th>95% interval</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _runs(board: Leaderboard) -> str:
    head = (
        "<tr><th>run</th><th>judge</th><th>data</th><th>pairs</th><th>battles</th>"
        "<th>failed</th><th>inconsistent</th></tr>"
    )
    body = "".join(
        f"<tr><td>{escape(scrub(r.run_dir))}</td><td>{escape(scrub(r.judge))}</td>"
        f'<td>{escape(scrub(r.data))}</td><td class="num">{r.pairs}</td>'
        f'<td class="num">{r.battles}</td><td class="num">{r.failed}</td>'
        f'<td class="num">{r.inconsistent}</td></tr>'
        for r in board.runs
    )
    return f'<table id="runs"><thead>{head}</thead><tbody>{body}</tbody></table>'


Point = tuple[str, float, float, float, float | None, float | None]
"""A system, its score, lower and upper bound, raw and length-controlled win rate."""


def score_plot(points: Sequence[Point], *, chart_id: str = "score-plot") -> str:
    """One line per system: the score's interval, the score (dot), the raw win rate
    (cross) and the length-controlled one (diamond), on a 0-100 axis cut to the data."""
    values = [v for p in points for v in (p[2], p[3], p[4], p[5]) if v is not None]
    low = max(0.0, min([*values, 50.0]) - 5)
    high = min(100.0, max([*values, 50.0]) + 5)
    grid = [t for t in ticks(low, high) if low <= t <= high]
    height = _TOP + _ROW * len(points) + 30

    def x(v: float) -> float:
        return _LEFT + (v - low) / ((high - low) or 1.0) * (_W - _LEFT - _RIGHT)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{escape(chart_id)}" width="{_W}" '
        f'height="{height}" role="img" class="chart">',
        f'<text x="{_LEFT}" y="16" font-size="11">&#9679; score with 95% interval'
        "&#160;&#160;&#160;&#215; win rate&#160;&#160;&#160;&#9670; LC win rate</text>",
    ]
    bottom = _TOP + _ROW * len(points)
    for t in grid:
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{_TOP - 8}" x2="{x(t):.1f}" y2="{bottom}" '
            f'stroke="#e4e4e4"/><text x="{x(t):.1f}" y="{bottom + 16}" font-size="10" '
            f'text-anchor="middle">{tick_text(t)}</text>'
        )
    parts.append(
        f'<line x1="{x(50):.1f}" y1="{_TOP - 8}" x2="{x(50):.1f}" y2="{bottom}" '
        'stroke="#999" stroke-dasharray="4 3"/>'
    )
    for k, (name, score, lower, upper, raw, lc) in enumerate(points):
        y = _TOP + _ROW * k + _ROW / 2
        label = f"{name}: {score:.1f} ({lower:.1f} - {upper:.1f})"
        parts.append(
            f'<text x="{_LEFT - 8}" y="{y + 4:.1f}" font-size="11" text-anchor="end">'
            f"{escape(name[:28])}</text>"
            f'<line class="interval" x1="{x(lower):.1f}" y1="{y:.1f}" x2="{x(upper):.1f}" '
            f'y2="{y:.1f}" stroke="#4a78b5" stroke-width="3"/>'
            f'<circle cx="{x(score):.1f}" cy="{y:.1f}" r="5" fill="#4a78b5">'
            f"<title>{escape(label)}</title></circle>"
        )
        if raw is not None:
            parts.append(
                f'<text x="{x(raw):.1f}" y="{y + 5:.1f}" font-size="15" fill="#111" '
                f'text-anchor="middle">&#215;<title>{escape(name)} win rate {raw:.1f}'
                "</title></text>"
            )
        if lc is not None:
            parts.append(
                f'<text x="{x(lc):.1f}" y="{y + 4:.1f}" font-size="11" fill="#c0661a" '
                f'text-anchor="middle">&#9670;<title>{escape(name)} LC win rate {lc:.1f}'
                "</title></text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def write_leaderboard(board: Leaderboard, path: Path) -> Path:
    """Write ``board``'s page to ``path`` (atomically) and return the path."""
    notes = "".join(f"<li>{escape(scrub(n))}</li>" for n in board.notes)
    html = _PAGE.format(
        csp=CSP,
        version=escape(__version__),
        n_systems=len(board.rows),
        n_battles=board.battles,
        n_runs=len(board.runs),
        baseline=escape(board.baseline),
        baseline_from={
            "given": "chosen",
            "every battle": "in every pair",
            "most battles": "in the most pairs; choose one with --baseline",
        }[board.baseline_from],
        table=_ranking(board),
        bootstrap=board.bootstrap,
        difficulty=(
            "each instruction's difficulty estimated across the systems"
            if board.lc_difficulty == "joint"
            else "no instruction difficulty"
        ),
        seed=board.seed,
        style=_style(board),
        notes=f'<ul id="notes">{notes}</ul>' if notes else "",
        plot=score_plot(
            [(r.system, r.score, r.lower, r.upper, r.win_rate, r.lc_win_rate) for r in board.rows]
        ),
        runs=_runs(board),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(path, what="the leaderboard") as tmp:
        tmp.write_text(redact_known(html), encoding="utf-8")
    return path
