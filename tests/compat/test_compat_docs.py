"""The framework pages' examples, executed: each ```python block of docs/unitxt.md,
docs/inspect.md and docs/deepeval.md runs in one namespace per page (skipped when the
page's framework is not installed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = {"unitxt.md": "unitxt", "inspect.md": "inspect_ai", "deepeval.md": "deepeval"}


def blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_examples_run(page: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip(PAGES[page], reason=f"{PAGES[page]} is not installed")
    monkeypatch.chdir(tmp_path)  # frameworks write run files under the working folder
    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    found = blocks(page)
    assert found, f"{page} has no python blocks"
    namespace: dict[str, object] = {"__name__": f"docs_{page[:-3]}"}
    for code in found:
        exec(compile(code, str(DOCS / page), "exec"), namespace)
