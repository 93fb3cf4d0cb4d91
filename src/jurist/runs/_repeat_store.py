"""The repeats of a run with ``repeats=N``: one row per (item, repeat), in ``run.sqlite``.

A run with repeats keeps every repeat's judgment in the ``repeats`` table, keyed by
``(idx, repeat)``, committed as it finishes, so a killed run resumes with exactly the
missing (item, repeat) pairs. The ``results`` table keeps its one row per item: the item's
outcome over its repeats (:func:`jurist.trust.aggregate_repeats`: the mean score, the
mode's verdict, the repeats' figures), written once the item's repeats are done, with
the repeats' usage and cost summed. Like ``results``, a repeat with a score is never
replaced; a failed one is, and what it spent moves to ``superseded``. Only the repeats the
stopping rule counts stay in the table: an adaptive item whose re-judged repeat settles it
earlier than before sets its later stored repeats aside (:meth:`RepeatTable.set_aside`:
removed, what they spent moved to ``superseded``), so its row is the one a fresh run gives.

Older stores have no ``repeats`` table: opening one for writing adds it (empty), and a
store opened read-only without it reads as a run without repeats.

>>> import tempfile, pathlib
>>> from jurist.runs._store import RunStore
>>> from jurist.types import Usage
>>> store = RunStore(pathlib.Path(tempfile.mkdtemp()) / "run.sqlite")
>>> table = store.repeat_table()
>>> table.write(StoredRepeat(idx=0, repeat=1, score=1.0, error=None, outcome={"score": 1.0},
...                          usage=Usage(calls=1), cost=0.0))
True
>>> [r.repeat for r in table.of(0)], table.of(1)
([1], [])
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

from jurist._sqlite import transaction
from jurist.runs._usage_columns import COUNTS, SPENT
from jurist.types import Usage

__all__ = [
    "LATER_REPEAT_COLUMNS",
    "REPEATS_SCHEMA",
    "RepeatTable",
    "StoredRepeat",
    "pending_totals",
]

REPEATS_SCHEMA = """
CREATE TABLE IF NOT EXISTS repeats (
    idx INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    score REAL,
    error TEXT,
    outcome BLOB NOT NULL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    cache_hits INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    cost REAL,
    cost_estimated INTEGER NOT NULL DEFAULT 0,
    latency REAL NOT NULL DEFAULT 0,
    finished REAL NOT NULL,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (idx, repeat)
);
"""
LATER_REPEAT_COLUMNS = ("cache_write_tokens", "reasoning_tokens")
"""The columns of ``repeats`` added after its first stores were written (counts, 0 there)."""

_USAGE = (*COUNTS, *LATER_REPEAT_COLUMNS)
_COLUMNS = ("idx", "repeat", "score", "error", "outcome", *_USAGE, "cost", "cost_estimated")
_WRITTEN = (*_COLUMNS, "latency", "finished")
_INSERT = (
    f"INSERT INTO repeats ({', '.join(_WRITTEN)}) VALUES ({', '.join('?' * len(_WRITTEN))}) "
    "ON CONFLICT(idx, repeat) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _WRITTEN if c not in ("idx", "repeat"))
    + " WHERE repeats.score IS NULL"
)
_KEEP_REPLACED = (
    f"INSERT INTO superseded (idx, {', '.join(SPENT)}) "
    f"SELECT idx, {', '.join(SPENT)} FROM repeats WHERE idx = ? AND repeat = ? "
    "AND score IS NULL"
)
_KEEP_UNUSED = (
    f"INSERT INTO superseded (idx, {', '.join(SPENT)}) "
    f"SELECT idx, {', '.join(SPENT)} FROM repeats WHERE idx = ? AND repeat >= ?"
)
_KEEP_REFUSED = (
    f"INSERT INTO superseded (idx, {', '.join(SPENT)}) VALUES ({', '.join('?' * (len(SPENT) + 1))})"
)


def pending_totals(reasoning: bool) -> str:
    """What the repeats of items not yet aggregated into ``results`` spent (a killed run):
    the usage counts, the cost, the unpriced, and the reasoning tokens (``0`` for a store
    whose ``repeats`` kept none: ``reasoning=False``)."""
    return (
        "SELECT TOTAL(prompt_tokens), TOTAL(completion_tokens), TOTAL(cached_tokens), "
        "TOTAL(calls), TOTAL(cache_hits), TOTAL(attempts), TOTAL(cost), "
        "SUM(cost IS NULL AND (calls > 0 OR attempts > 0)), "
        f"TOTAL({'reasoning_tokens' if reasoning else '0'}) FROM repeats "
        "WHERE idx NOT IN (SELECT idx FROM results)"
    )


@dataclass(frozen=True)
class StoredRepeat:
    """One repeat of one item as the store keeps it."""

    idx: int
    repeat: int
    score: float | None
    error: str | None
    outcome: dict[str, Any]
    usage: Usage
    cost: float | None
    cost_estimated: bool = False
    latency: float = 0.0


def _usage(row: Any) -> Usage:
    return Usage(
        prompt_tokens=row[0],
        completion_tokens=row[1],
        cached_tokens=row[2],
        calls=row[3],
        cache_hits=row[4],
        attempts=row[5],
        cache_write_tokens=row[6],
        reasoning_tokens=row[7],
    )


class RepeatTable:
    """The ``repeats`` table of one run store, on the store's own connection. An older
    store read read-only may lack :data:`LATER_REPEAT_COLUMNS`: they read as 0."""

    def __init__(self, db: sqlite3.Connection, path: Path, columns: set[str]) -> None:
        """``columns``: the table's columns, as the store found them when it opened."""
        self._db = db
        self.path = path
        self._usage_sql = ", ".join(c if c in columns else "0" for c in _USAGE)

    def write(self, r: StoredRepeat) -> bool:
        """Commit one repeat; ``False`` if that (item, repeat) already had a score (kept)."""
        u = r.usage
        counts = (u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.calls, u.cache_hits)
        values = (
            r.idx,
            r.repeat,
            r.score,
            r.error,
            orjson.dumps(r.outcome, option=orjson.OPT_NON_STR_KEYS, default=str),
            *counts,
            u.attempts,
            u.cache_write_tokens,
            u.reasoning_tokens,
            r.cost,
            int(r.cost_estimated),
            r.latency,
            time.time(),
        )
        with transaction(self._db, f"{self.path}: cannot write repeat {r.repeat} of item {r.idx}"):
            self._db.execute(_KEEP_REPLACED, (r.idx, r.repeat))
            written = self._db.execute(_INSERT, values).rowcount == 1
            if not written:
                spent = (*counts, u.attempts, r.cost, u.reasoning_tokens)  # SPENT's order
                self._db.execute(_KEEP_REFUSED, (r.idx, *spent))
        return written

    def set_aside(self, idx: int, counted: int) -> int:
        """Remove item ``idx``'s repeats numbered ``counted`` and up (repeats the stopping
        rule no longer counts), moving what they spent to ``superseded`` in the same
        transaction; how many were removed."""
        failing = f"{self.path}: cannot set aside the repeats of item {idx} past {counted}"
        with transaction(self._db, failing):
            self._db.execute(_KEEP_UNUSED, (idx, counted))
            removed = self._db.execute(
                "DELETE FROM repeats WHERE idx = ? AND repeat >= ?", (idx, counted)
            ).rowcount
        return int(removed)

    def of(self, idx: int) -> list[StoredRepeat]:
        """Item ``idx``'s stored repeats, in repeat order."""
        return list(self._read("WHERE idx = ?", (idx,)))

    def all(self) -> Iterator[StoredRepeat]:
        """Every stored repeat, by item then repeat."""
        return self._read("", ())

    def _read(self, where: str, args: tuple[Any, ...]) -> Iterator[StoredRepeat]:
        sql = (
            f"SELECT {self._usage_sql}, idx, repeat, score, error, outcome, cost, "
            f"cost_estimated, latency FROM repeats {where} ORDER BY idx, repeat"
        )
        for row in self._db.execute(sql, args):
            yield StoredRepeat(
                idx=row[8],
                repeat=row[9],
                score=row[10],
                error=row[11],
                outcome=orjson.loads(row[12]),
                usage=_usage(row),
                cost=row[13],
                cost_estimated=bool(row[14]),
                latency=row[15],
            )

    def unsettled(self) -> set[int]:
        """The items with a failed repeat (judged again on resume with ``retry_failed``)."""
        return {int(i) for (i,) in self._db.execute("SELECT idx FROM repeats WHERE score IS NULL")}

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM repeats").fetchone()[0])
