"""``--repeats N`` / ``--adaptive`` / ``--min-repeats K`` on ``jurist judge`` and
``compare`` (``grade`` takes the same flags): forwarded to the run, shown in the summary,
refused where they cannot run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import jurist
from jurist.cli import EXIT_OK, EXIT_USAGE
from tests._cli_run import run as cli
from tests._cli_run import write


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write(tmp_path / "d.jsonl", [{"prompt": f"q{i}", "response": "a"} for i in range(3)])


def test_judge_with_repeats_stores_and_shows_them(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["judge", str(data), "--model", "mock:judge", "--out", str(out), "--no-progress"]
    code, text = cli([*args, "--repeats", "4", "--adaptive", "--min-repeats", "2"], capsys)
    assert code == EXIT_OK
    assert "2 to 4 per item (adaptive): 6 judgments" in text
    assert "0 of 3, mean flip rate 0.0000" in text
    run = jurist.Run(out)
    assert run.manifest.options["repeats"] == {"repeats": 4, "adaptive": True, "min_repeats": 2}
    assert run.item_scores() == [[1.0, 1.0]] * 3
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["judge_repeats"]["n"] for r in lines] == [2, 2, 2]


def test_compare_takes_repeats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.jsonl", [{"prompt": "q", "response": "x"}] * 2)
    b = write(tmp_path / "b.jsonl", [{"prompt": "q", "response": "y"}] * 2)
    code, text = cli(
        [
            "compare",
            str(a),
            str(b),
            "--model",
            "mock:judge",
            "--out",
            str(tmp_path / "c"),
            "--no-progress",
            "--repeats",
            "2",
        ],
        capsys,
    )
    # the scripted mock answers no pairwise verdict: every repeat fails, each is stored
    assert code == 1 and "2 per item: 4 judgments, 4 failed" in text


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--repeats", "3", "--min-repeats", "2"], "min_repeats applies with adaptive=True"),
        (["--repeats", "0"], "--repeats"),
        (["--repeats", "2", "--adaptive", "--min-repeats", "3"], "between 1 and repeats"),
        (["--repeats", "2", "--batch-api"], "local engine only"),
    ],
)
def test_repeat_flags_that_cannot_run_are_usage_errors(
    flags: list[str],
    message: str,
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    model = ["--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "k"]
    code, text = cli(["judge", str(data), *model, "--out", str(out), *flags], capsys)
    assert code == EXIT_USAGE and message in text
    assert not (out / "run.sqlite").exists()
