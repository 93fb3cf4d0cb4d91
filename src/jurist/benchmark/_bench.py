""":func:`bench`: several judge setups on labelled datasets, side by side, in one folder.

Every setup judges every dataset through the batch engine (:func:`jurist.aevaluate`),
each pair in both orders, into its own run folder ``OUT/runs/<setup>/<dataset>/``; the
figures (:mod:`jurist.benchmark._figures`) are read back from those runs, so a bench
killed half-way and started again on the same folder resumes: every finished judgment is
kept and nothing is judged twice. ``OUT/bench.json`` records the setups and datasets,
``OUT/figures.json`` every figure and ``OUT/bench.html`` the page.

>>> import jurist, tempfile
>>> rows = [{"prompt": "2+2?", "response_a": "4", "response_b": "5", "label": "A",
...          "scores": {"rm": [1.5, -0.5]}}]
>>> result = jurist.bench({"toy": rows}, ["scores:rm"], out=tempfile.mkdtemp())
>>> [(t.setup, t.value.value, t.position_consistency) for t in result.tables]
[('scores:rm', 1.0, 1.0)]
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from jurist._sync import run_sync
from jurist.benchmark._cascades import CascadeFigures, cascade_figures
from jurist.benchmark._data import BenchDataset, bench_dataset, order_items
from jurist.benchmark._figures import TableFigures, pair_outcomes, table_figures
from jurist.benchmark._page import write_bench_page
from jurist.benchmark._replay import RecordedJudge, ScoresJudge
from jurist.benchmark._result import BenchResult
from jurist.benchmark._setups import Setup, setups_of
from jurist.errors import ConfigError

__all__ = ["abench", "bench"]


def _datasets(data: Any) -> list[BenchDataset]:
    if isinstance(data, BenchDataset | str | Path):
        data = [data]
    if isinstance(data, Mapping):
        out = [bench_dataset(v, name=str(k)) for k, v in data.items()]
    else:
        out = [bench_dataset(v) for v in data]
    if not out:
        raise ConfigError("a bench needs at least one dataset")
    names = [d.name for d in out]
    folders = [d.folder for d in out]
    if len(set(names)) != len(names) or len(set(folders)) != len(folders):
        raise ConfigError(f"dataset names repeat (or share a folder name): {names}")
    return out


def _applies(setup: Setup, dataset: BenchDataset) -> bool:
    """Whether ``setup`` judges ``dataset``: always, but for a replay whose name no row
    holds (a replay naming only some rows is refused, naming the first without it)."""
    judge = setup.judge
    if not isinstance(judge, RecordedJudge | ScoresJudge):
        return True
    key = judge.recorded_name if isinstance(judge, RecordedJudge) else judge.scores_name
    if not any(key in (row.get(judge.column) or {}) for row in dataset.rows):
        return False
    for item in order_items(dataset):
        judge.check(item)
    return True


async def abench(
    data: Any,
    setups: Any,
    *,
    out: str | Path | None = None,
    resume: bool = True,
    cascades: Sequence[tuple[str, str]] = (),
    cascade_splits: int = 200,
    cascade_target: float | None = None,
    cascade_delta: float = 0.1,
    concurrency: int | None = None,
    retries: int = 0,
    prices: Any = None,
    progress: bool = False,
    n_resamples: int = 1000,
) -> BenchResult:
    """Judge every dataset of ``data`` with every setup of ``setups`` and put them side by
    side.

    Args:
        data: a dataset or several: a path (.jsonl, .json, .csv, .parquet), a list of
            rows, a :class:`~jurist.benchmark.BenchDataset` (the readers give those), a
            list of these, or a mapping name -> one of these.
        setups: judges or spec strings (see :mod:`jurist.benchmark._setups`): a list, or a
            mapping name -> judge or spec.
        out: the bench folder (a fresh temporary one when ``None``).
        resume: keep what an earlier bench in ``out`` finished (``False`` starts over).
        cascades: ``(cheap setup, strong setup)`` names to replay as a cascade on every
            pairwise dataset (see :mod:`jurist.benchmark._cascades`).
        cascade_splits, cascade_target, cascade_delta: its splits, target accuracy
            (default: the strong setup's on each fitting half) and risk.
        concurrency, retries, prices, progress: as for :func:`jurist.aevaluate`.
        n_resamples: bootstrap draws per interval.
    """
    from jurist.engines import aevaluate

    folder = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="jurist-bench-"))
    datasets = _datasets(data)
    every = {d.name: setups_of(setups, d.kind) for d in datasets}
    first = next(iter(every.values()))
    built = {d.name: [s for s in every[d.name] if _applies(s, d)] for d in datasets}
    for s in first:
        if not any(s.name in {b.name for b in built[d.name]} for d in datasets):
            raise ConfigError(
                f"setup {s.name!r} replays a column no dataset holds (no row has its name)"
            )
    notes = [
        f"{s.name}: not on {d.name} (no row holds its replay column)"
        for d in datasets
        for s in every[d.name]
        if s not in built[d.name]
    ]
    names = [s.name for s in first]
    for pair in cascades:
        missing = [n for n in pair if n not in names]
        if missing:
            raise ConfigError(f"cascade {pair}: no setup named {missing}; setups: {names}")
    folder.mkdir(parents=True, exist_ok=True)
    data_info: list[dict[str, Any]] = [
        {"name": d.name, "kind": d.kind, "rows": len(d.rows), "origin": d.origin} for d in datasets
    ]
    setup_info = [{"name": s.name, "spec": s.spec, "judge": s.judge.describe()} for s in first]
    info = {"datasets": data_info, "setups": setup_info}
    (folder / "bench.json").write_bytes(orjson.dumps(info, option=orjson.OPT_INDENT_2))
    tables: list[TableFigures] = []
    found: list[CascadeFigures] = []
    for d in datasets:
        outcomes = {}
        for s in built[d.name]:
            run = await aevaluate(
                list(order_items(d)),
                s.judge,
                run_dir=folder / "runs" / s.folder / d.folder,
                resume=resume,
                concurrency=concurrency,
                retries=retries,
                prices=prices,
                progress=progress,
            )
            rows = list(run.rows())
            tables.append(table_figures(s.name, d, rows, n_resamples=n_resamples))
            if d.kind == "pairwise":
                outcomes[s.name] = (s.name, s.judge, pair_outcomes(d, rows))
        for cheap, strong in cascades if d.kind == "pairwise" else ():
            if cheap not in outcomes or strong not in outcomes:
                continue
            found.append(
                cascade_figures(
                    outcomes[cheap],
                    outcomes[strong],
                    dataset=d.name,
                    splits=cascade_splits,
                    target=cascade_target,
                    delta=cascade_delta,
                )
            )
    result = BenchResult(
        folder=str(folder),
        datasets=data_info,
        setups=[{"name": s.name, "spec": s.spec} for s in first],
        tables=tables,
        cascades=found,
        notes=notes,
    )
    result.to_json(folder / "figures.json")
    write_bench_page(result, folder / "bench.html")
    return result


def bench(data: Any, setups: Any, **options: Any) -> BenchResult:
    """:func:`abench` from sync code (a running event loop included)."""
    return run_sync(abench(data, setups, **options))
