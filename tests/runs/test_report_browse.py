"""The HTML report (issue 13.6): agreement on the right scale, verdicts in the scale's order,
a scatter with ticks and counts, and every item embedded as data no model text escapes."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import jurist

SCRIPT_END = "</script><script>document.title='pwned'</script><!--"


class Page(HTMLParser):
    """Every table's rows (cell texts) and every script element's attributes and text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None
        self._cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self.rows[-1].append("")
            self._cell = True
        elif tag == "script":
            self._script = dict(attrs)
            self.scripts.append((self._script, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._cell = False
        elif tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        elif self._cell:
            self.rows[-1][-1] += data


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def figure(html: str, name: str) -> float:
    """The value of one agreement metric (its row in the figures table)."""
    for row in parse(html).rows:
        if row and row[0] == name:
            return float(row[1])
    raise AssertionError(f"no {name} row in the report")


def likert_run(folder: Path, verdicts: list[int], labels: list[Any]) -> jurist.Run:
    judge = jurist.LLMJudge(
        jurist.get_model("mock:judge", outputs=[str(v) for v in verdicts]), template="likert"
    )
    items = [
        {"prompt": f"q{i}", "response": f"answer {i}", "human": h} for i, h in enumerate(labels)
    ]
    return jurist.evaluate(items, judge, run_dir=folder, progress=False)


# a 1-5 judge that agrees well with 1-5 labels: 17 of 20 equal, 3 off by one
LABELS = [1, 2, 3, 4, 5] * 4
VERDICTS = [*LABELS[:17], 4, 5, 4]


def test_likert_labels_are_compared_with_the_verdicts(tmp_path: Path) -> None:
    html = likert_run(tmp_path / "r", VERDICTS, LABELS).report(labels="human").read_text()
    # before: the 0-1 score against the 1-5 labels gave alpha -0.39 and RMSE 2.66
    assert figure(html, "krippendorff_alpha") > 0.9
    assert figure(html, "quadratic_kappa") > 0.9
    assert figure(html, "accuracy") == pytest.approx(17 / 20)
    note = html.split('id="agreement-note">', 1)[1].split("</p>", 1)[0]
    assert "Compared on the verdict scale" in note and "(1-5)" in note


def test_labels_off_the_verdict_scale_are_compared_with_the_score(tmp_path: Path) -> None:
    labels = [(v - 1) / 4 for v in LABELS]  # the same labels written 0-1
    html = likert_run(tmp_path / "r", VERDICTS, labels).report(labels="human").read_text()
    assert "Compared on the score scale" in html
    assert figure(html, "rmse") < 0.2 and figure(html, "pearson") > 0.9


def test_label_scale_labels_use_the_scale_order(tmp_path: Path) -> None:
    outputs = ["Incorrect", "Correct", "Correct", "Uncertain"]
    judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=outputs))
    labels = ["incorrect", "Correct", "Incorrect", "Uncertain"]  # case as people type it
    items = [{"prompt": f"q{i}", "response": "a", "human": h} for i, h in enumerate(labels)]
    run = jurist.evaluate(items, judge, run_dir=tmp_path / "r", progress=False)
    html = run.report(labels="human").read_text()
    assert "Compared on the verdict scale" in html
    assert figure(html, "accuracy") == pytest.approx(0.75)
    confusion = html.split('id="confusion"', 1)[1].split("</tr>", 1)[0]
    header = re.findall(r"<th>([^<]*)</th>", confusion)
    assert header[1:] == ["Correct", "Incorrect", "I am not sure"]  # the template's order


def verdict_bars(html: str) -> list[str]:
    """The labels of the verdict chart's bars, in the order drawn."""
    titles = re.findall(r"<rect [^>]*><title>([^<]*): \d+</title>", html)
    return titles[10:]  # the first ten are the score histogram's bins


def test_verdicts_in_scale_order_written_as_the_scale_writes_them(tmp_path: Path) -> None:
    run = likert_run(tmp_path / "r", [2, 3, 5, 4, 1, 2], [1] * 6)
    html = run.report().read_text()
    # before: "2.0, 3.0, 5.0, 4.0, 1.0", the order first seen, as floats
    assert verdict_bars(html) == ["1", "2", "3", "4", "5"]


def test_unused_scale_points_and_failures_are_shown(tmp_path: Path) -> None:
    judge = jurist.LLMJudge(
        jurist.get_model("mock:judge", outputs=["4", "nothing", "2"]), template="likert"
    )
    items = [{"prompt": f"q{i}", "response": "a"} for i in range(3)]
    html = jurist.evaluate(items, judge, run_dir=tmp_path / "r", progress=False).report()
    titles = re.findall(r"<rect [^>]*><title>([^<]*)</title>", html.read_text())
    assert titles[10:] == ["1: 0", "2: 1", "3: 0", "4: 1", "5: 0", "(failed): 1"]


