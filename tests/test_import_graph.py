"""jurist's modules import each other one way: the import graph of src/jurist has no cycle.

The graph is built statically, with :mod:`ast`, from every ``import`` and ``from ... import``
anywhere in a module: at the top, inside functions and methods (a lazy import that dodges a
cycle at run time is still a cycle in the design) and under ``if TYPE_CHECKING:`` (a type
that only one side may name is still a dependency). The rules:

- a node is a module of src/jurist; a package is its ``__init__``;
- ``import a.b.c`` is an edge to ``a.b.c``; ``from a.b import c`` is an edge to ``a.b.c``
  when ``c`` is a module, else to ``a.b``; relative imports are resolved first;
- every edge counts, a package ``__init__`` importing its own submodules included (then a
  submodule that imports from its own package's ``__init__`` closes a cycle);
- importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``; those implicit parent
  imports are not edges (every module would otherwise depend on ``jurist/__init__``);
- imports of modules outside jurist are ignored.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules(src: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the ``jurist`` package under ``src``."""
    out: dict[str, Path] = {}
    for path in sorted((src / "jurist").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """``(imported jurist module, line)`` for every import statement in ``path``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in modules:
                    yield submodule, node.lineno
                elif target in modules:
                    yield target, node.lineno


def import_graph(src: Path = SRC) -> dict[str, dict[str, int]]:
    """module -> {imported module: first line importing it}, jurist modules only."""
    modules = _modules(src)
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges: dict[str, int] = {}
        for target, line in _imports(name, path, modules):
            if target != name:
                edges[target] = min(line, edges.get(target, line))
        graph[name] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _describe(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    members = set(component)
    edges = [
        f"  {src}:{line} imports {dst}"
        for src in component
        for dst, line in sorted(graph[src].items())
        if dst in members
    ]
    return "cycle between " + ", ".join(component) + "\n" + "\n".join(edges)


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    pkg = tmp_path / "jurist"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from jurist.a import A\n")
    (pkg / "a.py").write_text("import jurist.sub.b\nimport os\n")
    (pkg / "sub" / "__init__.py").write_text("from . import b\n")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..a import A\n"
        "def f():\n    from jurist.sub import c\n    from jurist import a\n"
    )
    (pkg / "sub" / "c.py").write_text("from jurist.sub import X\n")
    graph = import_graph(tmp_path)
    assert graph == {
        "jurist": {"jurist.a": 1},
        "jurist.a": {"jurist.sub.b": 1},
        "jurist.sub": {"jurist.sub.b": 1},
        "jurist.sub.b": {"jurist.a": 3, "jurist.sub.c": 5},
        "jurist.sub.c": {"jurist.sub": 1},
    }
    # a <-> b through a TYPE_CHECKING import; sub -> b -> c -> sub through a lazy import
    assert cycles(graph) == [["jurist.a", "jurist.sub", "jurist.sub.b", "jurist.sub.c"]]


def test_no_import_cycle_between_jurist_modules() -> None:
    graph = import_graph()
    assert "jurist.cli" in graph and "jurist.judges.rubric._grader" in graph
    found = cycles(graph)
    assert not found, "\n".join(_describe(graph, c) for c in found)


ENGINES = (
    "jurist.engines",
    "jurist.runs",
    "jurist.pipeline",
    "jurist.batching",
    "jurist.cli",
    "jurist.rewards",
)
"""What the models layer must never import: the engines (local, Ray, batch API), the run
store, the batcher, and what sits above them."""

DESIGN_LAYERS = (
    "cli",
    "compat",
    "engines",
    "pipeline",
    "runs",
    "rewards",
    "catalog",
    "audit",
    "trust",
    "trajectories",
    "judges",
    "batching",
    "metrics",
    "data",
    "templates",
    "models",
    "types.py",
)
"""The layer list of DESIGN.md ("Layers (one package per concept, arrows point down
only)"), top down, as its diagram gives it: the packages, then the shared base
``types.py``. DESIGN.md lives beside the checkout (``../shared/DESIGN.md``), not in it:
when it is there, :func:`test_design_md_gives_the_layers_this_test_encodes` reads its
diagram and compares."""

LAYERS = (
    "testing",
    "cli",
    "benchmark",
    "compat",
    "engines",
    "pipeline",
    "runs",
    "rewards",
    "catalog",
    "audit",
    "trust",
    "trajectories",
    "judges",
    "batching",
    "metrics",
    "data",
    "templates",
    "models",
)
"""DESIGN.md's layers, top down: a package imports only the packages below it (and the
shared base: ``types``, ``errors`` and the private top-level helpers ``jurist._*``).
``testing`` (the pytest plugin, the tiny-model and llama.cpp fixtures), which DESIGN.md
does not draw, sits on top; ``benchmark`` (``jurist bench``: judge setups side by side,
over the engines, trust and the run reports), which DESIGN.md does not draw yet, sits
right under ``cli``; ``jurist/__init__`` (the public surface) and ``__main__`` sit above
everything."""

UNDRAWN = {"benchmark": "cli"}
"""Layers DESIGN.md's diagram does not draw yet -> the layer they sit right under."""

