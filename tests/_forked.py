"""A run in a process of its own, for the SIGKILL tests, started in milliseconds.

A fresh interpreter spends about a second importing jurist before it does anything; the
kill tests need a process to kill, not a fresh interpreter. So the process is forked from
a ``multiprocessing`` fork server that imported jurist once (the first use in a pytest
process starts it), and runs a function of a test helper module (``tests._kill_runs``,
``tests._batch_kill_script``) with the test's environment as it is now. It is a process of
its own like any other: its own pid, killed with a real signal, its exit status (``-9``
after SIGKILL) as :class:`subprocess.Popen` reports it. What it prints goes to a log file
the test can show when something goes wrong.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["Forked", "fork"]

_PRELOAD = [
    "jurist",
    "jurist.engines",
    "jurist.runs",
    "tests._kill_runs",
    "tests._batch_kill_script",
]


def _context() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)  # read when the server starts, once
    return context


def _child(env: dict[str, str], log: str, module: str, name: str, args: tuple[str, ...]) -> None:
    os.environ.clear()
    os.environ.update(env)  # the test's environment (its cache folder, say), not the server's
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    getattr(importlib.import_module(module), name)(*args)


class Forked:
    """The process; the parts of :class:`subprocess.Popen` the tests use, and its output."""

    def __init__(self, process: multiprocessing.process.BaseProcess, log: Path) -> None:
        self._process = process
        self.log = log
        assert process.pid is not None
        self.pid: int = process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(f"forked {self.pid}", timeout or 0.0)
        return self._process.exitcode

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def fork(run: Callable[..., object], *args: str, log: Path) -> Forked:
    """``run(*args)`` in a process of its own (``run``: a module-level function of a
    module the fork server can import); what it prints goes to ``log``."""
    process = _context().Process(
        target=_child,
        args=(dict(os.environ), str(log), run.__module__, run.__name__, args),
        daemon=True,
    )
    process.start()
    return Forked(process, log)
