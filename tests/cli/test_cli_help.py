"""Every command's help at 80 columns: nothing cut, choices listed (issue 21, item 6)."""

from __future__ import annotations

import re
from typing import get_args

import pytest
import typer

from jurist.audit import PROBES
from jurist.catalog._names import SECTIONS
from jurist.cli import EXIT_OK, main
from jurist.cli._app import app
from jurist.cli._engine_options import ENGINES, FOLLOWUPS, ON_EXPIRED
from jurist.cli._model_options import JSON_MODES
from jurist.judges._scoring import ScoringChoice
from jurist.judges._weigher import LowCoverage
from jurist.judges.rubric._aggregate import BINARY_AGGREGATIONS
from jurist.judges.rubric._criteria import NOMINAL_AGGREGATIONS, ORDINAL_AGGREGATIONS
from jurist.templates import list_templates
from jurist.templates._criteria import CRITERIA_SCALES

COMMANDS = [
    [],
    ["judge"],
    ["compare"],
    ["grade"],
    ["agreement"],
    ["calibrate"],
    ["align"],
    ["audit"],
    ["report"],
    ["serve-reward"],
    ["eval-model"],
    ["ingest"],
    ["templates"],
    ["traces"],
    ["catalog"],
    ["catalog", "show"],
    ["catalog", "add"],
    ["catalog", "remove"],
]


def templates(kind: str) -> tuple[str, ...]:
    return tuple(sorted(n for n, t in list_templates().items() if t.kind == kind))


# (command, option, its fixed values, from the code that checks them)
CHOICES = [
    (["judge"], "--scoring", get_args(ScoringChoice)),
    (["review"], "--by", ("auto", "uniform", "spread")),
    (["judge"], "--low-coverage", get_args(LowCoverage)),
    (["judge"], "--output", ("auto", "text", "json")),
    (["judge"], "--template", templates("single")),
    (["judge"], "--scale", CRITERIA_SCALES),
    (["compare"], "--template", templates("pairwise")),
    (["compare"], "--consistency", ("tie", "inconsistent")),
    (["grade"], "--aggregation", BINARY_AGGREGATIONS),
    (["grade"], "--ordinal-aggregation", ORDINAL_AGGREGATIONS),
    (["grade"], "--nominal-aggregation", NOMINAL_AGGREGATIONS),
    (["agreement"], "--kind", ("auto", "nominal", "ordinal", "interval")),
    (["calibrate"], "--kind", ("auto", "ordinal", "interval")),
    (["estimate"], "--kind", ("auto", "mean", "win_rate", "agreement")),
    (["estimate"], "--method", ("analytic", "bootstrap")),
    (["align"], "--kind", ("auto", "nominal", "ordinal", "interval")),
    (["audit"], "--probe", PROBES),
    (["audit"], "--own", ("a", "b")),
    (["audit"], "--template", templates("pairwise")),
    (["serve-reward"], "--template", templates("single")),
    (["serve-reward"], "--group-template", templates("pairwise")),
    (["catalog"], "--section", tuple(SECTIONS)),
    *[
        ([command], "--reasoning", ("none", "low", "medium", "high", "TOKENS"))
        for command in ("judge", "compare", "grade")
    ],
    *[
        ([command], option, values)
        for command in ("judge", "compare", "grade")
        for option, values in (
            ("--engine", ENGINES),
            ("--batch-followup", FOLLOWUPS),
            ("--batch-expired", ON_EXPIRED),
        )
    ],
    *[
        ([command], "--json-mode", JSON_MODES)
        for command in ("judge", "compare", "grade", "eval-model", "serve-reward", "audit", "align")
    ],
]


def help_at_80(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    code = main([*command, "--help"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    return out


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "jurist")
def test_help_fits_80_columns_uncut(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = help_at_80(command, capsys, monkeypatch)
    assert "Usage:" in out
    assert "…" not in out, out
    assert max(len(line) for line in out.splitlines()) <= 80
    # flags show no type, options a plain metavar, never <bool> / <str>
    assert not re.search(r"<(bool|str|int|float|path)\b", out), out


@pytest.mark.parametrize(
    ("command", "option", "values"),
    CHOICES,
    ids=[f"{' '.join(c)} {o}" for c, o, _ in CHOICES],
)
def test_choice_options_list_their_values(
    command: list[str],
    option: str,
    values: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = " ".join(help_at_80(command, capsys, monkeypatch).replace("│", " ").split())
    if option.endswith("template"):  # a name or a file: the built-in names in its help
        start = out.index(f"{option} NAME")
        entry = out[start : out.index("; or a .yaml template file.", start)]
        assert all(re.search(rf"\b{name}\b", entry) for name in values), entry
    else:
        assert f"{option} {'|'.join(values)} " in out, out


def test_every_choice_metavar_is_checked_here() -> None:
    """An option given a ``a|b`` metavar anywhere is in CHOICES, so its values are checked."""
    listed = {(tuple(c), o) for c, o, _ in CHOICES}
    root = typer.main.get_command(app)
    found = set()
    stack: list[tuple[tuple[str, ...], object]] = [((), root)]
    while stack:
        path, cmd = stack.pop()
        subs = getattr(cmd, "commands", {})
        stack.extend(((*path, name), sub) for name, sub in subs.items())
        for param in getattr(cmd, "params", []):
            if param.metavar and "|" in str(param.metavar):
                found.add((path, param.opts[0]))
    assert found and found <= listed, found - listed