BACKENDS = (
    "jurist.models._openai",
    "jurist.models._openai_batch",
    "jurist.models._openai_batch_client",
    "jurist.models._anthropic",
    "jurist.models._anthropic_batch",
    "jurist.models._litellm",
    "jurist.models._hf",
    "jurist.models._vllm",
    "jurist.models._mock",
    "jurist.models._langchain",
)

ENGINE_WORDS = (
    "batch_collector",
    "collecting(",
    "current_item",
    "ContextVar",
    "_batch_hook import",
)
"""What a backend that called up into an engine would name (the ContextVar collector the
batch engine used to set for ``OpenAIModel.complete``)."""


def _reaches(graph: dict[str, dict[str, int]], start: str) -> dict[str, list[str]]:
    """Every module ``start`` imports, directly or not, with the path that gets there."""
    paths = {start: [start]}
    todo = [start]
    while todo:
        here = todo.pop()
        for nxt in graph.get(here, {}):
            if nxt not in paths:
                paths[nxt] = [*paths[here], nxt]
                todo.append(nxt)
    return paths


def test_the_models_layer_never_imports_an_engine() -> None:
    graph = import_graph()
    bad = []
    for module in graph:
        if module != "jurist.models" and not module.startswith("jurist.models."):
            continue
        for target, path in _reaches(graph, module).items():
            if target.startswith(ENGINES):
                bad.append(" -> ".join(path))
    assert not bad, "the models layer imports an engine:\n" + "\n".join(sorted(set(bad)))


def test_the_batcher_never_imports_the_engine() -> None:
    graph = import_graph()
    for module in (m for m in graph if m.startswith("jurist.batching")):
        reached = _reaches(graph, module)
        bad = [
            " -> ".join(p)
            for t, p in reached.items()
            if t.startswith(("jurist.engines", "jurist.runs"))
        ]
        assert not bad, "\n".join(bad)


def _layer(module: str) -> int | None:
    """The rank of ``module``'s package in :data:`LAYERS` (0 is the top), None for the base."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] == "__main__":
        return -1  # the public surface and python -m jurist: above everything
    if parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    assert parts[1] in ("types", "errors") or parts[1].startswith("_"), (
        f"{module} is in no layer: add its package to LAYERS"
    )
    return None


DESIGN_MD = SRC.parent.parent / "shared" / "DESIGN.md"  # beside the checkout, not in it


def design_layers(text: str) -> tuple[str, ...]:
    """The layer names of DESIGN.md's diagram: the first fenced block after the heading
    ``## Layers``, one layer per line that starts with ``name/`` (or ``types.py``)."""
    _, found, after = text.partition("\n## Layers")
    assert found, "DESIGN.md has no '## Layers' section"
    block = after.split("```", 2)[1]
    names = []
    for line in block.splitlines():
        match = re.match(r"([a-z_]+)/\s|(types\.py)\b", line)
        if match:
            names.append(match.group(1) or match.group(2))
    return tuple(names)


