"""``jurist ingest RUN FILE``: read an offline engine's answers into a run.

A ``judge``, ``compare`` or ``grade`` run started with ``--batch-file-out REQUESTS`` wrote
its requests as Batch API lines and stopped (status ``awaiting results``). Any engine that
answers such a file (``vllm run-batch -i REQUESTS -o RESULTS``, or a provider's batch API
used by hand) writes the results file this command reads (OpenAI's output / error file
format, or ``vllm run-batch``'s). The answers go through the same parse -> judgment ->
store path as a live run (:func:`jurist.engines.ingest`); then either the run is
complete and its results.jsonl and summary.json are written as any finished run's, or
some requests remain (re-asks of unreadable verdicts, lines the results lacked) and the
next request file is named, to answer and ingest the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from jurist.cli._app import app
from jurist.cli._run import AWAITING, finish_run, summary_path
from jurist.errors import ConfigError

__all__ = ["ingest_command", "results_path"]

# what the command that started the run put in its summary, carried to the final one
_CARRIED = ("model", "template", "rubric")


def results_path(run_dir: Path) -> Path:
    """Where the run's results.jsonl goes: inside the run folder, or ``FILE.jsonl``
    beside a ``FILE.run`` folder (as ``--out FILE.jsonl`` made it)."""
    if run_dir.suffix == ".run":
        return run_dir.with_suffix(".jsonl")
    return run_dir / "results.jsonl"


def _carried(out_path: Path) -> dict[str, Any]:
    """The command's own summary fields (model, template, rubric) from the summary the
    run wrote when it stopped to wait for results."""
    target = summary_path(out_path)
    try:
        before = json.loads(target.read_text())
    except (OSError, ValueError):
        return {}
    return {k: before[k] for k in _CARRIED if isinstance(before, dict) and before.get(k)}


@app.command("ingest")
def ingest_command(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN", help="The run folder (made with --batch-file-out).")
    ],
    results: Annotated[
        Path,
        typer.Argument(
            metavar="FILE", help="Results: Batch API output lines (e.g. `vllm run-batch -o`)."
        ),
    ],
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> int:
    """Read an offline engine's answers into RUN; finish it, or name the next request file."""
    from jurist.engines import ingest
    from jurist.runs import Run
    from jurist.runs.report._page import pair_figures

    Run(run_dir)  # a clear error when RUN is not a run folder
    if not results.is_file():
        raise ConfigError(f"{results}: no such results file")
    done = ingest(run_dir, results, progress=progress)
    out_path = results_path(run_dir)
    extra = _carried(out_path)
    run = done.run
    if done.status != AWAITING and run.manifest.judge.get("kind") == "pairwise":
        extra.update(pair_figures(run.rows()))  # as `jurist compare` adds them
    return finish_run(run, out_path, extra=extra)
