"""Numbers too large for a flag are usage errors before anything is made.

``--retries 99999999999999999999`` used to reach the run store, which cannot hold a
whole number past 64 bits: exit 70 and a run folder without a manifest. Every numeric flag
of every command now has a range (``jurist.cli._bounds``) that typer checks while it reads
the command line, and the run manifest refuses a number SQLite cannot keep before the run
folder is made (the library's own guard).
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest
import typer

import jurist
from jurist.cli import EXIT_USAGE, main
from jurist.cli._app import app
from jurist.errors import ConfigError

HUGE = "99999999999999999999"


def numeric_options() -> list[tuple[str, Any]]:
    """``(command, option)`` for every int or float option of every command."""
    group = typer.main.get_command(app)
    found = []
    for name, command in sorted(group.commands.items()):  # type: ignore[attr-defined]
        for param in command.params:
            described = getattr(param, "type_descriptor", None)
            annotation = getattr(described, "annotation", None)
            kinds = set(typing.get_args(annotation)) | {annotation}
            if param.opts[0].startswith("--") and kinds & {int, float}:
                found.append((name, param))
    return found


def test_every_numeric_flag_of_every_command_has_a_range() -> None:
    options = numeric_options()
    unbounded = [
        f"jurist {name} {param.opts[0]}"
        for name, param in options
        if getattr(param, "min", None) is None or getattr(param, "max", None) is None
    ]
    flags = {param.opts[0] for _, param in options}
    assert {"--retries", "--max-retries", "--timeout", "--concurrency", "--seed"} <= flags
    assert unbounded == []


@pytest.mark.parametrize(
    "flag",
    [
        ["--retries", HUGE],
        ["--max-retries", HUGE],
        ["--concurrency", HUGE],
        ["--rpm", HUGE],
        ["--tpm", HUGE],
        ["--timeout", "1e300"],
        ["--temperature", "1e300"],
        ["--batch-poll", "1e300"],
        ["--actors", HUGE],
    ],
)
def test_a_huge_number_is_a_usage_error_and_makes_no_run_folder(
    flag: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "q", "response": "a"}) + "\n")
    out = tmp_path / "run"
    args = ["judge", str(data), "--model", "mock:judge", "--no-progress", "--out", str(out)]
    assert main([*args, *flag]) == EXIT_USAGE
    said = " ".join(capsys.readouterr().err.split())
    assert f"Invalid value for '{flag[0]}'" in said and "less than or equal" in said, said
    assert not out.exists()


def test_the_library_refuses_a_number_the_run_store_cannot_keep_before_the_folder(
    tmp_path: Path,
) -> None:
    judge = jurist.LLMJudge("mock:judge", outputs=["Correct"])
    items = [{"prompt": "q", "response": "a"}]
    with pytest.raises(ConfigError, match=r"options\.retries = 10+ is too large"):
        jurist.evaluate(items, judge, run_dir=tmp_path / "run", retries=10**20)
    with pytest.raises(ConfigError, match=r"settings\.concurrency = 10+ is too large"):
        jurist.evaluate(items, judge, run_dir=tmp_path / "run", concurrency=10**20)
    assert not (tmp_path / "run").exists()
    run = jurist.evaluate(items, judge, run_dir=tmp_path / "run", retries=2**62)
    assert run.summary().items == 1
