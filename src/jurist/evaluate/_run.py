""":class:`Run`: a finished (or partly finished) run, read from its folder.

A run folder holds ``manifest.json`` and ``run.sqlite``. ``Run(folder)`` opens it at any
time, also while another process is still writing it. Records stream from the store in
dataset order; exports write JSONL, Parquet or a pandas DataFrame; :meth:`Run.summary`
totals items, failures, tokens and cost; :meth:`Run.report` writes the HTML report.

Each record is the item's input fields followed by the outcome's fields prefixed
``judge_`` (``judge_score``, ``judge_error``, ``judge_verdict``...), then the usage and
cost: ``judge_prompt_tokens``, ``judge_completion_tokens``, ``judge_cached_tokens``,
``judge_calls``, ``judge_cache_hits``, ``judge_cost``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from jurist.errors import ConfigError, MissingDependencyError
from jurist.evaluate._manifest import Manifest
from jurist.evaluate._store import RunStore

__all__ = ["STORE_NAME", "Run", "RunSummary"]

STORE_NAME = "run.sqlite"


class RunSummary(BaseModel):
    """The totals of a run."""

    run_dir: str
    judge: str
    data: str
    items: int
    expected_items: int | None
    status: str
    scored: int
    failed: int
    mean_score: float | None
    verdicts: dict[str, int]
    errors: dict[str, int]
    calls: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost: float | None
    cost_unknown_items: int
    cost_estimated_items: int
    seconds: float
    sessions: int


def flatten(row: dict[str, Any]) -> dict[str, Any]:
    """One export record from a stored row (see the module docs)."""
    record: dict[str, Any] = dict(row["item"])
    for key, value in row["outcome"].items():
        record[key if key.startswith("judge_") else f"judge_{key}"] = value
    usage = row["usage"]
    record["judge_prompt_tokens"] = usage.prompt_tokens
    record["judge_completion_tokens"] = usage.completion_tokens
    record["judge_cached_tokens"] = usage.cached_tokens
    record["judge_calls"] = usage.calls
    record["judge_cache_hits"] = usage.cache_hits
    record["judge_cost"] = row["cost"]
    return record


class Run:
    """The results of one run folder."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        manifest = Manifest.read(self.run_dir)
        if manifest is None or not (self.run_dir / STORE_NAME).exists():
            raise ConfigError(f"{self.run_dir}: not a jurist run folder (no manifest.json)")
        self.manifest: Manifest = manifest

    def __repr__(self) -> str:
        return f"Run({str(self.run_dir)!r}, items={len(self)})"

    def _store(self) -> RunStore:
        return RunStore(self.run_dir / STORE_NAME, readonly=True)

    def __len__(self) -> int:
        store = self._store()
        try:
            return store.count()
        finally:
            store.close()

    def rows(
        self, *, failed_only: bool = False, limit: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Stored rows (``idx``, ``item``, ``outcome``, ``usage``, ``cost``...), streamed."""
        store = self._store()
        try:
            yield from store.rows(failed_only=failed_only, limit=limit)
        finally:
            store.close()

    def records(self) -> Iterator[dict[str, Any]]:
        """Flat export records, in dataset order, one at a time."""
        for row in self.rows():
            yield flatten(row)

    @property
    def scores(self) -> list[float | None]:
        store = self._store()
        try:
            return list(store.scores())
        finally:
            store.close()

    def failures(self, limit: int | None = None) -> list[tuple[int, str]]:
        """``(index, error)`` of items that got no score."""
        return [(r["idx"], r["error"] or "error") for r in self.rows(failed_only=True, limit=limit)]

    def summary(self) -> RunSummary:
        store = self._store()
        try:
            totals = store.totals()
            errors = store.error_counts()
            seconds = float(store.get_meta("seconds") or 0.0)
            status = str(store.get_meta("status") or "unknown")
            sessions = int(store.get_meta("sessions") or 0)
            verdicts: dict[str, int] = {}
            for row in store.rows():
                outcome = row["outcome"]
                if row["score"] is None:
                    key = "(failed)"
                elif "verdict" in outcome or "winner" in outcome:
                    key = str(outcome.get("verdict", outcome.get("winner")))
                else:
                    continue  # this judge kind names no verdict (a grade): scores only
                verdicts[key] = verdicts.get(key, 0) + 1
        finally:
            store.close()
        return RunSummary(
            run_dir=str(self.run_dir),
            judge=str(self.manifest.judge.get("name", self.manifest.judge.get("kind", "judge"))),
            data=self.manifest.dataset.source,
            items=totals.items,
            expected_items=self.manifest.dataset.items,
            status=status,
            scored=totals.scored,
            failed=totals.items - totals.scored,
            mean_score=totals.mean_score,
            verdicts=verdicts,
            errors=errors,
            calls=totals.usage.calls,
            cache_hits=totals.usage.cache_hits,
            prompt_tokens=totals.usage.prompt_tokens,
            completion_tokens=totals.usage.completion_tokens,
            cached_tokens=totals.usage.cached_tokens,
            cost=totals.cost,
            cost_unknown_items=totals.cost_unknown,
            cost_estimated_items=totals.cost_estimated,
            seconds=seconds,
            sessions=sessions,
        )

    # -- exports ---------------------------------------------------------------------------

    def to_jsonl(self, path: str | Path) -> Path:
        """Write the records as JSON Lines (atomically: a temporary file, then a rename)."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        with tmp.open("wb") as f:
            for record in self.records():
                f.write(orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS, default=str))
                f.write(b"\n")
        os.replace(tmp, out)
        return out

    def to_parquet(self, path: str | Path, *, batch_size: int = 4096) -> Path:
        """Write the records as Parquet in batches; nested values are stored as JSON text."""
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as e:
            raise MissingDependencyError("pyarrow", "dev", "Run.to_parquet()") from e
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        schema = _parquet_schema(pa, self.records())
        tmp = out.with_name(out.name + ".tmp")
        kinds = {f.name: str(f.type) for f in schema}
        batch: list[dict[str, Any]] = []
        with pq.ParquetWriter(tmp, schema) as writer:
            for record in self.records():
                batch.append({k: _as_column(v, kinds[k]) for k, v in record.items()})
                if len(batch) >= batch_size:
                    writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                    batch.clear()
            if batch:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
        os.replace(tmp, out)
        return out

    def to_pandas(self) -> Any:
        """The records as a pandas DataFrame."""
        try:
            import pandas as pd
        except ImportError as e:
            raise MissingDependencyError("pandas", "dev", "Run.to_pandas()") from e
        return pd.DataFrame.from_records(list(self.records()))

    def report(self, path: str | Path | None = None, *, labels: str | None = None) -> Path:
        """Write the self-contained HTML report (default ``<run_dir>/report.html``)."""
        from jurist.evaluate._report import write_report

        return write_report(self, Path(path) if path else self.run_dir / "report.html", labels)


def _parquet_schema(pa: Any, records: Iterator[dict[str, Any]]) -> Any:
    """One pass over the records: each column's type (mixed numbers -> float, else text)."""
    kinds: dict[str, set[type]] = {}
    for record in records:
        for key, value in record.items():
            seen = kinds.setdefault(key, set())
            if value is not None:
                seen.add(type(value))
    fields = []
    for key, seen in kinds.items():
        if seen <= {bool}:
            kind = pa.bool_() if seen else pa.string()
        elif seen <= {int}:
            kind = pa.int64()
        elif seen <= {int, float}:
            kind = pa.float64()
        else:
            kind = pa.string()
        fields.append(pa.field(key, kind))
    return pa.schema(fields)


def _flat_value(value: Any) -> Any:
    if isinstance(value, dict | list):
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    return value


def _as_column(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "string" and not isinstance(value, str):
        return _flat_value(value) if isinstance(value, dict | list) else str(value)
    if kind == "double":
        return float(value)
    return value
