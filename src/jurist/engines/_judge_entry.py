"""The catalog entry a run keeps of its judge, to rebuild it later (``ingest``).

A run judged through files (``BatchAPIOptions(file_out=...)``) finishes in another process
(:func:`jurist.engines.ingest`), which has no judge object: the run keeps the judge's
catalog entry (:func:`jurist.catalog.entry_of`: model specs and options, never a key) and
rebuilds the judge from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jurist._secrets import scrub
from jurist.errors import ConfigError

__all__ = ["judge_entry_of", "rebuild_judge"]


def judge_entry_of(judge: Any) -> dict[str, Any] | None:
    """The catalog entry that rebuilds ``judge`` (``None`` when it cannot be stored), with
    every credential scrubbed: it is written to the run store, and secrets never are (a
    rebuilt judge takes its keys from the environment, as a catalog entry does)."""
    from jurist.catalog._dump import entry_of

    try:
        entry = entry_of(judge)
    except (ConfigError, TypeError, AttributeError, ValueError):
        return None
    scrubbed: dict[str, Any] = scrub(entry)
    return scrubbed


def rebuild_judge(entry: dict[str, Any], where: Path) -> Any:
    """The judge ``entry`` describes (``where``: the file it came from, for errors)."""
    from jurist.catalog._resolve import build_entry
    from jurist.catalog._store import EntryFile

    return build_entry(EntryFile(name="run judge", path=where, source="run", data=entry, lines={}))
