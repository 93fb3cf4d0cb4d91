"""Runs side by side (``jurist report RUN1 RUN2 ...``): the runs listed, two of them item by
item with where their verdicts differ, in the single-run report's browser (filters, search,
item view), checked in the HTML and in headless Chromium, with a screenshot."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.cli import EXIT_OK, EXIT_USAGE
from jurist.errors import ConfigError
from jurist.runs.report import write_side_by_side
from jurist.types import Request
from tests._cdp import Browser, shared_browser
from tests._chromium import non_white_share, shots_dir
from tests._cli_run import run

N = 30
SCRIPT = "<script>document.title='pwned'</script>"


def strict(i: int) -> int:
    return 1 + i % 5


def lenient(i: int) -> int | None:
    """Agrees with ``strict`` but on every third item (one higher, at most 5); item 7 fails."""
    if i == 7:
        return None
    return strict(i) if i % 3 else min(5, strict(i) + 1)


def likert(verdict_of: Any, tag: str) -> Any:
    def answer(request: Request) -> str:
        text = request.messages[-1].content
        found = re.search(r"Question (\d+)", text)
        assert found is not None
        v = verdict_of(int(found.group(1)))
        return f"unreadable {tag}" if v is None else f"{tag}-reason {v}"

    return answer


def items(order: list[int]) -> list[dict[str, Any]]:
    return [
        {
            "id": str(i),  # the run in order: the id is also the row, however items are named
            "prompt": f"Question {i}: what is {i}? {SCRIPT if i == 4 else ''}",
            "response": f"it is {i}",
        }
        for i in order
    ]


def judged(folder: Path, verdict_of: Any, tag: str, order: list[int]) -> jurist.Run:
    model = jurist.get_model("mock:judge", outputs=likert(verdict_of, tag))
    judge = jurist.LLMJudge(model, template="likert", name=f"{tag} judge")
    return jurist.evaluate(items(order), judge, run_dir=folder, progress=False, retries=0)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[jurist.Run]:
    base = tmp_path_factory.mktemp("sbs")
    order = list(range(N))
    return [
        judged(base / "strict", strict, "strict", order),
        judged(base / "lenient", lenient, "lenient", order[::-1]),  # another row order
        judged(base / "third", strict, "third", order),
    ]


def differing() -> set[int]:
    """The items whose verdicts differ (both scored): every third but where strict gave 5."""
    return {i for i in range(N) if i % 3 == 0 and strict(i) < 5 and i != 7}


class Tables(HTMLParser):
    """Every table's cells by table id, and the data-idx of the rows the script drew."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.drawn: list[int] = []
        self._id: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._id = a.get("id") or "?"
            self.tables[self._id] = []
        elif tag == "tr" and self._id is not None:
            self.tables[self._id].append([])
            if a.get("data-idx") is not None:
                self.drawn.append(int(a["data-idx"] or -1))
        elif tag in ("td", "th") and self._id is not None:
            self.tables[self._id][-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._id = None

    def handle_data(self, data: str) -> None:
        if self._id is not None and self.tables[self._id] and self.tables[self._id][-1]:
            self.tables[self._id][-1][-1] += data


def parsed(html: str) -> Tables:
    t = Tables()
    t.feed(html)
    return t


def test_the_page_lists_the_runs_and_compares_two(runs: list[jurist.Run], tmp_path: Path) -> None:
    page = write_side_by_side(runs, tmp_path / "sbs.html", on="id")
    html = page.read_text()
    t = parsed(html)
    listed = t.tables["runs"][1:]
    assert [row[2] for row in listed] == ["strict judge", "lenient judge", "third judge"]
    for row, r in zip(listed, runs, strict=True):
        s = r.summary()
        assert row[4:8] == [str(s.items), str(s.scored), str(s.failed), f"{s.mean_score:.4f}"]
    figures = {row[0]: row[1] for row in t.tables["comparison"]}
    same = N - len(differing()) - 1
    assert figures["items in both"] == str(N)
    assert figures["the same verdict"] == f"{same} ({same / N:.1%})"
    assert figures["different verdicts"] == str(len(differing()))
    assert figures["failed in one run only"] == "1"
    grid = t.tables["verdict-table"]
    assert grid[0][1:] == ["1", "2", "3", "4", "5", "(failed)"]
    cells = {row[0]: row[1:] for row in grid[1:]}
    # strict's 2s: items 1, 6, 11, 16, 21, 26; lenient says 3 on 6 and 21, else 2
    assert cells["2"] == ["0", "4", "2", "0", "0", "0"]
    assert "<script>document.title" not in html and "&lt;script&gt;document.title" in html


def test_runs_aligned_by_row_and_bad_choices_named(runs: list[jurist.Run], tmp_path: Path) -> None:
    # by row, strict's item i meets lenient's item N-1-i: the same verdict only by chance
    html = write_side_by_side(runs, tmp_path / "rows.html", show=(0, 2)).read_text()
    figures = {row[0]: row[1] for row in parsed(html).tables["comparison"]}
    assert figures["the same verdict"] == f"{N} (100.0%)"  # strict and third judge alike
    with pytest.raises(ConfigError, match="show two different runs"):
        write_side_by_side(runs, tmp_path / "x.html", show=(1, 1))
    with pytest.raises(jurist.errors.DataError, match="no single value in 'nothing'"):
        write_side_by_side(runs, tmp_path / "x.html", on="nothing")


def test_report_command_with_several_runs(
    runs: list[jurist.Run], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = [str(r.run_dir) for r in runs]
    out = tmp_path / "cmd.html"
    code, text = run(["report", *dirs, "--on", "id", "--show", "2,1", "--out", str(out)], capsys)
    assert code == EXIT_OK, text
    figures = {row[0]: row[1] for row in parsed(out.read_text()).tables["comparison"]}
    assert figures["different verdicts"] == str(len(differing()))
    code, text = run(["report", *dirs, "--labels", "x"], capsys)
    assert code == EXIT_USAGE and "--labels is for the report of one run" in text
    code, text = run(["report", *dirs, "--show", "1"], capsys)
    assert code == EXIT_USAGE and "--show takes two run numbers" in text


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Browser:
    """The process's one headless Chromium; each page still loads fresh, in its own context."""
    return shared_browser(tmp_path_factory)


@pytest.mark.slow
def test_side_by_side_in_chromium_filters_searches_and_opens(
    runs: list[jurist.Run], browser: Browser, tmp_path: Path
) -> None:
    page = write_side_by_side(runs, tmp_path / "sbs.html", on="id")
    # the view of differing items: its DOM, and its screenshot, looked at by a person
    png = shots_dir(tmp_path) / "side-by-side.png"
    size = (1200, 2400)  # the whole view: the page scrolls to the items otherwise
    differ = browser.load(page.as_uri() + "#agree=disagree", png=png, size=size)
    assert set(parsed(differ.dom).drawn) == differing()  # strict's idx is its question
    assert non_white_share(png) > 0.02
    same = parsed(browser.load(page.as_uri() + "#agree=agree").dom)
    assert len(same.drawn) == N - len(differing()) - 1
    # run B's judge answer is searchable: "unreadable lenient" only in item 7's
    found = parsed(browser.load(page.as_uri() + "#q=unreadable%20lenient").dom)
    assert found.drawn == [7]
    item = browser.load(page.as_uri() + "#item=3").dom
    assert "The judgment of #2 lenient" in item and "lenient-reason 5" in item
    assert "strict-reason 4" in item and "pwned</title>" not in item
