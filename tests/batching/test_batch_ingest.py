"""Offline engines: ``BatchAPIOptions(file_out=...)`` writes the requests, ``ingest`` reads
``vllm run-batch`` results back (issue 12, item 5)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

import jurist
from jurist.engines import BatchAPIEngine, BatchAPIOptions, ingest
from jurist.errors import DataError

ITEMS = [
    {"prompt": "2+2?", "response": "4"},
    {"prompt": "2+3?", "response": "6"},
    {"prompt": "3+3?", "response": "6"},
]


def verdict(body: dict[str, Any]) -> str:
    """The deterministic answer: only 2+3 = 6 is wrong."""
    return "Incorrect" if "2+3" in body["messages"][-1]["content"] else "Correct"


def vllm_line(custom_id: str, text: str) -> bytes:
    """One line as ``vllm run-batch`` writes it (vLLM's BatchRequestOutput /
    BatchResponseData fields, a ChatCompletionResponse body)."""
    body = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": 1763860000,
        "model": "judge",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "tool_calls": []},
                "logprobs": None,
                "finish_reason": "stop",
                "stop_reason": None,
            }
        ],
        "usage": {
            "prompt_tokens": 20,
            "total_tokens": 21,
            "completion_tokens": 1,
            "prompt_tokens_details": None,
        },
        "prompt_logprobs": None,
    }
    out = {
        "id": f"vllm-{uuid.uuid4().hex}",
        "custom_id": custom_id,
        "response": {
            "status_code": 200,
            "request_id": f"vllm-batch-{uuid.uuid4().hex}",
            "body": body,
        },
        "error": None,
    }
    return orjson.dumps(out) + b"\n"


def answer_file(requests: Path, out: Path, answer: Callable[[dict[str, Any]], str]) -> Path:
    lines = [orjson.loads(line) for line in requests.read_bytes().splitlines()]
    out.write_bytes(b"".join(vllm_line(r["custom_id"], answer(r["body"])) for r in lines))
    return out


def make_judge() -> jurist.LLMJudge:
    model = jurist.get_model("openai:judge", base_url="http://127.0.0.1:9/v1", api_key="k")
    return jurist.LLMJudge(model)


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"".join(orjson.dumps(i) + b"\n" for i in ITEMS))
    return path


def test_file_out_writes_the_requests_and_stops_awaiting_results(
    tmp_path: Path, data: Path
) -> None:
    out = tmp_path / "reqs.jsonl"
    run = jurist.evaluate(
        data,
        make_judge(),
        run_dir=tmp_path / "run",
        engine=BatchAPIEngine(BatchAPIOptions(file_out=out)),
    )
    summary = run.summary()
    assert summary.status == "awaiting results"
    assert summary.items == 0
    assert summary.batch_files == [str(out.resolve())]
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert len(lines) == len(ITEMS)
    assert {line["method"] for line in lines} == {"POST"}
    assert {line["url"] for line in lines} == {"/v1/chat/completions"}
    assert sorted(int(line["custom_id"].split("-")[0]) for line in lines) == [0, 1, 2]
    # started again in file_out mode before any results: nothing new is written
    again = jurist.evaluate(
        data,
        make_judge(),
        run_dir=tmp_path / "run",
        engine=BatchAPIEngine(BatchAPIOptions(file_out=tmp_path / "other.jsonl")),
    )
    assert again.summary().status == "awaiting results"
    assert not (tmp_path / "other.jsonl").exists()


def test_file_out_numbers_the_files_past_the_limits(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "reqs.jsonl"
    jurist.evaluate(
        data,
        make_judge(),
        run_dir=tmp_path / "run",
        engine=BatchAPIEngine(BatchAPIOptions(file_out=out, max_requests_per_file=2)),
    )
    assert [len(p.read_bytes().splitlines()) for p in (out, tmp_path / "reqs.2.jsonl")] == [2, 1]


def test_ingest_round_trip_with_vllm_run_batch_output(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "reqs.jsonl"
    jurist.evaluate(
        data,
        make_judge(),
        run_dir=tmp_path / "run",
        engine=BatchAPIEngine(BatchAPIOptions(file_out=out)),
    )
    results = answer_file(out, tmp_path / "results.jsonl", verdict)
    done = ingest(tmp_path / "run", results)
    assert done.status == "complete" and done.files == [] and done.answers == 3
    assert [r["judge_score"] for r in done.run.records()] == [1.0, 0.0, 1.0]
    summary = done.run.summary()
    assert summary.batch_calls == 3 and summary.calls == 3


def test_ingest_sends_reasks_to_a_next_file(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "reqs.jsonl"
    jurist.evaluate(
        data,
        make_judge(),
        run_dir=tmp_path / "run",
        retries=1,
        engine=BatchAPIEngine(BatchAPIOptions(file_out=out)),
    )

    def first(body: dict[str, Any]) -> str:
        return "hmm, hard to say" if "2+3" in body["messages"][-1]["content"] else verdict(body)

    step = ingest(tmp_path / "run", answer_file(out, tmp_path / "results.jsonl", first))
    assert step.status == "awaiting results"
    assert step.files == [(tmp_path / "reqs.r2.jsonl").resolve()]
    reask = [orjson.loads(line) for line in step.files[0].read_bytes().splitlines()]
    assert len(reask) == 1 and reask[0]["custom_id"].startswith("1-")
    final = ingest(tmp_path / "run", answer_file(step.files[0], tmp_path / "r2.jsonl", verdict))
    assert final.status == "complete"
    assert [r["judge_score"] for r in final.run.records()] == [1.0, 0.0, 1.0]


def test_ingest_refuses_a_line_the_run_never_asked(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "reqs.jsonl"
    jurist.evaluate(
        data,
        make_judge(),
        run_dir=tmp_path / "run",
        engine=BatchAPIEngine(BatchAPIOptions(file_out=out)),
    )
    results = tmp_path / "results.jsonl"
    results.write_bytes(vllm_line("99-deadbeefdeadbeef-1", "Correct"))
    with pytest.raises(DataError, match=r"results.jsonl:1 .*'99-deadbeefdeadbeef-1' was not asked"):
        ingest(tmp_path / "run", results)


def test_ingest_records_a_vllm_error_line_as_that_items_error(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "reqs.jsonl"
    jurist.evaluate(
        data,
        make_judge(),
        run_dir=tmp_path / "run",
        engine=BatchAPIEngine(BatchAPIOptions(file_out=out)),
    )
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    raw = b""
    for line in lines:
        if line["custom_id"].startswith("1-"):
            failed = {
                "id": "vllm-x",
                "custom_id": line["custom_id"],
                "response": {"status_code": 400, "request_id": "vllm-batch-x"},
                "error": "prompt is too long",
            }
            raw += orjson.dumps(failed) + b"\n"
        else:
            raw += vllm_line(line["custom_id"], verdict(line["body"]))
    (tmp_path / "results.jsonl").write_bytes(raw)
    done = ingest(tmp_path / "run", tmp_path / "results.jsonl")
    assert done.status == "complete"
    rows = list(done.run.records())
    assert [r["judge_score"] for r in rows] == [1.0, None, 1.0]
    assert "HTTP 400" in rows[1]["judge_error"] and "prompt is too long" in rows[1]["judge_error"]


def test_requests_the_results_lack_go_to_the_next_file(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "reqs.jsonl"
    jurist.evaluate(
        data,
        make_judge(),
        run_dir=tmp_path / "run",
        engine=BatchAPIEngine(BatchAPIOptions(file_out=out)),
    )
    results = answer_file(out, tmp_path / "results.jsonl", verdict)
    lines = results.read_bytes().splitlines(keepends=True)
    missing = orjson.loads(lines[2])["custom_id"]
    results.write_bytes(b"".join(lines[:2]))
    step = ingest(tmp_path / "run", results)
    assert step.status == "awaiting results" and step.answers == 2
    assert step.run.summary().items == 2
    again = [orjson.loads(line)["custom_id"] for line in step.files[0].read_bytes().splitlines()]
    assert again == [missing]
    final = ingest(tmp_path / "run", answer_file(step.files[0], tmp_path / "r2.jsonl", verdict))
    assert final.status == "complete"
    assert [r["judge_score"] for r in final.run.records()] == [1.0, 0.0, 1.0]
