"""The bench page as a person sees it: headless Chromium draws it (no script, nothing from
outside), with the ranked table, the front plot and the cascades; the tests skip without
Chromium."""

from __future__ import annotations

from pathlib import Path

import jurist
from jurist.benchmark import front_plot
from tests._chromium import non_white_share, screenshot, shots_dir
from tests.bench.test_cli_bench import _rows


def test_the_front_joins_the_setups_no_other_beats() -> None:
    svg = front_plot(
        [("cheap", 0.0, 0.6), ("dear", 2.0, 0.8), ("worse", 3.0, 0.7), ("same", 0.0, 0.5)],
        x_label="USD per item",
    )
    front = svg.split('class="front" points="')[1].split('"')[0].split()
    assert len(front) == 2  # cheap, then dear; worse and same are beaten
    assert svg.count('#c0661a"><title>') == 2 and "worse 70.0" in svg


def test_the_page_in_chromium(tmp_path: Path) -> None:
    result = jurist.bench(
        {"pairs": _rows()},
        ["scores:rm", "strong=recorded:gpt"],
        out=tmp_path / "b",
        cascades=[("scores:rm", "strong")],
        cascade_splits=20,
        n_resamples=200,
    )
    page = Path(result.folder) / "bench.html"
    html = page.read_text()
    assert "<script" not in html and "http" not in html.replace("http-equiv", "")
    assert html.count("<svg") == 1 + 2  # the front plot, an interval bar per setup
    png = screenshot(page.as_uri(), shots_dir(tmp_path) / "bench.png", tmp_path / "profile")
    assert non_white_share(png) > 0.02  # text, tables and the plot were drawn