def test_agreement_scatter_has_ticks_and_counts(tmp_path: Path) -> None:
    html = likert_run(tmp_path / "r", VERDICTS, LABELS).report(labels="human").read_text()
    svg = html.split('id="agreement-scatter"', 1)[1].split("</svg>", 1)[0]
    x_ticks = re.findall(r'class="x-tick"[^>]*>([^<]*)<', svg)
    y_ticks = re.findall(r'class="y-tick"[^>]*>([^<]*)<', svg)
    assert x_ticks == y_ticks == ["1", "2", "3", "4", "5"]
    # 20 items on 8 distinct spots: each drawn once, with its count
    assert svg.count("<circle") == 8
    counts = sorted(int(c) for c in re.findall(r'class="count"[^>]*>(\d+)<', svg))
    assert sum(counts) + (8 - len(counts)) == 20 and max(counts) == 4


def test_rows_are_data_no_model_text_breaks_out_of(tmp_path: Path) -> None:
    judge = jurist.LLMJudge(
        jurist.get_model("mock:judge", outputs=[f"Correct {SCRIPT_END}", "x" * 25_000])
    )
    items = [
        {"prompt": f"q {SCRIPT_END}", "response": "a & b <b>", "human": "Correct"},
        {"prompt": "q2", "response": "b", "human": "Incorrect"},
    ]
    report = jurist.evaluate(items, judge, run_dir=tmp_path / "r", progress=False).report(
        labels="human"
    )
    html = report.read_text()
    page = parse(html)
    assert [a.get("id") for a, _ in page.scripts] == ["report-meta", "report-rows", "report-code"]
    assert [a.get("type") for a, _ in page.scripts[:2]] == ["application/json"] * 2
    assert SCRIPT_END not in html and "<!--" not in html
    rows = json.loads(page.scripts[1][1])
    meta = json.loads(page.scripts[0][1])
    col = {name: i for i, name in enumerate(meta["columns"])}
    assert len(rows) == 2 and meta["labels"] == "human"
    assert rows[0][col["response"]] == f"Correct {SCRIPT_END}"
    # the judge prompt holds the input fields whole: they are stored once, marked in it
    assert rows[0][col["in_prompt"]] == ["prompt", "response"]
    assert "\x00prompt\x00" in rows[0][col["prompt"]]
    assert SCRIPT_END not in rows[0][col["prompt"]]
    fields = {"prompt": f"q {SCRIPT_END}", "response": "a & b <b>", "human": "Correct"}
    assert rows[0][col["fields"]] == fields
    assert rows[1][col["response"]].endswith("[... 5000 more characters]")
    assert rows[1][col["error"]].startswith("parse:")
    assert rows[0][col["disagreement"]] == 0.0  # verdict Correct, label Correct
    assert meta["verdicts"] == ["Correct", "(failed)"]
    assert "You are" in meta["system"]  # the judge's system message, once


def test_the_policy_allows_exactly_the_page_script(tmp_path: Path) -> None:
    html = likert_run(tmp_path / "r", [1], [1]).report().read_text()
    code = next(text for attrs, text in parse(html).scripts if attrs.get("id") == "report-code")
    digest = base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert policy is not None
    assert f"script-src 'sha256-{digest}'" in policy.group(1)
    assert "default-src 'none'" in policy.group(1) and "http" not in policy.group(1)
    assert "innerHTML" not in code and "insertAdjacentHTML" not in code


def test_without_labels_there_is_no_disagreement(tmp_path: Path) -> None:
    html = likert_run(tmp_path / "r", [3, 4], [1, 1]).report().read_text()
    page = parse(html)
    meta = json.loads(page.scripts[0][1])
    rows = json.loads(page.scripts[1][1])
    assert meta["labels"] is None and meta["compared"] is None
    assert [r[meta["columns"].index("disagreement")] for r in rows] == [None, None]
    assert 'id="agreement"' not in html


def test_model_text_holding_the_data_marker_changes_nothing(tmp_path: Path) -> None:
    from jurist.runs.report._browse import DATA

    judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=[f"nothing {DATA}", "4"]))
    items = [{"prompt": f"q {DATA}", "response": "a"}, {"prompt": "q2", "response": "b"}]
    html = jurist.evaluate(items, judge, run_dir=tmp_path / "r", progress=False).report()
    page = parse(html.read_text())
    rows = json.loads(page.scripts[1][1])
    assert [r[0] for r in rows] == [0, 1] and rows[0][5] == f"nothing {DATA}"
    assert page.scripts[2][0].get("id") == "report-code"
