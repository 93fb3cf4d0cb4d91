"""What the review page shows: the label scale, the items (as the report shows them) and
the judge's verdicts, read from a run folder.

The scale comes from the run's judge (a 1-5 template: ``1`` ... ``5``; a label template:
its labels; a pairwise judge: ``A``, ``B``, ``tie``; a cascade or a panel whose judges
share one scale: that one) or from ``--scale``: whole numbers
``LOW-HIGH`` (at most 10 points: the number keys) or labels ``a,b,c``.

>>> parse_scale("1-5").points, parse_scale("yes, no").points
([1, 2, 3, 4, 5], ['yes', 'no'])
>>> parse_scale("pass").points
Traceback (most recent call last):
...
jurist.errors.ConfigError: --scale 'pass': ...

A queue file (the cascade's ``review.jsonl``, or any JSON Lines file of items to label)
narrows the page to its items, in its order: a line holds the item's own fields (as
``review.jsonl`` does) or names its item by ``item`` (the run store's 0-based key, or the
item's label: its id, else its 1-based row number; with ``item_hash``, checked), as a
plan's ``plan.jsonl`` does; it may carry an ``inclusion_probability`` (copied to each label
given for it) and a ``reason`` (shown).
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from jurist.data._item_names import item_label
from jurist.errors import ConfigError, DataError
from jurist.runs._folder import STORE_NAME
from jurist.runs._run import Run
from jurist.runs._store import RunStore
from jurist.runs.report._browse import _response, clip
from jurist.runs.report._scale import scale_of, verdict_text
from jurist.templates import LabelScale, NumericScale

__all__ = ["ReviewItems", "ReviewScale", "load_items", "parse_scale"]

MAX_POINTS = 10
_SHA = re.compile(r"sha256:([0-9a-f]{64})")
_QUEUE_EXTRA = ("reason", "tiers", "inclusion_probability")
_PLAN_KEYS = {
    "item",
    "item_hash",
    "inclusion_probability",
    "rank",
    "planned_at",
    "spread",
    "reason",
}


@dataclass(frozen=True)
class ReviewScale:
    """The labels a person can give, in key order (key 1 is ``points[0]``)."""

    points: list[int | float | str]
    names: list[str]
    kind: str  # "ordinal" (whole numbers) or "nominal" (labels)
    source: str  # where it came from, for the page

    def check(self, label: Any) -> int | float | str | None:
        """``label`` when it is one of the scale's points (``None``: an undo)."""
        if label is None:
            return None
        for p in self.points:
            if isinstance(p, str):
                if isinstance(label, str) and label == p:
                    return p
            elif isinstance(label, int | float) and not isinstance(label, bool) and label == p:
                return p
        raise DataError(f"label {label!r} is not on the scale {self.names}")


def parse_scale(spec: str) -> ReviewScale:
    """A scale from ``--scale`` (see the module docs)."""
    text = spec.strip()
    m = re.fullmatch(r"(-?\d+)\s*-\s*(-?\d+)", text)
    if m:
        low, high = int(m.group(1)), int(m.group(2))
        if not 1 <= high - low < MAX_POINTS:
            raise ConfigError(
                f"--scale {spec!r}: a range of 2 to {MAX_POINTS} whole numbers, like 1-5"
            )
        pts: list[int | float | str] = list(range(low, high + 1))
        return ReviewScale(pts, [str(p) for p in pts], "ordinal", f"--scale {text}")
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not 2 <= len(names) <= MAX_POINTS or len(set(names)) != len(names):
        raise ConfigError(
            f"--scale {spec!r}: give LOW-HIGH (like 1-5) or 2 to {MAX_POINTS} distinct "
            "labels separated by commas (like yes,no)"
        )
    return ReviewScale(list(names), names, "nominal", f"--scale {text}")


def scale_from_run(judge: Mapping[str, Any]) -> ReviewScale:
    """The run's own verdict scale, or a :class:`ConfigError` that says to use ``--scale``."""
    if judge.get("kind") == "pairwise":
        return ReviewScale(
            ["A", "B", "tie"], ["A is better", "B is better", "tie"], "nominal", "pairwise judge"
        )
    scale = scale_of(judge)
    parts = judge.get("tiers") or judge.get("judges")
    if scale is None and isinstance(parts, list) and parts:  # a cascade's or a panel's tiers
        scales = [scale_of(p) if isinstance(p, Mapping) else None for p in parts]
        if scales[0] is not None and all(s == scales[0] for s in scales):
            scale = scales[0]
    if isinstance(scale, LabelScale) and len(scale.labels) <= MAX_POINTS:
        names = [label.name for label in scale.labels]
        return ReviewScale(list(names), names, "nominal", "the judge's template")
    if (
        isinstance(scale, NumericScale)
        and scale.integer
        and 1 <= scale.high - scale.low < MAX_POINTS
    ):
        pts: list[int | float | str] = list(range(int(scale.low), int(scale.high) + 1))
        return ReviewScale(pts, [str(p) for p in pts], "ordinal", "the judge's template")
    raise ConfigError(
        "the run's judge has no short scale of labels to give (a continuous score, a panel "
        "or a rubric grader): name one with --scale, like --scale 1-5 or --scale yes,no"
    )


def _canon(item: Mapping[str, Any]) -> bytes:
    return orjson.dumps(dict(item), option=orjson.OPT_SORT_KEYS, default=str)


def _rubric(value: Any, depth: int = 0) -> Any:
    """The first ``rubric`` in a judge's configuration (a grader's), or ``None``."""
    if depth > 6:
        return None
    if isinstance(value, Mapping):
        if isinstance(value.get("rubric"), Mapping | list):
            return value["rubric"]
        children: Any = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return None
    for child in children:
        found = _rubric(child, depth + 1)
        if found is not None:
            return found
    return None


