"""The hf backend on tiny random models built offline: generation, batching, scoring, errors."""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import jurist
from jurist._sync import run_sync
from jurist.errors import CapabilityError, ConfigError, MissingDependencyError, ModelLoadError
from jurist.models import _hf_compute
from jurist.models._hf import HFModel
from jurist.types import Message, Request


def ask(text: str, **options: Any) -> Request:
    messages = (
        Message(role="system", content="You are an impartial judge."),
        Message(role="user", content=text),
    )
    return Request(messages=messages, **options)


PROMPTS = [
    "Rate 1 to 5.",
    "Question: What is the capital of France? Proposed Answer: Paris. Rate 1 to 5.",
    "Is it Correct or Incorrect?",
    "Reply Yes or No. The quick brown fox jumps over the lazy dog.",
    "Score: 1 2 3 4 5 6 7 8 9 10",
    'Output JSON like {"score": 3}',
    "I am not sure.",
    "Reference: Paris. Rating: [[7]]. [RESULT] 4. Explain your verdict in full please.",
]


@pytest.fixture(scope="module")
def varied_model_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with larger random weights, so greedy outputs differ between prompts."""
    out = tmp_path_factory.mktemp("varied-model")
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    torch.manual_seed(1)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 2:
                torch.nn.init.normal_(param, std=0.3)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture
async def model(tiny_model_dir: Path) -> AsyncIterator[HFModel]:
    m = jurist.get_model(f"hf:{tiny_model_dir}")
    assert isinstance(m, HFModel)
    yield m
    await m.aclose()


@pytest.fixture
async def varied(varied_model_dir: Path) -> AsyncIterator[HFModel]:
    m = HFModel(str(varied_model_dir), batch_wait_ms=20)
    yield m
    await m.aclose()


@pytest.fixture
def batch_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records the size of every generate batch the backend runs."""
    sizes: list[int] = []
    real = _hf_compute.generate_batch

    def spy(lm: Any, params: Any, requests: Any, name: str, *rest: Any) -> Any:
        sizes.append(len(requests))
        return real(lm, params, requests, name, *rest)

    monkeypatch.setattr(_hf_compute, "generate_batch", spy)
    return sizes


def manual_logprobs(model_dir: Path, request: Request, continuation: list[int]) -> torch.Tensor:
    """log-softmax at the last prompt position and at each teacher-forced continuation token."""
    tok = AutoTokenizer.from_pretrained(model_dir)
    lm = AutoModelForCausalLM.from_pretrained(model_dir)  # from_pretrained sets eval mode
    text = tok.apply_chat_template(
        [m.model_dump() for m in request.messages], tokenize=False, add_generation_prompt=True
    )
    ids = tok(text, add_special_tokens=False)["input_ids"] + continuation
    with torch.no_grad():
        logits = lm(torch.tensor([ids])).logits[0]
    n = len(continuation) + 1
    return torch.log_softmax(logits[-n:].float(), dim=-1)


# -- generation ---------------------------------------------------------------------------


async def test_generate_returns_text_usage_and_finish_reason(model: HFModel) -> None:
    out = await model.complete(ask("Rate 1 to 5.", max_tokens=6))
    assert isinstance(out.text, str)
    assert out.usage.calls == 1
    assert out.usage.prompt_tokens > 10
    assert 1 <= out.usage.completion_tokens <= 6
    assert out.finish_reason in ("stop", "length")
    assert out.latency > 0
    assert out.model == model.name
    assert out.logprobs is None


async def test_capabilities_and_identity(model: HFModel, tiny_model_dir: Path) -> None:
    caps = model.capabilities
    assert caps.candidate_scores and caps.logprobs and not caps.remote
    assert caps.top_logprobs == 20
    assert caps.max_batch == 32
    assert model.identity() == {
        "provider": "hf",
        "name": str(tiny_model_dir.resolve()),
        "revision": None,
        "dtype": "float32",
        "default_max_tokens": 256,
    }
    assert model.spec == f"hf:{tiny_model_dir.resolve()}"
    assert not model.loaded
    await model.load()
    assert model.loaded


async def test_greedy_is_deterministic(varied: HFModel) -> None:
    a = await varied.complete(ask(PROMPTS[1], max_tokens=12))
    b = await varied.complete(ask(PROMPTS[1], max_tokens=12, temperature=0.0))
    assert a.text == b.text
    assert a.usage == b.usage


