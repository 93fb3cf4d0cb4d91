"""The HTML report: it renders in headless Chromium, and model text injects nothing."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

import jurist
from jurist.cli import EXIT_OK, main
from tests._cdp import shared_browser

SCRIPT = "<script>document.title='pwned'</script>"
IMG = "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(name for name, _ in attrs)


def make_run(folder: Path) -> jurist.Run:
    outputs = [f"Correct {SCRIPT}", f"{IMG} no verdict here", "Incorrect", f"Correct {IMG}"]
    judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=outputs))
    items = [
        {"prompt": f"What is {i}? {SCRIPT}", "response": f"{IMG} {i}", "human": label}
        for i, label in enumerate(["Correct", "Incorrect", "Incorrect", "Correct"])
    ]
    return jurist.evaluate(items, judge, run_dir=folder)


def test_report_escapes_everything(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    html = run.report(labels="human").read_text()
    parser = Tags()
    parser.feed(html)
    # the page's own three scripts (two JSON data blocks, one script allowed by its hash)
    assert parser.tags.count("script") == 3 and "img" not in parser.tags
    assert "onerror" not in parser.attrs
    assert SCRIPT not in html and "<img src=x" not in html
    assert "&lt;script&gt;document.title=" in html and "&lt;img src=x onerror=" in html
    for section in ('id="summary"', 'id="failure-table"', 'id="agreement"', "<svg"):
        assert section in html
    assert "parse:" in html  # the failure's reason


@pytest.mark.slow
def test_report_renders_in_headless_chromium(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    report = make_run(tmp_path / "run").report(labels="human")
    dom = shared_browser(tmp_path_factory).load(report.as_uri()).dom  # the DOM its script drew
    assert '<h1 id="title">jurist report:' in dom  # it rendered our page
    assert "<title>jurist report:" in dom and "pwned</title>" not in dom
    assert "data-pwned" not in dom.split("<body", 1)[1].split(">", 1)[0]
    parser = Tags()
    parser.feed(dom)
    assert parser.tags.count("script") == 3 and "img" not in parser.tags
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom
    assert 'id="sample-table"' in dom and "<svg" in dom


def test_report_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(tmp_path / "run")
    assert main(["report", str(tmp_path / "run"), "--labels", "human"]) == EXIT_OK
    assert (tmp_path / "run" / "report.html").exists()
    assert "report.html" in capsys.readouterr().out.replace("\n", "")
