"""The self-contained HTML report of a run: one file, no network, no external resource.

Sections: the summary (items, failures, tokens, cost), for a pairwise run A's win rate,
the consistency of the two orders and the first-position win rate, the score
distribution and the verdicts in the scale's order (for a logprob run, the verdict
coverage: how much probability the judge put on its verdicts), a per-judge table (panels, graders),
a per-criterion table (rubric grades), agreement with a label field when one is given,
the failures with their reasons, and a browser over every item.

Agreement compares like with like: labels that are values of the judge's verdict scale
(1-5 labels for a 1-5 judge) are compared with the verdicts, other numeric labels with the
0-1 score, text labels with the verdicts as text; the section says which
(:mod:`jurist.runs.report._scale`). Figures come from :mod:`jurist.metrics`; without
the ``metrics`` extra the section says so and the rest of the report is written.

The item browser (:mod:`jurist.runs.report._browse`) embeds the rows as JSON data
and shows them a page at a time, with filters (failed, score range, verdict,
disagreement with the labels) and a text search; opening an item shows the full judge
prompt, the judge's raw answer, the attempts and the error. The first rows are also
written as a plain table, for a reader without scripts.

No key reaches the page: jurist's own text (run folder, judge, errors) passes through
:func:`~jurist._secrets.scrub`, and the whole page through
:func:`~jurist._secrets.redact_known`. Every piece of text from the data or a model is
escaped: :func:`html.escape` in the HTML, ``textContent`` in the script. The
Content-Security-Policy allows exactly the page's one script (by its hash) and nothing
from outside.

The rows are read once, streamed from the store. Charts are small inline SVGs
(:mod:`jurist.runs.report._charts`).

>>> svg = histogram([0.0, 0.5, 0.5, 1.0], bins=2)
>>> svg.startswith("<svg") and svg.count("<rect") == 2
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from html import escape
from pathlib import Path
from typing import Any

from jurist._secrets import redact_known, scrub
from jurist._version import __version__
from jurist.data._item_names import item_label
from jurist.errors import MissingDependencyError
from jurist.judges._pairwise_results import side
from jurist.runs._cost import cache_text
from jurist.runs._coverage import coverages
from jurist.runs._run_types import ReportSource, RunSummary
from jurist.runs.report._browse import (
    COLUMNS,
    DATA,
    browse_row,
    page_template,
    script_tag,
    write_page,
)
from jurist.runs.report._charts import bars, histogram, scatter
from jurist.runs.report._scale import (
    FAILED,
    AnyScale,
    Comparison,
    choose,
    ordered_counts,
    scale_of,
    sort_names,
    verdict_text,
)

__all__ = ["pair_figures", "write_report"]

_MAX_FAILURES = 200
_MAX_SAMPLES = 20
_TEXT_LIMIT = 2000
_CI_MAX_ITEMS = 2000  # bootstrap intervals cost n x 300 resamples x 7 metrics
_COL = {name: i for i, name in enumerate(COLUMNS)}


def _cell(value: Any) -> str:
    if value is None:
        return '<td class="muted">-</td>'
    if isinstance(value, float):
        return f'<td class="num">{"nan" if math.isnan(value) else f"{value:.4f}"}</td>'
    if isinstance(value, int):
        return f'<td class="num">{value}</td>'
    text = blank_marker(str(value))
    if len(text) > _TEXT_LIMIT:
        text = text[:_TEXT_LIMIT] + " [...]"
    return f'<td class="text">{escape(text)}</td>'


def blank_marker(text: str) -> str:
    """Text of only whitespace as a visible marker (the report's script does the same).

    >>> blank_marker("\\n\\n  "), blank_marker(""), blank_marker(" a ")
    ('[blank: 4 whitespace characters]', '', ' a ')
    """
    if not text or text.strip():
        return text
    return f"[blank: {len(text)} whitespace character{'' if len(text) == 1 else 's'}]"


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]], *, table_id: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    ident = f' id="{escape(table_id)}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class _Collector:
    """One pass over the rows: what every section needs."""

    def __init__(self, labels: str | None, judge_names: list[str], scale: AnyScale | None) -> None:
        self.labels = labels
        self.judge_names = judge_names
        self.scale = scale
        self.verdicts: dict[str, int] = {}
        self.first: list[list[Any]] = []  # the first rows, for the page without scripts
        self.scores: list[float] = []
        self.failures: list[tuple[str, str, Any]] = []
        self.samples: list[dict[str, Any]] = []
        self.judge_stats: dict[str, list[float]] = {}
        self.judge_failed: dict[str, int] = {}
        self.criteria: dict[str, list[Any]] = {}
        self.pairs: list[tuple[Any, Any, Any]] = []
        self.pairwise = _PairCounts()
        self.coverage: list[float] = []

    def add(self, row: dict[str, Any]) -> None:
        outcome, item = row["outcome"], row["item"]
        self.pairwise.add(row)
        self.coverage += [c for c, _ in coverages(outcome)]
        verdict, text = _verdict(row, self.scale)
        if row["score"] is None:
            self.verdicts[FAILED] = self.verdicts.get(FAILED, 0) + 1
        elif "verdict" in outcome or "winner" in outcome:  # a grade names no verdict
            self.verdicts[str(text)] = self.verdicts.get(str(text), 0) + 1
        label = item.get(self.labels) if self.labels is not None else None
        if len(self.first) < _MAX_SAMPLES:
            self.first.append(browse_row(row, text, label, None))
        if row["score"] is not None:
            self.scores.append(float(row["score"]))
        elif len(self.failures) < _MAX_FAILURES:
            reason = scrub(row["error"] or "error")
            self.failures.append((item_label(row["idx"], item), reason, outcome.get("response")))
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
            self.pairs.append((row["score"], verdict, label))

    def _judge_scores(self, outcome: dict[str, Any]) -> list[tuple[str, Any]]:
        if isinstance(outcome.get("judge_scores"), dict):
            return list(outcome["judge_scores"].items())
        subs = outcome.get("judgments")
        if isinstance(subs, list):
            out = []
            for i, sub in enumerate(subs):
                if isinstance(sub, dict) and sub.get("asked") is False:
                    continue  # a cascade's tier the item never reached
                name = self.judge_names[i] if i < len(self.judge_names) else f"judge {i + 1}"
                out.append((name, sub.get("score") if isinstance(sub, dict) else None))
            return out
        return []


def _verdict(row: dict[str, Any], scale: AnyScale | None) -> tuple[Any, str | None]:
    """A row's verdict (a pairwise run's winner) and its text (``None`` when it failed)."""
    verdict = row["outcome"].get("verdict", row["outcome"].get("winner"))
    if verdict is None or row["score"] is None:
        return verdict, None
    return verdict, verdict_text(verdict, scale)


class _PairCounts:
    """The pairwise figures of a run, counted row by row (the definitions of
    :class:`~jurist.judges.PairwiseSummary`)."""

    def __init__(self) -> None:
        self.n = self.failed = self.both = self.consistent = self.sided = self.first_won = 0
        self.winners = {"A": 0, "B": 0, "tie": 0, "inconsistent": 0}

    def add(self, row: dict[str, Any]) -> None:
        outcome = row["outcome"]
        self.n += 1
        if row["score"] is None:
            self.failed += 1
        winner = outcome.get("winner")
        if winner in self.winners:
            self.winners[winner] += 1
        consistent = outcome.get("consistent")
        if isinstance(consistent, bool):
            self.both += 1
            self.consistent += consistent
        for order in ("forward", "swapped"):
            judgment = outcome.get(order)
            score = judgment.get("score") if isinstance(judgment, dict) else None
            if score is not None and side(float(score)) != "tie":
                self.sided += 1
                self.first_won += side(float(score)) == "A"

    def figures(self) -> dict[str, Any]:
        """The figures as numbers (what ``jurist compare`` writes to its summary)."""
        w = self.winners
        counted = w["A"] + w["B"] + w["tie"]
        return {
            "pairs": self.n,
            "wins": dict(w),
            "failed_pairs": self.failed,
            "win_rate_a": (w["A"] + w["tie"] / 2) / counted if counted else None,
            "consistency": self.consistent / self.both if self.both else None,
            "pairs_in_both_orders": self.both,
            "first_position_win_rate": self.first_won / self.sided if self.sided else None,
        }

    def section(self, systems: dict[str, str] | None = None) -> str:
        w = self.winners
        counted = w["A"] + w["B"] + w["tie"]
        consistency = (
            f"{self.consistent / self.both:.4f} ({self.consistent} of {self.both})"
            if self.both
            else None
        )
        rows = [
            (
                "pairs (A / B / tie / inconsistent / failed)",
                f"{self.n} ({w['A']} / {w['B']} / {w['tie']} / {w['inconsistent']} / "
                f"{self.failed})",
            ),
            (
                "win rate of A (ties count half)",
                (w["A"] + w["tie"] / 2) / counted if counted else None,
            ),
            ("consistency of the two orders", consistency),
            ("first-position win rate", self.first_won / self.sided if self.sided else None),
        ]
        note = (
            "<p>The win rate counts the pairs that named A, B or a tie (inconsistent and "
            "failed pairs are left out). Consistency is the share of pairs judged in both "
            "orders whose two orders named the same winner. The first-position win rate is, "
            "over the single-order verdicts that named a side, how often the response shown "
            "first won: 0.5 means no position bias.</p>"
        )
        named = _systems_text(systems)
        title = f"Pairwise: {escape(named)}" if named else "Pairwise"
        return (
            f'<h2 id="pairwise-figures">{title}</h2>'
            + _table(["what", "value"], rows, table_id="pairwise")
            + note
        )


def _systems_text(systems: dict[str, str] | None) -> str | None:
    """``A = name, B = name`` of a pairwise run that recorded its systems.

    >>> _systems_text({"A": "gpt-x", "B": "llama-y"})
    'A = gpt-x, B = llama-y'
    """
    if not systems:
        return None
    return ", ".join(f"{side} = {systems[side]}" for side in ("A", "B") if side in systems)


def pair_figures(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Win counts, A's win rate (ties half), consistency of the two orders and the
    first-position win rate of a pairwise run's stored rows, counted one row at a time."""
    counts = _PairCounts()
    for row in rows:
        counts.add(row)
    return counts.figures()