async def test_checkpoint_generation_defaults_are_not_applied(
    varied: HFModel, varied_model_dir: Path, tmp_path: Path
) -> None:
    noisy = tmp_path / "noisy"
    shutil.copytree(varied_model_dir, noisy)
    config = json.loads((noisy / "generation_config.json").read_text())
    config.update(do_sample=True, top_k=1, repetition_penalty=5.0, no_repeat_ngram_size=1)
    (noisy / "generation_config.json").write_text(json.dumps(config))
    m = HFModel(str(noisy))
    try:
        requests = [ask(p, max_tokens=12) for p in PROMPTS[:3]]
        got = [(await m.complete(r)).text for r in requests]
    finally:
        await m.aclose()
    assert got == [(await varied.complete(r)).text for r in requests]


async def test_eos_gives_stop_and_length_gives_length(varied: HFModel) -> None:
    outs = await varied.complete_many([ask(p, max_tokens=40) for p in PROMPTS])
    reasons = {o.finish_reason for o in outs}
    assert reasons <= {"stop", "length"}
    for o in outs:
        if o.finish_reason == "length":
            assert o.usage.completion_tokens == 40
        else:  # the end-of-turn token is counted but not part of the text
            assert o.usage.completion_tokens < 40
            assert "<|im_end|>" not in o.text


@pytest.mark.parametrize("which", ["tiny", "varied"])
async def test_batched_equals_one_at_a_time(
    which: str, model: HFModel, varied: HFModel, batch_sizes: list[int]
) -> None:
    # Left padding changes only the float summation order: 5e-7 apart on the tiny model;
    # the varied model's logits are ~10x larger, so its differences are relative (1e-5).
    m, rel = (model, 0.0) if which == "tiny" else (varied, 1e-5)
    requests = [ask(p, max_tokens=12, logprobs=True, top_logprobs=5) for p in PROMPTS]
    batched = await asyncio.gather(*(m.complete(r) for r in requests))
    assert batch_sizes == [8]
    single = [await m.complete(r) for r in requests]
    assert batch_sizes == [8] + [1] * 8
    if which == "varied":
        assert len({o.text for o in batched}) > 3  # the prompts really give different outputs
    for b, s in zip(batched, single, strict=True):
        assert b.text == s.text
        assert b.usage == s.usage
        assert b.finish_reason == s.finish_reason
        assert b.logprobs is not None and s.logprobs is not None
        assert [t.token for t in b.logprobs] == [t.token for t in s.logprobs]
        for tb, ts in zip(b.logprobs, s.logprobs, strict=True):
            assert tb.logprob == pytest.approx(ts.logprob, abs=1e-5, rel=rel)
            assert [a.token for a in tb.top] == [a.token for a in ts.top]
            for ab, as_ in zip(tb.top, ts.top, strict=True):
                assert ab.logprob == pytest.approx(as_.logprob, abs=1e-5, rel=rel)


async def test_complete_many_runs_one_batch(varied: HFModel, batch_sizes: list[int]) -> None:
    requests = [ask(p, max_tokens=5) for p in PROMPTS]
    many = await varied.complete_many(requests)
    assert batch_sizes == [8]
    single = [await varied.complete(r) for r in requests]
    assert [m.text for m in many] == [s.text for s in single]


async def test_batches_respect_max_size_and_group_by_params(
    varied_model_dir: Path, batch_sizes: list[int]
) -> None:
    m = HFModel(str(varied_model_dir), max_batch_size=3, batch_wait_ms=20)
    try:
        outs = await asyncio.gather(
            *(m.complete(ask(p, max_tokens=4)) for p in PROMPTS[:5]),
            *(m.complete(ask(p, max_tokens=2)) for p in PROMPTS[:2]),
        )
    finally:
        await m.aclose()
    assert max(batch_sizes) <= 3
    assert sorted(batch_sizes) == [2, 2, 3]
    assert all(o.usage.completion_tokens <= 2 for o in outs[5:])


async def test_seeded_sampling_is_reproducible(varied: HFModel) -> None:
    req = ask(PROMPTS[0], max_tokens=10, temperature=1.0, seed=7)
    a, b = await asyncio.gather(varied.complete(req), varied.complete(req))
    assert a.text == b.text
    others = {
        (await varied.complete(ask(PROMPTS[0], max_tokens=10, temperature=1.5, seed=s))).text
        for s in range(5)
    }
    assert len(others) > 1


async def test_sampled_logprobs_are_the_model_distribution(
    varied: HFModel, varied_model_dir: Path
) -> None:
    req = ask(PROMPTS[0], max_tokens=3, temperature=1.5, top_p=0.9, seed=1, logprobs=True)
    out = await varied.complete(req.model_copy(update={"top_logprobs": 3}))
    assert out.logprobs is not None
    expected = manual_logprobs(varied_model_dir, req, [])[0].topk(3).values.tolist()
    assert [a.logprob for a in out.logprobs[0].top] == pytest.approx(expected, abs=1e-5)


