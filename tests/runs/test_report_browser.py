"""The report's item browser in headless Chromium: the filters, the search, the pages and
the item view, each driven through the address (``report.html#status=failed``), the way a
linked view opens. The page's script renders the rows; its DOM after the load (what
``--dump-dom`` prints) shows what it drew, in one Chromium per module."""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest

import jurist
from jurist.types import Request
from tests._cdp import Browser, shared_browser

pytestmark = pytest.mark.slow

SCRIPT = "<script>document.title='pwned'</script>"
N = 120


def verdict_of(i: int) -> int | None:
    """The judge's 1-5 verdict on item i (None: an unparseable answer)."""
    return None if i % 25 == 24 else 1 + (i * 3) % 5


def label_of(i: int) -> int:
    return 1 + i % 5


def judge_text(request: Request) -> str:
    match = re.search(r"Question (\d+)", request.messages[-1].content)
    assert match is not None
    verdict = verdict_of(int(match.group(1)))
    return f"no rating {SCRIPT}" if verdict is None else str(verdict)


class Drawn(HTMLParser):
    """The data-idx of every row the script drew, the body's attributes, the item view's
    headings and text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[int] = []
        self.body: dict[str, str | None] = {}
        self.tags: list[str] = []
        self.detail: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "body":
            self.body = a
        if tag == "tr" and a.get("data-idx") is not None:
            self.rows.append(int(a["data-idx"] or -1))
        if tag == "div" and a.get("id") == "item-detail" and "hidden" not in a:
            self._depth = 1
        elif self._depth and tag == "div":
            self._depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self._depth and tag == "div":
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.detail.append(data)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("browser")
    judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=judge_text), template="likert")
    items = [
        {
            "prompt": f"Question {i}: what is {i}? {SCRIPT if i == 7 else ''}",
            "response": f"the answer is {i}" + (" needle-word" if i == 42 else ""),
            "human": label_of(i),
        }
        for i in range(N)
    ]
    run = jurist.evaluate(items, judge, run_dir=folder / "run", progress=False)
    return run.report(labels="human")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Browser:
    """The process's one headless Chromium; each page still loads fresh, in its own context."""
    return shared_browser(tmp_path_factory)


def open_in_chromium(browser: Browser, report: Path, fragment: str) -> Drawn:
    dom = browser.load(report.as_uri() + fragment).dom
    drawn = Drawn()
    drawn.feed(dom)
    assert drawn.body.get("data-ready-ms") is not None, "the page's script did not run"
    assert drawn.tags.count("script") == 3 and "img" not in drawn.tags
    assert "pwned</title>" not in dom
    return drawn


def scored(i: int) -> float | None:
    v = verdict_of(i)
    return None if v is None else (v - 1) / 4


CASES: dict[str, tuple[str, Callable[[int], bool], int]] = {
    # name: (address fragment, which items match, page shown)
    "all, first page": ("", lambda i: True, 1),
    "failed": ("#status=failed", lambda i: verdict_of(i) is None, 1),
    "search": ("#q=NEEDLE-word", lambda i: i == 42, 1),
    "verdict and disagreement": (
        "#verdict=2&agree=disagree",
        lambda i: verdict_of(i) == 2 and label_of(i) != 2,
        1,
    ),
    "score range, page 2": (
        "#smin=0.25&smax=0.75&page=2",
        lambda i: (s := scored(i)) is not None and 0.25 <= s <= 0.75,
        2,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_filters_and_search_in_the_browser(report: Path, browser: Browser, case: str) -> None:
    fragment, wanted, page = CASES[case]
    drawn = open_in_chromium(browser, report, fragment)
    matching = [i for i in range(N) if wanted(i)]
    assert drawn.body.get("data-shown") == str(len(matching))
    assert drawn.rows == matching[(page - 1) * 50 : page * 50]
    assert drawn.rows, "the case should show some rows"


def test_an_opened_item_shows_prompt_answer_attempts_and_error(
    report: Path, browser: Browser
) -> None:
    drawn = open_in_chromium(browser, report, "#item=25")
    text = "\n".join(drawn.detail)
    assert "Item 25" in text
    assert "Rate how correct the proposed answer is" in text  # the system message
    assert "Question 24: what is 24?" in text and "the answer is 24" in text  # item message
    assert f"no rating {SCRIPT}" in text  # the raw answer, as text
    assert "parse: no number on the scale" in text  # the error
    assert "attempts" in text


def test_model_text_in_an_opened_item_stays_text(report: Path, browser: Browser) -> None:
    drawn = open_in_chromium(browser, report, "#item=8")
    text = "\n".join(drawn.detail)
    assert f"Question 7: what is 7? {SCRIPT}" in text  # rebuilt prompt, shown as text
    assert drawn.rows == list(range(50))  # the first page, with the item open above it


def test_expected_data(report: Path) -> None:
    """The cases above test something: each filter picks a proper, non-empty subset."""
    for fragment, wanted, _ in CASES.values():
        n = sum(wanted(i) for i in range(N))
        assert 0 < n <= N, fragment
    assert any(verdict_of(i) is None for i in range(N))
