"""The HTML report of a pairwise run shows A's win rate, the consistency of the two orders
and the first-position rate, the same figures as the run's pairwise summary."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

import jurist
from jurist.cli import EXIT_FAILED_ITEMS, EXIT_OK, main
from jurist.judges import PairwiseResults
from jurist.runs.report._page import pair_figures
from jurist.types import Request
from tests._cdp import shared_browser

SCRIPT = "<script>document.title='pwned'</script>"


def judge_text(request: Request) -> str:
    """Prefers the longer answer, except on 'biased' prompts where the first shown wins."""
    text = request.messages[-1].content
    if "biased" in text:
        return "[[A]]"
    a = text.split("<answer_a>")[1].split("</answer_a>")[0]
    b = text.split("<answer_b>")[1].split("</answer_b>")[0]
    return "[[A]]" if len(a) > len(b) else "[[B]]" if len(b) > len(a) else "[[C]]"


PAIRS = [
    {"prompt": "q1", "response_a": "a long answer", "response_b": "short"},  # A
    {"prompt": "q2", "response_a": "tiny", "response_b": "a longer one"},  # B
    {"prompt": "q3", "response_a": "a long answer", "response_b": "short"},  # A
    {"prompt": "q4", "response_a": "equal", "response_b": "EQUAL"},  # tie
    {"prompt": f"biased {SCRIPT}", "response_a": "x", "response_b": "y"},  # orders disagree
]


class Cells(HTMLParser):
    """The text of every table cell, row by row, of the table with a given id."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id = table_id
        self.inside = False
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and dict(attrs).get("id") == self.table_id:
            self.inside = True
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("td", "th"):
            self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = False

    def handle_data(self, data: str) -> None:
        if self.inside and self.rows and self.rows[-1]:
            self.rows[-1][-1] += data


def table(html: str, table_id: str) -> dict[str, str]:
    parser = Cells(table_id)
    parser.feed(html)
    return {row[0]: row[1] for row in parser.rows if len(row) >= 2}


@pytest.mark.parametrize("consistency", ["tie", "inconsistent"])
def test_pairwise_report_shows_win_rate_consistency_and_position(
    tmp_path: Path, consistency: str
) -> None:
    judge = jurist.PairwiseJudge(
        jurist.get_model("mock:p", outputs=judge_text),
        consistency=consistency,  # type: ignore[arg-type]
        name=f"pair {SCRIPT}",
    )
    expected = PairwiseResults(list(judge.judge_sync(PAIRS))).summary()
    run = jurist.evaluate(PAIRS, judge, run_dir=tmp_path / "run")
    html = run.report().read_text()
    figures = table(html, "pairwise")
    assert expected.win_rate is not None and expected.consistency_rate is not None
    assert expected.first_position_rate is not None
    assert figures["win rate of A (ties count half)"] == f"{expected.win_rate:.4f}"
    assert figures["consistency of the two orders"] == (
        f"{expected.consistency_rate:.4f} ({expected.n_consistent} of {expected.n_both_orders})"
    )
    assert figures["first-position win rate"] == f"{expected.first_position_rate:.4f}"
    assert figures["pairs (A / B / tie / inconsistent / failed)"] == (
        f"{expected.n} ({expected.n_a} / {expected.n_b} / {expected.n_tie} / "
        f"{expected.n_inconsistent} / {expected.n_failed})"
    )
    # by hand: 4 of 5 pairs agree in both orders; 8 single-order verdicts named a side
    # (the tie's two named none) and the response shown first won 5 of them: one per
    # order for q1, q2 and q3, both for the biased pair
    numbers = pair_figures(run.rows())  # what `jurist compare` writes to summary.json
    assert numbers["win_rate_a"] == pytest.approx(expected.win_rate)
    assert numbers["consistency"] == pytest.approx(expected.consistency_rate)
    assert numbers["first_position_win_rate"] == pytest.approx(expected.first_position_rate)
    assert expected.consistency_rate == pytest.approx(0.8)
    assert expected.first_position_rate == pytest.approx(0.625)
    if consistency == "tie":
        assert (expected.n_a, expected.n_b, expected.n_tie) == (2, 1, 2)
        assert expected.win_rate == pytest.approx(0.6)
    else:
        assert expected.n_inconsistent == 1 and expected.win_rate == pytest.approx(0.625)
    assert "<script>" not in html and "&lt;script&gt;" in html  # the name is escaped


def test_report_of_a_run_that_is_not_pairwise_has_no_pairwise_section(tmp_path: Path) -> None:
    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=["Correct"], cycle=True))
    run = jurist.evaluate([{"prompt": "q", "response": "a"}], judge, run_dir=tmp_path / "r")
    assert 'id="pairwise"' not in run.report().read_text()


def test_compare_command_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text(
        '{"prompt": "q1", "response": "a long answer"}\n{"prompt": "q2", "response": "x"}\n'
    )
    b.write_text('{"prompt": "q1", "response": "short"}\n{"prompt": "q2", "response": "longer"}\n')
    out = tmp_path / "cmp"
    args = ["compare", str(a), str(b), "--model", "mock:p", "--out", str(out), "--no-progress"]
    assert main(args) == EXIT_FAILED_ITEMS  # the mock's "Correct" names no winner
    assert main(["report", str(out)]) == EXIT_OK
    capsys.readouterr()
    figures = table((out / "report.html").read_text(), "pairwise")
    assert figures["pairs (A / B / tie / inconsistent / failed)"] == "2 (0 / 0 / 0 / 0 / 2)"
    assert figures["win rate of A (ties count half)"] == "-"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["wins"] == {"A": 0, "B": 0, "tie": 0, "inconsistent": 0}
    assert summary["failed_pairs"] == 2 and summary["pairs"] == 2
    for key in ("win_rate_a", "consistency", "first_position_win_rate"):
        assert summary[key] is None  # no pair named a winner: unknown, never 0


@pytest.mark.slow
def test_pairwise_report_renders_in_headless_chromium(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    judge = jurist.PairwiseJudge(
        jurist.get_model("mock:p", outputs=judge_text), name=f"pair {SCRIPT}"
    )
    report = jurist.evaluate(PAIRS, judge, run_dir=tmp_path / "run").report()
    dom = shared_browser(tmp_path_factory).load(report.as_uri()).dom  # the DOM its script drew
    assert "pwned</title>" not in dom and "<script>document" not in dom
    figures = table(dom, "pairwise")
    assert figures["win rate of A (ties count half)"] == "0.6000"
    assert figures["consistency of the two orders"] == "0.8000 (4 of 5)"
    assert figures["first-position win rate"] == "0.6250"
