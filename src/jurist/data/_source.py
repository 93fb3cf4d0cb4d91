"""Datasets read lazily, one row at a time: files, DataFrames, ``datasets.Dataset``, iterables.

:func:`open_source` wraps what the user passes in an :class:`ItemSource` that yields
``(index, where, row)``: the row's position, where it came from (``data.jsonl:3`` or
``item 2``) and the row as a plain dict. Files are streamed (JSONL and CSV line by line,
Parquet by record batch), so a run over a large file holds only the rows in flight.

A *re-iterable* source (a file, a sequence, a DataFrame, a Dataset) can be read twice: the
engine reads it once to count the rows, check their fields and hash them (the dataset hash
a resumed run must match), then again to judge. A one-shot iterator is read once; its rows
are checked and hashed as they go.

>>> src = open_source([{"prompt": "q", "response": "a"}])
>>> [(i, where, row["prompt"]) for i, where, row in src]
[(0, 'item 1', 'q')]
>>> scan = src.scan({"prompt": "prompt"})
>>> scan.items, len(scan.dataset_hash)
(1, 32)
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from jurist._files import decode_error, read_utf8
from jurist._local_files import LocalFiles, roots_of
from jurist._missing import field_problem, no_value
from jurist.data._item_names import item_name
from jurist.data._local_images import image_digest, resolve_images
from jurist.errors import DataError, MissingDependencyError
from jurist.templates import PLACE, check_item, supplies

__all__ = ["ItemSource", "Scan", "item_hash", "map_fields", "open_source"]

_BATCH = 1024
_CSV_FIELD_LIMIT = 2**31 - 1  # the largest the csv module takes on every platform


def item_hash(
    row: Mapping[str, Any], *, files: LocalFiles | None = None, where: str = "item"
) -> str:
    """A short stable hash of one row's content (keys sorted; any value JSON can show) and
    of the bytes of the local image files it names that ``files`` permits (the local
    files policy; see :func:`~jurist.data._local_images.image_digest`), so a picture
    changed under the same path changes the hash. A row without local images hashes its
    content alone.

    >>> item_hash({"a": 1, "b": "x"}) == item_hash({"b": "x", "a": 1})
    True
    """
    blob = orjson.dumps(
        row,
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY,
        default=str,
    )
    images = image_digest(row, files or LocalFiles(), where)
    if images is not None:
        blob += b"\0images:" + images.encode()
    return hashlib.blake2b(blob, digest_size=16).hexdigest()


def map_fields(
    row: Mapping[str, Any],
    fields: Mapping[str, str] | None,
    required: Sequence[str],
    where: str,
    *,
    files: LocalFiles | None = None,
) -> dict[str, Any]:
    """The values a judge sees: the row, with each role filled from its column, its local
    image paths checked against ``files``, the local files policy (none allowed when
    ``None``; see :func:`~jurist.data._local_images.resolve_images`), and its place
    (``where``, under :data:`~jurist.templates.PLACE`) for errors found when it is judged.

    ``fields`` maps a judge field (``prompt``) to the column holding it (``question``).
    A required field that is missing, null or NaN stops with the row's place (see
    :mod:`jurist._missing`); an empty string is a value.

    >>> map_fields({"question": "q"}, {"prompt": "question"}, ["prompt"], "d.jsonl:1")
    {'question': 'q', 'prompt': 'q', '__jurist_place__': 'd.jsonl:1'}
    >>> map_fields({"q": 1}, None, ["prompt"], "d.jsonl:4")
    Traceback (most recent call last):
    ...
    jurist.errors.DataError: d.jsonl:4: missing field 'prompt'; the fields are ['q']
    >>> map_fields({"prompt": None}, None, ["prompt"], "d.jsonl:5")
    Traceback (most recent call last):
    ...
    jurist.errors.DataError: d.jsonl:5: field 'prompt' is null; the fields are ['prompt']
    """
    values = dict(row)
    if fields:
        for role, column in fields.items():
            values[role] = row.get(column)
    values = resolve_images(values, files or LocalFiles(), where)
    check_item(values, where=where)  # a conversation's messages, images
    for role in required:
        column = fields.get(role, role) if fields else role
        if supplies(values, role) and no_value(values, role) is not None:
            continue  # the conversation gives it
        problem = field_problem(row, column, role=role)
        if problem is not None:
            raise DataError(f"{where}: {problem}; the fields are {sorted(row)}")
    values[PLACE] = where
    return values


@dataclass(frozen=True)
class Scan:
    """What a first pass over a re-iterable source found."""

    items: int
    dataset_hash: str


class ItemSource:
    """Rows of a dataset, read lazily; ``reiterable`` says it can be read more than once."""

    def __init__(
        self, rows: Iterable[tuple[str, dict[str, Any]]] | None, *, description: str
    ) -> None:
        self._rows = rows
        self.description = description
        self.reiterable = rows is None
        self.base: Path | None = None
        """The data file's folder (``None``: items from memory)."""
        self.files = LocalFiles()
        """The local files policy of its items (see :mod:`jurist._local_files`): a data
        file's folder and the folders allowed; items from memory, only the latter."""
        self._used = False

    def _iter_rows(self) -> Iterator[tuple[str, dict[str, Any]]]:
        assert self._rows is not None
        if self._used:
            raise DataError(f"{self.description}: a one-shot iterator cannot be read twice")
        self._used = True
        return iter(self._rows)

    def __iter__(self) -> Iterator[tuple[int, str, dict[str, Any]]]:
        for index, (where, row) in enumerate(self._iter_rows()):
            yield index, where, row

    def scan(self, fields: Mapping[str, str] | None = None, required: Sequence[str] = ()) -> Scan:
        """Count, check and hash every row (re-iterable sources only)."""
        digest = hashlib.blake2b(digest_size=16)
        n = 0
        for _, where, row in self:
            if required:
                map_fields(row, fields, required, where, files=self.files)
            digest.update(item_hash(row, files=self.files, where=where).encode())
            n += 1
        return Scan(items=n, dataset_hash=digest.hexdigest())


