"""A run's labelling plan: ``plan.jsonl``, the items to label and their probabilities.

``jurist review RUN --plan N`` draws N items, each with a known probability of being
drawn, and writes them in the order to label them (a random order: the first ``k`` of a
plan are a random part of it)::

    {"item": "q17", "item_hash": "3f2a...", "inclusion_probability": 0.31, "rank": 1,
     "planned_at": "2026-12-02T04:10:00Z", "spread": "labels so far"}

``jurist estimate`` weights each planned item's label by ``1 / probability`` (when only
``k`` of the ``m`` planned items have a label, by ``1 / (probability * k / m)``). A new
plan replaces the old one (written whole, atomically).

>>> import tempfile, pathlib, datetime
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> at = datetime.datetime(2026, 12, 2, tzinfo=datetime.UTC)
>>> entries = [PlanEntry(item="a", item_hash="h", inclusion_probability=0.5, rank=1,
...                      planned_at=at, spread="judge uncertainty")]
>>> path = write_plan(folder, entries)
>>> [e.item for e in read_plan(folder)]
['a']
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jurist._files import read_utf8, replaced_atomically
from jurist._json import TooDeep, loads
from jurist.errors import DataError

__all__ = ["PLAN_NAME", "PlanEntry", "read_plan", "write_plan"]

PLAN_NAME = "plan.jsonl"
"""The plan's file name in a run folder."""


class PlanEntry(BaseModel):
    """One planned item: who it is, its probability of being drawn, its place in the plan."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    item: str | int
    item_hash: str
    inclusion_probability: float = Field(gt=0, le=1)
    rank: int = Field(ge=1)
    planned_at: datetime
    spread: str = ""


def write_plan(run_dir: str | Path, entries: Sequence[PlanEntry]) -> Path:
    """Write ``plan.jsonl`` in ``run_dir`` whole (replacing any earlier plan)."""
    out = Path(run_dir) / PLAN_NAME
    with replaced_atomically(out, what="the labelling plan") as tmp:
        tmp.write_text("".join(e.model_dump_json() + "\n" for e in entries), encoding="utf-8")
    return out


def read_plan(run_dir: str | Path) -> list[PlanEntry] | None:
    """The run's plan, in its order (``None``: the run has no plan); a bad line is a
    :class:`~jurist.errors.DataError` naming ``file:line``."""
    path = Path(run_dir) / PLAN_NAME
    if not path.exists():
        return None
    out: list[PlanEntry] = []
    for number, raw in enumerate(read_utf8(path, what="the plan", error=DataError).split("\n"), 1):
        if not raw.strip():
            continue
        try:
            out.append(PlanEntry.model_validate(loads(raw, max_depth=4)))
        except (ValueError, TooDeep, ValidationError) as e:
            raise DataError(f"{path}:{number}: not a plan entry ({e})") from None
    return sorted(out, key=lambda e: e.rank)
