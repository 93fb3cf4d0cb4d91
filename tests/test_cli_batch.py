"""``--batch-api`` on the command line, against the fake Batch API server: the same scores
as live calls, nothing sent again on a finished run, re-asks live with ``--batch-followup
live``, and a run interrupted while it polls resumes polling without submitting twice."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from jurist.cli import EXIT_OK
from tests._batch_server import BatchServer, answer_from
from tests._cli_run import run, write

ITEMS = 12


def items(folder: Path, tag: str = "answer") -> Path:
    rows = [{"prompt": f"question {i}?", "response": f"{tag} {i}"} for i in range(ITEMS)]
    return write(folder / f"{tag}.jsonl", rows)


def results(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def scores(folder: Path) -> list[tuple[Any, Any]]:
    """Each item's score and error (a compare row has a winner, not a verdict)."""
    return [(r["judge_score"], r["judge_error"]) for r in results(folder)]


def model_args(server: BatchServer, out: Path) -> list[str]:
    return [
        "--model",
        "judge",
        "--base-url",
        server.base_url,
        "--api-key",
        "sk-test",
        "--no-cache",  # every answer comes from the server, none from a cache
        "--no-progress",
        "--out",
        str(out),
    ]


def command(kind: str, folder: Path, server: BatchServer, out: Path) -> list[str]:
    if kind == "judge":
        head = ["judge", str(items(folder)), "--output", "text", "--retries", "1"]
    elif kind == "compare":
        head = [
            "compare",
            str(items(folder)),
            str(items(folder, "reply")),
            "--json-mode",
            "none",
            "--retries",
            "1",
        ]
    else:
        rubric = folder / "r.yaml"
        rubric.write_text("criteria:\n  - name: correct\n    requirement: The answer is right\n")
        head = ["grade", str(items(folder)), "--rubric", str(rubric), "--json-mode", "none"]
    return [*head, *model_args(server, out)]


ANSWERS = {
    # unreadable answers on purpose: their re-asks go into a follow-up batch
    "judge": answer_from(("Correct", "Incorrect", "I cannot say")),
    "compare": answer_from(("[[A]]", "[[B]]", "[[C]]", "no verdict")),
    "grade": answer_from(('{"c1": {"verdict": "MET"}}', '{"c1": {"verdict": "UNMET"}}')),
}


@pytest.mark.parametrize("kind", ["judge", "compare", "grade"])
def test_batch_api_gives_the_scores_of_live_calls(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with BatchServer(answer=ANSWERS[kind], delay=0.02) as server:
        code, said = run(command(kind, tmp_path, server, tmp_path / "live"), capsys)
        assert code in (0, 1), said
        live_calls = server.live_calls
        assert live_calls >= ITEMS and server.creations == 0
        args = command(kind, tmp_path, server, tmp_path / "batch")
        code, said = run([*args, "--batch-api", "--batch-poll", "0.01"], capsys)
        assert code in (0, 1), said
        assert server.live_calls == live_calls  # nothing went live
        assert server.creations >= 1
        assert set(server.submissions.values()) == {1}  # no request submitted twice
    assert scores(tmp_path / "batch") == scores(tmp_path / "live")
    summary = json.loads((tmp_path / "batch" / "summary.json").read_text())
    assert summary["batch_calls"] == summary["calls"] > 0
    assert f"through the batch API │ {summary['batch_calls']} calls" in said  # printed too
    if kind == "compare":  # the pairwise figures of a compare run
        live = json.loads((tmp_path / "live" / "summary.json").read_text())
        assert summary["win_rate_a"] == live["win_rate_a"]


def test_batch_api_on_a_finished_run_sends_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with BatchServer(delay=0.02) as server:
        args = [*command("judge", tmp_path, server, tmp_path / "run"), "--batch-api"]
        args += ["--batch-poll", "0.01"]
        code, said = run(args, capsys)
        assert code == EXIT_OK, said
        before = (server.uploads, server.creations, server.live_calls, server.polls)
        code, said = run(args, capsys)
        assert code == EXIT_OK, said
        assert (server.uploads, server.creations, server.live_calls, server.polls) == before
    assert len(results(tmp_path / "run")) == ITEMS


def test_batch_followup_live_sends_the_reasks_live(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: set[str] = set()

    def first_unreadable(body: dict[str, Any]) -> str:
        # each item's first request gets an unreadable answer, its re-ask a verdict
        found = re.search(r"question \d+\?", str(body["messages"]))
        assert found is not None
        key = found.group()
        if key in seen:
            return "Correct"
        seen.add(key)
        return "I cannot say"

    with BatchServer(answer=first_unreadable, delay=0.02) as server:
        args = command("judge", tmp_path, server, tmp_path / "run")
        args += ["--batch-api", "--batch-poll", "0.01", "--batch-followup", "live"]
        code, said = run(args, capsys)
        assert code == EXIT_OK, said
        assert server.creations == 1 and server.live_calls == ITEMS
    assert {s for s, _ in scores(tmp_path / "run")} == {1.0}


def test_interrupted_while_polling_resumes_without_submitting_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with BatchServer(delay=3.0) as server:
        args = command("judge", tmp_path, server, tmp_path / "run")
        args += ["--batch-api", "--batch-poll", "0.05"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "jurist", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while server.polls < 2:  # submitted, and polling
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        said = " ".join((stdout + stderr).split())
        assert proc.returncode == 130, said
        assert f"0 of {ITEMS} items saved" in said
        assert "polled again, never sent twice" in said and "--batch-api" in said
        creations = server.creations
        server.delay = 0.0
        code, said = run(args, capsys)
        assert code in (0, 1), said
        assert server.creations == creations  # the same batch, polled again
        assert set(server.submissions.values()) == {1}
    assert len(results(tmp_path / "run")) == ITEMS