class _FileSource(ItemSource):
    def __init__(self, path: Path, roots: tuple[Path, ...]) -> None:
        super().__init__(None, description=str(path))
        self.path = path
        self.base = path.absolute().parent
        self.files = LocalFiles.of_folder(self.base, roots)

    def _iter_rows(self) -> Iterator[tuple[str, dict[str, Any]]]:
        suffix = self.path.suffix.lower()
        if suffix in (".jsonl", ".ndjson"):
            return _jsonl_rows(self.path)
        if suffix == ".csv":
            return _csv_rows(self.path)
        if suffix == ".parquet":
            return _parquet_rows(self.path)
        return _json_rows(self.path)


class _SequenceSource(ItemSource):
    def __init__(self, data: Sequence[Any], description: str) -> None:
        super().__init__(None, description=description)
        self.data = data

    def _iter_rows(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for i, row in enumerate(self.data):
            if not isinstance(row, Mapping):
                raise DataError(
                    f"item {i + 1} is a {type(row).__name__}, not a mapping of field names to "
                    "values"
                )
            yield item_name(i, row), dict(row)


class _DataFrameSource(ItemSource):
    def __init__(self, frame: Any) -> None:
        super().__init__(None, description=f"DataFrame({len(frame)} rows)")
        self.frame = frame

    def _iter_rows(self) -> Iterator[tuple[str, dict[str, Any]]]:
        _refuse_repeated([str(c) for c in self.frame.columns], "the DataFrame's columns")
        n = len(self.frame)
        for start in range(0, n, _BATCH):
            chunk = self.frame.iloc[start : start + _BATCH].to_dict(orient="records")
            for offset, row in enumerate(chunk):
                fields = {str(k): v for k, v in row.items()}
                yield item_name(start + offset, fields), fields


def open_source(data: Any, *, files_root: Any = None) -> ItemSource:
    """Wrap ``data`` (a path, a DataFrame, a Dataset, a sequence or iterable of dicts).

    ``files_root`` (a folder or several) widens the local files policy: an item's local
    image files are read from a data file's own folder and these; items from memory, from
    these only (none by default). See :mod:`jurist._local_files`.
    """
    roots = roots_of(files_root)
    source = _opened(data, roots)
    if source.base is None:
        source.files = LocalFiles(roots)
    return source


def _opened(data: Any, roots: tuple[Path, ...]) -> ItemSource:
    if isinstance(data, str | Path):
        path = Path(data)
        if not path.exists():
            raise DataError(f"{path}: no such file")
        if path.is_dir():
            raise DataError(
                f"{path}: is a folder; pass a data file (.jsonl, .json, .csv, .parquet)"
            )
        if path.suffix.lower() not in (".jsonl", ".ndjson", ".json", ".csv", ".parquet"):
            raise DataError(
                f"{path}: unknown data format {path.suffix!r}; use .jsonl, .json, .csv or .parquet"
            )
        return _FileSource(path, roots)
    module = type(data).__module__
    if module.startswith("pandas") and hasattr(data, "iloc"):
        return _DataFrameSource(data)
    if module.startswith("datasets") and hasattr(data, "features"):
        return _SequenceSource(data, f"Dataset({len(data)} rows)")
    if isinstance(data, Mapping | bytes):
        raise DataError(
            f"expected a batch of items (a list of dicts, a DataFrame, a Dataset or a file), "
            f"got a {type(data).__name__}"
        )
    if isinstance(data, Sequence):
        return _SequenceSource(data, f"{type(data).__name__}({len(data)} items)")
    if isinstance(data, Iterable):

        def checked() -> Iterator[tuple[str, dict[str, Any]]]:
            for i, row in enumerate(data):
                if not isinstance(row, Mapping):
                    raise DataError(f"item {i + 1} is a {type(row).__name__}, not a mapping")
                yield item_name(i, row), dict(row)

        return ItemSource(checked(), description=f"{type(data).__name__} (read once)")
    raise DataError(f"cannot read items from a {type(data).__name__}")


def _refuse_repeated(names: Sequence[str], where: str) -> None:
    """Stop when a column name repeats: a row could hold only one of its values, and the
    other would be judged or dropped without a word.

    >>> _refuse_repeated(["id", "prompt", "response", "response"], "d.csv:1: the header line")
    Traceback (most recent call last):
    ...
    jurist.errors.DataError: d.csv:1: the header line 'id,prompt,response,response' names ...
    """
    seen: dict[str, int] = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
    repeated = [name for name, count in seen.items() if count > 1]
    if repeated:
        listed = ", ".join(repr(name) for name in repeated)
        times = "twice" if all(seen[n] == 2 for n in repeated) else "more than once"
        raise DataError(
            f"{where} {','.join(names)!r} names column{'s' if len(repeated) > 1 else ''} "
            f"{listed} {times}; give each column its own name"
        )


def _jsonl_rows(p: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    with p.open("rb") as f:
        for lineno, line in enumerate(f, start=1):
            if lineno == 1 and line.startswith(codecs.BOM_UTF8):
                line = line[len(codecs.BOM_UTF8) :]
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as bad:
                    message = decode_error(p, line, bad, "the data file", first_line=lineno)
                    raise DataError(message) from None
                raise DataError(f"{p}:{lineno}: not valid JSON ({e})") from None
            if not isinstance(row, dict):
                raise DataError(f"{p}:{lineno}: expected a JSON object, got {type(row).__name__}")
            yield f"{p}:{lineno}", row


def _json_rows(p: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        data = json.loads(read_utf8(p, what="the data file", error=DataError))
    except json.JSONDecodeError as e:
        raise DataError(f"{p}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(data, list):
        raise DataError(f"{p}: expected a JSON array of objects")
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise DataError(f"{p}: item {i + 1} is a {type(row).__name__}, not an object")
        yield f"{p}: item {i + 1}", row


def _csv_rows(p: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """CSV rows; an empty cell is the empty string (a value, not a missing one)."""
    # a long model response is a legitimate field: lift the csv module's 128 KiB cap
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)
    with p.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        try:
            if reader.fieldnames is None:
                raise DataError(f"{p}: empty CSV file (no header line)")
            _refuse_repeated(reader.fieldnames, f"{p}:{reader.line_num}: the header line")
            for row in reader:
                if None in row:
                    raise DataError(
                        f"{p}:{reader.line_num}: more values than the {len(reader.fieldnames)} "
                        "columns of the header"
                    )
                yield f"{p}:{reader.line_num}", dict(row)
        except UnicodeDecodeError:
            read_utf8(p, what="the data file", error=DataError)  # raises, naming the line
            raise
        except csv.Error as e:
            raise DataError(f"{p}:{reader.line_num}: not valid CSV ({e})") from None


def _parquet_rows(p: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        raise MissingDependencyError("pyarrow", "dev", "Reading Parquet") from e
    import pyarrow as pa

    n = 0
    try:
        parquet = pq.ParquetFile(p)
        _refuse_repeated(parquet.schema_arrow.names, f"{p}: the Parquet schema")
        batches = parquet.iter_batches(batch_size=_BATCH)
        for batch in batches:
            for row in batch.to_pylist():
                n += 1
                yield f"{p}: row {n}", row
    except (pa.ArrowException, OSError) as e:
        after = f" after row {n}" if n else ""
        raise DataError(f"{p}: not a readable Parquet file{after} ({e})") from None
