"""The run flags every run command shares, declared once, and the one builder of its
:class:`~jurist.engines.RunOptions`.

:func:`run_flags` is a decorator for a typer command, like
:func:`~jurist.cli._model_options.model_options` and
:func:`~jurist.cli._engine_options.engine_options`: it adds the shared flags (``--out``,
``--progress``, ``--resume``, ``--retry-failed``, ``--overwrite``, ``--retries``, and
``--repeats``, ``--adaptive``, ``--min-repeats`` unless the command opts out) to the
command's signature and hands the command one :class:`RunFlags` in its ``run`` parameter.
:meth:`RunFlags.options` is the only place a command line becomes a ``RunOptions``, so
the flags mean the same on ``judge``, ``compare``, ``grade`` and ``eval-model``. A
command may change a flag's default or help (``out_help=...``), never redefine it; a new
run flag (one that every data-reading command takes) is one entry of :data:`RUN_FLAGS`
and one field of :class:`RunFlags`.

>>> flags = RunFlags(out=None, retries=3, resume=False)
>>> opts = flags.options(Path("runs/x"), fields={"prompt": "q"})
>>> opts.retries, opts.resume, opts.fields, opts.progress
(3, False, {'prompt': 'q'}, True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from jurist.cli._bounds import bounded
from jurist.cli._flag_group import add_flag_group

if TYPE_CHECKING:
    from jurist.engines import RunOptions

__all__ = ["REPEAT_FLAGS", "RUN_FLAGS", "RunFlags", "run_flags"]

_PANEL = "Run options"
RETRY_FAILED_HELP = "On resume, judge again the items that failed (--no-retry-failed keeps them)."
OVERWRITE_HELP = (
    "Write into an --out folder or file that jurist did not make (it is refused otherwise)."
)


@dataclass(frozen=True)
class RunFlags:
    """The shared run flags of one command line, typed."""

    out: Path | None = None
    progress: bool = True
    resume: bool = True
    retry_failed: bool = True
    overwrite: bool = False
    retries: int = 2
    repeats: int = 1
    adaptive: bool = False
    min_repeats: int | None = None
    otel: str | None = None

    def options(
        self,
        run_dir: Path,
        *,
        fields: Mapping[str, str] | None = None,
        concurrency: int | None = None,
        files_root: Sequence[Path] = (),
    ) -> RunOptions:
        """The :class:`~jurist.engines.RunOptions` of this command line for the run in
        ``run_dir`` (``fields``: judge field -> column; ``concurrency``: items in flight,
        default the judge's; ``files_root``: the folders, besides the data file's, its
        local image files may be read from: ``--files-root``)."""
        from jurist.engines import RunOptions

        return RunOptions(
            run_dir=run_dir,
            resume=self.resume,
            retry_failed=self.retry_failed,
            overwrite=self.overwrite,
            fields=dict(fields) if fields is not None else None,
            retries=self.retries,
            concurrency=concurrency,
            progress=self.progress,
            repeats=self.repeats,
            adaptive=self.adaptive,
            min_repeats=self.min_repeats,
            files_root=tuple(files_root),
        )


# parameter name -> (type, default, typer.Option keyword arguments)
RUN_FLAGS: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "out": (
        Path | None,
        None,
        {"help": "Output folder or .jsonl file; default runs/<data>-<judge>/."},
    ),
    "progress": (bool, True, {"help": "Show a progress bar."}),
    "resume": (
        bool,
        True,
        {"help": "Continue the run in the output folder (--no-resume starts over)."},
    ),
    "retry_failed": (bool, True, {"help": RETRY_FAILED_HELP}),
    "overwrite": (bool, False, {"help": OVERWRITE_HELP}),
    "retries": (int, 2, bounded("retries", help="Re-asks for an unreadable verdict.")),
    "otel": (
        str | None,
        None,
        {
            "metavar": "TARGET",
            "help": "Also send each judgment as an OpenTelemetry gen_ai.evaluation.result "
            "event: TARGET is a file (OTLP/JSON) or a collector URL (OTLP/HTTP, http://host:4318); "
            "items from `jurist traces` are linked to the span they evaluate.",
        },
    ),
}
REPEAT_FLAGS: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "repeats": (
        int,
        1,
        bounded(
            "repeats",
            help="Judge each item N times (fresh draws at the judge's temperature, never a "
            "cached answer of another repeat); the summary shows flip rates, "
            "self-consistency and an interval with the judge's own variance. Local engine "
            "only.",
        ),
    ),
    "adaptive": (
        bool,
        False,
        {
            "help": "With --repeats N: judge --min-repeats first, then more (up to N) only "
            "while an item's verdict is not settled (unanimous, or a lead no remaining repeat "
            "can undo)."
        },
    ),
    "min_repeats": (
        int | None,
        None,
        bounded("min_repeats", help="With --adaptive: repeats every item gets (default 3)."),
    ),
}
"""The repeat flags (a command whose judge cannot repeat leaves them out)."""

F = TypeVar("F", bound=Callable[..., Any])


def run_flags(*, repeats: bool = True, **defaults: Any) -> Callable[[F], F]:
    """Add the shared run flags to a typer command; it receives ``run: RunFlags``.

    ``repeats=False`` leaves the repeat flags out; ``defaults`` change a flag's default
    (``retries=0``) or help (``out_help=...``).
    """
    table = {**RUN_FLAGS, **(REPEAT_FLAGS if repeats else {})}
    helps = {k[: -len("_help")]: v for k, v in defaults.items() if k.endswith("_help")}
    values = {k: v for k, v in defaults.items() if not k.endswith("_help")}
    unknown = (set(values) | set(helps)) - set(table)
    if unknown:
        raise TypeError(f"unknown shared run options: {sorted(unknown)}")

    def decorate(func: F) -> F:
        flags: dict[str, tuple[Any, Any]] = {}
        for name, (kind, default, info) in table.items():
            info = {**info, "rich_help_panel": _PANEL}
            if name in helps:
                info["help"] = helps[name]
            flags[name] = (values.get(name, default), Annotated[kind, typer.Option(**info)])
        return add_flag_group(
            func, "run", flags, lambda shared: RunFlags(**shared), what="run options"
        )

    return decorate
