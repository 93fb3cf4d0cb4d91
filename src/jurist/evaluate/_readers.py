"""Reading datasets from files: JSONL, JSON, CSV (and Parquet with pyarrow).

Errors name the file and the line: ``data.jsonl:3: not valid JSON (...)``.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "d.jsonl"
>>> _ = p.write_text('{"prompt": "q", "response": "a"}\\n\\n')
>>> rows = read_records(p)
>>> rows, rows.where(0)
([{'prompt': 'q', 'response': 'a'}], '...d.jsonl:1')
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from jurist.errors import DataError

__all__ = ["Records", "read_records", "require_fields"]


class Records(list[dict[str, Any]]):
    """Rows read from a file, with the source line of each row (1-based)."""

    def __init__(self, rows: list[dict[str, Any]], source: str, lines: list[int]) -> None:
        super().__init__(rows)
        self.source = source
        self.lines = lines

    def where(self, index: int) -> str:
        """``file:line`` of the row at ``index``."""
        return f"{self.source}:{self.lines[index]}"


def read_records(path: str | Path) -> Records:
    """The records in ``path``, by its extension: .jsonl/.ndjson, .json, .csv, .parquet."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p}: no such file")
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return _read_jsonl(p)
    if suffix == ".json":
        return _read_json(p)
    if suffix == ".csv":
        return _read_csv(p)
    if suffix == ".parquet":
        return _read_parquet(p)
    raise DataError(f"{p}: unknown data format {suffix!r}; use .jsonl, .json, .csv or .parquet")


def _read_jsonl(p: Path) -> Records:
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    with p.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(
                    f"{p}:{lineno}: not valid JSON ({e.msg} at column {e.colno})"
                ) from None
            if not isinstance(row, dict):
                raise DataError(f"{p}:{lineno}: expected a JSON object, got {type(row).__name__}")
            rows.append(row)
            lines.append(lineno)
    return Records(rows, str(p), lines)


def _read_json(p: Path) -> Records:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{p}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(data, list):
        raise DataError(f"{p}: expected a JSON array of objects")
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise DataError(f"{p}: item {i} is a {type(row).__name__}, not an object")
    return Records(data, str(p), list(range(1, len(data) + 1)))


def _read_csv(p: Path) -> Records:
    with p.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None:
            raise DataError(f"{p}: empty CSV file (no header line)")
        rows: list[dict[str, Any]] = []
        lines: list[int] = []
        for row in reader:
            if None in row:
                raise DataError(
                    f"{p}:{reader.line_num}: more values than the {len(reader.fieldnames)} "
                    "columns of the header"
                )
            rows.append(dict(row))
            lines.append(reader.line_num)
        return Records(rows, str(p), lines)


def _read_parquet(p: Path) -> Records:
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        from jurist.errors import MissingDependencyError

        raise MissingDependencyError("pyarrow", "dev", "Reading Parquet") from e
    rows: list[dict[str, Any]] = pq.read_table(p).to_pylist()
    return Records(rows, str(p), list(range(1, len(rows) + 1)))


def require_fields(rows: Records, fields: dict[str, str]) -> None:
    """Stop with the row's place if any row lacks a needed field.

    ``fields`` maps a role (``prompt``) to the column that holds it (``question``).
    """
    for i, row in enumerate(rows):
        for role, column in fields.items():
            if row.get(column) is None:
                where = rows.where(i)
                raise DataError(
                    f"{where}: missing field {column!r} (the {role}); the fields are {sorted(row)}"
                )
