"""The report as a person sees it, in headless Chromium screenshots (issue 21): every chart
has a title and both axes with their titles, a count of one is visible, and a pairwise
report names both systems. The pixel checks read the screenshots; the PNGs stay in the
test's folder (``JURIST_SCREENSHOTS=DIR`` copies them there, to look at)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.cli import main
from jurist.runs.report._charts import bars, scatter
from tests._cdp import Browser, shared_browser
from tests._fault_server import Fault, FaultServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Browser:
    """The process's one headless Chromium; each page still loads fresh, in its own context."""
    return shared_browser(tmp_path_factory)


def screenshot(browser: Browser, page: Path, png: Path, size: tuple[int, int]) -> Any:
    """``page`` drawn by headless Chromium at ``size``; the screenshot as a PIL image."""
    image = pytest.importorskip("PIL.Image")
    browser.load(page.as_uri(), png=png, size=size)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    keep = os.environ.get("JURIST_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(keep) / png.name)
    return image.open(png).convert("RGB")


def dark(pixel: tuple[int, int, int], limit: int = 110) -> bool:
    return max(pixel) < limit


def count(img: Any, box: tuple[int, int, int, int], test: Any = dark) -> int:
    """How many pixels in ``box`` (left, top, right, bottom) pass ``test``."""
    left, top, right, bottom = box
    return sum(test(img.getpixel((x, y))) for x in range(left, right) for y in range(top, bottom))


def chart_page(svg: str, folder: Path, name: str) -> Path:
    """A page with the chart alone at its top-left corner, nothing else drawn."""
    page = folder / f"{name}.html"
    page.write_text(
        '<!DOCTYPE html><html><body style="margin:0;background:#fff">' + svg + "</body></html>"
    )
    return page


def svg_size(svg: str) -> tuple[int, int]:
    found = re.search(r'width="(\d+)" height="(\d+)"', svg)
    assert found is not None
    return int(found.group(1)), int(found.group(2))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("charts")
    said = [f"Score: {v}" for v in (4, 4, 5, 4, 2, 4, 5, 4, 4, 3)]
    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=said, cycle=True), "likert")
    items = [{"prompt": f"q{i}", "response": f"a{i}", "stars": 1 + i % 5} for i in range(60)]
    run = jurist.evaluate(items, judge, run_dir=folder / "run")
    return run.report(labels="stars").read_text()


def chart_of(html: str, chart_id: str) -> str:
    found = re.search(rf'<svg [^>]*id="{chart_id}".*?</svg>', html, re.S)
    assert found is not None, chart_id
    return found.group(0)


