"""Confidence after thought on the hf backend: the verdicts weighed after a thinking trace
(or after an answer that names no verdict) in one prefill, checked against a bare forward
pass of torch over the same tokens."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import jurist
from jurist.judges._after_thought import Prefill, prefill_after
from jurist.judges._scoring import choose_route
from jurist.judges._weigher import AFTER_ANSWER_NOTE, Weigher
from jurist.models._hf import HFModel
from jurist.templates import get_template
from jurist.types import Judgment, Message, Reasoning, Request
from tests._thinker import build_thinker

ITEM = {"prompt": "How many legs does a spider have?", "response": "Spiders have six legs."}


@pytest.fixture(scope="module")
def thinker_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_thinker(tmp_path_factory.mktemp("thinker"), seed=5)


def bare_distribution(
    model_dir: Path,
    messages: tuple[Message, ...],
    prefix: str,
    strings: Mapping[str, str],
    **template_options: Any,
) -> tuple[dict[str, float], float]:
    """Each verdict's probability after ``prefix``, from one plain forward pass per scored
    string (renormalised over the verdicts), and the mass on them: no jurist code."""
    tok = AutoTokenizer.from_pretrained(model_dir)
    lm = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    prompt = tok.apply_chat_template(
        [{"role": m.role, "content": m.content} for m in messages],
        tokenize=False,
        add_generation_prompt=True,
        **template_options,
    )
    head = tok(prompt + prefix, add_special_tokens=False)["input_ids"]
    mass: dict[str, float] = {}
    for string, verdict in strings.items():
        full = tok(prompt + prefix + string, add_special_tokens=False)["input_ids"]
        assert full[: len(head)] == head  # the verdict's tokens follow the prefix's own
        with torch.inference_mode():
            logits = lm(input_ids=torch.tensor([full])).logits[0].float()
        lp = torch.log_softmax(logits, dim=-1)
        total = sum(float(lp[len(head) - 1 + i, t]) for i, t in enumerate(full[len(head) :]))
        mass[verdict] = mass.get(verdict, 0.0) + math.exp(total)
    covered = sum(mass.values())
    return {v: m / covered for v, m in mass.items()}, min(1.0, covered)


def close(a: Mapping[str, float], b: Mapping[str, float], tol: float = 1e-5) -> bool:
    return set(a) == set(b) and all(abs(a[k] - b[k]) <= tol for k in a)


@pytest.mark.parametrize("template_name", ["likert", "solve_first"])
def test_distribution_after_the_trace_equals_a_bare_forward_pass(
    thinker_dir: Path, template_name: str
) -> None:
    model = HFModel(str(thinker_dir))
    template = get_template(template_name)
    reasoning = Reasoning(budget_tokens=8)
    route, space, _ = choose_route(model, template, "logprobs")
    assert route == "candidates" and space is not None
    bare = template.verdict_alone()
    weigher = Weigher(
        model,
        template,
        route,
        space,
        top_logprobs=0,
        bare=bare,
        strict=True,
        min_coverage=0.0,
        reasoning=reasoning,
    )
    assert not weigher.one_pass  # a thinking judge thinks before it is weighed
    messages = template.render(ITEM, system=template.system_text())
    answer = asyncio.run(
        model.complete(
            Request(messages=messages, reasoning=reasoning, max_tokens=24, temperature=0.0)
        )
    )
    assert "</think>" in answer.text  # the budget closed the thinking
    failed = Judgment(score=None, error="parse: no verdict", response=answer.text, attempts=1)
    judged = asyncio.run(weigher.after_answer(messages, answer, failed))
    assert judged is not None and judged.error is None
    assert judged.scoring == "logprobs" and judged.scoring_note == AFTER_ANSWER_NOTE
    found = prefill_after(answer.text, template, bare=bare)
    assert isinstance(found, Prefill)
    assert found.prefix.startswith(answer.text.split("</think>")[0] + "</think>")
    strings = {found.gap + c: space.groups[c] for c in space.candidates}
    probs, coverage = bare_distribution(
        thinker_dir, messages, found.prefix, strings, enable_thinking=True
    )
    assert judged.distribution is not None
    assert close(judged.distribution, probs), (judged.distribution, probs)
    assert judged.coverage is not None and abs(judged.coverage - coverage) <= 1e-5
    top = max(probs, key=lambda v: probs[v])
    assert judged.confidence is not None and abs(judged.confidence - probs[top]) <= 1e-5
    assert judged.usage.calls == 1 and judged.attempts == 2  # the answer, then one prefill


def test_a_trace_cut_inside_its_thinking_gives_no_prefill(thinker_dir: Path) -> None:
    model = HFModel(str(thinker_dir))
    template = get_template("likert")
    route, space, _ = choose_route(model, template, "logprobs")
    assert route is not None and space is not None
    weigher = Weigher(
        model,
        template,
        route,
        space,
        top_logprobs=0,
        bare=True,
        strict=True,
        reasoning=Reasoning(budget_tokens=100),
    )
    messages = template.render(ITEM, system=template.system_text())
    cut = asyncio.run(
        model.complete(
            Request(
                messages=messages,
                reasoning=Reasoning(budget_tokens=100),
                max_tokens=6,
                temperature=0.0,
            )
        )
    )
    # the template opened the block; the text is the unfinished trace
    text = "<think>\n" + cut.text
    answer = cut.model_copy(update={"text": text})
    failed = Judgment(score=None, error="parse: no verdict", response=text, attempts=1)
    assert asyncio.run(weigher.after_answer(messages, answer, failed)) is None


def test_a_judge_whose_answer_names_no_verdict_is_weighed_after_it(
    tiny_model_dir: Path,
) -> None:
    """No thinking: an explained template's answer with no verdict line, on hf, through
    LLMJudge; the distribution read after it equals a bare forward pass."""
    model = HFModel(str(tiny_model_dir))
    judge = jurist.LLMJudge(
        model, template="solve_first", scoring="logprobs", min_coverage=0.0, max_tokens=12
    )
    result = judge.judge_sync([ITEM], retries=3)[0]
    assert result.error is None, result.error
    assert result.scoring == "logprobs" and result.scoring_note == AFTER_ANSWER_NOTE
    assert result.attempts == 2  # one answer, one prefill: no re-ask
    template = judge.template
    assert template.parse(result.response or "").score is None  # the text named no verdict
    found = prefill_after(result.response or "", template, bare=False)
    assert isinstance(found, Prefill) and found.prefix.endswith("\nVerdict:")
    strings = {found.gap + c: c for c in ("Correct", "Incorrect", "not correct")}
    groups = {"Correct": "Correct", "Incorrect": "Incorrect", "not correct": "Incorrect"}
    probs, _ = bare_distribution(
        tiny_model_dir,
        judge.messages(ITEM),
        found.prefix,
        {s: groups[v] for s, v in strings.items()},
    )
    assert result.distribution is not None and close(result.distribution, probs)
    assert result.verdict == max(probs, key=lambda v: probs[v])


def test_a_backend_without_candidate_scores_says_why_it_did_not_weigh() -> None:
    """A strict judge on a backend that returns top logprobs but scores no candidates:
    an answer with no verdict fails, and the judgment says what could read it."""
    model = jurist.get_model("mock:j", outputs=["The answer looks fine to me."], top_logprobs=5)
    assert not model.capabilities.candidate_scores
    judge = jurist.LLMJudge(model, template="solve_first", scoring="logprobs")
    result = judge.judge_sync([ITEM])[0]
    assert result.score is None and result.error is not None and result.error.startswith("parse")
    assert result.scoring_note is not None
    assert "cannot read the verdicts after it" in result.scoring_note
    assert "prefill=completions" in result.scoring_note
    # a judge on a backend that scores candidates reads them there
    scoring = jurist.get_model(
        "mock:j",
        outputs=["The answer looks fine to me."],
        candidate_probs={" Correct": 0.6, " Incorrect": 0.2},
    )
    weighed = jurist.LLMJudge(scoring, template="solve_first", scoring="logprobs").judge_sync(
        [ITEM]
    )[0]
    assert weighed.scoring_note == AFTER_ANSWER_NOTE and weighed.verdict == "Correct"
    assert weighed.distribution is not None and abs(weighed.distribution["Correct"] - 0.75) < 1e-9
