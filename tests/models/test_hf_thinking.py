"""The hf backend honours Request.reasoning on a tiny hybrid thinker built offline: the chat
template's enable_thinking switch, the thinking budget enforced on generation, and the
refusal on a model whose template has no switch."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch
from transformers import AutoTokenizer

from jurist.errors import CapabilityError
from jurist.models import _hf_compute
from jurist.models._hf import HFModel
from jurist.types import Message, Reasoning, Request
from tests._thinker import build_thinker

MESSAGES = (
    Message(role="system", content="You are an impartial judge."),
    Message(role="user", content="Is Paris the capital of France? Reply Correct or Incorrect."),
)


@pytest.fixture(scope="module")
def thinker_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny hybrid thinker (enable_thinking in its template), with weights large enough
    that greedy text varies from token to token."""
    return build_thinker(tmp_path_factory.mktemp("thinker"), seed=3)


@pytest.fixture(scope="module")
def thinker(thinker_dir: Path) -> HFModel:
    return HFModel(str(thinker_dir), max_batch_size=8)


def ask(reasoning: Reasoning | None, **options: object) -> Request:
    return Request(messages=MESSAGES, reasoning=reasoning, temperature=0.0, **options)  # type: ignore[arg-type]


def test_capability_follows_the_chat_template(thinker_dir: Path, tiny_model_dir: Path) -> None:
    fresh = HFModel(str(thinker_dir))
    assert fresh.capabilities.thinking is True  # read from its files, nothing loaded
    assert not fresh.loaded
    plain = HFModel(str(tiny_model_dir))
    assert plain.capabilities.thinking is False


def test_reasoning_on_a_model_without_the_switch_is_refused(tiny_model_dir: Path) -> None:
    plain = HFModel(str(tiny_model_dir))
    with pytest.raises(CapabilityError, match=r"cannot honour reasoning=low .*enable_thinking"):
        asyncio.run(plain.complete(ask(Reasoning(effort="low"), max_tokens=4)))
    with pytest.raises(CapabilityError, match="reasoning=16"):
        asyncio.run(plain.candidate_scores(ask(Reasoning(budget_tokens=16)), ["Correct"]))
    # without reasoning it serves as before
    done = asyncio.run(plain.complete(ask(None, max_tokens=2)))
    assert done.usage.completion_tokens >= 1


def test_the_switch_reaches_the_template(thinker: HFModel) -> None:
    thinker.load_sync()
    lm = thinker._loaded
    assert lm is not None
    off = _hf_compute.render_prompt(lm, MESSAGES, Reasoning(effort="none"))
    on = _hf_compute.render_prompt(lm, MESSAGES, Reasoning(effort="high"))
    unset = _hf_compute.render_prompt(lm, MESSAGES)
    assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert on.endswith("<|im_start|>assistant\n<think>\n")
    assert unset.endswith("<|im_start|>assistant\n")
    # a prefilled answer after a thinking prompt is appended to the generation prompt as is
    prefilled = (*MESSAGES, Message(role="assistant", content="a trace</think>\n\nScore:"))
    assert _hf_compute.render_prompt(lm, prefilled, Reasoning(budget_tokens=8)) == (
        on + "a trace</think>\n\nScore:"
    )


def test_budget_closes_the_thinking_and_generation_goes_on(thinker: HFModel) -> None:
    budget = 6
    done = asyncio.run(
        thinker.complete(ask(Reasoning(budget_tokens=budget), max_tokens=20, logprobs=True))
    )
    tokens = [t.token for t in done.logprobs or ()]
    assert len(tokens) == done.usage.completion_tokens == 20
    assert "</think>" not in tokens[:budget]
    assert tokens[budget] == "</think>"  # forced right at the budget
    assert done.text.count("</think>") >= 1
    # the forced tag's logprob is the model's own, read in a bare forward pass
    lm = thinker._loaded
    assert lm is not None
    prompt = _hf_compute.render_prompt(lm, MESSAGES, Reasoning(budget_tokens=budget))
    tok = AutoTokenizer.from_pretrained(str(thinker.name))
    ids = tok(prompt, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():  # the same greedy tokens up to the budget, unforced
        upto = lm.model.generate(
            input_ids=torch.tensor([ids]), max_new_tokens=budget, do_sample=False
        )[0].tolist()
        assert tok.decode(upto[len(ids) :]) == done.text.split("</think>")[0]
        logits = lm.model(input_ids=torch.tensor([upto])).logits[0, -1].float()
    close_id = tok.convert_tokens_to_ids("</think>")
    expected = float(torch.log_softmax(logits, dim=-1)[close_id])
    assert math.isclose(done.logprobs[budget].logprob, expected, abs_tol=1e-4)  # type: ignore[index]


def test_budget_past_max_tokens_never_forces(thinker: HFModel) -> None:
    free = asyncio.run(thinker.complete(ask(Reasoning(budget_tokens=1000), max_tokens=12)))
    forced = asyncio.run(thinker.complete(ask(Reasoning(budget_tokens=3), max_tokens=12)))
    assert free.finish_reason == "length"
    assert free.text != forced.text
    assert "</think>" in forced.text


def test_rows_of_one_batch_keep_their_own_state(thinker: HFModel) -> None:
    """Rows whose prompt opened the thinking and rows whose prompt did not, in one batch."""
    budget = Reasoning(budget_tokens=4)
    other = Request(
        messages=(Message(role="user", content="Score: 1 2 3"),),
        reasoning=budget,
        temperature=0.0,
        max_tokens=10,
    )
    alone = [asyncio.run(thinker.complete(r)) for r in (ask(budget, max_tokens=10), other)]
    together = asyncio.run(thinker.complete_many([ask(budget, max_tokens=10), other]))
    assert [c.text for c in together] == [c.text for c in alone]


def test_effort_none_writes_no_trace(thinker: HFModel) -> None:
    done = asyncio.run(thinker.complete(ask(Reasoning(effort="none"), max_tokens=8)))
    assert done.finish_reason in ("length", "stop")
    # the empty block was in the prompt: the model starts after it, with no budget to force
    lm = thinker._loaded
    assert lm is not None
    assert (
        _hf_compute.gen_params(
            ask(Reasoning(effort="none"), max_tokens=8), default_max_tokens=8, solo=0
        ).think_budget
        is None
    )
