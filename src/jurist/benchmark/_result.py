"""A bench's figures: :class:`BenchResult`, every table and cascade, and its JSON form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from jurist._files import replaced_atomically
from jurist.benchmark._cascades import CascadeFigures
from jurist.benchmark._figures import TableFigures

__all__ = ["BenchResult"]


class BenchResult(BaseModel):
    """A bench's figures: one :class:`TableFigures` per setup and dataset (``tables``),
    the cascades asked for, and where it ran."""

    model_config = ConfigDict(frozen=True)

    folder: str
    datasets: list[dict[str, Any]]
    setups: list[dict[str, Any]]
    tables: list[TableFigures]
    cascades: list[CascadeFigures]
    notes: list[str] = []

    def ranked(self, dataset: str) -> list[TableFigures]:
        """The setups on ``dataset``, best headline figure first (ties: fewer abstentions,
        then the name)."""
        rows = [t for t in self.tables if t.dataset == dataset]
        return sorted(rows, key=lambda t: (-_key(t.value.value), t.abstained, t.setup))

    def table(self, setup: str, dataset: str) -> TableFigures:
        """The figures of ``setup`` on ``dataset``."""
        for t in self.tables:
            if t.setup == setup and t.dataset == dataset:
                return t
        raise KeyError(f"no figures for setup {setup!r} on dataset {dataset!r}")

    def to_json(self, path: str | Path) -> Path:
        """Write every figure as JSON (atomically) and return the path."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        blob = orjson.dumps(self.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
        with replaced_atomically(out, what="the bench figures") as tmp:
            tmp.write_bytes(blob)
        return out


def _key(value: float) -> float:
    return -1.0 if value != value else value  # NaN ranks last
