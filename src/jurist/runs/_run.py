""":class:`Run`: a finished (or partly finished) run, read from its folder.

A run folder holds ``manifest.json`` and ``run.sqlite``. ``Run(folder)`` opens it at any
time, also while another process is still writing it. Records stream from the store in
dataset order; exports write JSONL, Parquet or a pandas DataFrame; :meth:`Run.summary`
totals items, failures, tokens and cost; :meth:`Run.report` writes the HTML report.

Each record is the item's input fields followed by the outcome's fields prefixed
``judge_`` (``judge_score``, ``judge_error``, ``judge_verdict``...), then the usage and
cost: ``judge_prompt_tokens``, ``judge_completion_tokens``, ``judge_cached_tokens``,
``judge_calls``, ``judge_attempts``, ``judge_cache_hits``, ``judge_reasoning_tokens``,
``judge_cost``. An input column
whose name the judge's fields use (``judge_score`` in the data) is kept, renamed
``input_<name>``, so nothing of the input is lost.

>>> row = {"item": {"q": "2+2?", "judge_score": 5}, "outcome": {"score": 1.0},
...        "usage": Usage(calls=1, attempts=2), "cost": 0.0}
>>> rec = flatten(row)
>>> rec["input_judge_score"], rec["judge_score"], rec["judge_attempts"]
(5, 1.0, 2)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from jurist._files import replaced_atomically
from jurist.errors import ConfigError, MissingDependencyError
from jurist.judges._state import decision_lines
from jurist.runs._coverage import CoverageSummary, coverages, min_coverage_of
from jurist.runs._folder import STORE_NAME
from jurist.runs._manifest import Manifest
from jurist.runs._repeat_summary import item_scores, repeat_summary
from jurist.runs._run_types import RunSummary
from jurist.runs._state import RunState, effective_status, run_state
from jurist.runs._store import RunStore
from jurist.runs.report._page import write_report
from jurist.runs.report._scale import ordered_counts, scale_of, verdict_text
from jurist.types import Usage

__all__ = ["STORE_NAME", "SYSTEMS_META", "Run", "RunSummary", "record_systems"]

SYSTEMS_META = "systems"


def record_systems(run_dir: str | Path, a: str, b: str) -> None:
    """Record the names of a pairwise run's two systems (side A and side B) in its store;
    its summary and report name them."""
    store = RunStore(Path(run_dir) / STORE_NAME)
    try:
        store.set_meta(SYSTEMS_META, {"A": a, "B": b})
    finally:
        store.close()


def flatten(row: dict[str, Any]) -> dict[str, Any]:
    """One export record from a stored row (see the module docs)."""
    judged: dict[str, Any] = {}
    for key, value in row["outcome"].items():
        judged[key if key.startswith("judge_") else f"judge_{key}"] = value
    usage: Usage = row["usage"]
    judged["judge_prompt_tokens"] = usage.prompt_tokens
    judged["judge_completion_tokens"] = usage.completion_tokens
    judged["judge_cached_tokens"] = usage.cached_tokens
    judged["judge_calls"] = usage.calls
    judged["judge_attempts"] = usage.attempts
    judged["judge_cache_hits"] = usage.cache_hits
    judged["judge_reasoning_tokens"] = usage.reasoning_tokens
    judged["judge_cost"] = row["cost"]
    record: dict[str, Any] = {}
    for key, value in row["item"].items():
        name = key
        while name in judged or name in record:
            name = f"input_{name}"
        record[name] = value
    record.update(judged)
    return record


class Run:
    """The results of one run folder."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        if not (self.run_dir / STORE_NAME).exists():
            raise ConfigError(f"{self.run_dir}: not a jurist run folder (no {STORE_NAME})")
        store = RunStore(self.run_dir / STORE_NAME, readonly=True)
        try:
            kept = store.get_meta("manifest")
        finally:
            store.close()
        # the store keeps the manifest its rows belong to; older stores have only the file
        manifest = Manifest.model_validate(kept) if kept else Manifest.read(self.run_dir)
        if manifest is None:
            raise ConfigError(f"{self.run_dir}: not a jurist run folder (no manifest.json)")
        self.manifest: Manifest = manifest
        self._run_id: str | None = (kept or {}).get("run_id")

    def __repr__(self) -> str:
        return f"Run({str(self.run_dir)!r}, items={len(self)})"

    def _store(self) -> RunStore:
        store = RunStore(self.run_dir / STORE_NAME, readonly=True)
        kept = store.get_meta("manifest")
        if self._run_id is not None and (kept or {}).get("run_id") != self._run_id:
            store.close()
            raise ConfigError(
                f"{self.run_dir}: this run was started over since it was opened; its rows "
                "now belong to another run (open it again: jurist.Run(folder))"
            )
        return store

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

    def item_scores(self) -> list[list[float | None]]:
        """Each finished item's scores, one per repeat (a run without repeats: one each),
        in dataset order; what :func:`jurist.trust.gate_scores` and the intervals read."""
        store = self._store()
        try:
            return item_scores(store)
        finally:
            store.close()

    def stored_status(self) -> tuple[str, int]:
        """The status the store records (``unknown`` when none) and its item count; see
        :func:`jurist.runs._state.run_state` for where the run stands."""
        store = self._store()
        try:
            return str(store.get_meta("status") or "unknown"), store.count()
        finally:
            store.close()

    def state(self) -> RunState:
        """Where the run stands: finished, interrupted (a killed run's too), running...
        (:func:`jurist.runs._state.run_state`)."""
        return run_state(self)

    def failures(self, limit: int | None = None) -> list[tuple[int, str]]:
        """``(index, error)`` of items that got no score."""
        return [(r["idx"], r["error"] or "error") for r in self.rows(failed_only=True, limit=limit)]

    def summary(self) -> RunSummary:
        store = self._store()
        try:
            totals = store.totals()
            errors = store.error_counts()
            seconds = float(store.get_meta("seconds") or 0.0)
            # a killed run's store still says running: its dead lock owner says otherwise
            status = effective_status(self.run_dir, str(store.get_meta("status") or "unknown"))[0]
            sessions = int(store.get_meta("sessions") or 0)
            decided = decision_lines(store.get_meta("decisions"))
            waiting = store.get_meta("batch_file_out") if status == "awaiting results" else None
            batch_calls = store.batch_calls(self.manifest.run_id)
            repeats = repeat_summary(self.manifest.options, item_scores(store))
            systems = store.get_meta(SYSTEMS_META)
            scale = scale_of(self.manifest.judge)
            verdicts: dict[str, int] = {}
            notes: dict[str, int] = {}
            covered: list[tuple[float, bool]] = []
            thought_cost: float | None = 0.0
            for row in store.rows():
                outcome = row["outcome"]
                if row["usage"].reasoning_tokens:  # what its thinking cost, kept with it
                    part = outcome.get("reasoning_cost")
                    thought_cost = (
                        None
                        if part is None or thought_cost is None
                        else (thought_cost + float(part))
                    )
                covered += coverages(outcome)
                for note in _output_notes(outcome):
                    notes[note] = notes.get(note, 0) + 1
                if row["score"] is None:
                    key = "(failed)"
                elif "verdict" in outcome or "winner" in outcome:
                    key = verdict_text(outcome.get("verdict", outcome.get("winner")), scale)
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
            verdicts={k: n for k, n in ordered_counts(verdicts, scale) if n},
            errors=errors,
            calls=totals.usage.calls,
            attempts=totals.usage.attempts,
            cache_hits=totals.usage.cache_hits,
            prompt_tokens=totals.usage.prompt_tokens,
            completion_tokens=totals.usage.completion_tokens,
            cached_tokens=totals.usage.cached_tokens,
            reasoning_tokens=totals.usage.reasoning_tokens,
            reasoning_cost=thought_cost,
            cost=totals.cost,
            cost_of_priced_items=totals.cost_known,
            cost_unknown_items=totals.cost_unknown,
            cost_estimated_items=totals.cost_estimated,
            cache_write_tokens=totals.usage.cache_write_tokens,
            cost_without_prompt_cache=totals.cost_uncached,
            prompt_cache_saved=(
                None
                if totals.cost_uncached is None or totals.cost is None
                else totals.cost_uncached - totals.cost
            ),
            seconds=seconds,
            sessions=sessions,
            superseded=totals.superseded,
            notes=notes,
            coverage=CoverageSummary.of(covered, min_coverage_of(self.manifest.judge)),
            decisions=decided,
            batch_calls=batch_calls,
            batch_files=[str(p) for p in waiting or ()],
            repeats=repeats,
            systems=systems if isinstance(systems, dict) else None,
            template=_judge_setting(self.manifest.judge, "template"),
            scoring=_judge_setting(self.manifest.judge, "scoring"),
        )

    # -- exports ---------------------------------------------------------------------------

    def to_otel(self, target: str | Path) -> int:
        """Each judgment as a ``gen_ai.evaluation.result`` OpenTelemetry event, OTLP/JSON
        to a file or OTLP/HTTP to a collector (``http(s)://...``); the number sent (see
        :mod:`jurist.runs._otel`)."""
        from jurist.runs._otel import write_otel

        judge = self.manifest.judge
        name = str(judge.get("name", judge.get("kind", "judge")))
        return write_otel(str(target), self.rows(), name)

    def to_jsonl(self, path: str | Path) -> Path:
        """Write the records as JSON Lines (atomically: a temporary file, then a rename)."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        with replaced_atomically(out, what="the results") as tmp, tmp.open("wb") as f:
            for record in self.records():
                f.write(orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS, default=str))
                f.write(b"\n")
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
        kinds = {f.name: str(f.type) for f in schema}
        batch: list[dict[str, Any]] = []
        with (
            replaced_atomically(out, what="the results") as tmp,
            pq.ParquetWriter(tmp, schema) as writer,
        ):
            for record in self.records():
                batch.append({k: _as_column(v, kinds[k]) for k, v in record.items()})
                if len(batch) >= batch_size:
                    writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                    batch.clear()
            if batch:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
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
        return write_report(self, Path(path) if path else self.run_dir / "report.html", labels)


def _judge_setting(judge: dict[str, Any], key: str) -> str | None:
    """The judge's ``template`` name or ``scoring`` mode, looked for in the judge, the
    judge a pairwise judge wraps, and a panel's judges (their distinct values, joined).

    >>> _judge_setting({"kind": "pairwise", "judge": {"template": {"name": "p"}}}, "template")
    'p'
    >>> _judge_setting({"judges": [{"scoring": "parse"}, {"scoring": "logprobs"}]}, "scoring")
    'parse, logprobs'
    """
    found: list[str] = []

    def look(cfg: Any, depth: int) -> None:
        if not isinstance(cfg, dict) or depth > 3:
            return
        value = cfg.get(key)
        if isinstance(value, dict):
            value = value.get("name")
        if isinstance(value, str) and value:
            found.append(value)
            return
        look(cfg.get("judge"), depth + 1)
        for sub in cfg.get("judges") or ():
            look(sub, depth + 1)

    look(judge, 0)
    return ", ".join(dict.fromkeys(found)) or None


def _output_notes(outcome: Any, depth: int = 0) -> set[str]:
    """The distinct ``output_note`` texts of an outcome and of the judgments inside it
    (a panel's or a pairwise judge's), each counted once per item."""
    found: set[str] = set()
    if isinstance(outcome, dict):
        note = outcome.get("output_note")
        if isinstance(note, str) and note:
            found.add(note)
        if depth < 3:
            for value in outcome.values():
                if isinstance(value, dict | list):
                    found |= _output_notes(value, depth + 1)
    elif isinstance(outcome, list) and depth < 3:
        for value in outcome:
            found |= _output_notes(value, depth + 1)
    return found


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
