"""The self-contained HTML report of a run: one file, no script, no external resource.

Sections: the summary (items, failures, tokens, cost), the score distribution, a per-judge
table (panels, graders), a per-criterion table (rubric grades), agreement with a label
field when one is given (figures from :mod:`jurist.metrics`, a scatter plot or a
confusion matrix), the failures with their reasons, and sample items. Every piece of text
from the data or a model passes through :func:`html.escape`, and a Content-Security-Policy
forbids scripts as a second line of defence.

The rows are read once, streamed from the store; the report keeps the scores, the label
pairs and the first failures and samples. Charts are small inline SVGs drawn here (no
script, no external reference).

>>> svg = histogram([0.0, 0.5, 0.5, 1.0], bins=2)
>>> svg.startswith("<svg") and svg.count("<rect") == 2
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from html import escape
from importlib import resources
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any

from jurist._version import __version__

if TYPE_CHECKING:
    from jurist.evaluate._run import Run, RunSummary

__all__ = ["write_report"]

_W, _H, _PAD = 480, 200, 30


def histogram(
    values: Sequence[float], *, bins: int = 10, low: float = 0.0, high: float = 1.0
) -> str:
    """Counts of ``values`` in ``bins`` equal bins over [low, high]."""
    counts = [0] * bins
    width = (high - low) / bins or 1.0
    for v in values:
        counts[min(bins - 1, max(0, int((v - low) / width)))] += 1
    labels = [f"{low + i * width:.2g}-{low + (i + 1) * width:.2g}" for i in range(bins)]
    return bars(labels, counts)


def bars(labels: Sequence[str], counts: Sequence[int]) -> str:
    """A bar chart, one bar per label, with its count above it."""
    n = max(1, len(counts))
    top = max([1, *counts])
    step = (_W - 2 * _PAD) / n
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H + 20}" '
        f'role="img" class="chart">'
    ]
    for i, (label, count) in enumerate(zip(labels, counts, strict=True)):
        h = (_H - 2 * _PAD) * count / top
        x = _PAD + i * step
        y = _H - _PAD - h
        parts.append(
            f'<rect x="{x + 2:.1f}" y="{y:.1f}" width="{max(1.0, step - 4):.1f}" '
            f'height="{h:.1f}" fill="#4a78b5"><title>{escape(label)}: {count}</title></rect>'
        )
        parts.append(
            f'<text x="{x + step / 2:.1f}" y="{y - 4:.1f}" font-size="10" '
            f'text-anchor="middle">{count}</text>'
        )
        parts.append(
            f'<text x="{x + step / 2:.1f}" y="{_H - _PAD + 14:.1f}" font-size="9" '
            f'text-anchor="middle">{escape(label[:12])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def scatter(xs: Sequence[float], ys: Sequence[float], *, x_label: str, y_label: str) -> str:
    """A scatter plot of paired values (each axis scaled to its own range)."""

    def scale(values: Sequence[float], size: float) -> list[float]:
        lo, hi = min(values), max(values)
        span = (hi - lo) or 1.0
        return [(v - lo) / span * size for v in values]

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H + 20}" '
        f'role="img" class="chart">',
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#888"/>',
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" stroke="#888"/>',
        f'<text x="{_W / 2}" y="{_H - 5}" font-size="11" text-anchor="middle">'
        f"{escape(x_label)}</text>",
        f'<text x="10" y="{_H / 2}" font-size="11" transform="rotate(-90 10 {_H / 2})" '
        f'text-anchor="middle">{escape(y_label)}</text>',
    ]
    if xs:
        px = scale(xs, _W - 2 * _PAD)
        py = scale(ys, _H - 2 * _PAD)
        for x, y in zip(px[:5000], py[:5000], strict=True):
            parts.append(
                f'<circle cx="{_PAD + x:.1f}" cy="{_H - _PAD - y:.1f}" r="2.5" '
                f'fill="#b5524a" fill-opacity="0.5"/>'
            )
    parts.append("</svg>")
    return "".join(parts)


_MAX_FAILURES = 200
_MAX_SAMPLES = 20
_TEXT_LIMIT = 2000


def _cell(value: Any) -> str:
    if value is None:
        return '<td class="muted">-</td>'
    if isinstance(value, float):
        return f'<td class="num">{"nan" if math.isnan(value) else f"{value:.4f}"}</td>'
    if isinstance(value, int):
        return f'<td class="num">{value}</td>'
    text = str(value)
    if len(text) > _TEXT_LIMIT:
        text = text[:_TEXT_LIMIT] + " [...]"
    return f'<td class="text">{escape(text)}</td>'


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]], *, table_id: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    ident = f' id="{escape(table_id)}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class _Collector:
    """One pass over the rows: what every section needs."""

    def __init__(self, labels: str | None, judge_names: list[str]) -> None:
        self.labels = labels
        self.judge_names = judge_names
        self.scores: list[float] = []
        self.failures: list[tuple[int, str, Any]] = []
        self.samples: list[dict[str, Any]] = []
        self.judge_stats: dict[str, list[float]] = {}
        self.judge_failed: dict[str, int] = {}
        self.criteria: dict[str, list[Any]] = {}
        self.pairs: list[tuple[Any, Any, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        outcome, item = row["outcome"], row["item"]
        if row["score"] is not None:
            self.scores.append(float(row["score"]))
        elif len(self.failures) < _MAX_FAILURES:
            self.failures.append((row["idx"], row["error"] or "error", outcome.get("response")))
        if len(self.samples) < _MAX_SAMPLES:
            self.samples.append(row)
        for name, score in self._judge_scores(outcome):
            if score is None:
                self.judge_failed[name] = self.judge_failed.get(name, 0) + 1
            else:
                self.judge_stats.setdefault(name, []).append(float(score))
        for c in outcome.get("criteria") or []:
            acc = self.criteria.setdefault(str(c.get("name")), [0, 0, 0.0, 0, 0.0, 0])
            final = c.get("final") or {}
            acc[0] += 1
            if final.get("value") is not None:
                acc[1] += 1
                acc[2] += float(final["value"])
            if c.get("error"):
                acc[3] += 1
            if c.get("agreement") is not None:
                acc[4] += float(c["agreement"])
                acc[5] += 1
        if self.labels is not None:
            self.pairs.append((row["score"], outcome.get("verdict"), item.get(self.labels)))

    def _judge_scores(self, outcome: dict[str, Any]) -> list[tuple[str, Any]]:
        if isinstance(outcome.get("judge_scores"), dict):
            return list(outcome["judge_scores"].items())
        subs = outcome.get("judgments")
        if isinstance(subs, list):
            out = []
            for i, sub in enumerate(subs):
                name = self.judge_names[i] if i < len(self.judge_names) else f"judge {i + 1}"
                out.append((name, sub.get("score") if isinstance(sub, dict) else None))
            return out
        return []


def _summary_section(s: RunSummary) -> str:
    cost = "unknown" if s.cost is None else f"${s.cost:.4f}"
    rows = [
        ("judge", s.judge),
        ("data", s.data),
        ("status", s.status),
        ("items", f"{s.items} of {s.expected_items}" if s.expected_items else str(s.items)),
        ("scored", s.scored),
        ("failed", s.failed),
        ("mean score", s.mean_score),
        ("calls / cache hits", f"{s.calls} / {s.cache_hits}"),
        (
            "tokens (prompt / completion / cached)",
            f"{s.prompt_tokens} / {s.completion_tokens} / {s.cached_tokens}",
        ),
        (
            "cost",
            cost + (f" ({s.cost_unknown_items} items unpriced)" if s.cost_unknown_items else ""),
        ),
        ("time", f"{s.seconds:.2f} s over {s.sessions} session(s)"),
        ("errors", ", ".join(f"{k}: {v}" for k, v in sorted(s.errors.items())) or None),
    ]
    return _table(["what", "value"], rows, table_id="summary")


def _agreement_section(c: _Collector) -> str:
    from jurist.metrics import agreement, confusion

    label = c.labels or ""
    scored = [(s, v, h) for s, v, h in c.pairs if s is not None and h is not None]
    head = f'<h2 id="agreement">Agreement with {escape(label)}</h2>'
    if not scored:
        return head + f"<p>No item has both a score and a value in {escape(label)!s}.</p>"
    numeric = all(isinstance(h, int | float) and not isinstance(h, bool) for _, _, h in scored)
    if numeric:
        xs = [float(h) for _, _, h in scored]
        ys = [float(s) for s, _, _ in scored]
        res = agreement(ys, xs, kind="interval", n_resamples=300)
        rows = [(k, v.value, v.low, v.high) for k, v in res.metrics.items()]
        plot = scatter(xs, ys, x_label=label, y_label="judge score")
        note = f"<p>{res.n} items; judge score (0-1) against {escape(label)}.</p>"
        return head + note + _table(["metric", "value", "low", "high"], rows) + plot
    verdicts = [str(v) for _, v, _ in scored]
    truth = [str(h) for _, _, h in scored]
    res = agreement(verdicts, truth, kind="nominal", n_resamples=300)
    rows = [(k, v.value, v.low, v.high) for k, v in res.metrics.items()]
    names, matrix = confusion(verdicts, truth)
    conf = _table(
        [f"{label} \\ verdict", *names], ([n, *r] for n, r in zip(names, matrix, strict=True))
    )
    return head + _table(["metric", "value", "low", "high"], rows) + conf


def write_report(run: Run, path: Path, labels: str | None = None) -> Path:
    """Write ``run``'s report to ``path`` (see the module docs)."""
    judge_cfg = run.manifest.judge
    names = [
        str(j.get("name", f"judge {i + 1}"))
        for i, j in enumerate(judge_cfg.get("judges") or [])
        if isinstance(j, dict)
    ]
    c = _Collector(labels, names)
    for row in run.rows():
        c.add(row)
    judges = ""
    if c.judge_stats or c.judge_failed:
        rows = [
            (
                n,
                len(c.judge_stats.get(n, [])),
                c.judge_failed.get(n, 0),
                sum(c.judge_stats[n]) / len(c.judge_stats[n]) if c.judge_stats.get(n) else None,
            )
            for n in sorted(set(c.judge_stats) | set(c.judge_failed))
        ]
        judges = '<h2 id="judges">Per judge</h2>' + _table(
            ["judge", "scored", "failed", "mean score"], rows, table_id="per-judge"
        )
    criteria = ""
    if c.criteria:
        crit_rows = [
            (n, a[0], a[2] / a[1] if a[1] else None, a[3], a[4] / a[5] if a[5] else None)
            for n, a in c.criteria.items()
        ]
        criteria = '<h2 id="criteria">Per criterion</h2>' + _table(
            ["criterion", "items", "mean value", "failed", "judge agreement"],
            crit_rows,
            table_id="per-criterion",
        )
    summary = run.summary()
    verdicts = summary.verdicts
    distribution = histogram(c.scores) + bars(list(verdicts), list(verdicts.values()))
    failures = (
        _table(["item", "reason", "judge response"], c.failures, table_id="failure-table")
        if c.failures
        else "<p>None.</p>"
    )
    samples = _table(
        ["item", "input", "score", "verdict", "judge response"],
        (
            (
                r["idx"],
                "\n".join(f"{k}: {v}" for k, v in r["item"].items()),
                r["score"],
                None if r["outcome"].get("verdict") is None else str(r["outcome"]["verdict"]),
                r["outcome"].get("response"),
            )
            for r in c.samples
        ),
        table_id="sample-table",
    )
    page = Template(resources.files("jurist.evaluate").joinpath("report.html").read_text("utf-8"))
    html = page.substitute(
        title=escape(str(run.run_dir)),
        version=escape(__version__),
        summary=_summary_section(summary),
        distribution=distribution,
        judges=judges,
        criteria=criteria,
        agreement=_agreement_section(c) if labels else "",
        failures=failures,
        samples=samples,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
