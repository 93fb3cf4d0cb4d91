"""Running the CLI in-process for the engine tests: its exit code and what it printed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from jurist.cli import main


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``jurist ARGS``: the exit code and stdout + stderr with whitespace runs collapsed
    (rich wraps lines at the terminal width)."""
    code = main(args)
    out, err = capsys.readouterr()
    return code, " ".join((out + err).split())


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` as a JSONL file at ``path``."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def stored(store: Path) -> int:
    """Rows in a run store, read while another process may write it (0 before it exists
    or has its table)."""
    if not store.exists():
        return 0
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()
