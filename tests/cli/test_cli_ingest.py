"""``--batch-file-out`` then ``jurist ingest``: requests written for an offline engine, its
answers (``vllm run-batch`` output lines) read back into the run, follow-ups named."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jurist.cli import EXIT_OK, EXIT_USAGE
from tests._cli_run import run, write

N = 6


def data(folder: Path, tag: str = "answer") -> Path:
    rows = [{"prompt": f"question {i}?", "response": f"{tag} {i}"} for i in range(N)]
    return write(folder / f"{tag}.jsonl", rows)


def vllm_line(custom_id: str, text: str) -> str:
    """One line as ``vllm run-batch`` writes it (BatchRequestOutput, BatchResponseData,
    a ChatCompletionResponse body)."""
    body = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": 1763860000,
        "model": "Qwen/Qwen2.5-0.5B-Instruct",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "tool_calls": []},
                "logprobs": None,
                "finish_reason": "stop",
                "stop_reason": None,
            }
        ],
        "usage": {"prompt_tokens": 30, "total_tokens": 31, "completion_tokens": 1},
        "prompt_logprobs": None,
    }
    response = {"status_code": 200, "request_id": f"vllm-batch-{uuid.uuid4().hex}", "body": body}
    line = {"id": f"vllm-{uuid.uuid4().hex}", "custom_id": custom_id, "response": response}
    return json.dumps({**line, "error": None}) + "\n"


def item_of(body: dict[str, Any]) -> int:
    found = re.search(r"question (\d+)\?", json.dumps(body["messages"]))
    assert found is not None
    return int(found.group(1))


def answer(requests: Path, results: Path, text: Callable[[dict[str, Any]], str]) -> Path:
    lines = [json.loads(line) for line in requests.read_text().splitlines()]
    results.write_text("".join(vllm_line(r["custom_id"], text(r["body"])) for r in lines))
    return results


def verdict(body: dict[str, Any]) -> str:
    return "Correct" if item_of(body) % 2 == 0 else "Incorrect"


MODEL = ["--model", "openai:Qwen/Qwen2.5-0.5B-Instruct", "--no-cache", "--no-progress"]


def test_file_out_then_ingest_finishes_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = tmp_path / "requests.jsonl"
    out = tmp_path / "run"
    args = ["judge", str(data(tmp_path)), *MODEL, "--output", "text", "--out", str(out)]
    code, said = run([*args, "--batch-file-out", str(requests)], capsys)
    assert code == EXIT_OK, said
    assert f"0 of {N} items judged" in said and str(requests) in said
    assert f"vllm run-batch -i {requests}" in said
    assert f"jurist ingest {out} {tmp_path / 'requests.results.jsonl'}" in said
    assert not (out / "results.jsonl").exists()
    waiting = json.loads((out / "summary.json").read_text())
    assert waiting["status"] == "awaiting results"
    assert waiting["batch_files"] == [str(requests)]
    assert len(requests.read_text().splitlines()) == N

    results = answer(requests, tmp_path / "requests.results.jsonl", verdict)
    code, said = run(["ingest", str(out), str(results), "--no-progress"], capsys)
    assert code == EXIT_OK, said
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["judge_score"] for r in rows] == [1.0, 0.0] * (N // 2)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["batch_calls"] == N
    # what the judge command put in its summary is kept
    assert summary["model"] == "openai:Qwen/Qwen2.5-0.5B-Instruct"
    assert summary["template"] == "true_false_uncertain"
    assert "batch_files" not in summary or summary["batch_files"] == []


def test_ingest_names_the_next_file_when_reasks_remain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = tmp_path / "req.jsonl"
    out = tmp_path / "out.jsonl"  # results beside, run folder out.run
    args = ["judge", str(data(tmp_path)), *MODEL, "--output", "text", "--retries", "1"]
    code, said = run([*args, "--out", str(out), "--batch-file-out", str(requests)], capsys)
    assert code == EXIT_OK, said
    run_dir = tmp_path / "out.run"

    def unsure_about_item_1(body: dict[str, Any]) -> str:
        return "hmm, hard to say" if item_of(body) == 1 else verdict(body)

    results = answer(requests, tmp_path / "res1.jsonl", unsure_about_item_1)
    code, said = run(["ingest", str(run_dir), str(results), "--no-progress"], capsys)
    assert code == EXIT_OK, said
    follow = json.loads((tmp_path / "out.summary.json").read_text())["batch_files"]
    assert len(follow) == 1 and follow[0] != str(requests)
    assert f"{N - 1} of {N} items judged" in said and follow[0] in said
    assert not out.exists()
    reasks = Path(follow[0]).read_text().splitlines()
    assert len(reasks) == 1 and json.loads(reasks[0])["custom_id"].startswith("1-")

    results = answer(Path(follow[0]), tmp_path / "res2.jsonl", verdict)
    code, said = run(["ingest", str(run_dir), str(results), "--no-progress"], capsys)
    assert code == EXIT_OK, said
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["judge_score"] for r in rows] == [1.0, 0.0] * (N // 2)


def test_compare_through_a_file_and_ingest_adds_the_pairwise_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = tmp_path / "pairs-requests.jsonl"
    out = tmp_path / "cmp"
    args = ["compare", str(data(tmp_path)), str(data(tmp_path, "reply")), *MODEL]
    args += ["--json-mode", "none", "--no-swap", "--out", str(out)]
    code, said = run([*args, "--batch-file-out", str(requests)], capsys)
    assert code == EXIT_OK, said
    results = answer(requests, tmp_path / "res.jsonl", lambda body: "[[A]]")
    code, said = run(["ingest", str(out), str(results), "--no-progress"], capsys)
    assert code == EXIT_OK, said
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["win_rate_a"] == 1.0
    assert "win rate of A" in said


def test_ingest_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = write(tmp_path / "res.jsonl", [])
    code, said = run(["ingest", str(tmp_path / "nowhere"), str(results)], capsys)
    assert code == EXIT_USAGE and "not a jurist run folder" in said
    out = tmp_path / "run"
    args = ["judge", str(data(tmp_path)), *MODEL, "--out", str(out)]
    code, said = run([*args, "--batch-file-out", str(tmp_path / "req.jsonl")], capsys)
    assert code == EXIT_OK, said
    code, said = run(["ingest", str(out), str(tmp_path / "missing.jsonl")], capsys)
    assert code == EXIT_USAGE and "missing.jsonl: no such results file" in said
