"""The one way jurist opens an SQLite file: the run store's ``run.sqlite`` and the cache.

:func:`connect` opens a file for writing (its folder made, autocommit so that callers say
``BEGIN IMMEDIATE`` where they need a transaction, a busy timeout instead of an instant
``database is locked``) or read-only (``mode=ro``: nothing is created or written).
:func:`use_wal` then switches a file that turned out to be jurist's to WAL with
``synchronous=NORMAL``: a commit survives a killed process and costs no fsync. It is a
separate step so that a foreign SQLite file is checked before anything changes it.

A damaged file (SQLite says ``file is not a database`` or ``database disk image is
malformed``, on opening or on any page read later) is told apart from every other error
(:func:`is_damaged`): ``connect(..., damaged=make_error)`` returns a connection whose every
statement and every row read raises ``make_error(exc)`` in its place, an error that names
the file and what to do, never a full disk's advice.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "sub" / "x.sqlite"
>>> db = connect(path)
>>> use_wal(db)
>>> db.execute("PRAGMA journal_mode").fetchone()[0]
'wal'
>>> db.close()
>>> ro = connect(path, readonly=True)
>>> ro.execute("CREATE TABLE t (x)")
Traceback (most recent call last):
...
sqlite3.OperationalError: attempt to write a readonly database
>>> ro.close()
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["DAMAGED", "connect", "is_damaged", "transaction", "use_wal"]

DAMAGED = ("malformed", "not a database", "file is encrypted")
"""What SQLite says of a file that is damaged, or that is no SQLite file at all."""

OnDamage = Callable[[sqlite3.DatabaseError], Exception]


def is_damaged(e: BaseException) -> bool:
    """Whether ``e`` says the file is damaged (not a full disk, not a lock).

    >>> is_damaged(sqlite3.DatabaseError("database disk image is malformed"))
    True
    >>> is_damaged(sqlite3.OperationalError("database or disk is full"))
    False
    """
    return isinstance(e, sqlite3.DatabaseError) and any(m in str(e) for m in DAMAGED)


def _guarded(on_damage: OnDamage) -> type[sqlite3.Connection]:
    """A connection class whose statements and row reads raise ``on_damage(exc)`` for a
    damaged file (other errors go through as they are)."""

    def run(call: Callable[[], Any]) -> Any:
        try:
            return call()
        except sqlite3.DatabaseError as e:
            if is_damaged(e):
                raise on_damage(e) from None
            raise

    class Cursor(sqlite3.Cursor):
        # execute and executemany are the run store's hot path (a statement per finished
        # item): the guard is inline there, with no closure and no call of its own
        def execute(self, sql: str, parameters: Any = (), /) -> Cursor:
            try:
                return super().execute(sql, parameters)
            except sqlite3.DatabaseError as e:
                if is_damaged(e):
                    raise on_damage(e) from None
                raise

        def executemany(self, sql: str, seq: Any, /) -> Cursor:
            try:
                return super().executemany(sql, seq)
            except sqlite3.DatabaseError as e:
                if is_damaged(e):
                    raise on_damage(e) from None
                raise

        def executescript(self, script: str, /) -> Cursor:
            return run(lambda: super(Cursor, self).executescript(script))  # type: ignore[no-any-return]

        def fetchone(self) -> Any:
            return run(super().fetchone)

        def fetchmany(self, size: int | None = 1) -> list[Any]:
            return run(lambda: super(Cursor, self).fetchmany(size))  # type: ignore[no-any-return]

        def fetchall(self) -> list[Any]:
            return run(super().fetchall)  # type: ignore[no-any-return]

        def __next__(self) -> Any:
            return run(super().__next__)

    class Connection(sqlite3.Connection):
        def cursor(self, factory: Any = Cursor) -> Any:
            return super().cursor(factory)

        def execute(self, sql: str, parameters: Any = (), /) -> Any:
            return self.cursor().execute(sql, parameters)

        def executemany(self, sql: str, seq: Any, /) -> Any:
            return self.cursor().executemany(sql, seq)

        def executescript(self, script: str, /) -> Any:
            return self.cursor().executescript(script)

    return Connection


def connect(
    path: Path,
    *,
    readonly: bool = False,
    timeout_s: float = 10.0,
    check_same_thread: bool = True,
    damaged: OnDamage | None = None,
) -> sqlite3.Connection:
    """An open connection to ``path`` (see the module docs); raises :class:`sqlite3.Error`
    or :class:`OSError` (the folder cannot be made), which callers turn into errors that
    name what the file is for; ``damaged`` makes the error of a damaged file, wherever it
    shows (see the module docs)."""
    factory = sqlite3.Connection if damaged is None else _guarded(damaged)
    if readonly:
        db = sqlite3.connect(
            f"file:{path}?mode=ro",
            uri=True,
            timeout=timeout_s,
            check_same_thread=check_same_thread,
            factory=factory,
        )
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(
            path,
            timeout=timeout_s,
            isolation_level=None,
            check_same_thread=check_same_thread,
            factory=factory,
        )
    try:
        db.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
    except BaseException:
        db.close()
        raise
    return db


def use_wal(db: sqlite3.Connection) -> None:
    """Switch ``db`` to WAL with ``synchronous=NORMAL`` (see the module docs)."""
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")


@contextlib.contextmanager
def transaction(db: sqlite3.Connection, failing: str) -> Iterator[None]:
    """One transaction on ``db`` (an autocommit connection): committed when the block
    ends, rolled back when it raises; a SQLite error becomes an
    :class:`~jurist.errors.OutputError` reading ``failing: <the error>``."""
    from jurist.errors import OutputError

    try:
        db.execute("BEGIN")
        try:
            yield
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    except sqlite3.Error as e:
        raise OutputError(f"{failing}: {e}") from None