@pytest.mark.parametrize(
    ("chart_id", "title", "x_title", "y_title"),
    [
        ("scores", "Scores of the 60 scored item(s)", "score (0 = worst, 1 = best)", "items"),
        ("verdicts", "Verdicts", "verdict, in the scale's order", "items"),
        ("agreement-scatter", "Judge verdict against stars", "stars", "judge verdict"),
    ],
)
def test_every_chart_shows_its_title_and_both_axes(
    report: str,
    browser: Browser,
    tmp_path: Path,
    chart_id: str,
    title: str,
    x_title: str,
    y_title: str,
) -> None:
    svg = chart_of(report, chart_id)
    # the texts are in the chart ...
    assert f">{title}</text>" in svg.replace("&#x27;", "'")
    assert f">{x_title}</text>" in svg.replace("&#x27;", "'")
    assert f">{y_title}</text>" in svg
    # ... and drawn where a reader looks for them: the screenshot has dark text in the
    # title band, under the horizontal axis and left of the vertical one, and the axes
    # themselves are drawn as lines
    width, height = svg_size(svg)
    page = chart_page(svg, tmp_path, chart_id)
    img = screenshot(browser, page, tmp_path / f"{chart_id}.png", (width, height))
    assert count(img, (width // 4, 0, 3 * width // 4, 22)) > 40, "no title drawn"
    assert count(img, (width // 4, height - 18, 3 * width // 4, height)) > 20, "no x title"
    assert count(img, (0, 40, 18, height - 40)) > 20, "no y title"
    grey = re.search(r'<line[^>]*x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="\2"', svg)
    assert grey is not None
    x1, y, x2 = float(grey.group(1)), round(float(grey.group(2))), float(grey.group(3))
    row = count(img, (int(x1), y - 1, int(x2), y + 2), lambda p: max(p) < 215)
    assert row > (x2 - x1) * 0.8, "the horizontal axis is not drawn"


def test_a_single_count_is_visible(browser: Browser, tmp_path: Path) -> None:
    svg = bars(["rare", "common"], [1, 400], title="one of 401", x_title="kind")
    width, height = svg_size(svg)
    page = chart_page(svg, tmp_path, "rare")
    img = screenshot(browser, page, tmp_path / "rare.png", (width, height))
    rect = re.search(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', svg)
    assert rect is not None
    x, y, w, h = (float(v) for v in rect.groups())
    assert h >= 3
    blue = count(img, (int(x), int(y), int(x + w), int(y + h)), lambda p: p[2] > 150 > p[0])
    assert blue >= 0.5 * w * h, "the bar of a count of one is not drawn"
    # a single point of a scatter plot is a dot one sees, not a speck
    svg = scatter([1.0], [1.0], x_label="x", y_label="y", x_range=(0, 2), y_range=(0, 2))
    width, height = svg_size(svg)
    img = screenshot(
        browser, chart_page(svg, tmp_path, "dot"), tmp_path / "dot.png", (width, height)
    )
    dot = re.search(r'<circle cx="(\d+)" cy="(\d+)" r="([\d.]+)"', svg)
    assert dot is not None and float(dot.group(3)) >= 4
    cx, cy = int(dot.group(1)), int(dot.group(2))
    reddish = count(img, (cx - 5, cy - 5, cx + 6, cy + 6), lambda p: p[0] > p[2] + 40)
    assert reddish >= 30


def test_pairwise_report_names_both_systems(
    browser: Browser,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = [{"prompt": f"q{i}", "response": f"answer {i}"} for i in range(6)]
    a = tmp_path / "gpt-x.jsonl"
    b = tmp_path / "llama-y.jsonl"
    a.write_text("".join(json.dumps({**r, "response": r["response"] * 3}) + "\n" for r in rows))
    b.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "cmp"
    with FaultServer([Fault("ok", text="[[A]]"), Fault("ok", text="[[B]]")] * 6) as server:
        served = ["--model", "openai:judge", "--base-url", server.url, "--api-key", "x"]
        args = ["compare", str(a), str(b), *served, "--json-mode", "none", "--no-cache"]
        assert main([*args, "--no-progress", "--out", str(out)]) == 0
    capsys.readouterr()
    report = out / "report.html"
    img = screenshot(browser, report, tmp_path / "pairwise.png", (1100, 900))
    dom = browser.load(report.as_uri()).dom  # a fresh load, as --dump-dom makes
    assert '<td class="text">A = gpt-x, B = llama-y</td>' in dom  # the summary table
    assert ">Pairwise: A = gpt-x, B = llama-y</h2>" in dom
    assert "A shown first: " in dom and "B shown first: " in dom  # the judge response column
    # the summary table is drawn (dark text on the page's top half)
    assert count(img, (0, 0, 1100, 450)) > 2000


def test_a_whitespace_answer_shows_a_marker_not_a_tall_blank(
    browser: Browser,
    tmp_path: Path,
) -> None:
    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=["Correct"], cycle=True))
    items = [{"prompt": "q", "response": " \n\n\n\n\n " * 20}, {"prompt": "r", "response": "ok"}]
    report = jurist.evaluate(items, judge, run_dir=tmp_path / "run").report()
    assert "response: [blank: 140 whitespace characters]" in report.read_text()  # no script
    dom = browser.load(report.as_uri() + "#item=1").dom
    rows = dom.split('id="sample-table"', 1)[1]
    assert 'data-idx="0"' in rows  # the table the script drew
    assert "response: [blank: 140 whitespace characters]" in rows
