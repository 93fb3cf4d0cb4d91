"""Request files for an offline engine (``BatchAPIOptions(file_out=...)``).

A round's requests are written as Batch API lines to ``file_out`` (one file per model,
and more files, numbered, past the per-file limits) and recorded as *exported*; the run
stops with the status ``awaiting results``. :func:`jurist.evaluate.ingest` reads the
results back.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from jurist._files import replaced_atomically

if TYPE_CHECKING:
    from jurist.evaluate._batch_options import BatchAPIOptions
    from jurist.evaluate._batch_store import BatchStore
    from jurist.evaluate._store import RunStore


class Pending(Protocol):
    """A parked request as the batch engine holds it."""

    identity: dict[str, Any]
    body: dict[str, Any]
    idx: int


__all__ = ["export", "exported_files", "numbered"]


def numbered(path: Path, n: int) -> Path:
    """``path`` for the first file, then ``stem.N.suffix``.

    >>> numbered(Path("reqs.jsonl"), 1), numbered(Path("reqs.jsonl"), 3)
    (PosixPath('reqs.jsonl'), PosixPath('reqs.3.jsonl'))
    """
    return path if n == 1 else path.with_name(f"{path.stem}.{n}{path.suffix}")


def export(
    store: BatchStore,
    run_store: RunStore,
    options: BatchAPIOptions,
    pending: Mapping[str, Pending],
    file_out: Path,
    round_no: int,
) -> list[Path]:
    """Write ``pending`` to ``file_out`` (numbered past the limits); the files written."""
    from jurist.models._openai_batch import request_line, split_lines

    groups: dict[str, list[tuple[str, Pending]]] = defaultdict(list)
    identities: dict[str, dict[str, Any]] = {}
    for cid, waiter in pending.items():
        identity = waiter.identity
        key = orjson.dumps(identity, option=orjson.OPT_SORT_KEYS).decode()
        identities[key] = identity
        groups[key].append((cid, waiter))
    written: list[Path] = []
    n = 0
    for key, entries in groups.items():
        raws = {request_line(cid, w.body): (cid, w.idx) for cid, w in entries}
        for piece in split_lines(
            list(raws),
            max_requests=options.max_requests_per_file,
            max_bytes=options.max_bytes_per_file,
        ):
            n += 1
            path = numbered(file_out, n)
            path.parent.mkdir(parents=True, exist_ok=True)
            with replaced_atomically(path, what="the batch request file") as tmp:
                tmp.write_bytes(b"".join(piece))
            store.add_chunk(
                f"export-r{round_no}-{uuid.uuid4().hex[:10]}",
                round_no=round_no,
                model=identities[key],
                ids=[raws[raw] for raw in piece],
                size=sum(len(raw) for raw in piece),
                state="exported",
                path=str(path.resolve()),
            )
            written.append(path)
    run_store.set_meta("batch_file_out", [str(p) for p in exported_files(store)])
    return written


def exported_files(store: BatchStore) -> list[Path]:
    """The request files written and not read back yet."""
    return [Path(c.path) for c in store.chunks("exported") if c.path]
