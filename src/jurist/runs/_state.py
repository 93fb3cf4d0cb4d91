"""Where a run stands, read in one place: finished, interrupted, running, or another state.

A run's store records its status as each session goes (``running`` when a session starts;
``complete``, ``incomplete``, ``interrupted``, ``failed`` or ``awaiting results`` when it
ends). A process killed outright (SIGKILL, a lost machine) records nothing on its way
out, so its store still says ``running``; the folder's lock tells the two apart
(:func:`~jurist.runs._folder.lock_owner`): a run whose lock no live process holds is
``interrupted``. :func:`run_state` reads it; :func:`require_finished` is the check every
command that reads a finished run makes (``jurist gate``, ``calibrate``, ``align``), and
:func:`partial_note` the warning of one that reads a partial run as it is
(``jurist agreement``): each says what the run is, how far it got and how to go on.

A run compared with a baseline (``jurist gate --baseline``, the pytest plugin's
``assert_judged(baseline=...)``) must be of the same kind, judged on the same verdict
scale: :func:`check_same_kind` refuses another, naming both (:func:`run_kind`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from jurist.errors import ConfigError
from jurist.runs._folder import lock_owner
from jurist.runs._manifest import Manifest
from jurist.runs.report._scale import scale_of


class Run(Protocol):
    """What these checks read of a :class:`jurist.Run` (which reads its state through them)."""

    run_dir: Path
    manifest: Manifest

    def stored_status(self) -> tuple[str, int]: ...


__all__ = [
    "RunState",
    "check_same_kind",
    "effective_status",
    "partial_note",
    "require_finished",
    "run_kind",
    "run_state",
]

FINISHED = "complete"


def effective_status(folder: Path, stored: str) -> tuple[str, str | None]:
    """The run's status (``running`` with a dead lock owner is ``interrupted``) and, for
    ``running`` / a dead owner's ``interrupted``, the process the lock names."""
    if stored != "running":
        return stored, None
    owner = lock_owner(folder)
    if owner is None:
        return stored, None
    return ("running" if owner.alive else "interrupted"), owner.described


@dataclass(frozen=True)
class RunState:
    """What :func:`run_state` reads of a run."""

    folder: Path
    status: str
    items: int
    expected: int | None
    owner: str | None = None
    """The process the folder's lock names: the live one of a ``running`` run, the dead one
    of a run killed while running."""

    @property
    def finished(self) -> bool:
        return self.status == FINISHED

    def progress(self) -> str:
        """``141 of 400 items judged``."""
        of = "?" if self.expected is None else str(self.expected)
        return f"{self.items} of {of} items judged"

    def what_next(self) -> str:
        """How to go on from this state."""
        if self.status == "running":
            return "wait for it to finish (or stop it), then run this command again"
        if self.status == "awaiting results":
            return (
                "answer its batch request file and read the results in with "
                f"`jurist ingest {self.folder} RESULTS`"
            )
        return (
            "finish it first: run the command that started it again (the same data and "
            f"options, --out {self.folder}); it resumes where it stopped"
        )

    def describe(self, what: str = "run") -> str:
        """``RUN: the run is interrupted (141 of 400 items judged; ...); finish it ...``."""
        detail = self.progress()
        if self.status == "running" and self.owner:
            detail += f"; {self.owner} is working on it"
        elif self.status == "interrupted" and self.owner:
            detail += f"; its process ({self.owner}) was killed and is gone"
        return f"{self.folder}: the {what} is {self.status} ({detail}); {self.what_next()}"


def run_state(run: Run) -> RunState:
    """Where ``run`` stands (see the module docs)."""
    stored, items = run.stored_status()
    status, owner = effective_status(run.run_dir, stored)
    return RunState(
        folder=run.run_dir,
        status=status,
        items=items,
        expected=run.manifest.dataset.items,
        owner=owner,
    )


def require_finished(run: Run, what: str = "run") -> RunState:
    """``run``'s state, refused (a :class:`~jurist.errors.ConfigError`, exit 2) unless the
    run finished: a partial run gives figures on the items it reached, and would be
    taken for the whole."""
    state = run_state(run)
    if not state.finished:
        raise ConfigError(state.describe(what))
    return state


def partial_note(run: Run, what: str = "run") -> str | None:
    """A warning for a command that reads a partial run as it is; ``None`` when it finished."""
    state = run_state(run)
    if state.finished:
        return None
    return (
        f"warning: {state.describe(what)}; the figures below cover the "
        f"{state.items} items judged so far"
    )


def run_kind(run: Run) -> str:
    """What a run's scores are: its judge's kind, template and verdict scale (``judge kind
    'llm_judge', template 'likert', verdicts: a whole number from 1 to 5``)."""
    judge = run.manifest.judge
    out = f"judge kind {str(judge.get('kind', 'judge'))!r}"
    template = judge.get("template")
    name = template.get("name") if isinstance(template, dict) else template
    if isinstance(name, str):
        out += f", template {name!r}"
    scale = scale_of(judge)
    return out if scale is None else f"{out}, verdicts: {scale.describe()}"


def check_same_kind(run: Run, baseline: Run) -> None:
    """Refuse (a usage error) a baseline whose scores mean something else than the run's:
    another judge kind, or another verdict scale."""
    judge, base = run.manifest.judge, baseline.manifest.judge
    if judge.get("kind") != base.get("kind") or scale_of(judge) != scale_of(base):
        raise ConfigError(
            f"the baseline {baseline.run_dir} ({run_kind(baseline)}) and {run.run_dir} "
            f"({run_kind(run)}) were judged differently: their scores cannot be compared; "
            "give a baseline judged the same way"
        )