def _summary_section(s: RunSummary, systems: str | None = None) -> str:
    cost = "unknown" if s.cost is None else f"${s.cost:.4f}"
    if s.coverage:
        coverage: str | None = s.coverage.describe()
    elif s.scoring in ("parse", None):
        coverage = None if s.scoring is None else "not measured (verdicts parsed from text)"
    else:
        coverage = "no probabilities came back"
    rows = [
        ("judge", s.judge),
        *((("systems compared", systems),) if systems else ()),
        ("template", s.template),
        ("scoring", s.scoring),
        ("data", s.data),
        ("status", s.status),
        ("items", f"{s.items} of {s.expected_items}" if s.expected_items else str(s.items)),
        ("scored", s.scored),
        ("failed", s.failed),
        ("mean score", s.mean_score),
        ("calls / attempts / cache hits", f"{s.calls} / {s.attempts} / {s.cache_hits}"),
        ("verdict coverage", coverage),
        (
            "tokens (prompt / completion / cached)",
            f"{s.prompt_tokens} / {s.completion_tokens} / {s.cached_tokens}",
        ),
        *_reasoning_rows(s),
        (
            "cost",
            cost + (f" ({s.cost_unknown_items} items unpriced)" if s.cost_unknown_items else ""),
        ),
        ("prompt cache", cache_text(s.model_dump())),
        ("time", f"{s.seconds:.2f} s over {s.sessions} session(s)"),
        ("errors", ", ".join(f"{k}: {v}" for k, v in sorted(s.errors.items())) or None),
        ("decided during the run", "; ".join(s.decisions) or None),
        *(s.repeats.rows(s.items) if s.repeats is not None else ()),
    ]
    return _table(["what", "value"], rows, table_id="summary")