def test_the_layers_are_design_mds_in_its_order_and_every_package_has_one() -> None:
    # the order checked by test_every_import_points_down_the_layers is DESIGN.md's, with
    # jurist.testing on top; the shared base (types, errors, jurist._*) is below them all
    drawn = ["testing", *DESIGN_LAYERS[:-1]]
    for layer, above in UNDRAWN.items():
        drawn.insert(drawn.index(above) + 1, layer)
    assert tuple(drawn) == LAYERS
    assert DESIGN_LAYERS[-1] == "types.py" and (SRC / "jurist" / "types.py").is_file()
    packages = {p.parent.name for p in (SRC / "jurist").glob("*/__init__.py")}
    assert packages == set(LAYERS), "a package is in no layer, or a layer has no package"


def test_design_md_gives_the_layers_this_test_encodes() -> None:
    if not DESIGN_MD.is_file():
        pytest.skip(f"{DESIGN_MD} is not beside this checkout")
    assert design_layers(DESIGN_MD.read_text(encoding="utf-8")) == DESIGN_LAYERS


def test_design_layers_reads_the_diagram() -> None:
    text = (
        "# d\n\n## Layers (arrows point down)\n\n```\ncli/   commands; reads env vars\n"
        "                imports only what/ it needs\nmodels/   Model ABC\n"
        "types.py        Message\n```\n\n```\nnot/ this block\n```\n"
    )
    assert design_layers(text) == ("cli", "models", "types.py")


def test_every_import_points_down_the_layers() -> None:
    graph = import_graph()
    up = []
    for module, edges in graph.items():
        here = _layer(module)
        for target, line in edges.items():
            there = _layer(target)
            if there is None or here == there:
                continue
            if here is None or there <= here:
                up.append(f"{module}:{line} imports {target}")
    assert not up, "imports that point up (or sideways) the layers:\n" + "\n".join(up)


def test_no_backend_references_batch_collection_or_an_engine() -> None:
    modules = _modules(SRC)
    checked = 0
    for name in BACKENDS:
        path = modules.get(name)
        if path is None:
            continue
        checked += 1
        text = path.read_text(encoding="utf-8")
        for word in (*ENGINE_WORDS, *ENGINES):
            assert word not in text, f"{path} names {word!r}"
    assert checked >= 6


def test_the_cli_app_has_every_command_once_jurist_cli_is_imported() -> None:
    # the app knows every command by name (jurist.cli._app.COMMANDS) and imports a command's
    # module when it is used; nothing needs main() to run first, and _app imports no command
    import typer

    from jurist.cli import app

    group = typer.main.get_command(app)
    commands = set(group.commands)  # type: ignore[attr-defined]
    expected = {"agreement", "catalog", "compare", "eval-model", "grade", "judge", "report"}
    assert expected | {"templates"} <= commands
    imported = {m for m in import_graph()["jurist.cli._app"] if m.startswith("jurist.cli.")}
    assert imported <= {"jurist.cli._help", "jurist.cli._lazy"}  # help layout, lazy group


def test_template_from_dict_and_from_yaml_build_the_same_template(tmp_path: Path) -> None:
    # Template builds itself from the YAML format module (_yaml_format imports no Template)
    from jurist.errors import ConfigError
    from jurist.templates import Template, load_template

    text = (
        "name: ok\nmessages:\n  - {role: user, content: 'Is it right? {response}'}\n"
        "fields: [response]\nscale: {labels: {'Yes': 1.0, 'No': 0.0}}\n"
    )
    path = tmp_path / "ok.yaml"
    path.write_text(text)
    data = {
        "name": "ok",
        "messages": [{"role": "user", "content": "Is it right? {response}"}],
        "fields": ["response"],
        "scale": {"labels": {"Yes": 1.0, "No": 0.0}},
    }
    from_dict = Template.from_dict(data, source=str(path))
    assert from_dict == Template.from_yaml(path) == load_template(path)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text + "max_tokens: lots\n")  # the error building the Template names the line
    with pytest.raises(ConfigError, match=r"bad\.yaml:6: max_tokens: .*integer"):
        Template.from_yaml(bad)
