"""Runs side by side: one self-contained page that lists runs and shows two of them item by
item (``jurist report RUN1 RUN2 [...]``).

The page lists every run (judge, data, items, scored, failed, mean score, verdicts), then
compares two of them (the first two, or ``show``): how many items they share, on how many
their verdicts are the same, the mean difference of their scores, and a table of run A's
verdicts against run B's. Below, every shared item in the single-run report's browser
(:mod:`jurist.runs.report._browse` and ``report.js``, the same code): run A's score,
verdict and judge answer in the columns, run B's verdict where the report puts labels, and
the difference of the two scores where their verdicts differ (0 where they are the same),
so the browser's filters read "verdicts: the same / differ" and "largest difference
first"; opening an item shows run B's whole judgment beside A's. The search covers both.

Items are aligned on an item field (``on``, e.g. ``id``) or, by default, on the row: item
*i* of A with item *i* of B. An item in only one of the two is counted, not shown.
Like the run report: no key reaches the page, model text is only ever text, the
Content-Security-Policy allows the page's one script by its hash and nothing else.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from html import escape
from pathlib import Path
from typing import Any

from jurist._secrets import redact_known, scrub
from jurist._version import __version__
from jurist.errors import ConfigError, DataError
from jurist.runs._run_types import ReportSource
from jurist.runs.report._browse import (
    COLUMNS,
    DATA,
    TEXT_LIMIT,
    browse_row,
    clip,
    page_template,
    script_tag,
    write_page,
)
from jurist.runs.report._scale import FAILED, AnyScale, ordered_counts, scale_of, verdict_text

__all__ = ["write_side_by_side"]

_SAMPLES = 20
_OTHER, _FIELDS = COLUMNS.index("other"), COLUMNS.index("fields")


def _verdict(row: dict[str, Any], scale: AnyScale | None) -> str:
    """A row's verdict as text (a pairwise run's winner; the score for a judge that names
    none); ``(failed)`` for an item without a score."""
    if row["score"] is None:
        return FAILED
    outcome = row["outcome"]
    verdict = outcome.get("verdict", outcome.get("winner"))
    return verdict_text(verdict if verdict is not None else row["score"], scale)


def _key(row: dict[str, Any], on: str | None, run: ReportSource) -> Hashable:
    if on is None:
        return int(row["idx"])
    value = row["item"].get(on)
    if value is None or isinstance(value, list | dict):
        raise DataError(
            f"{run.run_dir} item {row['idx']}: no single value in {on!r} to align the runs on "
            f"(its fields are {sorted(row['item'])})"
        )
    return value  # type: ignore[no-any-return]


class _Other:
    """Run B's rows by key: what the page shows of each."""

    def __init__(self, run: ReportSource, on: str | None) -> None:
        self.scale = scale_of(run.manifest.judge)
        self.rows: dict[Hashable, dict[str, Any]] = {}
        for row in run.rows():
            key = _key(row, on, run)
            if key in self.rows:
                raise DataError(
                    f"{run.run_dir}: items {self.rows[key]['idx']} and {row['idx']} both have "
                    f"{on} {key!r}; the runs are aligned on it, so it must name one item"
                )
            outcome = row["outcome"]
            error = row["error"] or outcome.get("error")
            self.rows[key] = {
                "idx": row["idx"],
                "score": row["score"],
                "verdict": _verdict(row, self.scale),
                "response": clip(outcome.get("response")),
                "explanation": clip(outcome.get("explanation")),
                "error": scrub(error) if error else None,
            }


def _difference(a: dict[str, Any], verdict_a: str, b: dict[str, Any]) -> float | None:
    """0 where the verdicts are the same, the scores' difference where they differ (at
    least 1e-9, so a difference always reads as one); ``None`` where either failed."""
    if a["score"] is None or b["score"] is None:
        return None
    if verdict_a == b["verdict"]:
        return 0.0
    return max(abs(float(a["score"]) - float(b["score"])), 1e-9)