def _reasoning_rows(s: RunSummary) -> list[tuple[str, Any]]:
    """The thinking's tokens and cost (none for a judge that did not think)."""
    if not s.reasoning_tokens:
        return []
    share = f" ({s.reasoning_tokens / s.completion_tokens:.0%})" if s.completion_tokens else ""
    if s.reasoning_cost is None:
        cost = "unknown (a model without a price)"
    else:
        part = f" ({s.reasoning_cost / s.cost:.0%} of the cost)" if s.cost else ""
        cost = f"${s.reasoning_cost:.4f}{part}"
    return [
        ("reasoning tokens", f"{s.reasoning_tokens} of {s.completion_tokens} completion{share}"),
        ("reasoning cost", cost),
    ]


def _coverage_chart(values: list[float], s: RunSummary) -> str:
    """Logprob runs: the histogram of the probability the judge put on its verdicts."""
    if not values or s.coverage is None:
        return ""
    below = s.coverage.describe().split("; ", 1)[1]
    return (
        '<h3 id="coverage">Verdict coverage</h3>'
        f"<p>The probability the judge put on the scale's verdicts, over {len(values)} "
        f"weighed judgment(s); {escape(below)}.</p>"
        + histogram(
            values,
            chart_id="coverage-chart",
            title="Verdict coverage",
            x_title="probability the judge put on the verdicts",
            y_title="judgments",
        )
    )


