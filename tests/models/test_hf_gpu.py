"""The ``hf`` backend on a CUDA GPU (``pytest -m gpu``); skipped where torch sees none.

The model is the tiny random model of :mod:`jurist.testing.tiny_model`. In float32 the GPU
must give the CPU's logprobs up to kernel rounding: 1e-3 absolute is far above float32
summation-order noise over two layers of width 64 and far below what a wrong position or a
leaked pad token does (0.1 and more; see ``tests/models/test_vllm_gpu.py``). These tests are
synchronous (``run_sync``), so they need no asyncio plugin on the GPU machine.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jurist._sync import run_sync
from jurist.errors import ModelError
from jurist.types import Message, Request

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from jurist.models._hf import HFModel  # noqa: E402  (needs torch)
from jurist.models._hf_memory import DEFAULT_MAX_BATCH_TOKENS  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

CANDIDATES = ["1", "2", "3", "4", "5"]
LONG = "The quick brown fox jumps over the lazy dog. " * 120  # about 1,300 tokens


def ask(text: str, **options: Any) -> Request:
    return Request(messages=(Message(role="user", content=text),), **options)


def scores(model: HFModel, prompts: list[str]) -> list[dict[str, float]]:
    async def go() -> list[dict[str, float]]:
        import asyncio

        out = await asyncio.gather(*(model.candidate_scores(ask(p), CANDIDATES) for p in prompts))
        return [s.logprobs for s in out]

    return run_sync(go())


def close(model: HFModel) -> None:
    run_sync(model.aclose())


PROMPTS = [f"Rate 1 to 5. {'The quick brown fox. ' * k}" for k in range(12)]


def test_cuda_defaults_bf16_sdpa_and_a_budget_from_free_memory(tiny_model_dir: Path) -> None:
    model = HFModel(str(tiny_model_dir), device="cuda")
    try:
        assert model.dtype == "bfloat16" and model.limits.max_rows == 256
        model.load_sync()
        lm = model._ensure_loaded()
        assert lm.device.type == "cuda" and lm.model.dtype == torch.bfloat16
        assert next(lm.model.parameters()).device.type == "cuda"
        assert lm.model.config._attn_implementation in ("sdpa", "flash_attention_2")
        budget = model.limits.token_budget(lm.model, lm.device)
        assert budget == DEFAULT_MAX_BATCH_TOKENS  # a tiny model: the cap, not memory, binds
        got = scores(model, PROMPTS)
        assert all(-30 < v < 0 for s in got for v in s.values())
    finally:
        close(model)


def test_float32_on_the_gpu_matches_the_cpu(tiny_model_dir: Path) -> None:
    cpu = HFModel(str(tiny_model_dir))
    gpu = HFModel(str(tiny_model_dir), device="cuda", dtype="float32", max_batch_tokens=300)
    try:
        expected = scores(cpu, PROMPTS)
        got = scores(gpu, PROMPTS)
        gen_cpu = run_sync(cpu.complete_many([ask(p, max_tokens=5) for p in PROMPTS]))
        gen_gpu = run_sync(gpu.complete_many([ask(p, max_tokens=5) for p in PROMPTS]))
    finally:
        close(cpu)
        close(gpu)
    for g, e in zip(got, expected, strict=True):
        for k in CANDIDATES:
            assert g[k] == pytest.approx(e[k], abs=1e-3)
    # greedy text may differ where the tiny model's logits nearly tie: compare the prompts
    assert [g.usage.prompt_tokens for g in gen_gpu] == [c.usage.prompt_tokens for c in gen_cpu]
    assert all(1 <= g.usage.completion_tokens <= 5 for g in gen_gpu)


def test_memory_fraction_bounds_the_budget(tiny_model_dir: Path) -> None:
    model = HFModel(str(tiny_model_dir), device="cuda")
    try:
        model.load_sync()
        lm = model._ensure_loaded()
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info()
        # room for about 4 MiB more than is in use now: a few hundred tokens a pass
        model.limits.memory_fraction = (total - free + 4 * 2**20) / total
        budget = model.limits.token_budget(lm.model, lm.device)
        assert budget is not None and 1 <= budget < 2000
        assert len(scores(model, PROMPTS)) == len(PROMPTS)  # small passes, still right
    finally:
        close(model)


@contextlib.contextmanager
def gpu_capped(extra: int) -> Iterator[None]:
    """Let torch's allocator take only ``extra`` bytes more than it holds now.

    (Filling the card with a tensor instead is not exact: the driver's own allocations
    move the free memory by tens of MiB.)
    """
    torch.cuda.empty_cache()
    total = torch.cuda.mem_get_info()[1]
    torch.cuda.set_per_process_memory_fraction((torch.cuda.memory_reserved() + extra) / total)
    try:
        yield
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        torch.cuda.empty_cache()


def test_a_real_out_of_memory_is_split_and_learnt(
    tiny_model_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # unequal lengths (about 750 to 1,200 tokens): left padding makes the attention mask a
    # (64, 1, L, L) tensor, 90 MiB as booleans and 360 MiB as the float mask SDPA takes,
    # where 256 MiB are allowed; one row needs a few MiB
    prompts = [LONG[: 3000 + 40 * i] for i in range(64)]
    model = HFModel(str(tiny_model_dir), device="cuda", dtype="float32", max_batch_tokens=10**7)
    try:
        expected = scores(model, prompts[:4])
        with gpu_capped(256 * 2**20), caplog.at_level(logging.WARNING, logger="jurist.models.hf"):
            got = scores(model, prompts)
    finally:
        close(model)
    assert "out of GPU memory" in caplog.text
    assert model.limits.learnt is not None
    for g, e in zip(got[:4], expected, strict=True):
        for k in CANDIDATES:
            assert g[k] == pytest.approx(e[k], abs=1e-3)


def test_out_of_memory_on_one_prompt_names_the_fix(tiny_model_dir: Path) -> None:
    model = HFModel(str(tiny_model_dir), device="cuda", dtype="float32")
    try:
        model.load_sync()
        with gpu_capped(0), pytest.raises(ModelError, match=r"single prompt.*shorter prompts"):
            scores(model, [LONG])
    finally:
        close(model)
