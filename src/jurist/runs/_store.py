"""The run store: one SQLite file per run folder, one row per finished item.

Every finished judgment is committed as it completes. The file runs in WAL mode with
``synchronous=NORMAL``: a commit survives the process being killed (even by SIGKILL), and
costs tens of microseconds since there is no fsync per commit. ``idx`` (the item's
position in the dataset) is the primary key, so an item can never have two results; a
new result replaces a stored one only when that one has no score (a failure judged again
on resume), never a scored one. What a replaced (or refused) result spent, its tokens,
calls, attempts and cost, moves to the ``superseded`` table in the same transaction, so
:meth:`RunStore.totals` counts every request any session of the run sent. A run with
repeats keeps each (item, repeat) in the ``repeats`` table (:mod:`jurist.runs._repeat_store`)
and here one row per item over its repeats (:meth:`RunStore.write_item`).

The ``meta`` table marks the file as jurist's (``format = jurist-run/1``) and keeps the
run's manifest, written in the same transaction that clears a run started over, so the
rows and the manifest they belong to can never disagree. An existing file is checked
before anything is written to it: another program's SQLite file is refused, never
cleared. A write that fails (a full disk) raises :class:`~jurist.errors.OutputError`
naming the file; the rows committed before it stay.

An image an item carries inline (a data URI) is kept once in the ``images`` table by its
content hash, and the item refers to it as ``sha256:<hex>`` (see
:mod:`jurist.runs._store_images`; :meth:`RunStore.image` reads one back).

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
import uuid
from collections.abc import Container, Iterator
from pathlib import Path
from typing import Any

import orjson

from jurist._sqlite import connect, use_wal
from jurist.errors import ConfigError, JuristError
from jurist.runs._batch_store import BatchStore, batch_calls_in
from jurist.runs._bitmap import Bitmap
from jurist.runs._repeat_store import REPEATS_SCHEMA, RepeatTable, pending_totals
from jurist.runs._store_images import IMAGES_SCHEMA
from jurist.runs._store_schema import (
    FORMAT,
    INSERT,
    INSERT_NEW,
    KEEP_REFUSED,
    KEEP_REPLACED,
    LATER_COLUMNS,
    REPLACE,
    SCHEMA,
    StoredResult,
    Totals,
    columns_of,
    dumps,
    is_jurist_store,
    row_of,
    schema_problem,
    store_error,
)
from jurist.types import Usage

__all__ = [
    "FORMAT",
    "Bitmap",
    "RunStore",
    "StoredResult",
    "Totals",
    "is_jurist_store",
    "store_error",
]


class RunStore:
    """The SQLite file of one run (made on first use; an existing one must be jurist's)."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        try:
            self._db = connect(
                self.path,
                readonly=readonly,
                damaged=lambda e: store_error(self.path, "read", e),
            )
            if readonly:
                problem = schema_problem(self._db)
                columns = columns_of(self._db, "results")
                self._attempts = "attempts" in columns
                self._caching = "cost_uncached" in columns
                tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
                self._reasoning = "reasoning_tokens" in columns_of(self._db, "results")
                self._superseded = "superseded" in tables
                self._repeats = "repeats" in tables
                self._repeat_columns = columns_of(self._db, "repeats")  # empty: no table
            else:
                problem = schema_problem(self._db)
                if problem is None:
                    use_wal(self._db)
                    # older stores get the repeats table empty, and the later columns
                    self._db.executescript(SCHEMA + IMAGES_SCHEMA + REPEATS_SCHEMA)
                    for table, column, kind in LATER_COLUMNS:
                        if column not in columns_of(self._db, table):
                            self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                    self._repeat_columns = columns_of(self._db, "repeats")
                    self._attempts = True
                    self._caching = True
                    self._reasoning = True
                    self._superseded = True
        except sqlite3.DatabaseError as e:
            raise self._error("open", e) from None
        if problem is not None:
            self._db.close()
            raise ConfigError(f"{self.path}: not a jurist run store: {problem}")

    _repeats = True
    _caching = True
    _reasoning = True
    _repeat_table: RepeatTable | None = None

    def _error(self, doing: str, e: sqlite3.Error) -> JuristError:
        return store_error(self.path, doing, e)

    def close(self) -> None:
        self._db.close()

    # -- the batch tables --------------------------------------------------------------

    def batch_tables(self, run_id: str) -> BatchStore:
        """The batch-API tables of this file (run ``run_id``'s journal), on this store's own
        connection: ``run.sqlite`` has one owner, and the journal lives and dies with it."""
        return BatchStore(self._db, self.path, run_id=run_id)

    def batch_calls(self, run_id: str | None) -> int:
        """How many answers a provider's batch API gave run ``run_id`` (0 when the run
        never used the batch API, or its batch tables belong to an earlier run)."""
        return batch_calls_in(self._db, run_id)

    def repeat_table(self) -> RepeatTable | None:
        """The ``repeats`` table (one row per item and repeat, see
        :mod:`jurist.runs._repeat_store`); ``None`` for an older store read read-only."""
        if self._repeats and self._repeat_table is None:  # one per store: no lookup per item
            self._repeat_table = RepeatTable(self._db, self.path, self._repeat_columns)
        return self._repeat_table

    # -- writing -----------------------------------------------------------------------

    def write(self, r: StoredResult, *, fresh: bool = False) -> bool:
        """Commit one result; ``False`` if the item already had a scored one (kept as is).

        What a replaced result spent (a failure judged again on resume), or what a refused
        one spent, is kept in the ``superseded`` table in the same transaction: the run's
        totals count every request any session sent.

        ``fresh``: the caller knows the item has no row (a run's session, from the items
        stored when it began); a result without images is then one ``INSERT``, a
        transaction of its own. Should a row be there after all, the insert is refused and
        the result goes the whole way.
        """
        u = r.usage
        values, images = row_of(r)
        if fresh and not images:
            try:
                self._db.execute(INSERT_NEW, values)
                return True
            except sqlite3.IntegrityError:
                pass  # a row after all: the transaction below keeps what it spent
            except sqlite3.Error as e:
                raise self._error(f"write item {r.idx} to", e) from None
        try:
            self._db.execute("BEGIN")
            try:
                self._db.execute(KEEP_REPLACED, (r.idx,))
                self._keep_images(images)
                written = self._db.execute(INSERT, values).rowcount == 1
                if not written:
                    spent = (u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.calls)
                    self._db.execute(
                        KEEP_REFUSED,
                        (r.idx, *spent, u.cache_hits, u.attempts, r.cost, u.reasoning_tokens),
                    )
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # SQLite ends it itself on a full disk
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise self._error(f"write item {r.idx} to", e) from None
        return written

    def write_item(self, r: StoredResult) -> None:
        """Commit an item's row of a run with repeats (its outcome over its repeats),
        replacing the one stored: what it spent is its repeats' (kept in ``repeats``), so
        nothing moves to ``superseded``. Its images are kept once by hash, as :meth:`write`
        keeps them."""
        values, images = row_of(r)
        try:
            self._db.execute("BEGIN")
            try:
                self._keep_images(images)
                self._db.execute(REPLACE, values)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise self._error(f"write item {r.idx} to", e) from None

    def _keep_images(self, images: dict[str, tuple[str, bytes]]) -> None:
        """Store each image once, by its hash (inside the caller's transaction)."""
        self._db.executemany(
            "INSERT OR IGNORE INTO images (sha256, media_type, data) VALUES (?, ?, ?)",
            [(digest, media, data) for digest, (media, data) in images.items()],
        )

    def image(self, sha256: str) -> tuple[str, bytes] | None:
        """The media type and bytes of an image stored by its hash (an item's
        ``sha256:<hex>`` reference, without the prefix), or ``None``."""
        try:
            row = self._db.execute(
                "SELECT media_type, data FROM images WHERE sha256 = ?",
                (sha256.removeprefix("sha256:"),),
            ).fetchone()
        except sqlite3.OperationalError:  # a store written before images were kept
            return None
        return None if row is None else (str(row[0]), bytes(row[1]))

    def start(self, manifest: dict[str, Any]) -> str:
        """Begin a run: delete every result and meta entry, mark the file as jurist's and
        keep ``manifest`` (with a new ``run_id``), all in one transaction; the run id."""
        run_id = uuid.uuid4().hex
        manifest = {**manifest, "run_id": run_id}
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("DELETE FROM results")
                self._db.execute("DELETE FROM superseded")
                self._db.execute("DELETE FROM repeats")
                self._db.execute("DELETE FROM meta")
                for key, value in (("format", FORMAT), ("manifest", manifest)):
                    self._db.execute("INSERT INTO meta VALUES (?, ?)", (key, dumps(value).decode()))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise self._error("start", e) from None
        return run_id

    def clear(self) -> None:
        """Delete every result and meta entry (a run started over)."""
        self._db.execute("DELETE FROM results")
        self._db.execute("DELETE FROM superseded")
        self._db.execute("DELETE FROM repeats")
        self._db.execute("DELETE FROM meta")

    def set_meta(self, key: str, value: Any) -> None:
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, dumps(value).decode())
            )
        except sqlite3.Error as e:
            raise self._error(f"record {key} in", e) from None

    def get_meta(self, key: str) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else orjson.loads(row[0])

    # -- reading -----------------------------------------------------------------------

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def done_bitmap(self, *, scored_only: bool = False, exclude: Container[int] = ()) -> Bitmap:
        """The stored indices (only those with a score when ``scored_only``), but those in
        ``exclude``."""
        bits = Bitmap()
        sql = "SELECT idx FROM results" + (" WHERE score IS NOT NULL" if scored_only else "")
        for (idx,) in self._db.execute(sql):
            if idx not in exclude:
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
            "cached_tokens, calls, cache_hits, cost, cost_estimated, latency, "
            f"{'attempts' if self._attempts else '0'}, "
            f"{'cache_write_tokens' if self._caching else '0'}, "
            f"{'reasoning_tokens' if self._reasoning else '0'} FROM results"
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
                    attempts=row[13],
                    cache_write_tokens=row[14],
                    reasoning_tokens=row[15],
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
        """Sums over the run's rows; usage and cost also count what results replaced on a
        resume (or refused) had spent, so ``usage.attempts`` is every request sent."""
        row = self._db.execute(
            "SELECT COUNT(*), COUNT(score), AVG(score), TOTAL(prompt_tokens), "
            "TOTAL(completion_tokens), TOTAL(cached_tokens), TOTAL(calls), TOTAL(cache_hits), "
            "TOTAL(cost), SUM(cost IS NULL), TOTAL(cost_estimated), "
            f"TOTAL({'attempts' if self._attempts else '0'}), "
            + (
                "TOTAL(cache_write_tokens), TOTAL(COALESCE(cost_uncached, cost)), "
                "SUM(cost IS NOT NULL AND cost_uncached IS NULL), "
                if self._caching
                else "0, TOTAL(cost), COUNT(cost), "
            )
            + f"TOTAL({'reasoning_tokens' if self._reasoning else '0'}) FROM results"
        ).fetchone()
        old = (0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0.0)
        if self._superseded:
            old = self._db.execute(
                "SELECT COUNT(*), TOTAL(prompt_tokens), TOTAL(completion_tokens), "
                "TOTAL(cached_tokens), TOTAL(calls), TOTAL(cache_hits), TOTAL(attempts), "
                "TOTAL(cost), SUM(cost IS NULL AND (calls > 0 OR attempts > 0)), "
                f"TOTAL({'reasoning_tokens' if self._reasoning else '0'}) FROM superseded"
            ).fetchone()
        if self._repeats:  # repeats of items not aggregated yet (a killed run)
            reasoning = "reasoning_tokens" in self._repeat_columns  # not in an older table
            pending = self._db.execute(pending_totals(reasoning)).fetchone()
            old = (
                old[0],
                *(a + b for a, b in zip(old[1:8], pending[:7], strict=True)),
                int(old[8] or 0) + int(pending[7] or 0),
                old[9] + pending[8],
            )
        items = int(row[0])
        unknown = int(row[9] or 0)
        return Totals(
            items=items,
            scored=int(row[1]),
            mean_score=row[2],
            usage=Usage(
                prompt_tokens=int(row[3] + old[1]),
                completion_tokens=int(row[4] + old[2]),
                cached_tokens=int(row[5] + old[3]),
                calls=int(row[6] + old[4]),
                cache_hits=int(row[7] + old[5]),
                attempts=int(row[11] + old[6]),
                cache_write_tokens=int(row[12]),
                reasoning_tokens=int(row[15] + old[9]),
            ),
            # one unpriced item makes the total unknown: never a sum that looks complete
            cost=None if unknown or old[8] else float(row[8] + old[7]),
            cost_known=float(row[8] + old[7]),
            cost_unknown=unknown,
            cost_estimated=int(row[10]),
            superseded=int(old[0]),
            # superseded results count at what they cost: their caching is not reckoned
            cost_uncached=None if unknown or old[8] or row[14] else float(row[13] + old[7]),
        )