def _agreement_section(c: _Collector) -> tuple[str, Comparison | None]:
    label = escape(c.labels or "")
    head = f'<h2 id="agreement">Agreement with {label}</h2>'
    scored = [(s, v, h) for s, v, h in c.pairs if s is not None and h is not None]
    if not scored:
        return head + f"<p>No item has both a score and a value in {label}.</p>", None
    comparison = choose(scored, c.scale)
    try:
        return head + _agreement_figures(c, comparison), comparison
    except MissingDependencyError as e:
        return head + f'<p class="missing">{escape(str(e))}</p>', comparison


def _agreement_figures(c: _Collector, cmp: Comparison) -> str:
    from jurist.metrics import agreement, confusion

    label = c.labels or ""
    with_ci = len(cmp.judge) <= _CI_MAX_ITEMS
    res = agreement(cmp.judge, cmp.human, kind=cmp.kind, ci=with_ci, n_resamples=300)
    rows = [(k, v.value, v.low, v.high) for k, v in res.metrics.items()]
    intervals = (
        "95% bootstrap intervals"
        if with_ci
        else f"no intervals: over {_CI_MAX_ITEMS:,} items the bootstrap takes minutes; "
        "jurist.metrics.agreement computes them"
    )
    note = (
        f'<p id="agreement-note">Compared on the {cmp.on} scale: {escape(cmp.note)}. '
        f"{res.n} items ({escape(cmp.kind)} figures, {intervals}).</p>"
    )
    figures = _table(["metric", "value", "low", "high"], rows, table_id="agreement-figures")
    if cmp.kind == "nominal":
        names, matrix = confusion(cmp.judge, cmp.human)
        ordered = sort_names(names, c.scale)
        at = [names.index(n) for n in ordered]
        conf = _table(
            [f"{label} \\ verdict", *ordered],
            ([n, *(matrix[i][j] for j in at)] for n, i in zip(ordered, at, strict=True)),
            table_id="confusion",
        )
        return note + figures + conf
    integer = cmp.kind == "ordinal"
    plot = scatter(
        [float(h) for h in cmp.human],
        [float(j) for j in cmp.judge],
        x_label=label,
        y_label="judge verdict" if cmp.on == "verdict" else "judge score",
        x_range=cmp.span,
        y_range=cmp.span if cmp.on == "verdict" else (0.0, 1.0),
        x_integer=integer,
        y_integer=integer,
        chart_id="agreement-scatter",
        title=f"Judge {'verdict' if cmp.on == 'verdict' else 'score'} against {label}",
    )
    return note + figures + plot


def _tables(c: _Collector) -> tuple[str, str]:
    """The per-judge and per-criterion sections (empty when the run has neither)."""
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
    return judges, criteria


def _samples(c: _Collector) -> str:
    """The first items as a plain table: what a reader without scripts sees (the page's
    script replaces it with the browser)."""
    return _table(
        ["item", "input", "score", "verdict", "judge response"],
        (
            (
                r[_COL["name"]],
                "\n".join(
                    f"{k}: {blank_marker(v) if isinstance(v, str) else v}"
                    for k, v in r[_COL["fields"]].items()
                ),
                r[_COL["score"]],
                r[_COL["verdict"]],
                r[_COL["response"]],
            )
            for r in c.first
        ),
        table_id="sample-table",
    )


