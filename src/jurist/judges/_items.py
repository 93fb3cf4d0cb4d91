"""Turn the shapes users pass as a batch into a list of dicts.

Accepted: a sequence or iterable of mappings, a pandas DataFrame, a ``datasets.Dataset``.

>>> as_item_dicts([{"prompt": "q", "response": "a"}])
[{'prompt': 'q', 'response': 'a'}]
>>> as_item_dicts([1])
Traceback (most recent call last):
...
jurist.errors.DataError: item 1 is a int, not a mapping of field names to values
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jurist.errors import DataError

__all__ = ["as_item_dicts"]


def as_item_dicts(data: Iterable[Mapping[str, Any]] | Any) -> list[dict[str, Any]]:
    """The items of ``data`` as plain dicts, in order."""
    module = type(data).__module__
    if module.startswith("pandas") and hasattr(data, "to_dict"):
        records: list[dict[str, Any]] = data.to_dict(orient="records")
        return [{str(k): v for k, v in r.items()} for r in records]
    if isinstance(data, Mapping | str | bytes):
        raise DataError(
            f"expected a batch of items (a list of dicts, a DataFrame or a Dataset), got a "
            f"{type(data).__name__}"
        )
    rows: list[dict[str, Any]] = []
    for i, row in enumerate(data):
        if not isinstance(row, Mapping):
            raise DataError(
                f"item {i + 1} is a {type(row).__name__}, not a mapping of field names to values"
            )
        rows.append(dict(row))
    return rows
