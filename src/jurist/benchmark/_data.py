"""Labelled datasets for a bench: pairwise (two responses, a preferred one) or pointwise.

A **pairwise** row has ``prompt``, ``response_a``, ``response_b`` and ``label``: ``A``,
``B`` or ``tie`` (``A>B``, ``B>A``, ``A=B``, ``1``, ``2`` and ``0`` are read as those). A
**pointwise** row has ``prompt``, ``response`` and ``label``: a number (a human score) or
a category (a verdict name such as ``Correct``). Either may have ``id`` (kept; else the
row's position), ``source`` (the per-source breakdown) and the replay columns
``recorded`` and ``scores`` (see :mod:`jurist.benchmark._replay`); other fields travel
with the item to the judge (a ``reference``, a ``rubric``).

A pairwise row becomes two items to judge, one per order (:func:`order_items`): as given
(``order`` ``"ab"``) and with the responses swapped (``"ba"``), so every judge is asked
both ways and the bench reads the position effect itself.

>>> ds = bench_dataset([{"prompt": "2+2?", "response_a": "4", "response_b": "5", "label": "A>B"}])
>>> ds.kind, ds.rows[0]["label"], ds.rows[0]["id"]
('pairwise', 'A', '0')
>>> [(it["order"], it["response_a"]) for it in order_items(ds)]
[('ab', '4'), ('ba', '5')]
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from jurist.errors import DataError

__all__ = [
    "BenchDataset",
    "DataKind",
    "bench_dataset",
    "order_items",
    "pair_label",
]

DataKind = Literal["pairwise", "pointwise"]
"""What a dataset's rows compare: two responses, or one response against a label."""

_PAIR_LABELS = {
    "a": "A",
    "a>b": "A",
    "a>>b": "A",
    "1": "A",
    "b": "B",
    "b>a": "B",
    "b>>a": "B",
    "2": "B",
    "tie": "tie",
    "a=b": "tie",
    "b=a": "tie",
    "c": "tie",
    "0": "tie",
}
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_ROWS = 1_000_000
"""The most rows one bench dataset may hold (a bound on what is read into memory)."""


def pair_label(value: Any, where: str) -> str:
    """A pairwise label as ``"A"``, ``"B"`` or ``"tie"``.

    >>> pair_label("B>A", "row 1"), pair_label(1, "row 2"), pair_label("Tie", "row 3")
    ('B', 'A', 'tie')
    """
    key = str(value).strip().lower() if value is not None else ""
    if isinstance(value, float) and value.is_integer():
        key = str(int(value))
    if key not in _PAIR_LABELS:
        raise DataError(f"{where}: label {value!r} is not A, B or tie (nor A>B, B>A, A=B, 1, 2, 0)")
    return _PAIR_LABELS[key]


def _point_label(value: Any, where: str) -> float | str:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        if not math.isfinite(float(value)):
            raise DataError(f"{where}: label {value!r} is not a finite number")
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            number = float(value)
        except ValueError:
            return value.strip()
        if math.isfinite(number):
            return number
    raise DataError(f"{where}: label {value!r} is neither a number nor a category name")


@dataclass(frozen=True)
class BenchDataset:
    """One labelled dataset: its ``name``, ``kind`` and ``rows`` (each with ``id``,
    ``label`` read as above, and ``source`` when given)."""

    name: str
    kind: DataKind
    rows: tuple[dict[str, Any], ...]
    origin: str = "in memory"

    @property
    def folder(self) -> str:
        """The dataset's name as a folder name (the run folders are named after it)."""
        return _SAFE.sub("_", self.name).strip("._") or "data"

    @property
    def labels(self) -> list[Any]:
        return [r["label"] for r in self.rows]

    @property
    def numeric(self) -> bool:
        """Pointwise labels that are all numbers."""
        return self.kind == "pointwise" and all(isinstance(v, float) for v in self.labels)


def _kind(row: Mapping[str, Any], where: str) -> DataKind:
    if "response_a" in row and "response_b" in row:
        return "pairwise"
    if "response" in row:
        return "pointwise"
    raise DataError(
        f"{where}: a bench row needs response_a and response_b (pairwise) or response "
        f"(pointwise); it has {sorted(row)}"
    )


def bench_dataset(data: Any, *, name: str | None = None, origin: str | None = None) -> BenchDataset:
    """``data`` (a list of dicts, a DataFrame, or a .jsonl/.json/.csv/.parquet path) as a
    checked :class:`BenchDataset`; every row needs ``prompt`` and ``label``, and all rows
    one kind. Ids must be unique (a repeated id names both rows)."""
    if isinstance(data, BenchDataset):
        return data
    places: list[str] | None = None
    if isinstance(data, str | Path):
        from jurist.data._readers import read_records

        records = read_records(data)
        rows_in: Sequence[Mapping[str, Any]] = records
        places = records.places
        name = name or Path(data).stem
        origin = origin or str(data)
    elif hasattr(data, "to_dict") and hasattr(data, "columns"):
        rows_in = data.to_dict(orient="records")
    else:
        rows_in = list(data)
    if not rows_in:
        raise DataError(f"bench dataset {name or origin or ''!r} has no rows".replace(" ''", ""))
    if len(rows_in) > MAX_ROWS:
        raise DataError(f"bench dataset has {len(rows_in)} rows, more than {MAX_ROWS}")
    kind: DataKind | None = None
    rows: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for i, raw in enumerate(rows_in):
        where = places[i] if places else f"row {i + 1}"
        if not isinstance(raw, Mapping):
            raise DataError(f"{where}: a bench row is an object, not {type(raw).__name__}")
        this = _kind(raw, where)
        if kind is None:
            kind = this
        elif this != kind:
            raise DataError(f"{where}: a {this} row in a {kind} dataset (one kind per dataset)")
        for field in ("prompt", "label"):
            if raw.get(field) is None:
                raise DataError(f"{where}: no {field!r}")
        row = dict(raw)
        row["id"] = str(raw.get("id", i))
        if row["id"] in seen:
            raise DataError(f"{where}: id {row['id']!r} repeats {seen[row['id']]}")
        seen[row["id"]] = where
        label = raw["label"]
        pairwise = kind == "pairwise"
        row["label"] = pair_label(label, where) if pairwise else _point_label(label, where)
        if row.get("source") is not None:
            row["source"] = str(row["source"])
        rows.append(row)
    assert kind is not None
    return BenchDataset(
        name=name or "data", kind=kind, rows=tuple(rows), origin=origin or "in memory"
    )


def order_items(dataset: BenchDataset) -> Iterator[dict[str, Any]]:
    """The items a judge is asked: a pairwise row twice (``order`` ``"ab"`` as given,
    ``"ba"`` swapped; ``pair`` the row's id), a pointwise row once."""
    for row in dataset.rows:
        base = {k: v for k, v in row.items() if k != "label"}
        if dataset.kind == "pointwise":
            yield base
            continue
        yield {**base, "id": f"{row['id']}:ab", "pair": row["id"], "order": "ab"}
        yield {
            **base,
            "id": f"{row['id']}:ba",
            "pair": row["id"],
            "order": "ba",
            "response_a": row["response_b"],
            "response_b": row["response_a"],
        }
