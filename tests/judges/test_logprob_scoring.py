"""Logprob-weighted scoring: the arithmetic, the judge's routes, hf and a real server."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jurist
from jurist.errors import ConfigError
from jurist.judges._logprob import (
    distribution_from_candidates,
    distribution_from_tokens,
    token_at,
)
from jurist.judges._scoring import verdict_offset, verdict_space
from jurist.models import MockModel
from jurist.types import CandidateScores, Completion, TokenLogprob, TopLogprob
from tests._llama_fixtures import llama_server, tiny_gguf  # noqa: F401

LIKERT = {str(n): (n - 1) / 4 for n in range(1, 6)}
TEN = {str(n): n / 10 for n in range(1, 11)}


def tok(token: str, p: float, *alts: tuple[str, float]) -> TokenLogprob:
    top = tuple(TopLogprob(token=t, logprob=math.log(q)) for t, q in ((token, p), *alts))
    return TokenLogprob(token=token, logprob=math.log(p), top=top)


# -- the arithmetic ---------------------------------------------------------------------------


def test_single_token_expected_score_and_coverage() -> None:
    d = distribution_from_tokens(
        [tok("4", 0.5, (" 5", 0.25), ("2", 0.125), ("x", 0.125))], 0, LIKERT
    )
    assert d is not None
    assert d.coverage == pytest.approx(0.875)
    assert d.probs == pytest.approx({"4": 0.5 / 0.875, "5": 0.25 / 0.875, "2": 0.125 / 0.875})
    assert d.expected == pytest.approx((0.5 * 0.75 + 0.25 * 1.0 + 0.125 * 0.25) / 0.875)
    assert (d.top, d.confidence) == ("4", pytest.approx(0.5 / 0.875))


def test_whitespace_and_case_variants_add_up() -> None:
    labels = {"Yes": 1.0, "No": 0.0}
    d = distribution_from_tokens(
        [tok("Yes", 0.4, (" yes", 0.2), ("NO", 0.2), ("Maybe", 0.2))], 0, labels
    )
    assert d is not None
    assert d.probs == pytest.approx({"Yes": 0.75, "No": 0.25})


def test_labels_that_differ_only_in_case_match_exactly() -> None:
    labels = {"m": 1.0, "M": 0.0}
    d = distribution_from_tokens([tok("M", 0.6, ("m", 0.3), ("MM", 0.1))], 0, labels)
    assert d is not None
    assert d.probs == pytest.approx({"M": 2 / 3, "m": 1 / 3})


def test_exact_mode_ignores_whitespace_variants() -> None:
    labels = {"m": 1.0, "M": 0.0}
    tokens = [tok("M", 0.5, (" m", 0.3), ("m", 0.2))]
    exact = distribution_from_tokens(tokens, 0, labels, match="exact")
    normal = distribution_from_tokens(tokens, 0, labels)
    assert exact is not None and normal is not None
    assert exact.probs["m"] == pytest.approx(0.2 / 0.7)
    assert normal.probs["m"] == pytest.approx(0.5 / 1.0)


def test_two_token_verdict_follows_the_generated_path() -> None:
    # "10" is generated as "1" then "0"; the alternatives of the second token split "1"'s mass
    tokens = [tok("1", 0.6, ("9", 0.4)), tok("0", 0.75, ("]]", 0.25)), tok("]]", 1.0)]
    d = distribution_from_tokens(tokens, 0, TEN)
    assert d is not None
    assert d.probs == pytest.approx({"10": 0.45, "1": 0.15, "9": 0.4})
    assert d.expected == pytest.approx(0.45 * 1.0 + 0.15 * 0.1 + 0.4 * 0.9)


def test_off_path_prefix_goes_to_the_verdict_it_spells() -> None:
    # "1" is an alternative but the model generated "8": "1" cannot be split from "10"
    d = distribution_from_tokens([tok("8", 0.9, ("1", 0.1))], 0, TEN)
    assert d is not None
    assert d.probs == pytest.approx({"8": 0.9, "1": 0.1})


def test_multi_token_label_and_unassigned_ambiguous_prefix() -> None:
    labels = {"Correct": 1.0, "Incorrect": 0.0, "Insufficient": 0.5}
    # generated "Inc"+"orrect"; "In" is a prefix of two labels off the path: left out
    tokens = [tok("Inc", 0.5, ("Cor", 0.3), ("In", 0.2)), tok("orrect", 0.8, ("ome", 0.2))]
    d = distribution_from_tokens(tokens, 0, labels)
    assert d is not None
    assert d.coverage == pytest.approx(0.5 * 0.8 + 0.3)
    assert d.probs == pytest.approx({"Incorrect": 0.4 / 0.7, "Correct": 0.3 / 0.7})


def test_verdict_inside_a_merged_token() -> None:
    tokens = [tok("Rating", 1.0), tok(": [[7", 0.5, (": [[8", 0.5)), tok("]]", 1.0)]
    index, lead = token_at(tokens, len("Rating: [["))  # type: ignore[misc]
    assert (index, lead) == (1, ": [[")
    d = distribution_from_tokens(tokens, index, TEN, lead=lead)
    assert d is not None and d.probs == pytest.approx({"7": 0.5, "8": 0.5})


def test_no_verdict_mass_is_none() -> None:
    assert distribution_from_tokens([tok("The", 0.9, ("A", 0.1))], 0, LIKERT) is None
    cs = CandidateScores(logprobs={"1": -math.inf}, probs={"1": 1.0}, coverage=0.0)
    assert distribution_from_candidates(cs, {"1": 0.0}) is None


token_text = st.sampled_from(["1", "2", " 3", "4", "5", "10", "0", "]]", "x", "Score", "\n", "4.5"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(token_text, st.lists(st.tuples(token_text, st.floats(1e-6, 1.0)), max_size=6)),
        min_size=1,
        max_size=4,
    ),
    st.integers(0, 3),
)
def test_distribution_is_always_a_distribution(raw: list[Any], index: int) -> None:
    tokens = [
        TokenLogprob(
            token=t,
            logprob=-0.1,
            top=tuple(TopLogprob(token=a, logprob=math.log(p)) for a, p in alts),
        )
        for t, alts in raw
    ]
    for scale in (LIKERT, TEN):
        d = distribution_from_tokens(tokens, index, scale)
        if d is None:
            continue
        assert sum(d.probs.values()) == pytest.approx(1.0)
        assert set(d.probs) <= set(scale)
        assert 0.0 <= d.expected <= 1.0 and 0.0 < d.coverage <= 1.0
        assert d.confidence == max(d.probs.values())


def test_verdict_offsets() -> None:
    likert = jurist.get_template("likert")
    assert verdict_offset("4", likert, 4.0) == 0
    assert verdict_offset("**Score:** 4\nExplanation: 1 slip", likert, 4.0) == 11
    assert verdict_offset("<think>Score: 2</think>Score: 4", likert, 4.0) == 30
    assert verdict_offset('{"explanation": "1 slip", "score": 4}', likert, 4.0) == 35
    tfu = jurist.get_template("true_false")
    assert verdict_offset("Incorrect, not correct", tfu, "Incorrect") == 0
    assert verdict_offset("no verdict", likert, 4.0) is None


# -- the judge's routes on the mock ---------------------------------------------------------


def completion(text: str, tokens: list[TokenLogprob]) -> Completion:
    assert "".join(t.token for t in tokens) == text
    return Completion(text=text, logprobs=tuple(tokens))


def test_top_route_scores_by_probabilities() -> None:
    out = completion(
        "Score: 4\nExplanation: fine",
        [
            tok("Score", 1.0),
            tok(":", 1.0),
            tok(" 4", 0.6, (" 5", 0.4)),
            tok("\nExplanation: fine", 1.0),
        ],
    )
    model = MockModel("j", outputs=[out], top_logprobs=5)
    judge = jurist.LLMJudge(model, template="likert", explanations=True, scoring="logprobs")
    j = judge.judge_one_sync({"prompt": "q", "response": "r"})
    assert j.scoring == "logprobs" and j.error is None
    assert j.score == pytest.approx(0.6 * 0.75 + 0.4 * 1.0)
    assert j.distribution == pytest.approx({"4": 0.6, "5": 0.4})
    assert (j.verdict, j.confidence, j.coverage) == (4.0, pytest.approx(0.6), pytest.approx(1.0))
    assert model.requests[0].logprobs and model.requests[0].top_logprobs == 5


def test_strict_logprobs_fails_the_item_when_tokens_are_missing() -> None:
    model = MockModel("j", outputs=[Completion(text="4")], top_logprobs=5)
    j = jurist.LLMJudge(model, template="likert", scoring="logprobs").judge_one_sync(
        {"prompt": "q", "response": "r"}
    )
    assert j.score is None and j.error == "logprobs: the model returned no token logprobs"
    assert j.verdict == 4.0 and j.response == "4"


def test_auto_keeps_the_parsed_score_and_says_why() -> None:
    model = MockModel("j", outputs=[Completion(text="4")], top_logprobs=5)
    j = jurist.LLMJudge(model, template="likert", scoring="auto").judge_one_sync(
        {"prompt": "q", "response": "r"}
    )
    assert (j.score, j.scoring) == (0.75, "parse")
    assert j.scoring_note == "parsed, not weighed: the model returned no token logprobs"


def test_auto_on_a_backend_without_probabilities_records_it() -> None:
    judge = jurist.LLMJudge(MockModel("j", outputs=["4"]), template="likert", scoring="auto")
    j = judge.judge_one_sync({"prompt": "q", "response": "r"})
    assert (j.score, j.scoring) == (0.75, "parse")
    assert j.scoring_note == "logprobs unavailable: mock:j returns no token probabilities"


def test_strict_logprobs_refused_where_it_cannot_work() -> None:
    with pytest.raises(ConfigError, match="mock:j returns no token probabilities"):
        jurist.LLMJudge(MockModel("j"), template="likert", scoring="logprobs")
    with pytest.raises(ConfigError, match="continuous scale"):
        jurist.LLMJudge(MockModel("j", top_logprobs=5), template="continuous", scoring="logprobs")
    with pytest.raises(ConfigError, match="scoring must be"):
        jurist.LLMJudge(MockModel("j"), scoring="sometimes")  # type: ignore[arg-type]


def test_candidate_route_bare_verdict_is_one_forward_pass() -> None:
    probs = {"1": 0.0, "2": 0.1, "3": 0.2, "4": 0.3, "5": 0.2}
    model = MockModel("j", outputs=[], candidate_probs=probs)
    judge = jurist.LLMJudge(model, template="likert", scoring="logprobs")
    res = judge.judge_sync([{"prompt": "q", "response": "r"}] * 3)
    assert model.calls == 3 and all(r.logprobs is False for r in model.requests)
    j = res[0]
    expected = sum(p * (int(k) - 1) / 4 for k, p in probs.items()) / 0.8
    assert j.score == pytest.approx(expected) and j.scoring == "logprobs"
    assert (j.verdict, j.coverage, j.response) == (4.0, pytest.approx(0.8), None)


def test_candidate_route_with_explanations_scores_after_the_answer_prefix() -> None:
    # the judge scores the verdicts after "Score:", so with the gap: " 2", " 3"
    probs = {" 2": 0.5, " 3": 0.5}
    model = MockModel("j", outputs=["Score: 2\nExplanation: one slip"], candidate_probs=probs)
    judge = jurist.LLMJudge(model, template="likert", explanations=True, scoring="logprobs")
    j = judge.judge_one_sync({"prompt": "q", "response": "r"})
    assert j.scoring == "logprobs" and j.score == pytest.approx(0.375)
    assert j.explanation == "one slip"
    scoring_request = model.requests[-1]
    assert scoring_request.messages[-1].role == "assistant"
    assert scoring_request.messages[-1].content == "Score:"


def test_label_aliases_are_one_verdict() -> None:
    model = MockModel("j", outputs=[], candidate_probs={"yes": 0.3, "right": 0.3, "no": 0.2})
    labels = {1.0: ["yes", "right"], 0.0: ["no"]}
    judge = jurist.LLMJudge(model, template="true_false", labels=labels, scoring="logprobs")
    j = judge.judge_one_sync({"prompt": "q", "response": "r"})
    assert j.distribution == pytest.approx({"yes": 0.75, "no": 0.25})
    assert (j.verdict, j.score, j.coverage) == ("yes", pytest.approx(0.75), pytest.approx(0.8))
    space = verdict_space(judge.template)
    assert space is not None and space.groups == {"yes": "yes", "right": "yes", "no": "no"}


# -- real backends ------------------------------------------------------------------------------


@pytest.mark.slow
def test_hf_logprob_scoring_matches_a_manual_forward_pass(tiny_model_dir: Path) -> None:
    pytest.importorskip("torch")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = jurist.get_model(f"hf:{tiny_model_dir}")
    # a random model puts ~1% on the verdicts: the arithmetic is checked with the
    # coverage check off (tests/judges/test_logprob_coverage.py checks the check)
    judge = jurist.LLMJudge(model, template="likert", scoring="logprobs", min_coverage=0.0)
    item = {"prompt": "What is 2+2?", "response": "4"}
    j = judge.judge_one_sync(item)
    assert j.scoring == "logprobs" and j.distribution is not None
    assert sum(j.distribution.values()) == pytest.approx(1.0)

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    lm = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    msgs = [{"role": m.role, "content": m.content} for m in judge.messages(item)]
    prompt = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    ids = tok(prompt, add_special_tokens=False)["input_ids"]
    logp: dict[str, float] = {}
    with torch.no_grad():
        for digit in "12345":
            cand = tok(prompt + digit, add_special_tokens=False)["input_ids"][len(ids) :]
            full = torch.tensor([ids + cand])
            out = torch.log_softmax(lm(full).logits[0].double(), dim=-1)
            logp[digit] = sum(float(out[len(ids) - 1 + k, t]) for k, t in enumerate(cand))
    total = sum(math.exp(v) for v in logp.values())
    manual = {d: math.exp(v) / total for d, v in logp.items()}
    assert j.distribution == pytest.approx(manual, abs=1e-5)
    assert j.score == pytest.approx(sum(p * (int(d) - 1) / 4 for d, p in manual.items()), abs=1e-5)
    assert j.coverage == pytest.approx(min(1.0, total), abs=1e-5)


@pytest.mark.slow
async def test_real_server_logprob_scoring(llama_server: str) -> None:  # noqa: F811
    model = jurist.get_model("openai:tiny", base_url=llama_server, api_key="x")
    grammar = {"grammar": 'root ::= [1-5] "\\n"'}
    judge = jurist.LLMJudge(
        model,
        template="likert",
        scoring="logprobs",
        top_logprobs=10,
        extra_body=grammar,
        output="text",
        min_coverage=0.0,  # the random model's verdicts get ~0.3% (test_logprob_coverage.py)
    )
    item = {"prompt": "What is 2+2?", "response": "4"}
    j = await judge.judge(item)
    assert j.error is None and j.scoring == "logprobs"
    assert j.distribution and sum(j.distribution.values()) == pytest.approx(1.0)
    assert j.score == pytest.approx(sum(p * (int(v) - 1) / 4 for v, p in j.distribution.items()))
    # the same numbers by hand from the server's own top logprobs
    raw = await model.complete(
        jurist.Request(
            messages=judge.messages(item),
            max_tokens=judge.max_tokens,
            temperature=0.0,
            logprobs=True,
            top_logprobs=10,
            extra=grammar,
        )
    )
    assert raw.logprobs
    first = {
        a.token.strip(): math.exp(a.logprob)
        for a in raw.logprobs[0].top
        if a.token.strip() in LIKERT
    }
    assert j.distribution == pytest.approx({k: v / sum(first.values()) for k, v in first.items()})
    await model.aclose()


@pytest.mark.slow
async def test_real_server_json_output_weighed(llama_server: str) -> None:  # noqa: F811
    """JSON-schema output on llama.cpp: the verdict is read from the object and weighed at
    the position of its value in the returned tokens."""
    model = jurist.get_model(
        "openai:tiny", base_url=llama_server, api_key="x", json_mode="json_object"
    )
    judge = jurist.LLMJudge(model, template="likert", scoring="auto", max_tokens=40)
    assert judge.json and judge.describe()["json_schema"]["required"] == ["verdict"]
    items = [{"prompt": f"What is {i}+{i}?", "response": str(2 * i)} for i in range(4)]
    res = await judge.judge_items(items)
    await model.aclose()
    for j in res:
        assert j.response is not None and j.response.lstrip().startswith("{")
        if j.error is None:
            assert j.verdict in (1.0, 2.0, 3.0, 4.0, 5.0)
            if j.scoring == "logprobs":
                assert j.distribution and sum(j.distribution.values()) == pytest.approx(1.0)
            else:
                assert j.scoring_note
        else:  # a random model may stop before closing the object: a parse failure, not a score
            assert j.error.startswith("parse: ") and j.score is None
    assert any(j.error is None for j in res)


def test_json_output_is_asked_for_where_the_backend_has_a_schema() -> None:
    model = MockModel("j", outputs=['{"verdict": 4}'], json_schema=True)
    judge = jurist.LLMJudge(model, template="likert")
    j = judge.judge_one_sync({"prompt": "q", "response": "r"})
    assert (j.score, j.verdict) == (0.75, 4.0)
    sent = model.requests[0]
    assert sent.json_schema == judge.template.json_schema(False)
    assert "JSON" in sent.messages[0].content
    text_judge = jurist.LLMJudge(MockModel("j", json_schema=True), template="likert", output="text")
    assert not text_judge.json and text_judge.describe()["json_schema"] is None
    with pytest.raises(ConfigError, match="JSON-schema output"):
        jurist.LLMJudge(MockModel("j"), template="likert", output="json")
