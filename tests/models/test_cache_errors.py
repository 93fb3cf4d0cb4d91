"""The SQLite cache on a full disk or an unwritable location.

Opening fails up front with one line naming the file (:class:`CacheError`); once open, a
failed write ("database or disk is full") keeps the answer and is warned about once.
A full disk is simulated without root: SQLite's ``PRAGMA max_page_count`` caps the file
mid-run, and a child process with a file-size limit of 0 bytes (``RLIMIT_FSIZE``) gets
a disk that accepts nothing.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

import jurist
from jurist.cli import EXIT_OK, main
from jurist.errors import CacheError, JuristError
from jurist.models import CachedModel, MockModel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "qa.jsonl"
ITEMS = [{"prompt": f"question {i}", "response": "x"} for i in range(8)]


def test_unwritable_location_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    path = blocker / "jurist" / "cache.sqlite"
    model = CachedModel(MockModel(), path)
    with pytest.raises(CacheError) as info:
        model.open()
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    assert "cannot open the jurist cache" in message and "--no-cache" in message


def test_folder_in_place_of_the_file_fails_up_front_in_prepare(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.mkdir()
    model = CachedModel(MockModel(), path)
    with pytest.raises(CacheError, match="unable to open database file"):
        jurist._sync.run_sync(model.prepare())


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"this is not sqlite, just text " * 100)
    with pytest.raises(CacheError, match="not a database"):
        CachedModel(MockModel(), path).open()


_FULL_DISK = r"""
import resource, signal, sys
from jurist.errors import CacheError
from jurist.models import CachedModel, MockModel

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # no file may grow: a full disk
try:
    CachedModel(MockModel(), sys.argv[1]).open()
except CacheError as error:
    print(type(error).__name__, error)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_full_disk_at_open_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    out = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.startswith("CacheError cannot open the jurist cache " + str(path)), out
    assert "disk I/O error" in out or "database or disk is full" in out


def test_disk_full_mid_run_keeps_every_judgment(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    long_answer = "Correct. " + "x" * 20_000  # each entry needs pages of its own
    inner = MockModel(outputs=[long_answer], cycle=True)
    model = CachedModel(inner, tmp_path / "cache.sqlite")
    model.open()
    assert model._conn is not None
    (pages,) = model._conn.execute("PRAGMA page_count").fetchone()
    model._conn.execute(f"PRAGMA max_page_count = {pages + 8}")  # room for one entry or so
    judge = jurist.LLMJudge(model)
    with caplog.at_level(logging.WARNING, logger="jurist.models"):
        results = judge.judge_sync(ITEMS)
    assert results.scores == [1.0] * len(ITEMS)
    assert model.write_errors >= len(ITEMS) - 2
    # before: one warning per failed write, a log flooded on a long run
    warnings = [r for r in caplog.records if "could not store" in r.getMessage()]
    assert len(warnings) == 1
    assert str(tmp_path / "cache.sqlite") in warnings[0].getMessage()
    assert "database or disk is full" in warnings[0].getMessage()
    model.close()


def test_cli_prints_one_line_for_an_unopenable_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    cache = blocker / "cache.sqlite"
    args = ["judge", str(EXAMPLES), "--model", "mock:judge", "--out", str(tmp_path / "run")]
    code = main([*args, "--no-progress", "--cache-path", str(cache)])
    _, err = capsys.readouterr()
    assert code != EXIT_OK
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if str(cache) in line]
    assert len(lines) == 1 and "cannot open the jurist cache" in lines[0]


def test_cache_error_is_a_jurist_error() -> None:
    assert issubclass(CacheError, JuristError) and CacheError.category == "cache"
