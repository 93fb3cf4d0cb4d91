"""The suite's page: one self-contained HTML file over every cell.

One row per cell (dataset, judge): its items, scored and failed counts, mean score,
cost, each bar with its figure, interval and outcome, and a link to the cell's own
report (``<dataset>/<judge>/report.html``, written by :meth:`jurist.runs.Run.report`).
Like the run report and the leaderboard (:mod:`jurist.runs.report`): nothing from
outside, no script (the Content-Security-Policy allows none), every text escaped,
jurist's own text scrubbed of keys.

>>> from jurist.pipeline.suites._bars import BarResult
>>> row = CellRow("qa", "j", "qa/j/report.html", items=4, scored=4, failed=0, mean=0.5,
...               cost=None, bars=[BarResult(dataset="qa", judge="j", bar="mean score ≥ 0.6",
...               value=0.5, low=0.5, high=0.5, outcome="fail")])
>>> html = suite_page("nightly", [row])
>>> "❌ fail" in html and 'href="qa/j/report.html"' in html
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from jurist._files import replaced_atomically
from jurist._secrets import redact_known, scrub
from jurist._version import __version__
from jurist.pipeline.suites._bars import BarResult

__all__ = ["CellRow", "suite_page", "write_suite_page"]

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'none'"

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>jurist suite {name}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }}
h1 {{ font-size: 1.5em; }}
table {{ border-collapse: collapse; margin: .5em 0; font-size: .9em; }}
th, td {{ border: 1px solid #ddd; padding: .3em .6em; text-align: left; vertical-align: top; }}
th {{ background: #f4f4f4; }} td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
.pass {{ color: #176f2c; }} .fail {{ color: #b00020; font-weight: bold; }}
.inconclusive {{ color: #8a6d00; }} .muted {{ color: #777; }}
</style>
</head>
<body>
<h1 id="title">jurist suite {name}: {verdict}</h1>
<p class="muted">Written by jurist {version}. {n_cells} cells; {n_missed} bar(s) missed of
{n_bars}. A bar fails when its whole interval (at the suite's level) lies below it.</p>
<table id="cells">
<tr><th>dataset</th><th>judge</th><th>items</th><th>scored</th><th>failed</th>
<th>mean score</th><th>cost</th><th>bars</th><th>report</th></tr>
{rows}
</table>
</body>
</html>
"""

_MARK = {"pass": "✅ pass", "fail": "❌ fail", "inconclusive": "⚠️ inconclusive"}


@dataclass
class CellRow:
    """One cell's line on the page and in the summary table."""

    dataset: str
    judge: str
    report: str
    items: int
    scored: int
    failed: int
    mean: float | None
    cost: float | None
    bars: list[BarResult] = field(default_factory=list)


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _bar(r: BarResult) -> str:
    figure = ""
    if r.value is not None:
        figure = f" {_num(r.value)} [{_num(r.low)}, {_num(r.high)}]"
    note = f' <span class="muted">{escape(scrub(r.note))}</span>' if r.note else ""
    return (
        f'<div class="{r.outcome}">{escape(r.bar)}:{escape(figure)} {_MARK[r.outcome]}{note}</div>'
    )


def suite_page(name: str, rows: Sequence[CellRow]) -> str:
    """The page's HTML."""
    results = [b for r in rows for b in r.bars]
    missed = sum(1 for b in results if not b.passed)
    lines = []
    for r in rows:
        cost = "-" if r.cost is None else f"${r.cost:.4f}"
        lines.append(
            f"<tr><td>{escape(r.dataset)}</td><td>{escape(r.judge)}</td>"
            f'<td class="num">{r.items}</td><td class="num">{r.scored}</td>'
            f'<td class="num">{r.failed}</td><td class="num">{_num(r.mean)}</td>'
            f'<td class="num">{cost}</td><td>{"".join(_bar(b) for b in r.bars) or "-"}</td>'
            f'<td><a href="{escape(r.report)}">report</a></td></tr>'
        )
    return _PAGE.format(
        csp=CSP,
        name=escape(name),
        verdict="every bar met" if not missed else f"{missed} bar(s) missed",
        version=escape(__version__),
        n_cells=len(rows),
        n_missed=missed,
        n_bars=len(results),
        rows="\n".join(lines),
    )


def write_suite_page(name: str, rows: Sequence[CellRow], path: Path) -> Path:
    """Write the page to ``path`` (atomically) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(path, what="the suite page") as tmp:
        tmp.write_text(redact_known(suite_page(name, rows)), encoding="utf-8")
    return path
