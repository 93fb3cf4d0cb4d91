"""``jurist gate RUN`` (issue 27, item 6): its exit codes, its rule and its markdown summary.

Runs are judged by the mock model (item ``i``'s repeat ``r`` answers as a test's
``verdict(i, r)`` says), then gated through the real CLI entry point.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

import jurist
from jurist.cli import EXIT_OK, EXIT_USAGE
from jurist.cli._gate import EXIT_GATE_FAILED
from jurist.trust import Bar, gate_scores
from jurist.types import Request
from tests._cli_run import run as cli

Verdict = Callable[[int, int], bool]


def judged(folder: Path, n: int, verdict: Verdict, *, repeats: int = 1, tag: str = "") -> Path:
    """A finished run of ``n`` items in ``folder``; ``verdict(i, r)``: item ``i``'s
    repeat ``r`` is judged correct."""

    def answer(request: Request) -> str:
        i = int(request.messages[-1].content.split("ITEM-")[1].split("-")[0])
        return "Correct" if verdict(i, request.repeat) else "Incorrect"

    items = [{"prompt": f"ITEM-{i}-{tag}", "response": "x"} for i in range(n)]
    judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=answer))
    jurist.evaluate(items, judge, run_dir=folder, repeats=repeats)
    return folder


def test_a_run_that_clears_the_bar_passes_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = judged(tmp_path / "run", 30, lambda i, r: i % 10 != 0)  # 0.9
    step = tmp_path / "step.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    summary = tmp_path / "out" / "gate.md"
    code = jurist.cli.main(["gate", str(run), "--min-score", "0.7", "--summary", str(summary)])
    out = capsys.readouterr().out
    assert code == EXIT_OK
    assert out.startswith(f"### jurist gate `{run}`: ✅ pass")
    assert "| mean score | 0.9000 | [" in out and "| ≥ 0.7000 | pass |" in out
    assert "30 of 30 items scored; one judgment per item" in out
    assert summary.read_text() == out
    assert step.read_text() == "earlier step\n" + out + "\n"  # appended, not replaced


def test_a_run_whose_interval_lies_below_the_bar_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = judged(tmp_path / "run", 30, lambda i, r: i % 10 < 3)  # 0.3
    code, out = cli(["gate", str(run), "--min-score", "0.7"], capsys)
    assert code == EXIT_GATE_FAILED == 1
    assert "❌ fail" in out and "| mean score | 0.3000 |" in out and "| fail |" in out


def test_an_interval_straddling_the_bar_warns_and_fails_only_when_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = judged(tmp_path / "run", 30, lambda i, r: i % 10 < 6)  # 0.6, bar 0.65
    code, out = cli(["gate", str(run), "--min-score", "0.65"], capsys)
    assert code == EXIT_OK
    assert "⚠️ inconclusive (passes)" in out and "| inconclusive |" in out
    assert "warning: an interval straddles its bar" in out
    code, out = cli(["gate", str(run), "--min-score", "0.65", "--strict"], capsys)
    assert code == EXIT_GATE_FAILED and "❌ fail" in out
    assert "Rule: strict: every interval must clear its bar" in out


def test_the_interval_includes_the_variance_of_the_repeats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every item is judged correct in 3 of its 4 repeats: the items alone look certain
    (each item's mean is 0.75), the repeats say the judge is not."""
    run = judged(tmp_path / "run", 40, lambda i, r: (i + r) % 4 != 0, repeats=4)
    scores = jurist.Run(run).item_scores()
    assert all(sorted(x or 0.0 for x in s) == [0.0, 1.0, 1.0, 1.0] for s in scores)
    assert all(None not in s for s in scores)
    bar = Bar(min_score=0.72, strict=True)
    assert gate_scores([[0.75] for _ in scores], bar).passed  # items only: [0.75, 0.75]
    code, out = cli(["gate", str(run), "--min-score", "0.72", "--strict"], capsys)
    assert code == EXIT_GATE_FAILED
    assert "| mean score | 0.7500 |" in out and "| inconclusive |" in out
    assert "4 repeats per item at most; intervals resample items, then repeats" in out


def test_a_drop_from_the_baseline_beyond_max_drop_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = judged(tmp_path / "base", 30, lambda i, r: True)  # 1.0
    worse = judged(tmp_path / "worse", 30, lambda i, r: i % 2 == 0)  # 0.5, same items
    same = judged(tmp_path / "same", 30, lambda i, r: i != 0)  # 0.967, same items
    other = judged(tmp_path / "other", 30, lambda i, r: True, tag="b")  # other data
    args = ["--baseline", str(base), "--max-drop", "0.1"]
    code, out = cli(["gate", str(worse), *args], capsys)
    assert code == EXIT_GATE_FAILED
    assert "| change from baseline | -0.5000 |" in out and "≥ -0.1000 | fail |" in out
    assert "(paired over the same items)" in out
    code, out = cli(["gate", str(same), *args, "--min-score", "0.5"], capsys)
    assert code == EXIT_OK and "✅ pass" in out
    code, out = cli(["gate", str(other), *args], capsys)
    assert code == EXIT_OK and "(unpaired)" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "a gate needs a bar"),
        (["--max-drop", "0.1"], "--max-drop needs --baseline"),
        (["--min-score", "0.5", "--baseline", "BASE"], "--baseline needs --max-drop"),
        (["--min-score", "1.5"], "--min-score"),
        (["--min-score", "0.5", "--level", "1"], "level"),
    ],
)
def test_usage_errors_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = judged(tmp_path / "run", 4, lambda i, r: True)
    args = [str(run) if a == "BASE" else a for a in args]
    code, out = cli(["gate", str(run), *args], capsys)
    assert code == EXIT_USAGE and message in out


def test_a_folder_that_is_no_finished_run_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = cli(["gate", str(tmp_path), "--min-score", "0.5"], capsys)
    assert code == EXIT_USAGE and "not a jurist run folder" in out
    run = judged(tmp_path / "run", 4, lambda i, r: True)
    db = sqlite3.connect(run / "run.sqlite")
    db.execute("UPDATE meta SET value = ? WHERE key = 'status'", (json.dumps("interrupted"),))
    db.commit()
    db.close()
    code, out = cli(["gate", str(run), "--min-score", "0.5"], capsys)
    assert code == EXIT_USAGE and "the run is interrupted" in out
