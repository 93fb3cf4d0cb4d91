"""What the run store writes and where: the SQLite schema, the statements, one result's row.

:class:`~jurist.runs._store.RunStore` runs these; they live here so that the store holds
the writing and reading and this module the layout (the columns every store has had, and
those added later, which an older store gets when it is opened for writing).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from jurist._sqlite import connect, is_damaged
from jurist.errors import ConfigError, JuristError, OutputError
from jurist.runs._repeat_store import LATER_REPEAT_COLUMNS
from jurist.runs._store_images import externalise
from jurist.runs._usage_columns import SPENT
from jurist.types import Usage

__all__ = [
    "FORMAT",
    "INSERT",
    "INSERT_NEW",
    "KEEP_REFUSED",
    "KEEP_REPLACED",
    "LATER_COLUMNS",
    "REPLACE",
    "SCHEMA",
    "StoredResult",
    "Totals",
    "columns_of",
    "dumps",
    "is_jurist_store",
    "row_of",
    "schema_problem",
    "store_error",
]

FORMAT = "jurist-run/1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    idx INTEGER PRIMARY KEY,
    item_hash TEXT NOT NULL,
    item BLOB NOT NULL,
    score REAL,
    error TEXT,
    outcome BLOB NOT NULL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    cache_hits INTEGER NOT NULL DEFAULT 0,
    cost REAL,
    cost_estimated INTEGER NOT NULL DEFAULT 0,
    latency REAL NOT NULL DEFAULT 0,
    finished REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_uncached REAL,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS superseded (
    idx INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    cache_hits INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    cost REAL,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0
);
"""

# The columns every jurist store has had (``attempts`` and ``reasoning_tokens`` came later
# and are added when missing).
_COLUMNS = (
    "idx",
    "item_hash",
    "item",
    "score",
    "error",
    "outcome",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "calls",
    "cache_hits",
    "cost",
    "cost_estimated",
    "latency",
    "finished",
)
# ``cache_write_tokens``, ``cost_uncached`` (the cost with no prompt caching) and
# ``reasoning_tokens`` came later still, and are added when missing, as ``attempts`` is
_WRITTEN = (*_COLUMNS, "attempts", "cache_write_tokens", "cost_uncached", "reasoning_tokens")
INSERT = (
    f"INSERT INTO results ({', '.join(_WRITTEN)}) VALUES ({', '.join('?' * len(_WRITTEN))}) "
    "ON CONFLICT(idx) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _WRITTEN if c != "idx")
    + " WHERE results.score IS NULL"
)

# a result for an item without a row (see :meth:`RunStore.write`'s ``fresh``)
INSERT_NEW = (
    f"INSERT INTO results ({', '.join(_WRITTEN)}) VALUES ({', '.join('?' * len(_WRITTEN))})"
)
REPLACE = (
    f"INSERT OR REPLACE INTO results ({', '.join(_WRITTEN)}) "
    f"VALUES ({', '.join('?' * len(_WRITTEN))})"
)
KEEP_REPLACED = (
    f"INSERT INTO superseded (idx, {', '.join(SPENT)}) "
    f"SELECT idx, {', '.join(SPENT)} FROM results WHERE idx = ? AND score IS NULL"
)
KEEP_REFUSED = (
    f"INSERT INTO superseded (idx, {', '.join(SPENT)}) VALUES ({', '.join('?' * (len(SPENT) + 1))})"
)

_COUNT = "INTEGER NOT NULL DEFAULT 0"
# (table, column, type) of the columns added after the first stores were written
LATER_COLUMNS = [
    ("results", "attempts", _COUNT),
    ("results", "cache_write_tokens", _COUNT),
    ("results", "cost_uncached", "REAL"),
    ("results", "reasoning_tokens", _COUNT),
    ("superseded", "reasoning_tokens", _COUNT),
    *(("repeats", column, _COUNT) for column in LATER_REPEAT_COLUMNS),
]


