"""Batch plumbing shared by every judge kind (LLMJudge, Panel, PairwiseJudge).

- :func:`map_items` applies a ``fields`` mapping and checks every item before any call;
- :func:`run_items` judges items with bounded concurrency, in input order, with progress;
- :class:`ManyItemsJudge` is the batch API over a kind's ``judge(item)``: ``judge_items`` and
  the sync twins;
- :class:`OutcomeResults` is the base of the results containers: scores, failures,
  usage, mean, pandas.

>>> map_items([{"q": "2+2?", "a": "4"}], {"prompt": "q", "response": "a"},
...           ("prompt", "response"), "my judge")
[{'q': '2+2?', 'a': '4', 'prompt': '2+2?', 'response': '4'}]
>>> map_items([{"q": "2+2?"}], None, ("prompt",), "my judge")
Traceback (most recent call last):
...
jurist.errors.DataError: item 1: missing field(s) ['prompt'] needed by my judge; the item has ['q']
"""

from __future__ import annotations

import abc
import asyncio
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar, overload

from pydantic import BaseModel

from jurist._local_files import LocalFiles
from jurist._missing import is_missing
from jurist._progress import BatchProgress
from jurist._sync import run_sync
from jurist.data._item_names import item_name
from jurist.data._local_images import resolve_images
from jurist.errors import DataError
from jurist.judges._items import as_item_dicts
from jurist.templates import check_item, supplies
from jurist.types import Usage

__all__ = ["ManyItemsJudge", "OutcomeResults", "map_items", "run_items"]

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")
Out = TypeVar("Out")


def map_items(
    rows: Sequence[Mapping[str, Any]],
    fields: Mapping[str, str] | None,
    required: Sequence[str],
    who: str,
    *,
    files: LocalFiles | None = None,
) -> list[dict[str, Any]]:
    """Each row with ``fields`` (judge field -> item key) applied, checked for ``required``.

    A field that the row's conversation gives (``messages``: ``prompt`` and ``response``)
    is not missing, and the conversation and images are checked here (see
    :func:`~jurist.templates.check_item`). ``files``: the local files policy the rows'
    local image paths are permitted by (none is read without one; see
    :mod:`jurist._local_files`).
    """
    out: list[dict[str, Any]] = []
    for index, row in enumerate(rows):
        values = dict(row)
        for field, key in (fields or {}).items():
            values[field] = row.get(key)
        where = item_name(index, row)  # the data's id, else the 1-based row number
        if files is not None:
            values = resolve_images(values, files, where)
        check_item(values, where=where)
        missing = [f for f in required if is_missing(values.get(f)) and not supplies(values, f)]
        if missing:
            names = [fields.get(f, f) if fields else f for f in missing]
            raise DataError(
                f"{where}: missing field(s) {names} needed by {who}; the item has {sorted(row)}"
            )
        out.append(values)
    return out


async def run_items(
    judge_one: Callable[[int], Awaitable[Out]],
    n: int,
    *,
    concurrency: int,
    progress: bool = False,
    ok: Callable[[Out], bool] | None = None,
) -> list[Out]:
    """``judge_one(i)`` for ``i`` in ``range(n)``, at most ``concurrency`` at once, in order.

    The progress bar counts an outcome as scored by ``ok`` (default: its ``score`` is set).
    """
    results: list[Out | None] = [None] * n
    next_index = iter(range(n))
    workers = min(max(1, concurrency), max(1, n))
    with BatchProgress(n, enabled=progress) as bar:

        async def worker() -> None:
            for i in next_index:
                outcome = await judge_one(i)
                results[i] = outcome
                if not progress:  # nothing draws the counts: none to keep
                    continue
                usage = getattr(outcome, "usage", None)
                tokens = usage.total_tokens if isinstance(usage, Usage) else 0
                good = ok(outcome) if ok else getattr(outcome, "score", None) is not None
                bar.advance(ok=good, tokens=tokens)

        await asyncio.gather(*(worker() for _ in range(workers)))
    return [r for r in results if r is not None]