async def test_logprobs_with_top_alternatives(varied: HFModel, varied_model_dir: Path) -> None:
    req = ask(PROMPTS[2], max_tokens=4, logprobs=True, top_logprobs=3)
    out = await varied.complete(req)
    assert out.logprobs is not None and len(out.logprobs) >= 1
    first = out.logprobs[0]
    assert len(first.top) == 3
    assert [a.logprob for a in first.top] == sorted((a.logprob for a in first.top), reverse=True)
    assert first.token == first.top[0].token  # greedy picks the most likely token
    assert first.logprob == pytest.approx(first.top[0].logprob)
    assert "".join(t.token for t in out.logprobs) == out.text
    expected = manual_logprobs(varied_model_dir, req, [])[0]
    values, ids = expected.topk(3)
    tok = AutoTokenizer.from_pretrained(varied_model_dir)
    assert [a.token for a in first.top] == [tok.decode([i]) for i in ids.tolist()]
    assert [a.logprob for a in first.top] == pytest.approx(values.tolist(), abs=1e-5)
    plain = await varied.complete(ask(PROMPTS[2], max_tokens=4, logprobs=True))
    assert plain.logprobs is not None and all(t.top == () for t in plain.logprobs)


async def test_stop_strings_truncate(varied: HFModel) -> None:
    full = await varied.complete(ask(PROMPTS[3], max_tokens=20, logprobs=True))
    assert full.logprobs is not None and len(full.logprobs) >= 6
    stop = full.logprobs[4].token
    assert stop and stop in full.text
    cut = await varied.complete(
        ask(PROMPTS[3], max_tokens=20, stop=(stop, "\x00never"), logprobs=True)
    )
    assert cut.text == full.text[: full.text.index(stop)]
    assert cut.finish_reason == "stop"
    assert cut.usage.completion_tokens < full.usage.completion_tokens
    assert cut.logprobs is not None and len(cut.logprobs) == cut.usage.completion_tokens


async def test_assistant_prefill_is_continued(model: HFModel) -> None:
    await model.load()
    assert model._loaded is not None
    messages = (
        Message(role="user", content="Rate it."),
        Message(role="assistant", content="Score:"),
    )
    text = _hf_compute.render_prompt(model._loaded, messages)
    assert text.endswith("<|im_start|>assistant\nScore:")
    out = await model.complete(Request(messages=messages, max_tokens=3))
    assert out.usage.completion_tokens >= 1


async def test_event_loop_keeps_running_during_generation(varied: HFModel) -> None:
    await varied.load()
    ticks = 0
    done = False

    async def ticker() -> None:
        nonlocal ticks
        while not done:
            await asyncio.sleep(0.001)
            ticks += 1

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    before = ticks
    await varied.complete_many(
        [ask(p, max_tokens=48, extra={"min_new_tokens": 48}) for p in PROMPTS]
    )
    during = ticks - before
    done = True
    await task
    assert during >= 3


def test_sync_use_across_event_loops(tiny_model_dir: Path) -> None:
    m = HFModel(str(tiny_model_dir))
    m.load_sync()
    a = run_sync(m.complete(ask("Rate 1 to 5.", max_tokens=3)))  # the shared loop
    b = asyncio.run(m.complete(ask("Rate 1 to 5.", max_tokens=3)))  # a loop of its own
    assert a.text == b.text
    run_sync(m.aclose())
    assert not m.loaded
    c = asyncio.run(m.complete(ask("Rate 1 to 5.", max_tokens=3)))  # loads again
    assert c.text == a.text
    run_sync(m.aclose())