def columns_of(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


_DUMP = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def dumps(value: Any) -> bytes:
    """JSON bytes for the store (non-JSON values shown with ``str``)."""
    return orjson.dumps(value, option=_DUMP, default=str)


@dataclass(frozen=True)
class StoredResult:
    """One finished item as the store keeps it."""

    idx: int
    item_hash: str
    item: dict[str, Any]
    score: float | None
    error: str | None
    outcome: dict[str, Any]
    usage: Usage
    cost: float | None
    cost_estimated: bool = False
    latency: float = 0.0
    cost_uncached: float | None = None
    """What the item would have cost with no provider prompt caching (``None``: unknown)."""


@dataclass(frozen=True)
class Totals:
    """Sums over a run's rows."""

    items: int
    scored: int
    usage: Usage
    cost: float | None
    cost_unknown: int
    cost_estimated: int
    mean_score: float | None
    cost_known: float = 0.0
    superseded: int = 0
    """Results replaced by a later session (a failure judged again) or refused (the item
    had a score); what they spent is in ``usage`` and ``cost``."""
    cost_uncached: float | None = None
    """``cost`` as it would have been with no provider prompt caching (what superseded
    results spent counts as it was); ``None`` when a priced result's is unknown (a store
    written before it was kept, a run with repeats)."""


def schema_problem(db: sqlite3.Connection) -> str | None:
    """Why an open SQLite file is not a jurist run store (``None`` when it is one)."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return None  # an empty database: jurist makes its tables
    if not {"results", "meta"} <= tables:
        return f"its tables are {sorted(tables)}, not jurist's results and meta"
    columns = {r[1] for r in db.execute("PRAGMA table_info(results)")}
    missing = [c for c in _COLUMNS if c not in columns]
    if missing:
        return f"its results table has no {', '.join(missing)} column"
    row = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    if row is not None and orjson.loads(row[0]) != FORMAT:
        return f"its format is {orjson.loads(row[0])!r}, not {FORMAT!r}"
    return None


def is_jurist_store(path: Path) -> str | None:
    """``None`` when ``path`` is a jurist run store (or an empty file), else why it is not.

    The file is opened read-only and nothing is written.
    """
    if path.stat().st_size == 0:
        return None
    try:
        db = connect(path, readonly=True)
        try:
            return schema_problem(db)
        finally:
            db.close()
    except sqlite3.DatabaseError as e:
        return f"it cannot be read as SQLite ({e})"


def store_error(path: Path, doing: str, e: sqlite3.Error) -> JuristError:
    """The error for ``e``, met while ``doing`` (``open``, ``read``...) the run store at
    ``path``: a damaged file names itself (a usage error: restore it, or start the run
    over); a full disk or an I/O error says to free space and resume; anything else names
    the file.

    >>> print(store_error(Path("r/run.sqlite"), "read", sqlite3.DatabaseError(
    ...     "database disk image is malformed")))
    r/run.sqlite: the run store is damaged (database disk image is malformed): ...
    """
    text = str(e)
    if is_damaged(e):  # before "disk", which "database disk image is malformed" holds too
        return ConfigError(
            f"{path}: the run store is damaged ({text}): it is not a readable jurist run "
            "store. Restore the file from a copy, or judge the data again into a new "
            "folder (--out)"
        )
    if "full" in text or "disk" in text or "I/O" in text:
        return OutputError(
            f"{path}: cannot {doing} the run store: {text} "
            "(free some space, then run again to resume)"
        )
    return OutputError(f"{path}: cannot {doing} the run store: {text}")


def row_of(r: StoredResult) -> tuple[tuple[Any, ...], dict[str, tuple[str, bytes]]]:
    """The ``results`` row of ``r`` (its item with inline images replaced by references)
    and the images to keep."""
    u = r.usage
    item, images = externalise(r.item)
    values = (
        r.idx,
        r.item_hash,
        dumps(item),
        r.score,
        r.error,
        dumps(r.outcome),
        u.prompt_tokens,
        u.completion_tokens,
        u.cached_tokens,
        u.calls,
        u.cache_hits,
        r.cost,
        int(r.cost_estimated),
        r.latency,
        time.time(),
        u.attempts,
        u.cache_write_tokens,
        r.cost_uncached,
        u.reasoning_tokens,
    )
    return values, images
