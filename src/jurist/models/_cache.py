"""Cache any model's completions in one SQLite file, so a rerun costs nothing.

The key is the SHA-256 of the canonical JSON (sorted keys, compact) of
``{"model": model.identity(), "request": request.cache_fields(), "v": 1}``: the model's
identity (provider, name, base URL; never a key, by the :class:`Model` contract) and every
request field that changes the output (messages, sampling parameters, logprobs, schema,
``extra``), but not ``timeout``. Candidate scores add ``"candidates"`` to the key. A model
with a fingerprint (:meth:`Model.fingerprint`: what identifies the weights behind its
name, taken once before its first lookup) adds it as ``"weights"``, so other weights in
the same folder, or a server restarted on other weights under the same name, never get
the old model's answers.

By default only deterministic requests are cached: ``temperature == 0``. A request with
``temperature=None`` takes the server's default, which is usually 1, so it is sampled and
not cached. ``only_deterministic=False`` caches everything. Candidate scores come from
one forward pass, with no sampling, so they are always cached.

A hit returns the stored completion with ``cached=True``, ``attempts=0``, ``latency`` of
the lookup, and its usage as recorded (prompt and completion tokens as on the first run)
but with ``calls=0``, ``cache_hits=1`` and ``attempts=0``, so totals do not bill it twice.
Candidate scores are accounted the same way (``cached``, ``attempts`` and ``usage``), so
every scoring mode reports a cached rerun alike. Only successes are stored. Identical
cacheable requests in flight at the same time are coalesced: one call reaches the model
and the others await it (they count as hits).

SQLite runs inline on the event loop: with WAL and ``synchronous=NORMAL`` a lookup by
primary key takes tens of microseconds and a commit well under a millisecond (no fsync
per commit), less than a thread hop would cost, and far below any model call. One
connection per ``CachedModel`` is shared under a lock, so several loops or threads may
use it; several processes may share the file (WAL, ``busy_timeout``).

Order the wrappers ``CachedModel(RetryModel(LimitedModel(backend)))``: a hit then skips
the rate limits and the retries.

Failures of the file itself. Opening it (made on first use, or up front by
:meth:`CachedModel.prepare`, which a batch calls before its first item) raises
:class:`~jurist.errors.CacheError` naming the file and the reason: a folder that cannot be
made, a location that cannot be written, a full disk. Once open, the cache is only an
optimisation, so a failed write ("database or disk is full") or read never costs the
call its answer: the completion is returned as computed (a failed read counts as a
miss), the first such failure is logged as a warning naming the file, and
``write_errors`` / ``read_errors`` count them all.

>>> import tempfile, pathlib
>>> from jurist._sync import run_sync
>>> from jurist.models import MockModel
>>> from jurist.types import Message, Request
>>> path = pathlib.Path(tempfile.mkdtemp()) / "cache.sqlite"
>>> model = CachedModel(MockModel(outputs=["Correct"], cycle=True), path)
>>> req = Request(messages=(Message(role="user", content="q"),), temperature=0)
>>> first, again = run_sync(model.complete(req)), run_sync(model.complete(req))
>>> first.cached, again.cached, again.usage.calls, model.hits, model.misses
(False, True, 0, 1, 1)
>>> model.close()
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from jurist._secrets import get_logger
from jurist._sqlite import connect, use_wal
from jurist.errors import CacheError
from jurist.models._model import Model, WrapperModel
from jurist.types import CandidateScores, Completion, Request, Usage

__all__ = ["CACHE_VERSION", "CachedModel", "cache_key", "default_cache_path"]

CACHE_VERSION = 1
R = TypeVar("R", bound=BaseModel)

logger = get_logger("jurist.models")  # its filter scrubs keys from every record

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    model TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL
) WITHOUT ROWID
"""


