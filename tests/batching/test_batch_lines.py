"""Batch API line formats: request lines, file splitting, and the three output forms
(OpenAI output file, OpenAI error file, ``vllm run-batch`` output)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from jurist.errors import BadRequestError, ConfigError, DataError, RateLimitError
from jurist.models._openai import OpenAIModel
from jurist.models._openai_batch import (
    custom_id_of,
    parse_output_line,
    request_line,
    split_lines,
)
from jurist.types import Message, Request

MODEL = OpenAIModel("judge", base_url="http://127.0.0.1:9/v1")


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "judge",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8},
    }


# -- request lines and splitting --------------------------------------------------------


def test_request_line_carries_the_model_body() -> None:
    body = MODEL.request_body(
        Request(messages=(Message(role="user", content="é?"),), temperature=0.0, seed=3)
    )
    line = request_line("item-1", body)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.loads(line) == {
        "custom_id": "item-1",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": "judge",
            "messages": [{"role": "user", "content": "é?"}],
            "temperature": 0.0,
            "seed": 3,
        },
    }


@pytest.mark.parametrize("bad", ["", None, 7])
def test_request_line_refuses_a_missing_custom_id(bad: Any) -> None:
    with pytest.raises(DataError, match="custom_id"):
        request_line(bad, {"model": "m"})


def test_split_lines_cuts_at_both_limits_in_order() -> None:
    lines = [request_line(f"r{i}", {"model": "m", "pad": "x" * (i % 3)}) for i in range(10)]
    by_count = list(split_lines(lines, max_requests=4))
    assert [len(p) for p in by_count] == [4, 4, 2]
    budget = sum(len(x) for x in lines[:3])
    by_bytes = list(split_lines(lines, max_bytes=budget))
    assert all(sum(len(x) for x in piece) <= budget for piece in by_bytes)
    for pieces in (by_count, by_bytes):
        assert [x for piece in pieces for x in piece] == lines
    assert list(split_lines([])) == []


def test_split_lines_names_a_line_too_big_for_any_file() -> None:
    lines = [request_line("small", {"model": "m"}), request_line("huge", {"p": "x" * 500})]
    with pytest.raises(DataError, match=r"line 2 \(custom_id 'huge'\).*max_bytes=200"):
        list(split_lines(lines, max_bytes=200))
    with pytest.raises(DataError, match="newline"):
        list(split_lines([b'{"custom_id": "a"}']))
    with pytest.raises(ConfigError, match="max_requests=0"):
        list(split_lines(lines, max_requests=0))


# -- OpenAI output file -----------------------------------------------------------------


def test_openai_output_line_parses_to_the_live_completion() -> None:
    line = orjson.dumps(
        {
            "id": "batch_req_1",
            "custom_id": "item-1",
            "response": {"status_code": 200, "request_id": "req-9", "body": _completion("4")},
            "error": None,
        }
    )
    out = parse_output_line(line, "out.jsonl:1")
    assert (out.custom_id, out.status_code, out.ok, out.error) == ("item-1", 200, True, None)
    assert out.request_id == "req-9"
    assert out.body is not None
    completion = MODEL._completion(out.body, 200, 0.0)
    assert (completion.text, completion.usage.prompt_tokens) == ("4", 7)


# -- OpenAI error file ------------------------------------------------------------------


def test_openai_error_file_status_line_becomes_the_live_error() -> None:
    error = {"message": "Rate limit reached", "type": "requests", "param": None, "code": None}
    line = orjson.dumps(
        {
            "id": "batch_req_2",
            "custom_id": "item-2",
            "response": {"status_code": 429, "request_id": "r", "body": {"error": error}},
            "error": None,
        }
    )
    out = parse_output_line(line, "errors.jsonl:4")
    assert (out.status_code, out.ok, out.never_ran) == (429, False, False)
    assert out.error == "Rate limit reached" and out.code == "requests"
    assert out.body is not None
    raised = MODEL.error_for_status(out.status_code, out.body)
    assert isinstance(raised, RateLimitError) and "Rate limit reached" in str(raised)


def test_openai_error_file_expired_line_never_ran() -> None:
    line = (
        b'{"id": "batch_req_3", "custom_id": "item-3", "response": null, "error": '
        b'{"code": "batch_expired", "message": "This request could not be executed '
        b'before the completion window expired."}}'
    )
    out = parse_output_line(line, "errors.jsonl:5")
    assert (out.status_code, out.body, out.code, out.never_ran) == (0, None, "batch_expired", True)
    assert out.error is not None and out.error.startswith("batch_expired: This request")


# -- vllm run-batch ---------------------------------------------------------------------
# The sample lines below are written from vLLM 0.33's pydantic models in
# vllm/entrypoints/launchers/run_batch.py: BatchRequestOutput(id, custom_id, response,
# error) with BatchResponseData(status_code=200, request_id, body) and a
# ChatCompletionResponse body (choices with stop_reason / token_ids, usage with
# prompt_tokens_details, prompt_logprobs, kv_transfer_params ...), as model_dump_json()
# writes them; failed requests as make_error_request_output and run_request build them.


def _vllm_success() -> bytes:
    body = _completion("Correct")
    body["choices"][0].update({"stop_reason": None, "token_ids": None, "routed_experts": None})
    body["choices"][0]["message"].update(
        {"refusal": None, "annotations": None, "audio": None, "function_call": None}
    )
    body["choices"][0]["message"]["reasoning"] = "short thought"
    body.update(
        {
            "service_tier": None,
            "system_fingerprint": None,
            "prompt_logprobs": None,
            "prompt_token_ids": None,
            "prompt_text": None,
            "kv_transfer_params": None,
            "ec_transfer_params": None,
            "metrics": None,
        }
    )
    body["usage"].update({"prompt_tokens_details": None, "completion_tokens_details": None})
    return orjson.dumps(
        {
            "id": "vllm-0a1b2c3d",
            "custom_id": "item-4",
            "response": {"status_code": 200, "request_id": "vllm-batch-9f8e", "body": body},
            "error": None,
        }
    )


def test_vllm_run_batch_success_line() -> None:
    out = parse_output_line(_vllm_success(), "results.jsonl:1")
    assert out.ok and out.custom_id == "item-4" and out.body is not None
    completion = MODEL._completion(out.body, 200, 0.0)
    assert (completion.text, completion.reasoning) == ("Correct", "short thought")


def test_vllm_run_batch_error_lines() -> None:
    as_string = (
        b'{"id":"vllm-1","custom_id":"item-5","response":{"status_code":400,'
        b'"request_id":"vllm-batch-1","body":null},'
        b'"error":"Request must not be sent in stream mode"}'
    )
    out = parse_output_line(as_string, "results.jsonl:2")
    assert (out.status_code, out.ok, out.error) == (
        400,
        False,
        "Request must not be sent in stream mode",
    )
    assert out.body is not None
    raised = MODEL.error_for_status(out.status_code, out.body)
    assert isinstance(raised, BadRequestError) and "stream mode" in str(raised)

    as_object = orjson.dumps(
        {
            "id": "vllm-2",
            "custom_id": "item-6",
            "response": {"status_code": 400, "request_id": "vllm-batch-2", "body": None},
            "error": {
                "error": {
                    "message": "max_tokens is too large",
                    "type": "BadRequestError",
                    "param": None,
                    "code": 400,
                }
            },
        }
    )
    out = parse_output_line(as_object, "results.jsonl:3")
    assert (out.status_code, out.error, out.code) == (
        400,
        "max_tokens is too large",
        "BadRequestError",
    )
    assert out.body is not None and orjson.loads(out.body)["error"]["code"] == 400


# -- malformed lines --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"id": "x", "custom_id": "item-7", "response": {"status_c', "not a JSON object"),
        (b"[1, 2]", "not a JSON object but a list"),
        (b'{"custom_id": "", "response": null, "error": "x"}', "custom_id must be"),
        (b'{"custom_id": "item-8"}', "neither a response nor an error"),
        (b'{"custom_id": "item-9", "response": {"status_code": "200"}}', "HTTP status"),
        (b'{"custom_id": "item-10", "response": {"status_code": 200}}', "no response.body"),
        (b'{"custom_id": "item-11", "response": {"status_code": 200, "body": []}}', "object"),
        (b'{"custom_id": "item-12", "response": "ok"}', "response must be an object"),
    ],
)
def test_malformed_lines_name_the_place_and_custom_id(line: bytes, message: str) -> None:
    with pytest.raises(DataError, match=message) as info:
        parse_output_line(line, "out.jsonl:12")
    text = str(info.value)
    assert text.startswith("out.jsonl:12")
    cid = custom_id_of(line)
    if cid is not None:
        assert f"(custom_id {cid!r})" in text


def test_custom_id_is_read_from_a_truncated_line() -> None:
    assert custom_id_of(b'{"id": "r", "custom_id": "a\\"b", "resp') == 'a"b'
    assert custom_id_of(b'{"id": "r", "custom_') is None
