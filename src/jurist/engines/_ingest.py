"""Read an offline engine's results into a run: :func:`ingest`.

A run started with ``BatchAPIOptions(file_out=FILE)`` writes its requests to ``FILE`` and
stops (status ``awaiting results``). Any engine that reads Batch API request lines and
writes output lines (``vllm run-batch -i FILE -o RESULTS``, a provider's batch API by hand)
answers them; ``ingest(run_dir, RESULTS)`` stores every answer in the run and runs the
engine again on the run folder: the stored answers are parsed, re-asked or recorded as a
live run would, and the requests still to answer (re-asks of unreadable verdicts, lines
the results lacked) go to a new file beside the first. :class:`IngestResult` says whether
the run finished, or which file to answer next. :func:`aingest` is the async twin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jurist.batching._options import BatchAPIOptions
from jurist.batching._rounds import parse_file
from jurist.engines._engines import BatchAPIEngine
from jurist.engines._judge_entry import rebuild_judge
from jurist.errors import ConfigError, DataError
from jurist.runs._folder import STORE_NAME
from jurist.runs._run import Run
from jurist.runs._store import RunStore

__all__ = ["IngestResult", "aingest", "ingest"]


@dataclass(frozen=True)
class IngestResult:
    """What :func:`ingest` did: answers stored, the run's status and the request files
    still waiting for an engine (``[]`` when the run is complete)."""

    run: Run
    answers: int
    status: str
    files: list[Path]


def next_file(files: list[str], round_no: int) -> Path:
    """The request file of round ``round_no``, beside the first one.

    >>> next_file(["out/reqs.jsonl", "out/reqs.2.jsonl"], 2)
    PosixPath('out/reqs.r2.jsonl')
    >>> next_file(["out/my.reqs.r2.jsonl"], 3)
    PosixPath('out/my.reqs.r3.jsonl')
    """
    first = Path(files[0])
    stem = re.sub(r"(\.r\d+)?(\.\d+)?$", "", first.stem)
    return first.with_name(f"{stem}.r{round_no}{first.suffix}")


async def aingest(
    run_dir: str | Path,
    results_file: str | Path,
    *,
    data: Any = None,
    judge: Any = None,
    progress: bool = False,
) -> IngestResult:
    """Store the answers in ``results_file`` into the run in ``run_dir``, then finish the
    run from them (or write the next request file).

    Args:
        run_dir: a run folder whose requests were written with ``file_out``.
        results_file: Batch API output lines (OpenAI's output or error file format, or
            what ``vllm run-batch`` writes), one per answered ``custom_id``.
        data: the run's data (default: the file the run was started from).
        judge: the run's judge (default: rebuilt from the catalog entry the run kept).
        progress: draw a progress bar.
    """
    from jurist.engines._evaluate import aevaluate

    folder = Path(run_dir)
    results = Path(results_file)
    if not (folder / STORE_NAME).is_file():
        raise ConfigError(f"{folder}: not a run folder (no {STORE_NAME})")
    if not results.is_file():
        raise DataError(f"{results}: no such results file")
    store = RunStore(folder / STORE_NAME)
    try:
        manifest = store.get_meta("manifest") or {}
        run_id = str(manifest.get("run_id") or "run")
        options_seen = store.get_meta("batch_api")
        entry = store.get_meta("judge_entry")
        files = store.get_meta("batch_file_out") or []
        batches = store.batch_tables(run_id)
        ids = dict(batches.rows())
        if not ids:
            raise DataError(f"{folder}: this run wrote no batch request file to answer")
        answers, strays = parse_file(results, ids)
        if strays:
            shown = "\n  ".join(strays[:5])
            more = f"\n  ... and {len(strays) - 5} more" if len(strays) > 5 else ""
            raise DataError(
                f"{results}: {len(strays)} line(s) answer no request of the run in "
                f"{folder}:\n  {shown}{more}"
            )
        answered = {a.custom_id for a in answers}
        batches.save_responses(answers)
        rounds = max((c.round for c in batches.chunks()), default=0)
        for chunk in batches.chunks("exported"):
            if any(cid in answered for cid, _ in batches.ids_of(chunk.chunk_id)):
                batches.update_chunk(chunk.chunk_id, state="done", batch_status="completed")
    finally:
        store.close()
    if options_seen is None:
        raise ConfigError(
            f"{folder}: this run was not started on the batch-API engine (BatchAPIEngine)"
        )
    if judge is None:
        if entry is None:
            raise ConfigError(
                f"{folder}: the run's judge cannot be rebuilt from the run (it kept no catalog "
                "entry); pass judge= (the same judge the run was started with)"
            )
        judge = rebuild_judge(entry, folder / STORE_NAME)
    if data is None:
        source = Path(str(manifest.get("dataset", {}).get("source", "")))
        if not source.is_file():
            raise ConfigError(
                f"{folder}: the run's data {str(source)!r} is not a file here; pass data="
            )
        data = source
    options = BatchAPIOptions.model_validate(options_seen)
    next_out = next_file(files, rounds + 1) if files else options.file_out
    opts = manifest.get("options", {})
    run = await aevaluate(
        data,
        judge,
        run_dir=folder,
        fields=opts.get("fields") or None,
        retries=int(opts.get("retries", 0)),
        progress=progress,
        # adopting or resubmitting was for batches of that session, not for this one
        engine=BatchAPIEngine(
            options.model_copy(update={"file_out": next_out, "adopt": (), "resubmit": False})
        ),
    )
    summary = run.summary()
    waiting: list[Path] = []
    if summary.status == "awaiting results":
        reopened = RunStore(folder / STORE_NAME)
        try:
            waiting = [Path(p) for p in reopened.get_meta("batch_file_out") or []]
        finally:
            reopened.close()
    return IngestResult(run=run, answers=len(answers), status=summary.status, files=waiting)


def ingest(
    run_dir: str | Path,
    results_file: str | Path,
    *,
    data: Any = None,
    judge: Any = None,
    progress: bool = False,
) -> IngestResult:
    """Sync twin of :func:`aingest`."""
    from jurist._sync import run_sync

    return run_sync(aingest(run_dir, results_file, data=data, judge=judge, progress=progress))
