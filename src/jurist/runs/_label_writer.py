"""Labels given by people, written to a run folder's ``labels.jsonl``: each at once, whole.

One JSON object per line::

    {"item": 3, "item_hash": "9f2c...", "label": 4, "annotator": "ana",
     "at": "2026-12-02T03:41:14.123Z", "note": null}

``item`` is the item's key in the run store (its 0-based position, ``idx``), ``item_hash``
the hash the store keeps for it (a label stays tied to the item it was given for, even if
the data changes), ``label`` a number or a text from the label scale, ``at`` when it was
given (ISO-8601, UTC) and ``note`` the annotator's free text. An optional
``inclusion_probability`` (in (0, 1]) says how likely the item was to be chosen for
labelling, for the estimates that weigh a chosen subset. The last line for an
``(item, annotator)`` wins; a line whose ``label`` is ``null`` takes that label back
(undo). The file is only ever appended to.

**Every label is written at once and whole.** :meth:`LabelWriter.write` appends one full
line with one ``write`` call, then ``fsync``, under an exclusive ``flock`` on the file, so
two annotators (two requests, or two processes) never tear or interleave their lines, and
a label acknowledged is on disk. A process killed in the middle of a write can leave a
last line without its newline: the next writer (on restart, or before its own append)
finds it, moves its bytes to ``labels.jsonl.torn`` and cuts it off, so the file again ends
with a whole line. That label was never acknowledged: the page that sent it sends it
again, and the writer keeps it once: a line with the same ``(item, annotator, at)`` as one
already in the file is not written twice (:meth:`LabelWriter.write` returns ``False``).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "labels.jsonl"
>>> w = LabelWriter(path)
>>> line = LabelLine(item=0, item_hash="h0", label=4, annotator="ana",
...                  at="2026-12-02T03:41:14.123Z")
>>> w.write(line), w.write(line)
(True, False)
>>> _ = open(path, "ab").write(b'{"item": 1, "item_ha')  # a writer killed mid-line
>>> w2 = LabelWriter(path)
>>> w2.torn_bytes, [x.label for x in read_labels(path).lines]
(20, [4])
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from jurist.errors import DataError, OutputError

__all__ = [
    "LABELS_NAME",
    "MAX_LINE_BYTES",
    "LabelFile",
    "LabelLine",
    "LabelWriter",
    "read_labels",
]

LABELS_NAME = "labels.jsonl"
"""The labels' file name in a run folder."""
TORN_SUFFIX = ".torn"
MAX_LINE_BYTES = 64 * 1024
"""The longest line written or read (a note is text, not a document)."""
MAX_ANNOTATOR = 100
MAX_NOTE = 10_000


class LabelLine(BaseModel):
    """One line of ``labels.jsonl`` (see the module docs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item: int = Field(ge=0)
    item_hash: str = Field(min_length=1, max_length=200)
    label: int | float | str | None
    annotator: str = Field(min_length=1, max_length=MAX_ANNOTATOR)
    at: str
    note: str | None = Field(default=None, max_length=MAX_NOTE)
    inclusion_probability: float | None = Field(default=None, gt=0.0, le=1.0)

    @field_validator("annotator")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        if not v.strip() or any(ord(c) < 32 or ord(c) == 127 for c in v):
            raise ValueError("an annotator's name is visible text, without control characters")
        return v.strip()

    @field_validator("label")
    @classmethod
    def _finite(cls, v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("a label is a finite number or a text")
        if isinstance(v, str) and not 0 < len(v) <= 200:
            raise ValueError("a text label has 1 to 200 characters")
        return v

    @field_validator("at")
    @classmethod
    def _iso_utc(cls, v: str) -> str:
        try:
            when = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError as e:
            raise ValueError(f"not an ISO-8601 time: {v!r}") from e
        if when.utcoffset() is None or when.utcoffset().total_seconds() != 0:  # type: ignore[union-attr]
            raise ValueError(f"a UTC time (ending Z or +00:00), not {v!r}")
        return v

    @property
    def key(self) -> tuple[int, str, str]:
        """What makes a line the same label given again: ``(item, annotator, at)``."""
        return (self.item, self.annotator, self.at)

    def to_bytes(self) -> bytes:
        """The line as written, with its newline (``inclusion_probability`` only when set)."""
        data = self.model_dump(exclude={"inclusion_probability"})
        if self.inclusion_probability is not None:
            data["inclusion_probability"] = self.inclusion_probability
        return orjson.dumps(data) + b"\n"


@dataclass
class LabelFile:
    """What :func:`read_labels` read: every valid line in file order, the lines it could
    not read (``(line number, reason)``), the byte offset of the end of the last whole
    line and the number of the line after it (where a reader following the file goes on
    from)."""

    lines: list[LabelLine] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    offset: int = 0
    next_line: int = 1

    def latest(self) -> dict[tuple[int, str], LabelLine]:
        """The line in force for each ``(item, annotator)`` (the last; undone ones left
        out)."""
        out: dict[tuple[int, str], LabelLine] = {}
        for line in self.lines:
            out[(line.item, line.annotator)] = line
        return {k: v for k, v in out.items() if v.label is not None}


def parse_lines(data: bytes, start_line: int = 1) -> tuple[list[LabelLine], list[tuple[int, str]]]:
    """The whole lines in ``data`` (which ends at a newline) as labels, and the problems."""
    lines: list[LabelLine] = []
    problems: list[tuple[int, str]] = []
    for n, raw in enumerate(data.split(b"\n")[:-1], start=start_line):
        if not raw.strip():
            continue
        try:
            lines.append(LabelLine.model_validate(orjson.loads(raw)))
        except (orjson.JSONDecodeError, ValidationError) as e:
            problems.append((n, str(e).splitlines()[0][:200]))
    return lines, problems


def read_labels(path: str | Path, offset: int = 0, first_line: int = 1) -> LabelFile:
    """The labels in ``path`` from byte ``offset`` on (a missing file: none). A last line
    without its newline (a writer killed mid-line, or writing now) is left for later."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return LabelFile(offset=offset, next_line=first_line)
    except OSError as e:
        raise DataError(f"{p}: cannot read the labels: {e}") from e
    whole = data.rfind(b"\n") + 1
    lines, problems = parse_lines(data[:whole], first_line)
    next_line = first_line + data.count(b"\n", 0, whole)
    return LabelFile(lines=lines, problems=problems, offset=offset + whole, next_line=next_line)


