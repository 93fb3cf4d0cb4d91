"""The run store: one SQLite file per run folder, one row per finished item.

Every finished judgment is committed as it completes. The file runs in WAL mode with
``synchronous=NORMAL``: a commit survives the process being killed (even by SIGKILL), and
costs tens of microseconds since there is no fsync per commit. ``idx`` (the item's
position in the dataset) is the primary key and rows are inserted with ``OR IGNORE``, so
an item can never have two results.

Reading is streamed (:meth:`RunStore.rows` walks a cursor in ``idx`` order), so exports
and reports of a 100,000-item run hold one row at a time.

>>> import tempfile, pathlib
>>> from jurist.types import Usage
>>> store = RunStore(pathlib.Path(tempfile.mkdtemp()) / "run.sqlite")
>>> store.write(StoredResult(idx=0, item_hash="h", item={"q": 1}, score=1.0, error=None,
...                          outcome={"score": 1.0}, usage=Usage(calls=1), cost=0.0))
True
>>> store.count(), store.done_bitmap().has(0), store.done_bitmap().has(1)
(1, True, False)
>>> store.close()
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from jurist.types import Usage

__all__ = ["Bitmap", "RunStore", "StoredResult", "Totals"]

_SCHEMA = """
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
    finished REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

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


class Bitmap:
    """A set of small non-negative integers in one bit each (the finished indices)."""

    def __init__(self) -> None:
        self._bits = bytearray()
        self.count = 0

    def add(self, i: int) -> None:
        byte = i >> 3
        if byte >= len(self._bits):
            self._bits.extend(b"\0" * (byte + 1 - len(self._bits) + 1024))
        mask = 1 << (i & 7)
        if not self._bits[byte] & mask:
            self._bits[byte] |= mask
            self.count += 1

    def has(self, i: int) -> bool:
        byte = i >> 3
        return byte < len(self._bits) and bool(self._bits[byte] & (1 << (i & 7)))


class RunStore:
    """The SQLite file of one run (made on first use)."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        if readonly:
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        self._db.execute("PRAGMA busy_timeout=10000")

    def close(self) -> None:
        self._db.close()

    # -- writing -----------------------------------------------------------------------

    def write(self, r: StoredResult) -> bool:
        """Commit one result; ``False`` if the item already had one (nothing changes)."""
        u = r.usage
        cur = self._db.execute(
            "INSERT OR IGNORE INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                r.idx,
                r.item_hash,
                dumps(r.item),
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
            ),
        )
        return cur.rowcount == 1

    def clear(self) -> None:
        """Delete every result and meta entry (a run started over)."""
        self._db.execute("DELETE FROM results")
        self._db.execute("DELETE FROM meta")

    def set_meta(self, key: str, value: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, dumps(value).decode()))

    def get_meta(self, key: str) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else orjson.loads(row[0])

    # -- reading -----------------------------------------------------------------------

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def done_bitmap(self) -> Bitmap:
        bits = Bitmap()
        for (idx,) in self._db.execute("SELECT idx FROM results"):
            bits.add(int(idx))
        return bits

    def hash_of(self, idx: int) -> str | None:
        row = self._db.execute("SELECT item_hash FROM results WHERE idx = ?", (idx,)).fetchone()
        return None if row is None else str(row[0])

    def rows(
        self, *, failed_only: bool = False, limit: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Each result as a dict (``idx``, ``item``, ``outcome``, ``score``, ``error``,
        ``usage``, ``cost``...), in dataset order, read one at a time."""
        sql = (
            "SELECT idx, item, score, error, outcome, prompt_tokens, completion_tokens, "
            "cached_tokens, calls, cache_hits, cost, cost_estimated, latency FROM results"
        )
        if failed_only:
            sql += " WHERE score IS NULL"
        sql += " ORDER BY idx"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        for row in self._db.execute(sql):
            yield {
                "idx": row[0],
                "item": orjson.loads(row[1]),
                "score": row[2],
                "error": row[3],
                "outcome": orjson.loads(row[4]),
                "usage": Usage(
                    prompt_tokens=row[5],
                    completion_tokens=row[6],
                    cached_tokens=row[7],
                    calls=row[8],
                    cache_hits=row[9],
                ),
                "cost": row[10],
                "cost_estimated": bool(row[11]),
                "latency": row[12],
            }

    def scores(self) -> Iterator[float | None]:
        for (score,) in self._db.execute("SELECT score FROM results ORDER BY idx"):
            yield score

    def error_counts(self) -> dict[str, int]:
        """Failures by category (the text before the first colon of ``error``)."""
        counts: dict[str, int] = {}
        for (error,) in self._db.execute("SELECT error FROM results WHERE score IS NULL"):
            category = (error or "error").split(":", 1)[0]
            counts[category] = counts.get(category, 0) + 1
        return counts

    def totals(self) -> Totals:
        row = self._db.execute(
            "SELECT COUNT(*), COUNT(score), AVG(score), TOTAL(prompt_tokens), "
            "TOTAL(completion_tokens), TOTAL(cached_tokens), TOTAL(calls), TOTAL(cache_hits), "
            "TOTAL(cost), SUM(cost IS NULL), TOTAL(cost_estimated) FROM results"
        ).fetchone()
        items = int(row[0])
        unknown = int(row[9] or 0)
        return Totals(
            items=items,
            scored=int(row[1]),
            mean_score=row[2],
            usage=Usage(
                prompt_tokens=int(row[3]),
                completion_tokens=int(row[4]),
                cached_tokens=int(row[5]),
                calls=int(row[6]),
                cache_hits=int(row[7]),
            ),
            cost=None if items and unknown == items else float(row[8]),
            cost_unknown=unknown,
            cost_estimated=int(row[10]),
        )
