"""The public surface: ``jurist.__all__`` is pinned, and every package's ``__all__`` names
only importable, documented, public things."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import jurist

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

# DESIGN.md's public surface; a change here is a change of the contract.
TOP_LEVEL = {
    # models and the types they speak
    "Model",
    "get_model",
    "Completion",
    "Message",
    "Request",
    "Usage",
    "Judgment",
    "JuristError",
    # templates
    "Template",
    "get_template",
    "list_templates",
    "load_template",
    "register_template",
    # judges
    "LLMJudge",
    "Panel",
    "PairwiseJudge",
    "RewardModelJudge",
    "JudgeResults",
    "Rubric",
    "RubricDataset",
    "CriterionGrader",
    "CriterionVerdict",
    "GradeReport",
    "JudgeSpec",
    # runs, metrics, the catalog
    "evaluate",
    "aevaluate",
    "evaluate_model",
    "aevaluate_model",
    "Run",
    "PriceTable",
    "bench",
    "abench",
    "JudgeMetric",
    "metrics",
    "catalog",
    "__version__",
}


def _packages() -> list[str]:
    names = ["jurist"]
    names += [m.name for m in pkgutil.walk_packages(jurist.__path__, "jurist.") if m.ispkg]
    return sorted(names)


def _docs_text() -> str:
    pages = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
    return "\n".join(p.read_text(encoding="utf-8") for p in pages if p.is_file())


def _attribute_docstrings(package: ModuleType) -> set[str]:
    """Names assigned at module level with a string right after them or a ``#:`` comment
    right above (an attribute docstring, as Sphinx reads it), in any module of ``package``."""
    assert package.__file__ is not None
    folder = Path(package.__file__).parent
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        lines, body = text.splitlines(), ast.parse(text).body
        for stmt, after in zip(body, [*body[1:], None], strict=True):
            string_after = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            )
            comment_above = stmt.lineno > 1 and lines[stmt.lineno - 2].lstrip().startswith("#:")
            if isinstance(stmt, ast.Assign):
                targets = stmt.targets
            elif isinstance(stmt, ast.AnnAssign):
                targets = [stmt.target]
            else:
                continue
            if string_after or comment_above:
                found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


def _own_doc(obj: Any) -> str | None:
    if inspect.isclass(obj):
        return vars(obj).get("__doc__")
    return getattr(obj, "__doc__", None)


def test_top_level_all_is_the_public_surface() -> None:
    assert set(jurist.__all__) == TOP_LEVEL
    assert len(jurist.__all__) == len(TOP_LEVEL)  # no duplicates


def test_subpackages_are_reachable_after_import_jurist_and_load_lazily() -> None:
    """A fresh interpreter: ``import jurist`` alone, then the subpackages as attributes;
    the lazy ones are not imported until first used, so ``import jurist`` stays fast."""
    code = (
        "import sys, jurist\n"
        "lazy = ('jurist.metrics', 'jurist.rewards', 'jurist.compat')\n"
        "print(sorted(m for m in lazy if m in sys.modules))\n"
        "print(jurist.metrics.accuracy([1, 0], [1, 1]))\n"
        "print(callable(jurist.rewards.get_reward_from_name), jurist.compat.__name__)\n"
        "print(jurist.catalog.get.__module__, 'metrics' in dir(jurist))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    assert out == ["[]", "0.5", "True jurist.compat", "jurist.catalog True"]
    with pytest.raises(AttributeError, match="no attribute 'metricz'"):
        jurist.metricz  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize("package", _packages())
def test_every_name_in_all_is_public_importable_and_documented(package: str) -> None:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    assert names is not None, f"{package} has no __all__"
    assert len(set(names)) == len(names), f"{package}.__all__ repeats a name"
    docs = _docs_text() + (module.__doc__ or "")
    attribute_docs = _attribute_docstrings(module)
    undocumented = []
    for name in names:
        if name == "__version__":  # PEP 396's attribute, documented by its name
            continue
        assert not name.startswith("_"), f"{package}.{name} is private"
        obj = getattr(module, name)  # importable: `from package import name` works
        if inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj):
            if not (_own_doc(obj) or "").strip():
                undocumented.append(name)
        elif name not in attribute_docs and not re.search(rf"\b{re.escape(name)}\b", docs):
            undocumented.append(name)  # a constant or alias: a docstring after it, or docs
    assert not undocumented, f"{package}: no docstring for {undocumented}"