class ManyItemsJudge(abc.ABC, Generic[T, R]):
    """The batch API of a judge kind, built on its ``judge(item)``.

    A subclass sets ``name`` and ``concurrency``, and implements ``required_fields``,
    :meth:`judge` and :meth:`_results` (the outcomes of a batch -> its results container).
    """

    name: str
    concurrency: int

    @property
    @abc.abstractmethod
    def required_fields(self) -> tuple[str, ...]: ...

    @abc.abstractmethod
    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> T: ...

    @abc.abstractmethod
    def _results(self, outcomes: list[T], rows: list[dict[str, Any]]) -> R: ...

    def _who(self) -> str:
        """How a missing-field error names this judge."""
        return f"{type(self).__name__} {self.name!r}"

    async def judge_items(
        self,
        items: Iterable[Mapping[str, Any]] | Any,
        *,
        retries: int = 0,
        fields: Mapping[str, str] | None = None,
        concurrency: int | None = None,
        progress: bool = False,
        files_root: Any = None,
    ) -> R:
        """Judge a batch: a list of dicts, a pandas DataFrame or a datasets.Dataset.

        ``fields`` maps the judge's field names to the item's keys
        (``{"prompt": "question", "response": "answer"}``). Every item's fields are checked
        before the first call; one failing item never loses the others. ``files_root``:
        the folders (one or several) the items' local image files may be read from
        (relative paths from the working folder); without it no local file is read (see
        docs/security.md).
        """
        rows = as_item_dicts(items)
        files = LocalFiles.allowing(files_root) if files_root is not None else None
        mapped = map_items(rows, fields, self.required_fields, self._who(), files=files)

        async def one(i: int) -> T:
            return await self.judge(mapped[i], retries=retries)

        outcomes = await run_items(
            one, len(mapped), concurrency=concurrency or self.concurrency, progress=progress
        )
        return self._results(outcomes, rows)

    def judge_sync(
        self,
        items: Iterable[Mapping[str, Any]] | Any,
        *,
        retries: int = 0,
        fields: Mapping[str, str] | None = None,
        concurrency: int | None = None,
        progress: bool = False,
        files_root: Any = None,
    ) -> R:
        """Sync twin of :meth:`judge_items`; works inside a running event loop too."""
        return run_sync(
            self.judge_items(
                items,
                retries=retries,
                fields=fields,
                concurrency=concurrency,
                progress=progress,
                files_root=files_root,
            )
        )

    judge_items_sync = judge_sync

    def judge_one_sync(self, item: Mapping[str, Any], *, retries: int = 0) -> T:
        """Sync twin of :meth:`judge`."""
        return run_sync(self.judge(item, retries=retries))


class OutcomeResults(Sequence[T], Generic[T]):
    """An immutable sequence of outcomes (one per input item) with their input items.

    Each outcome has ``score``, ``error`` and ``usage``. Subclasses add their own views
    and :meth:`to_records`.
    """

    def __init__(self, outcomes: Sequence[T], items: Sequence[dict[str, Any]] | None = None):
        self._outcomes: tuple[T, ...] = tuple(outcomes)
        self._items = tuple(items) if items is not None else None

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[T]: ...
    def __getitem__(self, i: int | slice) -> T | Sequence[T]:
        if isinstance(i, slice):
            items = self._items[i] if self._items is not None else None
            return self._sliced(self._outcomes[i], items)
        return self._outcomes[i]

    def _sliced(
        self, outcomes: Sequence[T], items: Sequence[dict[str, Any]] | None
    ) -> OutcomeResults[T]:
        """A container of the same kind over a slice (subclasses pass their extras)."""
        return type(self)(outcomes, items)

    def __len__(self) -> int:
        return len(self._outcomes)

    def __iter__(self) -> Iterator[T]:
        return iter(self._outcomes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={len(self)}, failed={self.n_failed}, mean={self.mean()})"

    @property
    def items(self) -> tuple[dict[str, Any], ...] | None:
        """The input items, as given (before any field mapping)."""
        return self._items

    @property
    def scores(self) -> list[float | None]:
        return [_score(o) for o in self._outcomes]

    @property
    def errors(self) -> list[str | None]:
        return [getattr(o, "error", None) for o in self._outcomes]

    @property
    def n_failed(self) -> int:
        return sum(1 for o in self._outcomes if _score(o) is None)

    @property
    def failures(self) -> list[tuple[int, T]]:
        """``(index, outcome)`` for each item that got no score."""
        return [(i, o) for i, o in enumerate(self._outcomes) if _score(o) is None]

    @property
    def usage(self) -> Usage:
        total = Usage()
        for o in self._outcomes:
            total = total + getattr(o, "usage", Usage())
        return total

    def mean(self) -> float | None:
        """Mean over scored items (failures are skipped, not counted as 0)."""
        scored = [s for s in self.scores if s is not None]
        return sum(scored) / len(scored) if scored else None

    def _input_row(self, i: int) -> dict[str, Any]:
        return dict(self._items[i]) if self._items is not None else {}

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per item: its input fields, then the kind's own columns
        (:meth:`_columns`), which never overwrite an input field of another name."""
        return [{**self._input_row(i), **self._columns(o)} for i, o in enumerate(self)]

    @abstractmethod
    def _columns(self, outcome: T) -> dict[str, Any]:
        """The record columns of one outcome (each kind prefixes its own)."""

    def to_pandas(self) -> Any:
        """A pandas DataFrame of :meth:`to_records` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            from jurist.errors import MissingDependencyError

            raise MissingDependencyError(
                "pandas", "dev", f"{type(self).__name__}.to_pandas()"
            ) from e
        return pd.DataFrame(self.to_records())


def _score(outcome: Any) -> float | None:
    score = getattr(outcome, "score", None)
    return None if score is None else float(score)
