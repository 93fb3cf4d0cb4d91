"""What the batch-API mode keeps in the run store: files, batches, requests, responses.

Tables beside the run's results, in the same ``run.sqlite`` and on the run store's own
connection (:meth:`jurist.runs._store.RunStore.batch_tables`), each write committed
before the next step of the protocol:

- ``batch_chunks``: one row per request file (a *chunk*), with its state: ``intent``
  (lines chosen, nothing sent), ``uploaded`` (``file_id`` known), ``created``
  (``batch_id`` known), ``done`` (output read), ``abandoned`` (an intent a killed
  process left: its file was never turned into a batch) or ``exported`` (written to a
  file for an offline engine).
- ``batch_requests``: ``custom_id`` -> the chunk that carries it, and the item's index.
- ``batch_responses``: ``custom_id`` -> the answer (HTTP status and raw body) or the
  error read for it; a stored answer is never asked for again.
- ``batch_recoveries``: a request file whose batch id was never recorded and that was
  given a batch by hand on a server that cannot list batches: ``adopted`` (a batch id
  the user named, checked against the file) or ``resubmitted`` (created again, at the
  risk of running its requests twice), with what was said about it.

The tables belong to one run: a run started over (a new ``run_id``) clears them.

>>> import tempfile, pathlib
>>> from jurist.runs._store import RunStore
>>> run_store = RunStore(pathlib.Path(tempfile.mkdtemp()) / "run.sqlite")
>>> store = run_store.batch_tables("r1")
>>> store.add_chunk("c1", round_no=1, model={"name": "m"}, ids=[("0-ab-1", 0)], size=10)
>>> store.chunk_of("0-ab-1").state
'intent'
>>> store.save_responses([Response("0-ab-1", 0, 200, b"{}", None, "out.jsonl:1")])
>>> store.response("0-ab-1").status
200
>>> run_store.batch_calls("r1")
1
>>> run_store.close()
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from jurist.batching._journal import Chunk, Response
from jurist.errors import OutputError

__all__ = ["BatchStore", "Chunk", "Response", "batch_calls_in"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batch_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS batch_chunks (
    chunk_id TEXT PRIMARY KEY,
    round INTEGER NOT NULL,
    state TEXT NOT NULL,
    model TEXT NOT NULL,
    requests INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    first_idx INTEGER,
    last_idx INTEGER,
    file_id TEXT,
    batch_id TEXT,
    batch_status TEXT,
    path TEXT,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_requests (
    custom_id TEXT PRIMARY KEY,
    idx INTEGER NOT NULL,
    chunk_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS batch_requests_chunk ON batch_requests (chunk_id);
CREATE TABLE IF NOT EXISTS batch_resent (
    custom_id TEXT PRIMARY KEY,
    idx INTEGER NOT NULL,
    times INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_recoveries (
    chunk_id TEXT NOT NULL,
    action TEXT NOT NULL,
    batch_id TEXT NOT NULL,
    file_id TEXT,
    requests INTEGER NOT NULL,
    detail TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_responses (
    custom_id TEXT PRIMARY KEY,
    idx INTEGER NOT NULL,
    status INTEGER NOT NULL,
    body BLOB,
    error TEXT,
    source TEXT NOT NULL
);
"""


_CHUNK_COLUMNS = (
    "chunk_id, round, state, model, requests, bytes, first_idx, last_idx, file_id, "
    "batch_id, batch_status, path"
)


def _chunk(row: Sequence[Any]) -> Chunk:
    return Chunk(
        chunk_id=row[0],
        round=int(row[1]),
        state=row[2],
        model=orjson.loads(row[3]),
        requests=int(row[4]),
        bytes=int(row[5]),
        first_idx=row[6],
        last_idx=row[7],
        file_id=row[8],
        batch_id=row[9],
        batch_status=row[10],
        path=row[11],
    )


