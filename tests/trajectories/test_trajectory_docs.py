"""The examples of docs/trajectories.md and docs/grounded.md, executed: each page's
```python blocks run in one namespace, in a folder holding the recorded traces."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "tests" / "fixtures" / "traces"


@pytest.mark.parametrize("page", ["trajectories.md", "grounded.md"])
def test_page_examples_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for f in TRACES.iterdir():
        shutil.copy(f, tmp_path / f.name)
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, f"{page} has no python blocks"
    namespace: dict[str, object] = {"__name__": f"docs_{page[:-3]}"}
    for code in blocks:
        exec(compile(code, str(ROOT / "docs" / page), "exec"), namespace)
    if page == "trajectories.md":
        assert (tmp_path / "runs" / "flights" / "report.html").exists()


def test_the_rubric_in_the_page_is_the_fixture() -> None:
    text = (ROOT / "docs" / "trajectories.md").read_text(encoding="utf-8")
    shown = re.search(r"```yaml\n(guidelines:.*?)```", text, flags=re.S)
    assert shown is not None
    import yaml

    page = yaml.safe_load(shown.group(1))
    fixture = yaml.safe_load((TRACES / "flight_rubric.yaml").read_text(encoding="utf-8"))
    assert page == fixture
