"""Start-up in proportion to the work (issue 32, item 4): what a command imports, not how
long it takes (benchmarks/startup.py measures that).

``jurist --version``, ``jurist --help`` and ``jurist judge --help`` run in a fresh
interpreter that writes the names of its modules at exit; none may be an engine, the run
store, trust or trajectory code, nor numpy or pydantic. The registry the app lists its
commands from (:data:`jurist.cli._app.COMMANDS`) must match what the command modules
register, and the copies of choices the help shows (:mod:`jurist.cli._choices`) their
sources.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from jurist.cli import EXIT_OK, main
from jurist.cli._app import COMMANDS, app
from jurist.cli._help import _paragraphs

SRC = Path(__file__).resolve().parents[2] / "src"

# runs `python -m jurist ARGS` as the console script does, then lists sys.modules at exit
RUNNER = """
import atexit, runpy, sys
out = sys.argv[1]
def dump():
    with open(out, "w") as f:
        f.write("\\n".join(sorted(sys.modules)))
atexit.register(dump)
sys.argv = ["jurist", *sys.argv[2:]]
runpy.run_module("jurist", run_name="__main__", alter_sys=True)
"""

# what a command's help may read of models/: the backends' declarations (which providers
# take --base-url, the default model), a module of plain data, and the package's lazy
# __init__ that holds it
DECLARATIONS = ("jurist.models", "jurist.models._backends")

FORBIDDEN = (
    "jurist.engines",
    "jurist.runs",
    "jurist.trust",
    "jurist.trajectories",
    "jurist.judges",
    "jurist.models",
    "jurist.templates",
    "jurist.catalog",
    "jurist.batching",
    "jurist.metrics",
    "jurist.pipeline",
    "jurist.rewards",
    "jurist.data",
    "numpy",
    "pydantic",
)


def modules_after(args: list[str], tmp_path: Path) -> tuple[set[str], str]:
    """The modules loaded by ``jurist ARGS`` in a fresh interpreter, and its stdout."""
    out = tmp_path / "modules.txt"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    env["COLUMNS"] = "80"
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(out), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == EXIT_OK, done.stderr
    return set(out.read_text().split("\n")), done.stdout


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["judge", "--help"]], ids=" ".join)
def test_version_and_help_import_no_engine_store_trust_nor_trajectories(
    args: list[str], tmp_path: Path
) -> None:
    modules, stdout = modules_after(args, tmp_path)
    assert "jurist.cli._app" in modules  # the runner did run the command line
    heavy = sorted(m for m in modules if m.startswith(FORBIDDEN) and m not in DECLARATIONS)
    assert not heavy, heavy
    commands = {c.module for c in COMMANDS}
    loaded = sorted(m for m in modules if m in commands)
    assert loaded == (["jurist.cli._judge"] if args[0] == "judge" else []), loaded
    expected = {"--version": "jurist ", "--help": "Usage:", "judge": "--template NAME"}[args[0]]
    assert expected in stdout


def test_a_command_that_runs_imports_what_it_uses(tmp_path: Path) -> None:
    # the other side: `jurist templates` lists the templates, so it imports them
    modules, stdout = modules_after(["templates"], tmp_path)
    assert "jurist.templates" in modules and "true_false_uncertain" in stdout
    assert not [m for m in modules if m.startswith(("jurist.engines", "jurist.runs"))]


def test_import_jurist_imports_each_public_name_on_first_use() -> None:
    code = (
        "import sys, jurist\n"
        "print(sorted(m for m in sys.modules if m.startswith('jurist.')))\n"
        "print(jurist.evaluate.__module__, jurist.LLMJudge.__name__, jurist.Run.__name__)\n"
        "print('evaluate' in dir(jurist), set(jurist.__all__) <= set(dir(jurist)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.splitlines()
    assert out == ["['jurist._version']", "jurist.engines._evaluate LLMJudge Run", "True True"]


def test_python_m_jurist_runs_the_command_line() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-m", "jurist", "--version"], capture_output=True, text=True, env=env
    )
    assert done.returncode == EXIT_OK and done.stdout.startswith("jurist "), done.stderr


def test_the_registry_is_what_the_command_modules_register() -> None:
    for entry in COMMANDS:
        importlib.import_module(entry.module)
    registered = {info.name for info in app.registered_commands}
    registered |= {group.typer_instance.info.name for group in app.registered_groups}  # type: ignore[union-attr]
    assert registered == {c.name for c in COMMANDS}
    assert len(COMMANDS) == len({c.name for c in COMMANDS})  # no name twice


def test_each_one_line_help_is_the_first_paragraph_of_the_commands_own() -> None:
    group = typer.main.get_command(app)
    ctx = group.make_context("jurist", ["judge"], resilient_parsing=True)
    for entry in COMMANDS:
        command = group.get_command(ctx, entry.name)  # type: ignore[attr-defined]
        assert command is not None and command.help
        assert _paragraphs(command.help)[0] == entry.help, entry.name


def test_help_lists_the_commands_by_task(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["--help"]) == EXIT_OK
    out = capsys.readouterr().out
    panels = ["Judge", "Trust", "Rankings and reports", "Serving", "Data and catalog"]
    where = [out.index(f"─ {p} ─") for p in panels]
    assert where == sorted(where)
    listing = out[where[0] :].splitlines()
    names = [line.split()[1] for line in listing if line.startswith("│ ") and line[2] != " "]
    assert names[:4] == ["judge", "compare", "grade", "eval-model"]
    assert sorted(names) == sorted(c.name for c in COMMANDS)


def test_an_unknown_command_still_suggests_the_closest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["judeg"]) == 2
    assert "Did you mean 'judge'" in capsys.readouterr().err


def test_the_help_copies_of_choices_match_their_sources() -> None:
    from jurist.cli import _choices
    from jurist.judges._weigher import DEFAULT_MIN_COVERAGE
    from jurist.judges.rubric._aggregate import BINARY_AGGREGATIONS
    from jurist.judges.rubric._criteria import NOMINAL_AGGREGATIONS, ORDINAL_AGGREGATIONS
    from jurist.templates._criteria import CRITERIA_SCALES

    assert _choices.CRITERIA_SCALES == CRITERIA_SCALES
    assert _choices.DEFAULT_MIN_COVERAGE == DEFAULT_MIN_COVERAGE
    assert _choices.BINARY_AGGREGATIONS == BINARY_AGGREGATIONS
    assert _choices.ORDINAL_AGGREGATIONS == ORDINAL_AGGREGATIONS
    assert _choices.NOMINAL_AGGREGATIONS == NOMINAL_AGGREGATIONS


def test_the_help_lists_exactly_the_built_in_templates() -> None:
    # in a fresh interpreter: a test that registers a template does not count
    code = (
        "from jurist.templates import list_templates\n"
        "kinds = {}\n"
        "for name, t in list_templates().items(): kinds.setdefault(t.kind, []).append(name)\n"
        "print(repr({k: tuple(sorted(v)) for k, v in sorted(kinds.items())}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    from jurist.cli._choices import BUILTIN_TEMPLATES

    assert out.strip() == repr(dict(sorted(BUILTIN_TEMPLATES.items())))
