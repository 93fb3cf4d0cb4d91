"""Provider knowledge lives in models/: no code outside it names a provider.

Outside ``src/jurist/models/`` no string in the code (docstrings and doctests aside, which
are documentation) is a provider's name or starts a ``provider:name`` spec, and no code
compares a value with a provider name (``provider == "openai"``): the CLI, the engines,
the catalog, the rewards and the price table ask the backend's declaration
(:func:`jurist.models.backend_info`) or the model (its capabilities) instead. The
providers checked are every declared one (so a new backend is covered the day it is
declared).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from jurist.models._backends import backends

SRC = Path(__file__).resolve().parents[1] / "src" / "jurist"
PROVIDERS = sorted(b.provider for b in backends())
# a provider's name as the whole string, or as the start of a spec: "openai:..."
_ALT = "|".join(map(re.escape, PROVIDERS))
NAMED = re.compile(rf"(?<![\w.\-/$])({_ALT}):|^({_ALT})$")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are documentation: a module's, a class's or a
    function's docstring, and a string standing alone after an assignment (an attribute's
    docstring)."""
    docs: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for i, stmt in enumerate(body):
            if not (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                continue
            if i == 0 or isinstance(body[i - 1], ast.Assign | ast.AnnAssign):
                docs.add(id(stmt.value))
    return docs


def provider_names(path: Path) -> list[str]:
    """``line: text`` of each string in ``path``'s code that names a provider."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docs
            and NAMED.search(node.value)
        ):
            found.append(f"{node.lineno}: {node.value[:80]!r}")
    return found


def test_no_code_outside_models_names_a_provider() -> None:
    found = {
        str(path.relative_to(SRC)): hits
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "models"
        for hits in [provider_names(path)]
        if hits
    }
    assert found == {}


def test_no_code_outside_models_compares_with_a_provider_name() -> None:
    compared = re.compile(r"provider\s*[!=]=|[!=]=\s*provider\b")
    found = [
        f"{path.relative_to(SRC)}:{n}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "models"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if compared.search(line) and not line.lstrip().startswith(("#", ">>>", "..."))
    ]
    assert found == []


def test_the_check_sees_a_provider_named_in_code(tmp_path: Path) -> None:
    """The check is not blind: a spec, a bare name and a comparison are found, a
    docstring and a tool's name in a message are not."""
    module = tmp_path / "m.py"
    module.write_text(
        '"""Doc: openai:gpt-4o-mini and hf."""\n'
        'SPEC = "openai:tiny"\n'
        'WHICH = "hf"\n'
        'TOOL = "vllm run-batch -i x"\n'
        'def f(provider):\n    """anthropic:claude"""\n    return provider == "litellm"\n'
    )
    assert [hit.split(":")[0] for hit in provider_names(module)] == ["2", "3", "7"]