def write_report(run: ReportSource, path: Path, labels: str | None = None) -> Path:
    """Write ``run``'s report to ``path`` (see the module docs)."""
    judge_cfg = run.manifest.judge
    names = [
        str(j.get("name", f"judge {i + 1}"))
        for i, j in enumerate(judge_cfg.get("judges") or judge_cfg.get("tiers") or [])
        if isinstance(j, dict)
    ]
    c = _Collector(labels, names, scale_of(judge_cfg))
    for row in run.rows():
        c.add(row)
    judges, criteria = _tables(c)
    summary = run.summary()
    summary = summary.model_validate(scrub(summary.model_dump()))
    ordered = ordered_counts(c.verdicts, c.scale)
    distribution = (
        histogram(
            c.scores,
            chart_id="scores",
            title=f"Scores of the {len(c.scores)} scored item(s)",
            x_title="score (0 = worst, 1 = best)",
        )
        + (
            bars(
                [k for k, _ in ordered],
                [n for _, n in ordered],
                chart_id="verdicts",
                title="Verdicts",
                x_title="verdict, in the scale's order",
            )
            if ordered
            else ""
        )
        + _coverage_chart(c.coverage, summary)
    )
    failures = (
        _table(["item", "reason", "judge response"], c.failures, table_id="failure-table")
        if c.failures
        else "<p>None.</p>"
    )
    agreement, comparison = _agreement_section(c) if labels else ("", None)
    system = judge_cfg.get("system")
    meta = {
        "labels": labels,
        "failed": FAILED,
        "verdicts": [k for k, n in ordered if n],
        "system": scrub(system) if isinstance(system, str) else None,
        "tolerance": comparison.tolerance if comparison else 0.0,
        "compared": f"{comparison.on} scale" if comparison else None,
    }
    script, script_src = script_tag()
    page = page_template("report.html")
    pairwise = c.pairwise.section(summary.systems) if judge_cfg.get("kind") == "pairwise" else ""
    if judge_cfg.get("kind") == "cascade":
        from jurist.runs.report._cascade import cascade_section  # `import jurist` stays light

        pairwise = cascade_section(run.rows(), judge_cfg, _agrees(c, comparison), _table)
    html = page.substitute(
        title=escape(scrub(str(run.run_dir))),
        version=escape(__version__),
        script_src=script_src,
        summary=_summary_section(summary, _systems_text(summary.systems)),
        pairwise=pairwise,
        distribution=distribution,
        judges=judges,
        criteria=criteria,
        agreement=agreement,
        failures=failures,
        samples_note=escape(_samples_note(c.pairwise.n, comparison)),
        samples=_samples(c),
        data=DATA,
        script=script,
    )
    return write_page(path, html, meta, _browse_rows(run, c, comparison), redact_known)


def _agrees(c: _Collector, comparison: Comparison | None) -> Any:
    """Whether a row's verdict agrees with its label, as the agreement section compares."""
    if comparison is None or c.labels is None:
        return None
    labels = c.labels

    def agrees(row: dict[str, Any]) -> bool | None:
        verdict, _ = _verdict(row, c.scale)
        far = comparison.disagreement(
            comparison.values(row["score"], verdict, row["item"].get(labels), c.scale)
        )
        return None if far is None else far <= comparison.tolerance

    return agrees


def _browse_rows(
    run: ReportSource, c: _Collector, comparison: Comparison | None
) -> Iterator[list[Any]]:
    """The second pass over the store: every row as the item browser reads it."""
    for row in run.rows():
        verdict, text = _verdict(row, c.scale)
        label = row["item"].get(c.labels) if c.labels is not None else None
        far = None
        if comparison is not None:
            pair = comparison.values(row["score"], verdict, label, c.scale)
            far = comparison.disagreement(pair)
        yield browse_row(row, text, label, far)


def _samples_note(n: int, comparison: Comparison | None) -> str:
    note = (
        f"All {n} items, a page at a time: filter them, search their text, and open one "
        "(click its row) to see the judge prompt, the raw answer, the attempts and the error. "
        "The filters are kept in the address (#...), so a view can be linked."
    )
    if comparison is not None:
        which = (
            "any difference"
            if comparison.tolerance == 0
            else f"a difference over {comparison.tolerance:g}"
        )
        note += f" A disagreement with the labels is {which} on the {comparison.on} scale."
    return note