def _runs_table(runs: Sequence[ReportSource], names: Sequence[str], shown: set[int]) -> str:
    head = (
        "<tr><th>run</th><th>folder</th><th>judge</th><th>data</th><th>items</th>"
        "<th>scored</th><th>failed</th><th>mean score</th><th>verdicts</th></tr>"
    )
    body = []
    for i, run in enumerate(runs):
        s = run.summary()
        s = s.model_validate(scrub(s.model_dump()))
        mean = "-" if s.mean_score is None else f"{s.mean_score:.4f}"
        verdicts = ", ".join(f"{k}: {n}" for k, n in s.verdicts.items()) or "-"
        cls = ' class="shown"' if i in shown else ""
        body.append(
            f"<tr{cls}><td>{escape(names[i])}</td><td>{escape(s.run_dir)}</td>"
            f"<td>{escape(s.judge)}</td><td>{escape(s.data)}</td>"
            f'<td class="num">{s.items}</td><td class="num">{s.scored}</td>'
            f'<td class="num">{s.failed}</td><td class="num">{mean}</td>'
            f'<td class="text">{escape(verdicts)}</td></tr>'
        )
    return f'<table id="runs"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


class _Tally:
    """What the comparison section counts over the shared items."""

    def __init__(self) -> None:
        self.shared = self.only_a = self.same = self.differ = self.one_failed = 0
        self.gaps: list[float] = []
        self.cells: dict[tuple[str, str], int] = {}

    def add(self, a: dict[str, Any], verdict_a: str, b: dict[str, Any]) -> None:
        self.shared += 1
        self.cells[(verdict_a, b["verdict"])] = self.cells.get((verdict_a, b["verdict"]), 0) + 1
        if (a["score"] is None) != (b["score"] is None):
            self.one_failed += 1
        elif verdict_a == b["verdict"]:
            self.same += 1
        else:
            self.differ += 1
        if a["score"] is not None and b["score"] is not None:
            self.gaps.append(abs(float(a["score"]) - float(b["score"])))

    def section(self, names: tuple[str, str], scales: tuple[Any, Any], only_b: int) -> str:
        a, b = (escape(n) for n in names)
        rate = f" ({self.same / self.shared:.1%})" if self.shared else ""
        gap = f"{sum(self.gaps) / len(self.gaps):.4f}" if self.gaps else "-"
        rows = [
            ("items in both", self.shared),
            (f"only in {a} / only in {b}", f"{self.only_a} / {only_b}"),
            ("the same verdict", f"{self.same}{rate}"),
            ("different verdicts", self.differ),
            ("failed in one run only", self.one_failed),
            ("mean |score difference| (both scored)", gap),
        ]
        figures = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
        count_a: dict[str, int] = {}
        count_b: dict[str, int] = {}
        for (va, vb), n in self.cells.items():
            count_a[va] = count_a.get(va, 0) + n
            count_b[vb] = count_b.get(vb, 0) + n
        rows_a = [k for k, _ in ordered_counts(count_a, scales[0]) if count_a.get(k)]
        cols_b = [k for k, _ in ordered_counts(count_b, scales[1]) if count_b.get(k)]
        head = f"<th>{a} \\ {b}</th>" + "".join(f"<th>{escape(v)}</th>" for v in cols_b)
        body = "".join(
            f"<tr><th>{escape(va)}</th>"
            + "".join(f'<td class="num">{self.cells.get((va, vb), 0)}</td>' for vb in cols_b)
            + "</tr>"
            for va in rows_a
        )
        return (
            f'<table id="comparison"><tbody>{figures}</tbody></table>'
            f"<p>Verdicts of {a} (rows) against those of {b} (columns):</p>"
            f'<table id="verdict-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        )


def write_side_by_side(
    runs: Sequence[ReportSource],
    path: Path,
    *,
    on: str | None = None,
    show: tuple[int, int] = (0, 1),
) -> Path:
    """Write the side-by-side page of ``runs`` to ``path``, items of ``runs[show[0]]`` and
    ``runs[show[1]]`` aligned on the item field ``on`` (default: the row)."""
    if len(runs) < 2:
        raise ConfigError("a side-by-side page needs two runs or more")
    i, j = show
    if i == j or not (0 <= i < len(runs) and 0 <= j < len(runs)):
        raise ConfigError(
            f"show two different runs of the {len(runs)} given, not {i + 1} and {j + 1}"
        )
    names = [f"#{k + 1} {Path(r.run_dir).name}" for k, r in enumerate(runs)]
    run_a, run_b = runs[i], runs[j]
    other = _Other(run_b, on)
    scale_a = scale_of(run_a.manifest.judge)
    tally = _Tally()
    verdicts: dict[str, int] = {}
    first: list[list[Any]] = []
    seen: set[Hashable] = set()
    for row in run_a.rows():
        key = _key(row, on, run_a)
        b = other.rows.get(key)
        if b is None:
            tally.only_a += 1
            continue
        seen.add(key)
        verdict = _verdict(row, scale_a)
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        tally.add(row, verdict, b)
        if len(first) < _SAMPLES:
            first.append(_row(row, verdict, b, names[j]))
    a_name, b_name = names[i], names[j]
    system = run_a.manifest.judge.get("system")
    meta = {
        "labels": f"verdict of {b_name}",
        "failed": FAILED,
        "verdicts": [k for k, n in ordered_counts(verdicts, scale_a) if n and k != FAILED],
        "system": scrub(system) if isinstance(system, str) else None,
        "tolerance": 0.0,
        "compared": "where the verdicts differ",
        "headers": {
            "score": f"score of {a_name}",
            "verdict": f"verdict of {a_name}",
            "response": f"judge answer of {a_name}",
            "difference": "|score difference|",
            "raw": f"Judge's raw answer ({a_name})",
            "other": f"The judgment of {b_name}",
        },
        "search_other": True,
    }
    script, script_src = script_tag()
    page = page_template("side_by_side.html")
    note = (
        f"The {tally.shared} items both runs judged, a page at a time: the columns show "
        f"{a_name}'s score, verdict and judge answer, and {b_name}'s verdict. Filter the "
        "items whose verdicts differ, search their text (both runs' answers), and open one "
        "(click its row) to see both judgments. The filters are kept in the address (#...)."
    )
    html = page.substitute(
        version=escape(__version__),
        runs=_runs_table(runs, names, {i, j}),
        a_name=escape(a_name),
        b_name=escape(b_name),
        comparison=tally.section(
            (a_name, b_name), (scale_a, other.scale), len(set(other.rows) - seen)
        ),
        samples_note=escape(note),
        samples=_samples(first, a_name, b_name),
        data=DATA,
        script=script,
        script_src=script_src,
    )
    rows = _rows(run_a, other, on, scale_a, names[j])
    return write_page(path, html, meta, rows, redact_known)


def _row(row: dict[str, Any], verdict: str, b: dict[str, Any], b_name: str) -> list[Any]:
    """Run A's row as the browser reads it, with run B's verdict as its label and B's
    judgment in the detail's extra section."""
    shown = None if verdict == FAILED else verdict
    out = browse_row(row, shown, b["verdict"], _difference(row, verdict, b))
    other = out[_OTHER]
    out[_OTHER] = {
        f"{b_name}: score": b["score"],
        f"{b_name}: verdict": b["verdict"],
        f"{b_name}: judge answer": b["response"],
        **({f"{b_name}: explanation": b["explanation"]} if b["explanation"] else {}),
        **({f"{b_name}: error": b["error"]} if b["error"] else {}),
        **({f"{b_name}: item": b["idx"]} if b["idx"] != row["idx"] else {}),
        **{f"other fields: {k}": v for k, v in other.items()},
    }
    return out


def _rows(
    run_a: ReportSource,
    other: _Other,
    on: str | None,
    scale_a: AnyScale | None,
    b_name: str,
) -> Iterator[list[Any]]:
    for row in run_a.rows():
        b = other.rows.get(_key(row, on, run_a))
        if b is not None:
            yield _row(row, _verdict(row, scale_a), b, b_name)


def _samples(first: Sequence[list[Any]], a_name: str, b_name: str) -> str:
    """The first shared items as a plain table, for a reader without scripts."""
    head = "".join(
        f"<th>{escape(h)}</th>"
        for h in ("item", f"verdict of {a_name}", f"verdict of {b_name}", "input")
    )
    body = "".join(
        f'<tr><td class="num">{r[0]}</td><td>{escape(str(r[2] or FAILED))}</td>'
        f"<td>{escape(str(r[3]))}</td>"
        f'<td class="text">{escape(clip(_input(r[_FIELDS]), TEXT_LIMIT // 10))}</td></tr>'
        for r in first
    )
    return f'<table id="sample-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _input(fields: dict[str, Any]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in fields.items())
