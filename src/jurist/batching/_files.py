"""The request files of a round, written line by line as requests park, and the
``custom_id`` of a request."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import IO, Any

import orjson

from jurist.batching._rounds import Piece
from jurist.errors import DataError

__all__ = ["RequestFile", "request_key"]


def request_key(model: dict[str, Any], body: dict[str, Any]) -> str:
    """16 hex digits of SHA-256 over the model identity and the request body (canonical).

    >>> request_key({"name": "m"}, {"b": 1, "a": 2}) == request_key({"name": "m"}, {"a": 2, "b": 1})
    True
    """
    raw = orjson.dumps({"model": model, "body": body}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(raw).hexdigest()[:16]


class RequestFile:
    """The request files of one model for the next round, written line by line and cut at
    the provider's limits."""

    def __init__(self, folder: Path, stem: str, max_requests: int, max_bytes: int) -> None:
        self.folder, self.stem = folder, stem
        self.max_requests, self.max_bytes = max_requests, max_bytes
        self.pieces: list[Piece] = []
        self._file: IO[bytes] | None = None
        self._ids: list[tuple[str, int]] = []
        self._size = 0

    def add(self, cid: str, idx: int, line: bytes) -> None:
        if len(line) > self.max_bytes:
            raise DataError(
                f"batch request {cid!r} is {len(line)} bytes, more than a whole batch file "
                f"may hold (max_bytes_per_file={self.max_bytes})"
            )
        if self._file is not None and (
            len(self._ids) >= self.max_requests or self._size + len(line) > self.max_bytes
        ):
            self._close()
        if self._file is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / f"{self.stem}-{len(self.pieces) + 1}.jsonl"
            self._file = path.open("wb")
        self._file.write(line)
        self._ids.append((cid, idx))
        self._size += len(line)

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
            self.pieces.append(Piece(Path(self._file.name), self._ids, self._size))
            self._file, self._ids, self._size = None, [], 0

    def close(self) -> list[Piece]:
        self._close()
        return self.pieces
