"""The typer application, its commands by name, its exit codes and the error console.

The command modules (``_judge``, ``_grade``, ...) import ``app`` from here and register on
it; this module imports none of them. :data:`COMMANDS` names each command's module, with
its one-line help and its panel in ``jurist --help``: the app imports a command's module
only when that command is used (:mod:`jurist.cli._lazy`), so ``jurist --version`` and
``jurist --help`` import no command, and every import points one way.
"""

from __future__ import annotations

import errno
from typing import Annotated

import typer
from rich.console import Console

from jurist._version import __version__
from jurist.cli._lazy import LazyCommand, LazyTyper

__all__ = [
    "COMMANDS",
    "EXIT_CRASH",
    "EXIT_FAILED_ITEMS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RUNTIME",
    "EXIT_USAGE",
    "USAGE_ERRNOS",
    "app",
    "err_console",
]

EXIT_OK = 0
"""Exit status: every item judged."""
EXIT_FAILED_ITEMS = 1
"""Exit status: the run finished, but some items have no score."""
EXIT_USAGE = 2
"""Exit status: a usage error (a flag, a path, a column); nothing was judged."""
EXIT_RUNTIME = 3
"""Exit status: the run stopped on a runtime error (an API, a full disk)."""
EXIT_CRASH = 70  # EX_SOFTWARE: a bug in jurist, not a problem with the input
"""Exit status: a bug in jurist (EX_SOFTWARE), not a problem with the input."""
EXIT_INTERRUPTED = 130

# OS errors that a user fixes (a path): usage; the rest (a full disk, I/O): runtime
USAGE_ERRNOS = {errno.ENOENT, errno.EISDIR, errno.ENOTDIR, errno.EACCES, errno.EPERM}

_RUN = "Judge"
_TRUST = "Trust"
_RANK = "Rankings and reports"
_SERVE = "Serving"
_DATA = "Data and catalog"


def _command(name: str, module: str, panel: str, help: str) -> LazyCommand:
    return LazyCommand(name=name, module=f"jurist.cli.{module}", help=help, panel=panel)


COMMANDS = (
    _command(
        "judge",
        "_judge",
        _RUN,
        "Judge every item of DATA with one template and write the results as JSONL.",
    ),
    _command(
        "compare",
        "_compare",
        _RUN,
        "Compare systems' answers with a pairwise judge; writes results.jsonl and a summary.",
    ),
    _command(
        "grade",
        "_grade",
        _RUN,
        "Grade DATA against a rubric; writes results.jsonl (a grade report per item).",
    ),
    _command(
        "eval-model",
        "_eval_model",
        _RUN,
        "Generate an answer per instance with --model, judge them with --judge; writes a run "
        "folder (results.jsonl, summary.json, report.html) that resumes.",
    ),
    _command(
        "run",
        "_run_suite",
        _RUN,
        "Run a suite file: every dataset with every judge, each cell a resumable run folder; "
        "exit 1 when a cell misses a bar.",
    ),
    _command(
        "ingest",
        "_ingest",
        _RUN,
        "Read an offline engine's answers into RUN; finish it, or name the next request file.",
    ),
    _command(
        "agreement",
        "_agreement",
        _TRUST,
        "Agreement between a run's judge and the labels in FIELD.",
    ),
    _command(
        "calibrate",
        "_calibrate",
        _TRUST,
        "Calibrate RUN's judge to the labels in FIELD; report held-out agreement before/after.",
    ),
    _command(
        "align",
        "_align",
        _TRUST,
        "Align RUN's judge to the labels in FIELD; report held-out agreement before/after.",
    ),
    _command(
        "gate",
        "_gate",
        _TRUST,
        "Exit 1 when the run's interval says it misses the bar; print a markdown summary.",
    ),
    _command(
        "estimate",
        "_estimate",
        _TRUST,
        "The run's figure corrected by a few labels (PPI++), beside the labels and the judge "
        "alone.",
    ),
    _command(
        "review",
        "_review",
        _TRUST,
        "Serve a page where people label RUN's items; each label is written at once to "
        "RUN/labels.jsonl (or --plan which items to label, --export an offline page, "
        "--import its labels).",
    ),
    _command(
        "audit",
        "_audit",
        _TRUST,
        "Audit a pairwise judge's biases (position, verbosity, format, self-preference).",
    ),
    _command(
        "leaderboard",
        "_leaderboard",
        _RANK,
        "Rank the systems of pairwise runs: Bradley-Terry scores with bootstrap intervals, raw "
        "and length-controlled win rates against a baseline; a table, CSV and an HTML page.",
    ),
    _command(
        "report",
        "_report",
        _RANK,
        "Write the HTML report of RUN (summary, distribution, tables, agreement, failures); of "
        "several runs, a page that lists them and shows two item by item, where they differ.",
    ),
    _command(
        "bench",
        "_bench",
        _TRUST,
        "Put judge setups side by side on labelled data: accuracy with intervals, position "
        "consistency, bias probes, cost per correct decision; a table, JSON and an HTML page.",
    ),
    _command(
        "serve-reward",
        "_serve_reward",
        _SERVE,
        "Serve a judge as rewards: POST /get_reward (OpenRLHF), POST /slime, POST /v1/rewards, "
        "POST /v1/group_rewards, GET /health, GET /metrics. SIGTERM finishes the requests in "
        "flight, then exits.",
    ),
    _command(
        "templates",
        "_templates",
        _DATA,
        "List the templates: name, kind, fields, scale, verdict form and what they score.",
    ),
    _command(
        "catalog",
        "_catalog",
        _DATA,
        "Named judges, templates and rubrics (built in, and yours in $JURIST_CATALOG).",
    ),
    _command(
        "traces",
        "_traces",
        _DATA,
        "Turn exported agent traces into trajectory items, one per trace.",
    ),
)
"""Every ``jurist`` command, in the order and the panels of ``jurist --help``; a command
module is imported when its command runs or shows its help. Each one-line help is the
first paragraph of the command's own help (tests/cli/test_cli_startup.py checks both)."""

app = LazyTyper(
    name="jurist",
    commands=COMMANDS,
    help="LLM-as-a-judge: score, compare and grade model outputs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
"""The ``jurist`` command (a Typer app); each subcommand module registers on it."""
err_console = Console(stderr=True)


def _print_version(value: bool) -> None:
    if value:
        Console().print(f"jurist {__version__}", highlight=False, markup=False)
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print jurist's version and exit.",
        ),
    ] = False,
) -> None:
    """LLM-as-a-judge: score, compare and grade model outputs."""