@contextlib.contextmanager
def _locked(fd: int) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock here: one writing process per run
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


class LabelWriter:
    """Appends labels to ``path`` (see the module docs); safe across threads and processes.

    Opening one repairs a torn last line (:attr:`torn_bytes`: how many bytes were cut, kept
    in ``<path>.torn``). :meth:`close` releases the file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._thread_lock = threading.Lock()
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise OutputError(f"{self.path}: cannot open the labels file: {e}") from e
        self._seen: set[tuple[int, str, str]] = set()
        self._offset = 0
        self._line_no = 1
        self.torn_bytes = 0
        with self._thread_lock, _locked(self._fd):
            self.torn_bytes = self._repair()
            self._follow()

    def close(self) -> None:
        with self._thread_lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def _repair(self) -> int:
        """Cut a last line without its newline (under the lock); returns its length."""
        size = os.fstat(self._fd).st_size
        if size == 0 or os.pread(self._fd, 1, size - 1) == b"\n":
            return 0
        start = size
        while start > 0:  # back to the byte after the last newline
            step = min(65536, start)
            chunk = os.pread(self._fd, step, start - step)
            at = chunk.rfind(b"\n")
            if at >= 0:
                start = start - step + at + 1
                break
            start -= step
        torn = os.pread(self._fd, size - start, start)
        try:
            with open(str(self.path) + TORN_SUFFIX, "ab") as keep:
                keep.write(torn + b"\n")
                keep.flush()
                os.fsync(keep.fileno())
            os.ftruncate(self._fd, start)
            os.fsync(self._fd)
        except OSError as e:
            raise OutputError(f"{self.path}: cannot repair a torn last line: {e}") from e
        return size - start

    def _follow(self) -> None:
        """Read what was appended since the last look (by any process), under the lock."""
        found = read_labels(self.path, self._offset, self._line_no)
        self._offset, self._line_no = found.offset, found.next_line
        self._seen.update(line.key for line in found.lines)

    def _append(self, data: bytes) -> None:
        """One line to the end of the file, then ``fsync`` (the lock is held)."""
        written = os.write(self._fd, data)
        while written < len(data):  # a regular file takes it whole; to be sure
            written += os.write(self._fd, data[written:])
        os.fsync(self._fd)

    def write(self, line: LabelLine) -> bool:
        """Append ``line`` whole and durably; ``False`` when the file already holds a line
        with its ``(item, annotator, at)`` (the same label sent again), nothing written."""
        data = line.to_bytes()
        if len(data) > MAX_LINE_BYTES:
            raise DataError(f"{self.path}: a label line over {MAX_LINE_BYTES} bytes")
        with self._thread_lock:
            if self._fd < 0:
                raise OutputError(f"{self.path}: the label writer is closed")
            with _locked(self._fd):
                self.torn_bytes += self._repair()
                self._follow()
                if line.key in self._seen:
                    return False
                try:
                    self._append(data)
                except OSError as e:
                    raise OutputError(f"{self.path}: cannot write a label: {e}") from e
                self._seen.add(line.key)
                self._offset += len(data)
                self._line_no += 1
        return True