def _refs(value: Any, out: set[str], depth: int = 0) -> None:
    if depth > 12:
        return
    if isinstance(value, str):
        out.update(_SHA.findall(value[:200_000]))
    elif isinstance(value, Mapping):
        for v in value.values():
            _refs(v, out, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _refs(v, out, depth + 1)


def _clip_all(value: Any) -> Any:
    if isinstance(value, str):
        return clip(value)
    if isinstance(value, Mapping):
        return {str(k): _clip_all(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip_all(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _verdict(row: dict[str, Any], judge: Mapping[str, Any]) -> dict[str, Any]:
    outcome = row["outcome"]
    verdict = outcome.get("verdict", outcome.get("winner"))
    text = None if verdict is None else verdict_text(verdict, scale_of(judge))
    return {
        "verdict": text,
        "score": row["score"],
        "error": row["error"],
        "response": clip(_response(outcome)) if _response(outcome) is not None else None,
        "explanation": clip(outcome.get("explanation")),
    }


@dataclass
class ReviewItems:
    """Everything the page needs from the run, read once."""

    run_dir: Path
    run_id: str
    title: str
    scale: ReviewScale
    pairwise: bool
    rubric: Any
    items: list[dict[str, Any]] = field(default_factory=list)
    verdicts: dict[int, dict[str, Any]] = field(default_factory=dict)
    hashes: dict[int, str] = field(default_factory=dict)
    probabilities: dict[int, float] = field(default_factory=dict)
    images: set[str] = field(default_factory=set)

    def image(self, sha: str) -> tuple[str, bytes] | None:
        """An image of the items, by its hash (``None``: not one of theirs)."""
        if sha not in self.images:
            return None
        store = RunStore(self.run_dir / STORE_NAME, readonly=True)
        try:
            return store.image(sha)
        finally:
            store.close()

    def data_uris(self) -> dict[str, str]:
        """Every image as a ``data:`` URI, for a page that works offline."""
        out = {}
        for sha in sorted(self.images):
            found = self.image(sha)
            if found is not None:
                out[sha] = f"data:{found[0]};base64,{base64.b64encode(found[1]).decode()}"
        return out


def _queue(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the queue of items: {e}") from e
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise DataError(f"{path}:{n}: not JSON: {e}") from e
        if not isinstance(value, dict):
            raise DataError(f"{path}:{n}: a line is a JSON object")
        yield n, value


def load_items(
    run_dir: str | Path, scale: str | None = None, queue: Path | None = None
) -> ReviewItems:
    """Read the run (and a queue file) into what the page shows (module docs)."""
    run = Run(run_dir)
    judge = run.manifest.judge
    found = ReviewItems(
        run_dir=run.run_dir,
        run_id=str(run._run_id or run.run_dir.resolve()),
        title=str(run.run_dir),
        scale=parse_scale(scale) if scale else scale_from_run(judge),
        pairwise=judge.get("kind") == "pairwise",
        rubric=_clip_all(_rubric(judge)),
    )
    rows: dict[int, dict[str, Any]] = {}
    store = RunStore(run.run_dir / STORE_NAME, readonly=True)
    try:
        for row in store.rows():
            rows[int(row["idx"])] = row
            found.hashes[int(row["idx"])] = store.hash_of(int(row["idx"])) or ""
    finally:
        store.close()
    order: list[tuple[int, dict[str, Any]]] = [(i, {}) for i in rows]
    if queue is not None:
        order = _queued(queue, rows, found.hashes)
    for idx, extra in order:
        row = rows[idx]
        _refs(row["item"], found.images)
        entry: dict[str, Any] = {
            "idx": idx,
            "name": item_label(idx, row["item"]),
            "fields": _clip_all(row["item"]),
        }
        if extra.get("reason") is not None:
            entry["reason"] = clip(str(extra["reason"]))
        p = extra.get("inclusion_probability")
        if p is not None:
            if isinstance(p, bool) or not isinstance(p, int | float) or not 0 < p <= 1:
                raise DataError(f"{queue}: item {entry['name']}: inclusion_probability {p!r}")
            found.probabilities[idx] = float(p)
        found.items.append(entry)
        found.verdicts[idx] = _verdict(row, judge)
        if extra.get("tiers") is not None:
            found.verdicts[idx]["tiers"] = _clip_all(extra["tiers"])
    return found


def _queued(
    path: Path, rows: dict[int, dict[str, Any]], hashes: dict[int, str]
) -> list[tuple[int, dict[str, Any]]]:
    by_fields: dict[bytes, int] = {}
    by_label: dict[str, int] = {}
    for key, row in rows.items():
        by_fields.setdefault(_canon(row["item"]), key)
        by_label.setdefault(item_label(key, row["item"]), key)
    out: list[tuple[int, dict[str, Any]]] = []
    seen: set[int] = set()
    for n, line in _queue(path):
        # a review.jsonl line holds the item's own fields (and the cascade's reason)
        idx = by_fields.get(_canon({k: v for k, v in line.items() if k not in _QUEUE_EXTRA}))
        ref = line.get("item")
        if idx is None and set(line) <= _PLAN_KEYS:  # a plan's line names its item
            if isinstance(ref, int) and not isinstance(ref, bool):
                idx = ref if ref in rows else None
            elif isinstance(ref, str):
                idx = by_label.get(ref)
            if idx is not None and line.get("item_hash") not in (None, hashes.get(idx)):
                raise DataError(f"{path}:{n}: item {ref!r} is not the item planned (its hash)")
        if idx is None:
            raise DataError(f"{path}:{n}: no item of the run matches this line")
        if idx not in seen:
            seen.add(idx)
            out.append((idx, line))
    return out