async def test_tokenizer_without_chat_template(tiny_model_dir: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(tiny_model_dir, plain)
    (plain / "chat_template.jinja").unlink(missing_ok=True)
    m = HFModel(str(plain))
    try:
        await m.load()
        assert m._loaded is not None and not m._loaded.has_chat_template
        text = _hf_compute.render_prompt(m._loaded, ask("Rate it.").messages)
        assert text == "System: You are an impartial judge.\n\nUser: Rate it.\n\nAssistant:\n"
        out = await m.complete(ask("Rate it.", max_tokens=3))
        assert out.usage.completion_tokens >= 1
        scores = await m.candidate_scores(ask("Rate it."), ["1", "2"])
        assert sum(scores.probs.values()) == pytest.approx(1.0)
    finally:
        await m.aclose()


# -- candidate scoring ----------------------------------------------------------------------


async def test_candidate_scores_match_manual_log_softmax(
    varied: HFModel, varied_model_dir: Path
) -> None:
    req = ask(PROMPTS[1])
    cands = ["1", "2", "3", "4", "5"]
    scores = await varied.candidate_scores(req, cands)
    assert list(scores.probs) == cands
    assert sum(scores.probs.values()) == pytest.approx(1.0, abs=1e-9)
    tok = AutoTokenizer.from_pretrained(varied_model_dir)
    ids = [tok.encode(c, add_special_tokens=False) for c in cands]
    assert all(len(i) == 1 for i in ids)
    expected = manual_logprobs(varied_model_dir, req, [])[0]
    for c, (i,) in zip(cands, ids, strict=True):
        assert scores.logprobs[c] == pytest.approx(expected[i].item(), abs=1e-5)
    mass = sum(math.exp(expected[i].item()) for (i,) in ids)
    assert scores.coverage == pytest.approx(mass, rel=1e-4)
    total = sum(math.exp(v) for v in scores.logprobs.values())
    for c in cands:
        assert scores.probs[c] == pytest.approx(math.exp(scores.logprobs[c]) / total)


async def test_multi_token_candidate_uses_teacher_forcing(
    varied: HFModel, varied_model_dir: Path
) -> None:
    tok = AutoTokenizer.from_pretrained(varied_model_dir)
    ten = tok.encode("10", add_special_tokens=False)
    assert len(ten) == 2  # "1", "0": digits are split one by one
    req = ask(PROMPTS[4])
    scores = await varied.candidate_scores(req, ["1", "5", "10"])
    forced = manual_logprobs(varied_model_dir, req, ten[:1])
    assert scores.logprobs["10"] == pytest.approx(
        forced[0, ten[0]].item() + forced[1, ten[1]].item(), abs=1e-5
    )
    assert scores.logprobs["1"] == pytest.approx(forced[0, ten[0]].item(), abs=1e-5)
    assert scores.logprobs["10"] < scores.logprobs["1"]
    assert sum(scores.probs.values()) == pytest.approx(1.0)


async def test_candidate_scores_batch_across_callers(varied: HFModel) -> None:
    """Batched scoring equals one-at-a-time scoring up to float32 rounding.

    They are not bit-identical, and the gap depends on the machine: in a batch, shorter
    prompts are left-padded, and PyTorch's SDPA attention kernel then accumulates each
    row's softmax over the longer, padded key axis in another order than over the row
    alone (eager attention, on this tiny model, gives identical numbers; batching rows of
    equal length does too). How the kernel blocks that sum depends on the CPU's vector
    width and thread count, so a fixed ``abs=1e-5`` passed on one machine and failed on
    others by 1.24e-5 (a logprob of magnitude 24, in float32: 6.5 ulps).

    The bound is derived instead of guessed. Reordering a float32 sum of ``n`` terms
    moves it by at most about ``n * u * sum(|terms|)`` (``u = 2**-24``, the unit
    roundoff). Each layer's attention sums over at most ``L`` keys (the padded length),
    each layer passes its relative error on, and a candidate's logprob adds ``k`` token
    logprobs of magnitude at most ``M``, so we allow
    ``2 * layers * L * u * k * max(M, 1)``: 1e-4 to 5e-4 here (``L`` = 76), over 30 times
    each gap measured so far, and still hundreds of times below what a real batching bug
    (a leaked pad token, a shifted position) does to a logprob (0.1 and more).
    """
    from jurist.models._hf_compute import encode_prompts, render_prompt
    from jurist.models._hf_scoring import candidate_ids

    cands = ["Yes", "No", "10", "1"]
    reqs = [ask(p) for p in PROMPTS]
    together = await asyncio.gather(*(varied.candidate_scores(r, cands) for r in reqs))
    alone = [await varied.candidate_scores(r, cands) for r in reqs]
    lm = varied._ensure_loaded()
    texts = [render_prompt(lm, r.messages) for r in reqs]
    padded = max(len(ids) for ids in encode_prompts(lm, texts)) + 2  # + a candidate's tokens
    layers = lm.model.config.num_hidden_layers
    unit = 2.0**-24
    for text, t, a in zip(texts, together, alone, strict=True):
        tokens = dict(zip(cands, (len(ids) for ids in candidate_ids(lm, text, cands)), strict=True))
        for c in cands:
            size = max(abs(t.logprobs[c]), abs(a.logprobs[c]), 1.0)
            bound = 2 * layers * padded * unit * tokens[c] * size
            assert abs(t.logprobs[c] - a.logprobs[c]) <= bound, (c, text[-40:], bound)
    assert len({round(t.probs["Yes"], 6) for t in together}) > 1


async def test_candidate_scores_rejects_bad_candidates(model: HFModel) -> None:
    with pytest.raises(ConfigError):
        await model.candidate_scores(ask("x"), [])
    with pytest.raises(ConfigError):
        await model.candidate_scores(ask("x"), ["1", ""])
    dup = await model.candidate_scores(ask("x"), ["1", "2", "1"])
    assert list(dup.probs) == ["1", "2"]


# -- errors -----------------------------------------------------------------------------------


async def test_hub_model_offline_fails_fast_with_a_clear_message() -> None:
    m = jurist.get_model("hf:jurist-test/does-not-exist")
    assert isinstance(m, HFModel)
    with pytest.raises(ModelLoadError) as info:
        await asyncio.wait_for(m.load(), timeout=60)
    msg = str(info.value)
    assert "jurist-test/does-not-exist" in msg
    assert "not on disk" in msg and "cannot be reached" in msg
    assert "hf:/path/to/model" in msg
    assert "openai:gpt-4o-mini" in msg and "--base-url" in msg
    with pytest.raises(ModelLoadError):  # a call fails the same way
        await asyncio.wait_for(m.complete(ask("x")), timeout=60)


@pytest.mark.parametrize("path", ["/no/such/jurist-model", "./no-such-jurist-model"])
def test_missing_local_folder_names_the_path(path: str) -> None:
    with pytest.raises(ModelLoadError, match=r"(no-such-)?jurist-model"):
        jurist.get_model(f"hf:{path}")


async def test_folder_without_a_model(tmp_path: Path) -> None:
    m = HFModel(str(tmp_path))
    with pytest.raises(ModelLoadError, match=str(tmp_path)):
        await m.load()


async def test_request_and_option_errors(model: HFModel, tiny_model_dir: Path) -> None:
    with pytest.raises(CapabilityError):
        await model.complete(ask("x", json_schema={"type": "object"}))
    with pytest.raises(CapabilityError):
        await model.complete(ask("x", logprobs=True, top_logprobs=21))
    with pytest.raises(ConfigError, match="grammar"):
        await model.complete(ask("x", extra={"grammar": "root ::= 'a'"}))
    with pytest.raises(ConfigError):
        await model.complete(ask("x", max_tokens=0))
    with pytest.raises(ConfigError, match="bogus"):
        jurist.get_model(f"hf:{tiny_model_dir}", bogus=1)
    with pytest.raises(ConfigError, match="dtype"):
        jurist.get_model(f"hf:{tiny_model_dir}", dtype="float8")
    with pytest.raises(ModelLoadError, match=r"CUDA|device"):
        if torch.cuda.is_available():
            raise ModelLoadError("device: skip, a GPU is present")
        await HFModel(str(tiny_model_dir), device="cuda").load()


def test_missing_transformers_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    monkeypatch.delitem(sys.modules, "jurist.models._hf_loading")
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingDependencyError, match=r"jurist\[hf\]"):
        importlib.import_module("jurist.models._hf_loading")


# -- the batcher on its own ---------------------------------------------------------------------


async def test_batcher_isolates_a_failing_payload_and_skips_cancelled_ones() -> None:
    import concurrent.futures

    from jurist.models._hf_queue import GenerateQueue

    calls: list[list[int]] = []

    def run(key: object, xs: list[int]) -> list[int]:
        calls.append(list(xs))
        if 3 in xs:
            raise ValueError("three")
        return [x * 10 for x in xs]

    pool = concurrent.futures.ThreadPoolExecutor(1)
    batcher: GenerateQueue[int, int] = GenerateQueue(run, lambda: pool, max_batch=8, wait_s=0.05)
    try:
        cancelled = asyncio.create_task(batcher.submit("k", 99))
        others = [asyncio.create_task(batcher.submit("k", x)) for x in (1, 2, 3)]
        await asyncio.sleep(0)
        cancelled.cancel()
        results = await asyncio.gather(*others, return_exceptions=True)
    finally:
        pool.shutdown()
    assert results[:2] == [10, 20]
    assert isinstance(results[2], ValueError)
    assert calls[0] == [1, 2, 3]  # one batch, without the cancelled call
    assert sorted(calls[1:]) == [[1], [2], [3]]  # then each alone, to isolate the failure
