"""People's labels in a run folder: ``labels.jsonl``, read, checked and combined.

The review page writes one JSON object per line, appended as each label is given::

    {"item": "q17", "item_hash": "3f2a...", "label": 4, "annotator": "ana",
     "at": "2026-12-02T04:10:00Z", "note": null}

- ``item``: the item as the run knows it: a string is its label (the data's id, else its
  1-based row number, :func:`~jurist.data._item_names.item_label`); a whole number is the
  store's 0-based position;
- ``item_hash``: the item's hash in the run store; a label whose hash is not the item's
  (the data changed since it was labelled) is refused, naming the line;
- ``label``: a number or a string (``null``: the annotator takes their label back);
  ``annotator``: who; ``at``: when (ISO-8601, UTC);
  ``note``: free text or null; optional ``inclusion_probability`` (in (0, 1]) or
  ``weight`` (its inverse, at least 1) when the item was drawn with a known probability.

The last line for an (item, annotator) wins (a corrected label is a new line). A last line
cut short by a crash (no newline at its end, not JSON) is left out and counted in
``torn``; any other bad line is a :class:`~jurist.errors.DataError` naming
``file:line``. :func:`combine` makes one label per item from its annotators: the mean of
numbers, the majority of strings (compared without case or surrounding blanks; a tie
between the most frequent gives no label, counted in ``ties``).

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "labels.jsonl"
>>> line = '{"item": "a", "item_hash": "h1", "label": %s, "annotator": "%s", "at": "%s"}\\n'
>>> _ = p.write_text(line % (2, "x", "2026-01-01T00:00:00Z") + line % (4, "y", "2026-01-01T00:01Z")
...                  + line % (3, "x", "2026-01-01T00:02:00Z") + '{"item": "b", "item_ha')
>>> book = read_labels(p)
>>> book.torn, len(book.latest()), combine(book.latest()[("a", "h1")]).value
(1, 1, 3.5)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from jurist._files import read_utf8
from jurist._json import TooDeep, loads
from jurist.errors import DataError

__all__ = [
    "LABELS_NAME",
    "MAX_LABELS_BYTES",
    "CombinedLabel",
    "LabelBook",
    "LabelLine",
    "RunLabels",
    "combine",
    "read_labels",
    "run_labels",
]

LABELS_NAME = "labels.jsonl"
"""The labels file's name in a run folder."""
MAX_LABELS_BYTES = 256 * 1024 * 1024
"""The largest labels file read (a bound on what a hand-edited file can make us load)."""


class LabelLine(BaseModel):
    """One line of ``labels.jsonl`` (``line``: its 1-based line number)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    item: str | int
    item_hash: str
    label: float | str | None
    """``None``: the annotator took their label back (undo)."""
    annotator: str = Field(min_length=1)
    at: datetime
    note: str | None = None
    weight: float | None = None
    inclusion_probability: float | None = None
    line: int = 0

    @model_validator(mode="after")
    def _check(self) -> LabelLine:
        if isinstance(self.label, float) and not math.isfinite(self.label):
            raise ValueError(f"label {self.label} is not a finite number")
        if isinstance(self.label, str) and not self.label.strip():
            raise ValueError("label is blank")
        p = self.inclusion_probability
        if p is not None and not 0 < p <= 1:
            raise ValueError(f"inclusion_probability must be in (0, 1], got {p}")
        if self.weight is not None and not self.weight >= 1:
            raise ValueError(f"weight must be at least 1 (1 / a probability), got {self.weight}")
        return self

    @property
    def probability(self) -> float | None:
        """The item's inclusion probability (from ``weight`` when only that is given)."""
        if self.inclusion_probability is not None:
            return self.inclusion_probability
        return None if self.weight is None else 1.0 / self.weight


class CombinedLabel(BaseModel):
    """One item's label from its annotators (``value`` ``None``: a tie, no majority)."""

    model_config = ConfigDict(frozen=True)

    value: float | str | None
    annotators: int
    agreeing: int
    """How many annotators gave the value (numbers: all of them)."""
    probability: float | None = None


class LabelBook(BaseModel):
    """Every valid line of a labels file, in order, and how many torn lines were left out."""

    model_config = ConfigDict(frozen=True)

    path: str
    lines: list[LabelLine]
    torn: int = 0

    def latest(self) -> dict[tuple[str | int, str], dict[str, LabelLine]]:
        """Per (item, item_hash), each annotator's last line (a last line with a null
        label, an undo, leaves that annotator out; an item no one labels, out)."""
        out: dict[tuple[str | int, str], dict[str, LabelLine]] = {}
        for rec in self.lines:
            out.setdefault((rec.item, rec.item_hash), {})[rec.annotator] = rec
        kept = {k: {a: r for a, r in per.items() if r.label is not None} for k, per in out.items()}
        return {k: per for k, per in kept.items() if per}

    @property
    def annotators(self) -> list[str]:
        return sorted({rec.annotator for rec in self.lines})


