"""The hf backend's batch shapes on the CPU: length bucketing, token budgets, OOM splits.

The GPU side of the same logic (budgets read from free memory, a real out-of-memory) is in
``tests/models/test_hf_gpu.py``, which runs only where CUDA is.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig

import jurist
from jurist.errors import ConfigError, ModelError, ModelLoadError
from jurist.models._hf import HFModel
from jurist.models._hf_memory import (
    DEFAULT_MAX_BATCH_TOKENS,
    BatchLimits,
    ModelShape,
    plan_chunks,
    run_split,
)
from jurist.types import Message, Request

CANDIDATES = ["1", "2", "3", "4", "5"]


def ask(text: str, **options: Any) -> Request:
    return Request(messages=(Message(role="user", content=text),), **options)


# Prompts of very different lengths, so bucketing has something to sort.
PROMPTS = [f"Rate 1 to 5. {'The quick brown fox jumps over the lazy dog. ' * k}" for k in range(9)]


# -- planning ---------------------------------------------------------------------------------


@given(
    lengths=st.lists(st.integers(min_value=1, max_value=300), max_size=60),
    max_rows=st.integers(min_value=1, max_value=16),
    max_tokens=st.none() | st.integers(min_value=1, max_value=2000),
)
def test_plan_chunks_covers_every_row_once_within_the_limits(
    lengths: list[int], max_rows: int, max_tokens: int | None
) -> None:
    chunks = plan_chunks(lengths, max_rows=max_rows, max_tokens=max_tokens)
    assert sorted(i for c in chunks for i in c) == list(range(len(lengths)))
    for chunk in chunks:
        assert 1 <= len(chunk) <= max_rows
        widths = [lengths[i] for i in chunk]
        assert widths == sorted(widths, reverse=True)  # longest first: chunk[0] is the width
        if max_tokens is not None and len(chunk) > 1:
            assert len(chunk) * widths[0] <= max_tokens
    # bucketing: chunks follow each other from longest to shortest rows
    firsts = [lengths[c[0]] for c in chunks]
    assert firsts == sorted(firsts, reverse=True)


def test_bucketing_pads_less_than_arrival_order() -> None:
    lengths = [500, 20, 480, 30, 510, 25, 490, 15]
    planned = plan_chunks(lengths, max_rows=4, max_tokens=None)
    arrival = [list(range(0, 4)), list(range(4, 8))]

    def padded(chunks: list[list[int]]) -> int:
        return sum(len(c) * max(lengths[i] for i in c) for c in chunks)

    assert planned == [[4, 0, 6, 2], [3, 5, 1, 7]]
    assert padded(planned) == 4 * 510 + 4 * 30
    real = sum(lengths)  # 2,070 tokens: bucketed passes pad 90, arrival order 1,970
    assert padded(planned) - real < (padded(arrival) - real) / 20


def test_a_row_wider_than_the_budget_runs_alone() -> None:
    assert plan_chunks([900, 100, 100], max_rows=8, max_tokens=300) == [[0], [1, 2]]
    with pytest.raises(ConfigError, match="max_rows"):
        plan_chunks([1], max_rows=0, max_tokens=None)


def test_model_shape_of_an_8b_llama() -> None:
    config = LlamaConfig(
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=128256,
    )
    shape = ModelShape.from_config(config, dtype_bytes=2)
    assert shape.head_dim == 128
    assert shape.kv_bytes() == 131072  # 2 x 32 layers x 8 heads x 128 x 2 bytes: 128 KiB
    # one layer's activations, x2 slack: 360 KiB a token, 5.6 GiB for a 16384-token pass
    assert shape.forward_bytes() == 368640
    assert shape.logits_bytes(1) == 128256 * 10


def test_batch_limits_check_their_values_and_budget_on_the_cpu() -> None:
    with pytest.raises(ConfigError, match="max_batch_size"):
        BatchLimits(max_rows=0)
    with pytest.raises(ConfigError, match="max_batch_tokens"):
        BatchLimits(max_rows=4, max_tokens=0)
    with pytest.raises(ConfigError, match="memory_fraction"):
        BatchLimits(max_rows=4, memory_fraction=1.5)
    cpu = torch.device("cpu")
    assert BatchLimits(max_rows=4).token_budget(None, cpu) is None  # no limit on the CPU
    assert BatchLimits(max_rows=4, max_tokens=900).token_budget(None, cpu) == 900
    assert BatchLimits(max_rows=4, max_tokens=900, learnt=300).token_budget(None, cpu) == 300
    assert BatchLimits(max_rows=4, learnt=300).token_budget(None, cpu) == 300
    assert DEFAULT_MAX_BATCH_TOKENS == 16384


# -- out of memory ------------------------------------------------------------------------------


def oom_above(tokens: int, calls: list[list[int]]) -> Any:
    def run(chunk: list[int]) -> list[int]:
        calls.append(list(chunk))
        if len(chunk) * 100 > tokens:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return [i * 10 for i in chunk]

    return run


def test_out_of_memory_splits_the_pass_and_learns_the_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = BatchLimits(max_rows=8)
    calls: list[list[int]] = []
    with caplog.at_level(logging.WARNING, logger="jurist.models.hf"):
        parts = run_split(
            [0, 1, 2, 3, 4],
            oom_above(200, calls),
            widths=[100] * 5,
            limits=limits,
            device=torch.device("cpu"),
            what="candidate scoring",
        )
    assert parts == [([0, 1], [0, 10]), ([2], [20]), ([3, 4], [30, 40])]
    assert calls == [[0, 1, 2, 3, 4], [0, 1, 2], [0, 1], [2], [3, 4]]
    assert limits.learnt == 150  # halved twice: 500 -> 250, then 300 -> 150
    assert "max_batch_tokens=250" in caplog.text
    other = ValueError("not memory")

    def broken(chunk: list[int]) -> list[int]:
        raise other

    with pytest.raises(ValueError):
        run_split([0, 1], broken, widths=[1, 1], limits=limits, device=None, what="x")


def test_out_of_memory_on_one_row_names_the_fix() -> None:
    with pytest.raises(ModelError, match=r"single prompt of 100 tokens.*shorter prompts"):
        run_split(
            [0],
            oom_above(50, []),
            widths=[100],
            limits=BatchLimits(max_rows=8),
            device=torch.device("cpu"),
            what="generate",
        )


# -- the backend on a tiny model ----------------------------------------------------------------


class PassShapes:
    """Records (rows, width) of every forward pass of a model."""

    def __init__(self, model: Any, oom_above: int | None = None) -> None:
        self.shapes: list[tuple[int, int]] = []
        self.oom_above = oom_above
        model.register_forward_pre_hook(self.hook, with_kwargs=True)

    def hook(self, _m: Any, _args: Any, kwargs: Any) -> None:
        rows, width = kwargs["input_ids"].shape
        if self.oom_above is not None and rows > 1 and rows * width > self.oom_above:
            raise torch.OutOfMemoryError("CUDA out of memory (injected)")
        self.shapes.append((int(rows), int(width)))


async def scores_of(model: HFModel) -> list[dict[str, float]]:
    out = await asyncio.gather(*(model.candidate_scores(ask(p), CANDIDATES) for p in PROMPTS))
    return [s.logprobs for s in out]


def close(a: list[dict[str, float]], b: list[dict[str, float]]) -> None:
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for k in x:
            assert x[k] == pytest.approx(y[k], abs=1e-4)


async def test_token_budget_buckets_scoring_into_passes(tiny_model_dir: Path) -> None:
    whole = HFModel(str(tiny_model_dir), batch_wait_ms=50)
    bucketed = HFModel(str(tiny_model_dir), batch_wait_ms=50, max_batch_tokens=200)
    try:
        expected = await scores_of(whole)
        await bucketed.load()
        shapes = PassShapes(bucketed._ensure_loaded().model)
        got = await scores_of(bucketed)
    finally:
        await whole.aclose()
        await bucketed.aclose()
    close(got, expected)
    assert len(shapes.shapes) > 2
    assert all(r * w <= 200 or r == 1 for r, w in shapes.shapes)
    widths = [w for _, w in shapes.shapes]
    assert widths == sorted(widths, reverse=True)  # longest rows first


async def test_generate_is_bucketed_with_room_for_new_tokens(tiny_model_dir: Path) -> None:
    whole = HFModel(str(tiny_model_dir), batch_wait_ms=50)
    bucketed = HFModel(str(tiny_model_dir), batch_wait_ms=50, max_batch_tokens=240)
    requests = [ask(p, max_tokens=6) for p in PROMPTS]
    try:
        expected = await whole.complete_many(requests)
        await bucketed.load()
        shapes = PassShapes(bucketed._ensure_loaded().model)
        got = await bucketed.complete_many(requests)
    finally:
        await whole.aclose()
        await bucketed.aclose()
    assert [g.text for g in got] == [e.text for e in expected]
    assert [g.usage for g in got] == [e.usage for e in expected]
    prefill = [(r, w) for r, w in shapes.shapes if w > 1]
    assert len(prefill) > 2
    assert all(r * (w + 6) <= 240 or r == 1 for r, w in prefill)


async def test_out_of_memory_in_a_real_forward_is_split_and_scores_are_unchanged(
    tiny_model_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plain = HFModel(str(tiny_model_dir), batch_wait_ms=50)
    model = HFModel(str(tiny_model_dir), batch_wait_ms=50)
    try:
        expected = await scores_of(plain)
        await model.load()
        shapes = PassShapes(model._ensure_loaded().model, oom_above=300)
        with caplog.at_level(logging.WARNING, logger="jurist.models.hf"):
            got = await scores_of(model)
    finally:
        await plain.aclose()
        await model.aclose()
    close(got, expected)
    assert "out of GPU memory" in caplog.text and "max_batch_tokens=" in caplog.text
    assert model.limits.learnt is not None and model.limits.learnt <= 300
    assert all(r * w <= 300 or r == 1 for r, w in shapes.shapes)


# -- a model given in memory --------------------------------------------------------------------


async def test_from_objects_scores_like_the_loaded_folder(tiny_model_dir: Path) -> None:
    folder = HFModel(str(tiny_model_dir))
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    lm = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    given_model = HFModel.from_objects(lm, tok, name="tiny-in-memory", max_batch_size=4)
    try:
        assert given_model.loaded and given_model.dtype == "float32"
        assert given_model.identity()["name"] == "tiny-in-memory"
        assert given_model.capabilities.max_batch == 4
        close(await scores_of(given_model), await scores_of(folder))
        judge = jurist.LLMJudge(
            given_model, template="likert", scoring="logprobs", low_coverage="flag"
        )
        result = await judge.judge({"prompt": "2+2?", "response": "4"})
        assert result.scoring == "logprobs" and result.distribution
    finally:
        await folder.aclose()
        await given_model.aclose()
    with pytest.raises(ModelLoadError, match="given in memory"):
        await given_model.candidate_scores(ask("x"), CANDIDATES)
    with pytest.raises(ConfigError, match="unknown options"):
        HFModel.from_objects(lm, tok, name="x", device="cuda")


async def test_a_model_given_in_memory_is_cached_per_wrapping(tiny_model_dir: Path) -> None:
    """Weights in memory have no files to fingerprint: a cached answer is reused only by the
    same wrapping, so a policy changed in place and wrapped again is judged afresh."""
    from jurist.models import CachedModel

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    lm = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    first = HFModel.from_objects(lm, tok, name="policy")
    again = HFModel.from_objects(lm, tok, name="policy")
    try:
        one, two = await first.fingerprint(), await again.fingerprint()
        assert one is not None and two is not None and one != two
        assert await first.fingerprint() == one
        cached = CachedModel(first, path=tiny_model_dir.parent / "mem-cache.sqlite")
        await cached.complete(ask("x", max_tokens=2, temperature=0.0))
        await cached.complete(ask("x", max_tokens=2, temperature=0.0))
        assert cached.hits == 1
        rewrapped = CachedModel(again, path=tiny_model_dir.parent / "mem-cache.sqlite")
        await rewrapped.complete(ask("x", max_tokens=2, temperature=0.0))
        assert rewrapped.hits == 0
    finally:
        await first.aclose()
        await again.aclose()


def test_defaults_on_the_cpu(tiny_model_dir: Path) -> None:
    m = HFModel(str(tiny_model_dir))
    assert m.dtype == "float32"
    assert m.limits.max_rows == 32 and m.limits.max_tokens is None
    assert m.limits.memory_fraction == 0.9
    with pytest.raises(ConfigError, match="memory_fraction"):
        jurist.get_model(f"hf:{tiny_model_dir}", memory_fraction=0)
    opts = jurist.get_model(
        f"hf:{tiny_model_dir}", max_batch_tokens=4096, attn_implementation="eager"
    )
    assert isinstance(opts, HFModel)
    assert opts.limits.max_tokens == 4096 and opts.attn_implementation == "eager"