class BatchStore:
    """The batch tables of one run store file (``run_id`` names the run they belong to):
    the :class:`~jurist.batching.Journal` the batcher records to."""

    def __init__(self, db: sqlite3.Connection, path: Path, *, run_id: str) -> None:
        self.path = path
        self._db = db
        try:
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM batch_meta WHERE key = 'run_id'").fetchone()
            if row is None or orjson.loads(row[0]) != run_id:
                with self._transaction("start the batch tables of"):
                    for table in (
                        "batch_chunks",
                        "batch_requests",
                        "batch_responses",
                        "batch_resent",
                        "batch_recoveries",
                    ):
                        self._db.execute(f"DELETE FROM {table}")
                    self._db.execute(
                        "INSERT OR REPLACE INTO batch_meta VALUES ('run_id', ?)",
                        (orjson.dumps(run_id).decode(),),
                    )
        except sqlite3.Error as e:
            raise OutputError(f"{path}: cannot open the batch tables: {e}") from None

    class _Tx:
        def __init__(self, store: BatchStore, doing: str) -> None:
            self.store, self.doing = store, doing

        def __enter__(self) -> None:
            self.store._db.execute("BEGIN IMMEDIATE")

        def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
            db = self.store._db
            if exc is None:
                try:
                    db.execute("COMMIT")
                except sqlite3.Error as e:
                    db.execute("ROLLBACK")
                    raise OutputError(f"{self.store.path}: cannot {self.doing} it: {e}") from None
            else:
                db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise OutputError(f"{self.store.path}: cannot {self.doing} it: {exc}") from exc

    def _transaction(self, doing: str) -> BatchStore._Tx:
        return BatchStore._Tx(self, doing)

    # -- chunks ----------------------------------------------------------------------

    def add_chunk(
        self,
        chunk_id: str,
        *,
        round_no: int,
        model: dict[str, Any],
        ids: Sequence[tuple[str, int]],
        size: int,
        state: str = "intent",
        path: str | None = None,
    ) -> None:
        """Record a chunk (its lines chosen) and the ``(custom_id, idx)`` it carries."""
        idxs = [i for _, i in ids]
        with self._transaction(f"record request file {chunk_id} in"):
            self._db.execute(
                f"INSERT INTO batch_chunks ({_CHUNK_COLUMNS}, updated) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?)",
                (
                    chunk_id,
                    round_no,
                    state,
                    orjson.dumps(model, option=orjson.OPT_SORT_KEYS).decode(),
                    len(ids),
                    size,
                    min(idxs) if idxs else None,
                    max(idxs) if idxs else None,
                    path,
                    time.time(),
                ),
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO batch_requests VALUES (?, ?, ?)",
                [(cid, idx, chunk_id) for cid, idx in ids],
            )

    def update_chunk(self, chunk_id: str, **values: Any) -> None:
        """Set some of ``state``, ``file_id``, ``batch_id``, ``batch_status`` (committed)."""
        allowed = {"state", "file_id", "batch_id", "batch_status"}
        unknown = set(values) - allowed
        if unknown:
            raise ValueError(f"not chunk columns: {sorted(unknown)}")
        sets = ", ".join(f"{k} = ?" for k in values)
        with self._transaction(f"record request file {chunk_id} in"):
            self._db.execute(
                f"UPDATE batch_chunks SET {sets}, updated = ? WHERE chunk_id = ?",
                (*values.values(), time.time(), chunk_id),
            )

    def chunk(self, chunk_id: str) -> Chunk:
        row = self._db.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM batch_chunks WHERE chunk_id = ?", (chunk_id,)
        ).fetchone()
        if row is None:
            raise KeyError(chunk_id)
        return _chunk(row)

    def chunks(self, *states: str) -> list[Chunk]:
        """The chunks in one of ``states`` (all when none is named), oldest first."""
        sql = f"SELECT {_CHUNK_COLUMNS} FROM batch_chunks"
        if states:
            sql += f" WHERE state IN ({', '.join('?' * len(states))})"
        return [_chunk(r) for r in self._db.execute(sql + " ORDER BY rowid", states)]

    def chunk_with_batch(self, batch_id: str) -> Chunk | None:
        """The chunk whose batch is ``batch_id`` (``None`` when none is)."""
        row = self._db.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM batch_chunks WHERE batch_id = ?", (batch_id,)
        ).fetchone()
        return None if row is None else _chunk(row)

    def recovered(
        self, chunk_id: str, *, action: str, batch_id: str, batch_status: str, detail: str
    ) -> None:
        """Record that an uploaded chunk got its batch by hand (``adopted`` or
        ``resubmitted``), with the chunk's new ``batch_id``, in one transaction."""
        now = time.time()
        with self._transaction(f"record the {action} batch of request file {chunk_id} in"):
            self._db.execute(
                "UPDATE batch_chunks SET state = 'created', batch_id = ?, batch_status = ?, "
                "updated = ? WHERE chunk_id = ?",
                (batch_id, batch_status, now, chunk_id),
            )
            self._db.execute(
                "INSERT INTO batch_recoveries SELECT chunk_id, ?, ?, file_id, requests, ?, ? "
                "FROM batch_chunks WHERE chunk_id = ?",
                (action, batch_id, detail, now, chunk_id),
            )

    def recoveries(self) -> list[dict[str, Any]]:
        """The batches given by hand (:meth:`recovered`), oldest first."""
        keys = ("chunk_id", "action", "batch_id", "file_id", "requests", "detail", "at")
        return [
            dict(zip(keys, row, strict=True))
            for row in self._db.execute(
                f"SELECT {', '.join(keys)} FROM batch_recoveries ORDER BY rowid"
            )
        ]

    def chunk_of(self, custom_id: str) -> Chunk | None:
        """The chunk that carries ``custom_id`` (``None`` when none does)."""
        row = self._db.execute(
            f"SELECT {', '.join('c.' + c.strip() for c in _CHUNK_COLUMNS.split(','))} "
            "FROM batch_requests r JOIN batch_chunks c ON c.chunk_id = r.chunk_id "
            "WHERE r.custom_id = ?",
            (custom_id,),
        ).fetchone()
        return None if row is None else _chunk(row)

    def ids_of(self, chunk_id: str) -> list[tuple[str, int]]:
        """``(custom_id, idx)`` of the requests a chunk carries."""
        return [
            (str(r[0]), int(r[1]))
            for r in self._db.execute(
                "SELECT custom_id, idx FROM batch_requests WHERE chunk_id = ? ORDER BY rowid",
                (chunk_id,),
            )
        ]

    def abandon_intents(self) -> int:
        """Mark the chunks a killed process left at ``intent`` abandoned (their lines are
        sent again when asked); how many there were."""
        with self._transaction("abandon unsent request files in"):
            cur = self._db.execute(
                "UPDATE batch_chunks SET state = 'abandoned', updated = ? WHERE state = 'intent'",
                (time.time(),),
            )
            self._db.execute(
                "DELETE FROM batch_requests WHERE chunk_id IN "
                "(SELECT chunk_id FROM batch_chunks WHERE state = 'abandoned')"
            )
        return int(cur.rowcount)

    def forget(self, idxs: Iterable[int]) -> None:
        """Drop the failed answers and finished-without-answer requests of items to be
        judged again (a resumed run retrying its failures)."""
        rows = [(i,) for i in idxs]
        with self._transaction("clear the failed requests of retried items in"):
            self._db.executemany(
                "DELETE FROM batch_responses WHERE idx = ? AND status != 200", rows
            )
            self._db.executemany(
                "DELETE FROM batch_requests WHERE idx = ? AND custom_id NOT IN "
                "(SELECT custom_id FROM batch_responses) AND chunk_id IN "
                "(SELECT chunk_id FROM batch_chunks WHERE state = 'done')",
                rows,
            )
            self._db.executemany("DELETE FROM batch_resent WHERE idx = ?", rows)

    def unassign(self, custom_ids: Iterable[str]) -> None:
        """Forget which chunk carried these requests (they are sent again), and count the
        resubmission of each (:meth:`resent`)."""
        ids = [(c,) for c in custom_ids]
        with self._transaction("record resubmitted requests in"):
            self._db.executemany(
                "INSERT INTO batch_resent SELECT custom_id, idx, 1 FROM batch_requests "
                "WHERE custom_id = ? AND true "
                "ON CONFLICT(custom_id) DO UPDATE SET times = times + 1",
                ids,
            )
            self._db.executemany("DELETE FROM batch_requests WHERE custom_id = ?", ids)

    def resent(self, custom_id: str) -> int:
        """How many times this request was submitted again after a batch ended without
        its answer."""
        row = self._db.execute(
            "SELECT times FROM batch_resent WHERE custom_id = ?", (custom_id,)
        ).fetchone()
        return int(row[0]) if row else 0

    # -- responses -------------------------------------------------------------------

    def save_responses(
        self,
        responses: Iterable[Response],
        *,
        chunk_id: str | None = None,
        state: dict[str, Any] | None = None,
    ) -> None:
        """Store answers (a stored one is kept), and optionally update a chunk, at once."""
        with self._transaction("store batch answers in"):
            self._db.executemany(
                "INSERT OR IGNORE INTO batch_responses VALUES (?, ?, ?, ?, ?, ?)",
                [(r.custom_id, r.idx, r.status, r.body, r.error, r.source) for r in responses],
            )
            if chunk_id is not None and state:
                sets = ", ".join(f"{k} = ?" for k in state)
                self._db.execute(
                    f"UPDATE batch_chunks SET {sets}, updated = ? WHERE chunk_id = ?",
                    (*state.values(), time.time(), chunk_id),
                )

    def response(self, custom_id: str) -> Response | None:
        row = self._db.execute(
            "SELECT custom_id, idx, status, body, error, source FROM batch_responses "
            "WHERE custom_id = ?",
            (custom_id,),
        ).fetchone()
        if row is None:
            return None
        body = row[3]
        return Response(
            row[0], int(row[1]), int(row[2]), bytes(body) if body else None, row[4], row[5]
        )

    def counts(self) -> dict[str, int]:
        """Files, batches and answers recorded (for the summary and benchmarks)."""
        files = self._db.execute(
            "SELECT COUNT(*), TOTAL(requests) FROM batch_chunks WHERE state != 'abandoned'"
        ).fetchone()
        batches = self._db.execute(
            "SELECT COUNT(*) FROM batch_chunks WHERE batch_id IS NOT NULL"
        ).fetchone()
        answers = self._db.execute(
            "SELECT COUNT(*), TOTAL(status = 200) FROM batch_responses"
        ).fetchone()
        recovered = dict(
            self._db.execute("SELECT action, COUNT(*) FROM batch_recoveries GROUP BY action")
        )
        return {
            "files": int(files[0]),
            "requests": int(files[1]),
            "batches": int(batches[0]),
            "answers": int(answers[1]),
            "failed_answers": int(answers[0]) - int(answers[1]),
            "adopted": int(recovered.get("adopted", 0)),
            "resubmitted": int(recovered.get("resubmitted", 0)),
        }

    def rows(self) -> Iterator[tuple[str, int]]:
        yield from (
            (str(r[0]), int(r[1]))
            for r in self._db.execute("SELECT custom_id, idx FROM batch_requests")
        )


def batch_calls_in(db: sqlite3.Connection, run_id: str | None) -> int:
    """How many answers a provider's batch API gave run ``run_id`` on the run store ``db``
    (0 when the run never used the batch API)."""
    try:
        owner = db.execute("SELECT value FROM batch_meta WHERE key = 'run_id'").fetchone()
        if owner is None or orjson.loads(owner[0]) != run_id:
            return 0  # the tables of an earlier run started over
        row = db.execute("SELECT COUNT(*) FROM batch_responses WHERE status = 200").fetchone()
        return int(row[0])
    except sqlite3.Error:  # no batch tables: the run never used the batch API
        return 0
