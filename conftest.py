"""Collection for the whole tree: the framework adapters' modules import their framework at
the top (they subclass its classes), so ``--doctest-modules`` skips each one whose
framework is not installed instead of failing to import it."""

from __future__ import annotations

import importlib.util

_ADAPTERS = {
    "src/jurist/compat/unitxt.py": "unitxt",
    "src/jurist/compat/inspect.py": "inspect_ai",
    "src/jurist/compat/deepeval.py": "deepeval",
}

collect_ignore = [path for path, pkg in _ADAPTERS.items() if importlib.util.find_spec(pkg) is None]
