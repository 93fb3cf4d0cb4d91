"""The ``vllm:`` backend on a real engine: needs a CUDA GPU and vLLM (``pytest -m gpu``).

Skipped cleanly elsewhere (jurist's CI has neither). The model is the tiny random model of
:mod:`jurist.testing.tiny_model`, built offline, loaded by vLLM in float32 so that its
logprobs can be compared with the ``hf`` backend's on the CPU.

Tolerance of the hf comparison: both sides run the same float32 weights; they differ only
in kernels (vLLM's paged attention and fused RMSNorm / SiLU on the GPU against eager torch
on the CPU), i.e. in float32 summation order, a relative error near 1e-6 per operation over
two layers of width 64. The logprobs of the tiny model are around -6 (a 600-token
vocabulary, near-uniform), so 1e-3 absolute is two orders of magnitude above that noise
and still four below a real difference (a wrong token or position shifts a logprob by
about 0.1 or more on this model).
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.errors import ConfigError
from jurist.models._vllm_mapping import identity_value
from jurist.types import Message, Request


def _gpu_and_vllm() -> bool:
    if importlib.util.find_spec("vllm") is None:
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _gpu_and_vllm(), reason="needs a CUDA GPU and vLLM installed"),
]

ENGINE: dict[str, Any] = {
    "dtype": "float32",
    "gpu_memory_utilization": 0.25,
    "enforce_eager": True,
    "max_model_len": 2048,
    "seed": 0,
}
if _gpu_and_vllm():
    from vllm.config import StructuredOutputsConfig

    # compact JSON: the random model could otherwise fill max_tokens with blanks
    ENGINE["structured_outputs_config"] = StructuredOutputsConfig(
        backend="xgrammar", disable_any_whitespace=True
    )
MSGS = (
    Message(role="system", content="You are an impartial judge."),
    Message(role="user", content="Question: What is the capital of France? Answer: Paris."),
)
ITEMS = [
    {"prompt": f"What is {i} + {i}?", "response": str(2 * i + (i % 3 == 0))} for i in range(64)
]


@pytest.fixture
async def vllm_model(tiny_model_dir: Path) -> AsyncIterator[Any]:
    # The engine is shared per process: every test gets the same one, started once.
    yield jurist.get_model(f"vllm:{tiny_model_dir}", **ENGINE)


async def test_complete_with_logprobs(vllm_model: Any, tiny_model_dir: Path) -> None:
    request = Request(messages=MSGS, max_tokens=8, logprobs=True, top_logprobs=5)
    c = await vllm_model.complete(request)
    assert c.finish_reason in ("stop", "length")
    assert c.usage.calls == 1 and 0 < c.usage.completion_tokens <= 8
    hf = jurist.get_model(f"hf:{tiny_model_dir}")
    try:
        expected = await hf.complete(request)
    finally:
        await hf.aclose()
    assert c.usage.prompt_tokens == expected.usage.prompt_tokens  # same template, same tokens
    assert c.logprobs is not None and len(c.logprobs) == c.usage.completion_tokens
    assert all(len(t.top) == 5 for t in c.logprobs)
    assert all(t.top[0].logprob >= t.logprob - 1e-6 for t in c.logprobs)
    # greedy: the first token is the hf backend's first token, with the same logprob
    assert expected.logprobs is not None
    assert c.logprobs[0].token == expected.logprobs[0].token
    assert c.logprobs[0].logprob == pytest.approx(expected.logprobs[0].logprob, abs=1e-3)


async def test_prefix_cache_hits_are_reported(vllm_model: Any) -> None:
    long = Message(role="user", content="The quick brown fox jumps over the lazy dog. " * 20)
    request = Request(messages=(MSGS[0], long), max_tokens=1)
    await vllm_model.complete(request)
    again = await vllm_model.complete(request)
    assert again.usage.cached_tokens > 0


async def test_choice_and_regex_constrain_the_answer(vllm_model: Any) -> None:
    c = await vllm_model.complete(
        Request(messages=MSGS, max_tokens=8, extra={"choice": ["Correct", "Incorrect"]})
    )
    assert c.text in ("Correct", "Incorrect")
    r = await vllm_model.complete(Request(messages=MSGS, max_tokens=4, extra={"regex": "[1-5]"}))
    assert r.text in {"1", "2", "3", "4", "5"}


async def test_candidate_scores_agree_with_hf(vllm_model: Any, tiny_model_dir: Path) -> None:
    request = Request(messages=MSGS)
    candidates = ["1", "2", "3", "10", "Yes", "No", "Correct"]
    got = await vllm_model.candidate_scores(request, candidates)
    hf = jurist.get_model(f"hf:{tiny_model_dir}")
    try:
        expected = await hf.candidate_scores(request, candidates)
    finally:
        await hf.aclose()
    for cand in candidates:
        assert got.logprobs[cand] == pytest.approx(expected.logprobs[cand], abs=1e-3)
    assert got.usage.prompt_tokens == expected.usage.prompt_tokens


async def test_logprob_scoring_judge(vllm_model: Any) -> None:
    # the random model puts little mass on the verdicts: flagged, so every item is weighed
    judge = jurist.LLMJudge(
        vllm_model, template="likert", scoring="logprobs", output="text", low_coverage="flag"
    )
    results = [await judge.judge(item) for item in ITEMS[:4]]
    for j in results:
        assert j.error is None and j.scoring == "logprobs" and j.coverage is not None
        assert j.score is not None and 0.0 <= j.score <= 1.0
        assert j.distribution is not None


async def test_json_schema_judge_and_64_concurrent_judgments(vllm_model: Any) -> None:
    judge = jurist.LLMJudge(vllm_model, template="likert", output="json", concurrency=64)
    results = await asyncio.gather(*(judge.judge(item) for item in ITEMS))
    assert len(results) == 64
    # the schema constrains the output, so every verdict of the random model parses
    assert [j.error for j in results if j.error] == []
    assert all(j.score is not None and j.output_format == "json" for j in results)


def test_sync_twins_work_across_event_loops(tiny_model_dir: Path) -> None:
    model = jurist.get_model(f"vllm:{tiny_model_dir}", **ENGINE)
    judge = jurist.LLMJudge(model, template="likert", output="json")
    first = judge.judge_sync(ITEMS[:2])  # each call runs on a fresh event loop
    second = judge.judge_sync(ITEMS[:2])
    assert first.scores == second.scores and None not in first.scores


def test_unknown_engine_option_is_named(tiny_model_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown options \['gpu_memory_utilisation'\]"):
        jurist.get_model(f"vllm:{tiny_model_dir}", gpu_memory_utilisation=0.5)


def test_capabilities_and_identity(tiny_model_dir: Path) -> None:
    model = jurist.get_model(f"vllm:{tiny_model_dir}", hf_token="secret", **ENGINE)
    caps = model.capabilities
    assert caps.logprobs and caps.json_schema and caps.candidate_scores and not caps.remote
    assert caps.top_logprobs == 20
    assert model.identity() == {
        "provider": "vllm",
        "name": str(tiny_model_dir.resolve()),
        "dtype": "float32",
        "max_model_len": 2048,
        "seed": 0,
        "structured_outputs_config": identity_value(ENGINE["structured_outputs_config"]),
        "default_max_tokens": 256,
    }
    assert model.identity()["structured_outputs_config"]["disable_any_whitespace"] is True
    assert "secret" not in repr(model.identity())
