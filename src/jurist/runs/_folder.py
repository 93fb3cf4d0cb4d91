"""Which folders a run may be written into, and one process at a time in each.

A folder is a *jurist run folder* when its ``run.sqlite`` has jurist's schema (marked
``format = jurist-run/1`` in its ``meta`` table; stores written before the marker are
recognised by their tables), or, before the store was made, when it holds a jurist
``manifest.json``. A missing or empty folder is fine too. Any other folder is refused,
naming the files at stake, unless the caller says ``overwrite=True`` (``--overwrite``): then
a foreign ``run.sqlite`` is replaced and jurist's files are written beside the others.
Subfolders are not at stake (jurist writes only files in a run folder), and neither is the
input data when it lies in the folder; the input itself is never a run folder.

While a run works on a folder it holds an exclusive ``flock`` on ``run.lock`` there, whose
text names the process (pid, host, start time). The kernel drops the lock when the process
ends, however it ends, so a killed run never blocks the next one; a second process on the
same folder stops at once and names the first. :func:`lock_owner` tells a reader whether a
live process still holds it: a run whose store says ``running`` but whose lock no process
holds was killed (SIGKILL, a lost machine) and is interrupted.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> with claim_run_folder(folder) as kind:
...     kind
'new'
>>> (folder / "notes.txt").write_text("mine")
4
>>> with claim_run_folder(folder):
...     pass
Traceback (most recent call last):
...
jurist.errors.ConfigError: ...: not a jurist run folder: it holds notes.txt. ...
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from jurist.errors import ConfigError
from jurist.runs._manifest import MANIFEST_NAME, Manifest
from jurist.runs._store import is_jurist_store

__all__ = [
    "LOCK_NAME",
    "STORE_NAME",
    "LockOwner",
    "check_run_folder",
    "claim_run_folder",
    "inspect_folder",
    "lock_owner",
]

STORE_NAME = "run.sqlite"
LOCK_NAME = "run.lock"
_STORE_FILES = (STORE_NAME, f"{STORE_NAME}-wal", f"{STORE_NAME}-shm")
FolderKind = Literal["new", "run"]


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _jurist_files(folder: Path) -> str | None:
    """``None`` when ``folder`` holds a jurist run, else why its run files are not jurist's."""
    store = folder / STORE_NAME
    if store.exists():
        problem = is_jurist_store(store)
        return None if problem is None else f"{STORE_NAME} is not jurist's ({problem})"
    try:
        Manifest.read(folder)
    except ConfigError:
        return f"{MANIFEST_NAME} is not a jurist run manifest"
    return None


def inspect_folder(folder: Path, inputs: Sequence[Path] = ()) -> tuple[FolderKind, list[str]]:
    """What ``folder`` is: ``("new", [])``, ``("run", [])`` or, for a folder jurist did not
    make, ``("new", [what is at stake])``."""
    for data in inputs:
        if _same(folder, data) or (data.exists() and _same(folder / STORE_NAME, data)):
            raise ConfigError(f"{folder}: is the input data; write the run somewhere else")
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder}: is a file; a run folder must be a folder")
    if not folder.exists():
        return "new", []
    ours = (folder / STORE_NAME).exists() or (folder / MANIFEST_NAME).exists()
    problem = _jurist_files(folder) if ours else None
    if ours and problem is None:
        return "run", []
    at_stake = [problem] if problem else []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        name = entry.name
        if name == LOCK_NAME or (name.startswith(f".{MANIFEST_NAME}.") and name.endswith(".tmp")):
            continue  # jurist's own lock, or a temporary file a killed run left
        if entry.is_dir() and not entry.is_symlink():
            continue  # jurist writes only files here: another folder is never at stake
        if (problem and name in (*_STORE_FILES, MANIFEST_NAME)) or any(
            _same(entry, d) for d in inputs
        ):
            continue
        at_stake.append(name)
    return "new", at_stake


def check_run_folder(
    folder: Path, *, overwrite: bool = False, inputs: Sequence[Path] = ()
) -> FolderKind:
    """Stop, naming the files at stake, unless ``folder`` may hold a run (nothing is written).

    Returns ``"run"`` for an existing jurist run folder, else ``"new"``.
    """
    kind, at_stake = inspect_folder(folder, inputs)
    if at_stake and not overwrite:
        shown = ", ".join(at_stake[:8])
        if len(at_stake) > 8:
            shown += f" and {len(at_stake) - 8} more"
        raise ConfigError(
            f"{folder}: not a jurist run folder: it holds {shown}. Use a new or empty "
            "folder, or overwrite=True (--overwrite) to write the run into it anyway "
            f"(jurist then replaces {MANIFEST_NAME} and {STORE_NAME} there)"
        )
    return kind


@contextlib.contextmanager
def claim_run_folder(
    folder: Path, *, overwrite: bool = False, inputs: Sequence[Path] = ()
) -> Iterator[FolderKind]:
    """Check ``folder`` may hold this run, make it, and hold its lock while the block runs.

    Yields ``"run"`` for an existing jurist run folder, else ``"new"``.
    """
    check_run_folder(folder, overwrite=overwrite, inputs=inputs)
    folder.mkdir(parents=True, exist_ok=True)
    with _RunLock(folder):
        # again, now that no other jurist process can write here
        kind = check_run_folder(folder, overwrite=overwrite, inputs=inputs)
        store = folder / STORE_NAME
        if overwrite and store.exists() and is_jurist_store(store) is not None:
            for name in _STORE_FILES:  # a foreign store is replaced, never cleared or added to
                (folder / name).unlink(missing_ok=True)
        yield kind


class _RunLock:
    """An exclusive ``flock`` on ``run.lock`` in the folder, with the holder's description."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> _RunLock:
        try:
            import fcntl
        except ImportError:  # no flock on this platform: one process per folder is on the user
            return self
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(self.path)
            os.close(fd)
            raise ConfigError(
                f"{self.folder}: another jurist process is working on this run folder "
                f"({holder}); wait for it to finish or stop it, then run again to resume"
            ) from None
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the lock; the file stays (unlinking would race)
            self._fd = None


def _holder(path: Path) -> str:
    record = _record(path)
    if not record:
        return "a process that is just starting"
    return f"pid {record.get('pid')} on {record.get('host')}, started {record.get('started')}"


@dataclass(frozen=True)
class LockOwner:
    """The process a run folder's lock names, and whether it still holds the lock."""

    described: str
    """``pid 123 on host, started 2026-...``, as the lock file names it."""
    alive: bool


def lock_owner(folder: Path) -> LockOwner | None:
    """The process named in ``folder``'s ``run.lock`` (``None`` when there is no lock file,
    or no ``flock`` on this platform to ask), and whether it still holds the lock.

    A process of this host whose pid is gone is dead at once; otherwise the lock is asked
    (a shared, non-blocking ``flock`` taken and dropped at once): the kernel released it
    when its holder ended, however it ended. The pid comes first so that a live run's own
    lock is never touched; only a pid reused by another process leads to the ask.
    """
    path = folder / LOCK_NAME
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock on this platform
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        described = _holder(path)
        record = _record(path)
        pid = record.get("pid")
        if record.get("host") == socket.gethostname() and isinstance(pid, int):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return LockOwner(described, alive=False)
            except PermissionError:  # another user's live process
                pass
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return LockOwner(described, alive=True)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return LockOwner(described, alive=False)
    finally:
        os.close(fd)


def _record(path: Path) -> dict[str, object]:
    try:
        record = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}
