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

from pathlib import Path
from typing import Any

from jurist._missing import field_problem
from jurist.errors import DataError

__all__ = ["Records", "read_records", "require_fields"]


class Records(list[dict[str, Any]]):
    """Rows read from a file, with the place of each row (``file:line``)."""

    def __init__(self, rows: list[dict[str, Any]], source: str, places: list[str]) -> None:
        super().__init__(rows)
        self.source = source
        self.places = places

    def where(self, index: int) -> str:
        """Where the row at ``index`` came from: ``file:line`` (``file: item i`` for JSON)."""
        return self.places[index]


def read_records(path: str | Path, *, files_root: Any = None) -> Records:
    """All the records in ``path`` at once, by its extension: .jsonl/.ndjson, .json, .csv,
    .parquet (read with the batch engine's streaming readers; see
    :func:`~jurist.data.open_source` to stream instead). Local image paths come back
    permitted by the local files policy (the file's folder and ``files_root``; see
    :mod:`jurist._local_files`), as absolute real paths: the rows leave the file behind."""
    from jurist.data._local_images import resolve_images
    from jurist.data._source import open_source

    source = open_source(Path(path), files_root=files_root)
    rows: list[dict[str, Any]] = []
    places: list[str] = []
    for _, place, row in source:
        rows.append(resolve_images(row, source.files, place))
        places.append(place)
    return Records(rows, str(path), places)


def require_fields(rows: Records, fields: dict[str, str]) -> None:
    """Stop with the row's place if any row lacks a needed field.

    ``fields`` maps a role (``prompt``) to the column that holds it (``question``).
    """
    for i, row in enumerate(rows):
        for role, column in fields.items():
            problem = field_problem(row, column, role=role)
            if problem is not None:
                raise DataError(f"{rows.where(i)}: {problem}; the fields are {sorted(row)}")
