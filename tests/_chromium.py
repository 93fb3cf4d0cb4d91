"""Headless Chromium for the report tests: the DOM a page's script drew (``--dump-dom``)
and a screenshot (``--screenshot``), each in a fresh profile. Tests skip without Chromium.

Screenshots go to ``$JURIST_SCREENSHOTS`` when it names a folder (to look at them:
``JURIST_SCREENSHOTS=benchmarks/results/screenshots pytest tests/runs/test_leaderboard.py``),
else to the test's temporary folder."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["HEADLESS", "chromium", "dump_dom", "non_white_share", "screenshot", "shots_dir"]

HEADLESS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
"""The flags every test browser starts with (``tests/_cdp.py`` too)."""


def chromium() -> str:
    """Chromium's path, or skip the test."""
    found = next(
        (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))),
        None,
    )
    if found is None:
        pytest.skip("no chromium on PATH (CI installs Debian's chromium)")
    return found


def _run(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [
            chromium(),
            *HEADLESS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=3000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def dump_dom(url: str, profile: Path) -> str:
    """The page's DOM after its script ran."""
    return _run(["--dump-dom", url], profile).stdout


def screenshot(url: str, out: Path, profile: Path, size: tuple[int, int] = (1200, 1500)) -> Path:
    """A PNG of the page's first ``size`` pixels."""
    _run([f"--screenshot={out}", f"--window-size={size[0]},{size[1]}", url], profile)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{out} is not a PNG"
    return out


def non_white_share(png: Path) -> float:
    """The share of pixels that are not white (a blank page: 0), or skip without Pillow."""
    image_module = pytest.importorskip("PIL.Image")
    with image_module.open(png) as image:
        gray = image.convert("L")
        histogram = gray.histogram()
    return float(1 - sum(histogram[250:]) / sum(histogram))


def shots_dir(tmp_path: Path) -> Path:
    """Where screenshots go: ``$JURIST_SCREENSHOTS`` (made if missing), else ``tmp_path``."""
    chosen = os.environ.get("JURIST_SCREENSHOTS")
    if not chosen:
        return tmp_path
    folder = Path(chosen)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
