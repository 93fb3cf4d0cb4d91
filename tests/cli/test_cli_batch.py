"""``--batch-api`` on the command line, against the fake Batch API server: the same scores
as live calls, nothing sent again on a finished run, re-asks live with ``--batch-followup
live``, and a run interrupted while it polls resumes polling without submitting twice.
On a server that cannot list batches, a create whose answer was lost stops the run naming
``--batch-adopt`` and ``--batch-resubmit``, and both work; ``--batch-file-out`` on a run
whose answers the cache holds says so (issue 19)."""

from __future__ import annotations

import json
import logging
import math
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from jurist.cli import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE
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
    # the batch never finishes until the test says so: the run is surely polling, never
    # done, when it is interrupted, however loaded the machine
    with BatchServer(delay=math.inf) as server:
        args = command("judge", tmp_path, server, tmp_path / "run")
        args += ["--batch-api", "--batch-poll", "0.05"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "jurist", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 300
        while server.polls < 2:  # submitted, and polling
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
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


# -- a server without GET /v1/batches, and --batch-file-out on cached answers (issue 19) --


def unlisted_args(tmp_path: Path, server: BatchServer) -> list[str]:
    """A priced model (gpt-4o-mini) judged through the batch API of ``server``."""
    args = command("judge", tmp_path, server, tmp_path / "run")
    args[args.index("--model") + 1] = "gpt-4o-mini"
    return [*args, "--batch-api", "--batch-poll", "0.01"]


def test_a_lost_create_on_a_server_that_cannot_list_batches_names_both_ways_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with BatchServer(delay=0.02, list_batches=False) as server:
        server.lose_next_answer("POST", "/v1/batches")  # the batch is made, its answer lost
        args = unlisted_args(tmp_path, server)
        for _ in range(2):  # the first session, and every rerun: stopped, nothing resent
            code, said = run(args, capsys)
            assert code == EXIT_RUNTIME, said
            assert "GET /batches answered HTTP 405" in said
            assert "--batch-adopt BATCH_ID" in said and "--batch-resubmit" in said
            assert f"these {ITEMS} requests (about" in said and "batch rates" in said
            assert re.search(r"about \$\d+\.\d{4} at the batch rates of openai:gpt-4o-mini", said)
        assert (server.uploads, server.creations) == (1, 1)
        [batch_id] = server.batches
        code, said = run([*args, "--batch-adopt", batch_id], capsys)
        assert code in (EXIT_OK, 1), said
        assert server.creations == 1 and set(server.submissions.values()) == {1}
        before = (server.uploads, server.creations, server.polls)
        code, said = run(args, capsys)  # the adoption is in the journal
        assert code in (EXIT_OK, 1), said
        assert (server.uploads, server.creations, server.polls) == before
    assert len(results(tmp_path / "run")) == ITEMS


def test_batch_resubmit_on_a_server_that_cannot_list_batches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with BatchServer(delay=0.02, list_batches=False) as server:
        server.lose_next_answer("POST", "/v1/batches")
        args = unlisted_args(tmp_path, server)
        code, said = run(args, capsys)
        assert code == EXIT_RUNTIME, said
        with caplog.at_level(logging.WARNING, logger="jurist.engines"):
            code, said = run([*args, "--batch-resubmit"], capsys)
        assert code in (EXIT_OK, 1), said
        assert server.creations == 2 and set(server.submissions.values()) == {2}
    noted = " ".join(caplog.text.split())
    assert "created again (--batch-resubmit" in noted
    assert f"these {ITEMS} requests (about" in noted and "billed twice" in noted
    assert len(results(tmp_path / "run")) == ITEMS


def test_batch_adopt_and_resubmit_need_batch_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with BatchServer(delay=0.02) as server:
        base = command("judge", tmp_path, server, tmp_path / "run")
        for extra in (["--batch-adopt", "batch-1"], ["--batch-resubmit"]):
            for mode in ([], ["--batch-file-out", str(tmp_path / "reqs.jsonl")]):
                code, said = run([*base, *mode, *extra], capsys)
                assert code == EXIT_USAGE, said
                assert f"{extra[0]} only applies with --batch-api" in said
        code, said = run([*base, "--batch-api", "--batch-adopt", "batch-1"], capsys)
        assert code == EXIT_USAGE, said  # a fresh run: no file waits for a batch
        assert "nothing to adopt" in said
        assert server.uploads == 0 and server.creations == 0


def cached_args(folder: Path, data: Path, server: BatchServer, out: Path) -> list[str]:
    args = ["judge", str(data), "--output", "text", "--retries", "1", *model_args(server, out)]
    at = args.index("--no-cache")
    args[at : at + 1] = ["--cache-path", str(folder / "cache.sqlite")]
    return args


def test_batch_file_out_when_the_cache_holds_every_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = items(tmp_path)
    reqs = tmp_path / "reqs.jsonl"
    with BatchServer(delay=0.02) as server:
        code, said = run(cached_args(tmp_path, data, server, tmp_path / "live"), capsys)
        assert code in (EXIT_OK, 1), said
        calls = server.live_calls
        args = [*cached_args(tmp_path, data, server, tmp_path / "run"), "--batch-file-out"]
        code, said = run([*args, str(reqs)], capsys)
        assert server.live_calls == calls and server.uploads == 0
    assert code in (EXIT_OK, 1), said
    assert not reqs.exists()
    assert f"--batch-file-out {reqs}: no request file written" in said
    assert "every answer was already in the cache" in said
    assert f"its results are in {tmp_path / 'run'}" in said
    assert scores(tmp_path / "run") == scores(tmp_path / "live")  # the results, written


def test_batch_file_out_when_the_cache_holds_some_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = items(tmp_path)
    half = write(
        tmp_path / "half.jsonl", [json.loads(x) for x in data.read_text().splitlines()[:6]]
    )
    reqs = tmp_path / "reqs.jsonl"
    with BatchServer(delay=0.02) as server:
        code, said = run(cached_args(tmp_path, half, server, tmp_path / "half"), capsys)
        assert code in (EXIT_OK, 1), said
        args = [*cached_args(tmp_path, data, server, tmp_path / "run"), "--batch-file-out"]
        code, said = run([*args, str(reqs)], capsys)
        assert code == EXIT_OK, said
        assert f"6 of {ITEMS} items judged (6 answers from the cache)" in said
        assert "no request file written" not in said
        lines = [json.loads(x) for x in reqs.read_text().splitlines()]
        assert sorted(int(x["custom_id"].split("-")[0]) for x in lines) == list(range(6, 12))
        # answer the file as an offline engine would, and read the answers in
        answered = tmp_path / "reqs.results.jsonl"
        answered.write_text(
            "".join(
                json.dumps(
                    {
                        "id": f"r{n}",
                        "custom_id": x["custom_id"],
                        "response": {
                            "status_code": 200,
                            "request_id": f"q{n}",
                            "body": server.completion(x["body"], request_id=f"q{n}"),
                        },
                        "error": None,
                    }
                )
                + "\n"
                for n, x in enumerate(lines)
            )
        )
        code, said = run(["ingest", str(tmp_path / "run"), str(answered), "--no-progress"], capsys)
        assert code in (EXIT_OK, 1), said
        code, said = run(cached_args(tmp_path, data, server, tmp_path / "live"), capsys)
        assert code in (EXIT_OK, 1), said
    assert scores(tmp_path / "run") == scores(tmp_path / "live")


class _AlwaysBusy(BatchServer):
    """Answers every batch line with a 429 (each line counted), so every request ends
    after the resends the command allows."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lines = 0

    def line_response(self, body: dict[str, Any], *, request_id: str) -> tuple[int, Any]:
        self.lines += 1
        return 429, {"error": {"message": "busy", "type": "rate_limit_error"}}


@pytest.mark.parametrize("max_retries", [0, 5])
def test_max_retries_means_the_same_with_the_batch_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], max_retries: int
) -> None:
    """A line a batch answers with a 429 is sent again as a live call is retried:
    ``--max-retries N`` gives N + 1 requests per item with or without ``--batch-api``."""
    with _AlwaysBusy(delay=0.02) as server:
        out = tmp_path / "run"
        args = ["judge", str(items(tmp_path)), "--output", "text", *model_args(server, out)]
        args += ["--batch-api", "--batch-poll", "0.01", "--max-retries", str(max_retries)]
        code, text = run(args, capsys)
        rows = results(out)
        assert code != EXIT_OK and "429" in text
        assert server.lines == ITEMS * (max_retries + 1)
        assert all(r["judge_score"] is None for r in rows)
        assert [r["judge_attempts"] for r in rows] == [max_retries + 1] * ITEMS