def default_cache_path() -> Path:
    """``$JURIST_CACHE_DIR/cache.sqlite``, else ``$XDG_CACHE_HOME/jurist/cache.sqlite``,
    else ``~/.cache/jurist/cache.sqlite``.

    This helper reads the environment because it computes a default at the edge; the
    cache itself only uses the path it is given.

    >>> default_cache_path().name
    'cache.sqlite'
    """
    root = os.environ.get("JURIST_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "cache.sqlite"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "jurist" / "cache.sqlite"


def cache_key(
    model: Model,
    request: Request,
    candidates: Sequence[str] | None = None,
    *,
    fingerprint: dict[str, Any] | None = None,
) -> str:
    """The cache key of ``request`` to ``model`` (with ``candidates`` for candidate scores),
    with the ``fingerprint`` of its weights (``await model.fingerprint()``) when it has one."""
    doc: dict[str, Any] = {
        "model": model.identity(),
        "request": request.cache_fields(),
        "v": CACHE_VERSION,
    }
    if candidates is not None:
        doc["candidates"] = list(candidates)
    if fingerprint is not None:
        doc["weights"] = fingerprint
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class _Flight:
    """One call in progress that identical requests wait on."""

    task: asyncio.Future[Any]
    waiters: int = 0


def _land(flights: dict[str, _Flight], key: str, flight: _Flight) -> None:
    if flights.get(key) is flight:
        del flights[key]


def _hit_usage(usage: Usage) -> Usage:
    """A stored usage as a hit reports it: tokens kept, no call, no request sent."""
    return usage.model_copy(update={"calls": 0, "cache_hits": 1, "attempts": 0})


class CachedModel(WrapperModel):
    """Caches the wrapped model's completions and candidate scores in a SQLite file.

    ``path`` defaults to :func:`default_cache_path`; the file and its folder are made on
    first use. ``enabled=False`` passes everything through and never opens the file.
    ``hits`` and ``misses`` count cacheable calls answered from the cache (or from an
    identical call in flight) and calls that went to the model.
    """

    def __init__(
        self,
        model: Model,
        path: str | os.PathLike[str] | None = None,
        *,
        only_deterministic: bool = True,
        enabled: bool = True,
    ) -> None:
        super().__init__(model)
        self.path = Path(path) if path is not None else default_cache_path()
        self.only_deterministic = only_deterministic
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        self.write_errors = 0
        self.read_errors = 0
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._flights: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Flight]] = (
            weakref.WeakKeyDictionary()
        )

    def layer(self) -> dict[str, Any]:
        """This layer's :class:`~jurist.models.Transport` settings: the cache and its file
        (none when disabled). A stack rebuilt in another process on the same machine (a
        Ray actor) shares the file; on another machine it opens its own at that path."""
        return {"cache": True, "cache_path": self.path} if self.enabled else {}

    # -- storage ---------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            conn: sqlite3.Connection | None = None
            try:
                conn = connect(self.path, timeout_s=30.0, check_same_thread=False)
                use_wal(conn)
                conn.execute(_SCHEMA)
            except (OSError, sqlite3.Error) as error:
                if conn is not None:
                    conn.close()
                raise CacheError(
                    f"cannot open the jurist cache {self.path}: {error}; the cache is "
                    "optional: pick another file (--cache-path, $JURIST_CACHE_DIR), free "
                    "disk space, or turn it off (--no-cache)"
                ) from error
            self._conn = conn
        return self._conn

    def open(self) -> None:
        """Open (and create if needed) the cache file now; :class:`CacheError` if it cannot."""
        if self.enabled:
            with self._lock:
                self._connect()

    async def prepare(self) -> None:
        """Open the cache file before a batch (a clear error up front), then the model, then
        take the model's fingerprint (so a server's "no identity" warning comes first)."""
        self.open()
        await super().prepare()
        if self.enabled:
            await self.wrapped.fingerprint()

    def _get(self, key: str) -> str | None:
        with self._lock:
            conn = self._connect()
            try:
                row = conn.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as error:
                self.read_errors += 1
                if self.read_errors == 1:
                    logger.warning(
                        "jurist cache %s: a read failed (%s); such entries are recomputed, "
                        "and further read failures are not logged",
                        self.path,
                        error,
                    )
                return None
        return None if row is None else str(row[0])

    def _put(self, key: str, kind: str, value: BaseModel) -> None:
        # json.dumps keeps -inf logprobs (pydantic's JSON mode would turn them into null).
        text = json.dumps(value.model_dump(), separators=(",", ":"))
        try:
            with self._lock:
                self._connect().execute(
                    "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?)",
                    (key, kind, self.spec, text, time.time()),
                )
        except (sqlite3.Error, CacheError) as error:
            self.write_errors += 1
            if self.write_errors == 1:
                logger.warning(
                    "jurist cache %s: could not store a %s (%s); the answer is kept but not "
                    "cached, and further write failures are not logged",
                    self.path,
                    kind,
                    error,
                )

    def entry_count(self) -> int:
        """How many completions and candidate scores the cache file holds."""
        with self._lock:
            (count,) = self._connect().execute("SELECT COUNT(*) FROM entries").fetchone()
        return int(count)

    def close(self) -> None:
        """Close the SQLite connection (it reopens on next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    async def aclose(self) -> None:
        self.close()
        await super().aclose()

    # -- lookups with coalescing -----------------------------------------------------

    def cacheable(self, request: Request) -> bool:
        """Whether ``request`` is cached: enabled, and deterministic unless told otherwise."""
        return self.enabled and (not self.only_deterministic or request.temperature == 0)

    def _loop_flights(self) -> dict[str, _Flight]:
        loop = asyncio.get_running_loop()
        flights = self._flights.get(loop)
        if flights is None:
            flights = self._flights[loop] = {}
        return flights

    async def _lookup(
        self, key: str, kind: str, cls: type[R], produce: Callable[[], Awaitable[R]]
    ) -> tuple[R, bool]:
        """The value for ``key`` and whether it was a hit (from the file or a flight)."""
        stored = self._get(key)
        if stored is not None:
            try:
                value = cls.model_validate(json.loads(stored))
            except (ValidationError, ValueError):
                logger.warning("jurist cache %s: unreadable %s entry, recomputing", self.path, kind)
            else:
                self.hits += 1
                return value, True
        flights = self._loop_flights()
        flight = flights.get(key)
        leader = flight is None
        if flight is None:
            flight = flights[key] = _Flight(asyncio.ensure_future(self._fill(key, kind, produce)))
            flight.task.add_done_callback(lambda _: _land(flights, key, flight))
            self.misses += 1
        else:
            self.hits += 1
        flight.waiters += 1
        try:
            value = await asyncio.shield(flight.task)
        except asyncio.CancelledError:
            flight.waiters -= 1
            if flight.waiters == 0:  # nobody waits any more: stop the call
                flight.task.cancel()
            raise
        assert isinstance(value, cls)
        return value, not leader

    async def _fill(self, key: str, kind: str, produce: Callable[[], Awaitable[R]]) -> R:
        value = await produce()
        self._put(key, kind, value)
        return value

    async def complete(self, request: Request) -> Completion:
        if not self.cacheable(request):
            return await self.wrapped.complete(request)
        started = time.perf_counter()
        key = cache_key(self.wrapped, request, fingerprint=await self.wrapped.fingerprint())
        completion, hit = await self._lookup(
            key, "completion", Completion, lambda: self.wrapped.complete(request)
        )
        if not hit:
            return completion
        return completion.model_copy(
            update={
                "cached": True,
                "attempts": 0,
                "latency": time.perf_counter() - started,
                "usage": _hit_usage(completion.usage),
            }
        )

    async def candidate_scores(
        self, request: Request, candidates: Sequence[str]
    ) -> CandidateScores:
        if not self.enabled:
            return await self.wrapped.candidate_scores(request, candidates)
        fingerprint = await self.wrapped.fingerprint()
        key = cache_key(self.wrapped, request, candidates, fingerprint=fingerprint)
        scores, hit = await self._lookup(
            key,
            "candidate_scores",
            CandidateScores,
            lambda: self.wrapped.candidate_scores(request, candidates),
        )
        if not hit:
            return scores
        return scores.model_copy(
            update={"cached": True, "attempts": 0, "usage": _hit_usage(scores.usage)}
        )

    def __repr__(self) -> str:
        return f"CachedModel({self.wrapped!r}, {str(self.path)!r})"
