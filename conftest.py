"""Collection and scheduling for the whole tree.

- The framework adapters' modules import their framework at the top (they subclass its
  classes), so ``--doctest-modules`` skips each one whose framework is not installed
  instead of failing to import it.
- Bytecode caches are written even where ``PYTHONDONTWRITEBYTECODE`` is set (this build
  machine sets it): the suite imports jurist in every xdist worker, in dozens of
  ``python -m jurist`` subprocesses and in every Ray worker, and pytest rewrites the
  asserts of ~190 test modules; without caches each of those compiles from source
  again (about 9 s of collection per worker, more in the subprocesses). The caches go to
  ``__pycache__`` folders, which git ignores.
- Under ``-n`` (xdist's default ``load`` distribution) each test file runs whole on one
  worker, so a module's fixtures (a server, a browser, a model) start once, and every
  module that uses the session's Ray instance (``tests/_ray_cluster.py``) runs on the
  same worker, so one Ray instance serves them all instead of one per worker.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

_ADAPTERS = {
    "src/jurist/compat/unitxt.py": "unitxt",
    "src/jurist/compat/inspect.py": "inspect_ai",
    "src/jurist/compat/deepeval.py": "deepeval",
}

collect_ignore = [path for path, pkg in _ADAPTERS.items() if importlib.util.find_spec(pkg) is None]

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for the subprocesses and Ray workers

_TESTS = Path(__file__).parent / "tests"
_RAY_MODULES = frozenset(
    p.relative_to(_TESTS.parent).as_posix()
    for p in _TESTS.rglob("test_*.py")
    if "tests._ray_cluster import" in p.read_text(encoding="utf-8")
)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Whole files per worker, the Ray modules as one unit (module doc)."""
    if config.getvalue("dist") != "load":
        return None  # an explicit --dist is the caller's choice
    from xdist.scheduler import LoadFileScheduling

    class FileScheduling(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/<ray>" if path in _RAY_MODULES else path

    return FileScheduling(config, log)