def read_labels(path: str | Path) -> LabelBook:
    """Read and check a labels file (see the module docs); an absent file is a
    :class:`~jurist.errors.DataError` naming it."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p}: no labels file (label items with: jurist review RUN)")
    if p.is_file() and p.stat().st_size > MAX_LABELS_BYTES:
        raise DataError(f"{p}: a labels file past {MAX_LABELS_BYTES} bytes is not read")
    text = read_utf8(p, what="the labels file", error=DataError)
    rows = text.split("\n")
    lines: list[LabelLine] = []
    torn = 0
    for number, raw in enumerate(rows, start=1):
        if not raw.strip():
            continue
        last = number == len(rows)  # no newline after it
        try:
            value = loads(raw, max_depth=8)
        except (ValueError, TooDeep) as e:
            if last:
                torn += 1  # a write cut short: the line never finished
                continue
            raise DataError(f"{p}:{number}: not a JSON object ({e})") from None
        if not isinstance(value, Mapping):
            raise DataError(f"{p}:{number}: a label line must be a JSON object")
        if isinstance(value.get("item"), bool) or isinstance(value.get("label"), bool):
            raise DataError(f"{p}:{number}: item and label cannot be true/false")
        try:
            lines.append(LabelLine.model_validate({**value, "line": number}))
        except ValidationError as e:
            problem = e.errors()[0]
            where = ".".join(str(x) for x in problem["loc"]) or "line"
            msg = str(problem["msg"]).removeprefix("Value error, ")
            raise DataError(f"{p}:{number}: {where}: {msg}") from None
    return LabelBook(path=str(p), lines=lines, torn=torn)


def _number(v: float | str | None) -> float | None:
    if isinstance(v, float | int):
        return float(v)
    return None


def combine(per_annotator: Mapping[str, LabelLine], where: str = "") -> CombinedLabel:
    """One label from an item's annotators: the mean of numbers, the majority of strings
    (a tie gives ``value=None``). A mix of numbers and strings is a
    :class:`~jurist.errors.DataError` naming the lines."""
    recs = list(per_annotator.values())
    probs = {r.probability for r in recs if r.probability is not None}
    prob = min(probs) if probs else None
    numbers = [_number(r.label) for r in recs]
    if all(x is not None for x in numbers):
        vals = [x for x in numbers if x is not None]
        return CombinedLabel(
            value=sum(vals) / len(vals), annotators=len(vals), agreeing=len(vals), probability=prob
        )
    if any(x is not None for x in numbers):
        lines = ", ".join(str(r.line) for r in recs)
        raise DataError(f"{where}lines {lines}: one item labelled with both numbers and text")
    counts = Counter(str(r.label).strip().lower() for r in recs)
    ranked = counts.most_common()
    top, n = ranked[0]
    if len(ranked) > 1 and ranked[1][1] == n:
        return CombinedLabel(value=None, annotators=len(recs), agreeing=n, probability=prob)
    original = next(str(r.label).strip() for r in recs if str(r.label).strip().lower() == top)
    return CombinedLabel(value=original, annotators=len(recs), agreeing=n, probability=prob)


class RunLabels(BaseModel):
    """A run's labels from a labels file, one per item in dataset order (``None``: no
    label), with what was left out and why."""

    model_config = ConfigDict(frozen=True)

    path: str
    values: list[float | str | None]
    probabilities: list[float | None]
    """Per item, the inclusion probability its label lines carry (``None``: none given)."""
    annotators: list[int]
    """Per item, how many annotators labelled it."""
    ties: int = 0
    torn: int = 0

    @property
    def labelled(self) -> int:
        return sum(v is not None for v in self.values)


def run_labels(run: Any, path: str | Path | None = None) -> RunLabels:
    """The labels of ``path`` (default: the run folder's ``labels.jsonl``) matched to the
    items of ``run`` (a :class:`~jurist.runs.Run`), combined per item (:func:`combine`).

    A line naming no item of the run, or an item whose hash differs from the store's, is a
    :class:`~jurist.errors.DataError` naming ``file:line``.
    """
    from jurist.data._item_names import item_label
    from jurist.runs._folder import STORE_NAME
    from jurist.runs._store import RunStore

    file = Path(path) if path is not None else Path(run.run_dir) / LABELS_NAME
    book = read_labels(file)
    by_label: dict[str, int] = {}
    hashes: list[str | None] = []
    store = RunStore(Path(run.run_dir) / STORE_NAME, readonly=True)
    try:
        for row in run.rows():
            by_label.setdefault(item_label(row["idx"], row["item"]), row["idx"])
            while len(hashes) <= row["idx"]:
                hashes.append(None)
            hashes[row["idx"]] = store.hash_of(row["idx"])
    finally:
        store.close()
    size = len(hashes)
    values: list[float | str | None] = [None] * size
    probs: list[float | None] = [None] * size
    counts = [0] * size
    ties = 0
    for (item, digest), per in book.latest().items():
        first = min(r.line for r in per.values())
        idx = item if isinstance(item, int) else by_label.get(item)
        if idx is None or not 0 <= idx < size or hashes[idx] is None:
            raise DataError(f"{file}:{first}: item {item!r} is not an item of {run.run_dir}")
        if hashes[idx] != digest:
            raise DataError(
                f"{file}:{first}: item {item!r} has changed since it was labelled (its hash "
                f"in the run is {hashes[idx]}, the label's {digest})"
            )
        if counts[idx]:
            raise DataError(f"{file}:{first}: item {item!r} is named two ways in one file")
        got = combine(per, where=f"{file}: ")
        ties += got.value is None
        values[idx], probs[idx], counts[idx] = got.value, got.probability, got.annotators
    return RunLabels(
        path=str(file),
        values=values,
        probabilities=probs,
        annotators=counts,
        ties=ties,
        torn=book.torn,
    )
