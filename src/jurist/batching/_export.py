"""Request files for an offline engine (``BatchAPIOptions(file_out=...)``).

A round's request files (written as the requests were parked) are moved to ``file_out``
(one file per model, and more files, numbered, past the per-file limits) and recorded as
*exported*; the run stops with the status ``awaiting results``.
:func:`jurist.engines.ingest` reads the results back.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jurist.batching._journal import Journal
from jurist.batching._rounds import Piece

__all__ = ["export", "exported_files", "numbered"]


def numbered(path: Path, n: int) -> Path:
    """``path`` for the first file, then ``stem.N.suffix``.

    >>> numbered(Path("reqs.jsonl"), 1), numbered(Path("reqs.jsonl"), 3)
    (PosixPath('reqs.jsonl'), PosixPath('reqs.3.jsonl'))
    """
    return path if n == 1 else path.with_name(f"{path.stem}.{n}{path.suffix}")


def export(
    journal: Journal,
    pieces: Iterable[tuple[dict[str, Any], Piece]],
    file_out: Path,
    round_no: int,
) -> list[Path]:
    """Move each ``(model identity, request file)`` to ``file_out`` (numbered past the
    first) and record it as exported; the files written."""
    written: list[Path] = []
    for n, (identity, piece) in enumerate(pieces, 1):
        path = numbered(file_out, n)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(piece.path, path)
        journal.add_chunk(
            f"export-r{round_no}-{uuid.uuid4().hex[:10]}",
            round_no=round_no,
            model=identity,
            ids=piece.ids,
            size=piece.size,
            state="exported",
            path=str(path.resolve()),
        )
        written.append(path)
    return written


def exported_files(journal: Journal) -> list[Path]:
    """The request files written and not read back yet."""
    return [Path(c.path) for c in journal.chunks("exported") if c.path]
