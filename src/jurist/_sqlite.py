"""The one way jurist opens an SQLite file: the run store's ``run.sqlite`` and the cache.

:func:`connect` opens a file for writing (its folder made, autocommit so that callers say
``BEGIN IMMEDIATE`` where they need a transaction, a busy timeout instead of an instant
``database is locked``) or read-only (``mode=ro``: nothing is created or written).
:func:`use_wal` then switches a file that turned out to be jurist's to WAL with
``synchronous=NORMAL``: a commit survives a killed process and costs no fsync. It is a
separate step so that a foreign SQLite file is checked before anything changes it.

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

import sqlite3
from pathlib import Path

__all__ = ["connect", "use_wal"]


def connect(
    path: Path,
    *,
    readonly: bool = False,
    timeout_s: float = 10.0,
    check_same_thread: bool = True,
) -> sqlite3.Connection:
    """An open connection to ``path`` (see the module docs); raises :class:`sqlite3.Error`
    or :class:`OSError` (the folder cannot be made), which callers turn into errors that
    name what the file is for."""
    if readonly:
        db = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, timeout=timeout_s, check_same_thread=check_same_thread
        )
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(
            path, timeout=timeout_s, isolation_level=None, check_same_thread=check_same_thread
        )
    db.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
    return db


def use_wal(db: sqlite3.Connection) -> None:
    """Switch ``db`` to WAL with ``synchronous=NORMAL`` (see the module docs)."""
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
