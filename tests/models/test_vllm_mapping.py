"""The pure mappings of the ``vllm`` backend, tested with real values and no vLLM.

Requests become ``SamplingParams`` keyword dicts, vLLM ``RequestOutput``-shaped objects
(the attributes vLLM 0.33's ``vllm/outputs.py`` and ``vllm/logprobs.py`` define) become
Completions, and candidate scoring plans, read on the tiny hf model, reproduce the hf
backend's one-pass scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.errors import CapabilityError, ConfigError, ModelError, ModelLoadError
from jurist.models._vllm_mapping import (
    MAX_LOGPROB_TOKEN_IDS,
    candidate_scores_from,
    completion_from_output,
    plan_scoring,
    resolve_model_name,
    sampling_kwargs,
)
from jurist.types import Message, Request

MSGS = (Message(role="system", content="Judge."), Message(role="user", content="2+2=4?"))


def req(**kw: Any) -> Request:
    return Request(messages=MSGS, **kw)


def kwargs(request: Request, max_logprobs: int = 20) -> dict[str, Any]:
    return sampling_kwargs(request, default_max_tokens=256, max_logprobs=max_logprobs)


# -- Request -> SamplingParams ---------------------------------------------------------------


def test_greedy_by_default_with_the_backend_default_length() -> None:
    assert kwargs(req()) == {"max_tokens": 256, "temperature": 0.0, "top_p": 1.0}
    # top_p means nothing when greedy: it is not passed on
    assert kwargs(req(temperature=0.0, top_p=0.5))["top_p"] == 1.0


def test_sampling_fields_pass_through() -> None:
    got = kwargs(
        req(
            max_tokens=7,
            temperature=0.7,
            top_p=0.9,
            seed=3,
            stop=("\n", "END"),
            logprobs=True,
            top_logprobs=5,
            extra={"top_k": 40, "repetition_penalty": 1.1},
        )
    )
    assert got == {
        "max_tokens": 7,
        "temperature": 0.7,
        "top_p": 0.9,
        "seed": 3,
        "stop": ["\n", "END"],
        "logprobs": 5,
        "top_k": 40,
        "repetition_penalty": 1.1,
    }


def test_logprobs_without_top_asks_for_the_chosen_token_only() -> None:
    assert kwargs(req(logprobs=True))["logprobs"] == 0
    assert "logprobs" not in kwargs(req(top_logprobs=5))  # logprobs=False: none asked


def test_top_logprobs_over_the_engine_cap_fails_naming_the_option() -> None:
    with pytest.raises(CapabilityError, match=r"at most 20 top_logprobs, not 21.*max_logprobs=21"):
        kwargs(req(logprobs=True, top_logprobs=21))
    assert kwargs(req(logprobs=True, top_logprobs=50), max_logprobs=-1)["logprobs"] == 50


@pytest.mark.parametrize(
    ("extra", "schema", "expected"),
    [
        ({"choice": ["Yes", "No"]}, None, {"choice": ["Yes", "No"]}),
        ({"guided_choice": ("A", "B")}, None, {"choice": ["A", "B"]}),
        ({"regex": "[1-5]"}, None, {"regex": "[1-5]"}),
        ({"guided_regex": r"\d+"}, None, {"regex": r"\d+"}),
        ({"grammar": 'root ::= "Yes" | "No"'}, None, {"grammar": 'root ::= "Yes" | "No"'}),
        ({}, {"type": "object"}, {"json": {"type": "object"}}),
    ],
)
def test_structured_outputs(
    extra: dict[str, Any], schema: dict[str, Any] | None, expected: dict[str, Any]
) -> None:
    assert kwargs(req(extra=extra, json_schema=schema))["structured_outputs"] == expected


def test_two_constraints_are_refused_naming_both() -> None:
    with pytest.raises(ConfigError, match=r"\['choice', 'json_schema'\]"):
        kwargs(req(extra={"choice": ["a"]}, json_schema={"type": "object"}))
    with pytest.raises(ConfigError, match=r"\['choice', 'regex'\]"):
        kwargs(req(extra={"choice": ["a"], "regex": "a"}))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"choice": "Yes"}, r"extra\['choice'\] must be a non-empty list"),
        ({"choice": []}, r"extra\['choice'\] must be a non-empty list"),
        ({"choice": ["Yes", ""]}, r"extra\['choice'\] must be a non-empty list"),
        ({"regex": ""}, r"extra\['regex'\] must be a non-empty string"),
        ({"guided_json": {}}, r"unknown request.extra keys \['guided_json'\]"),
        ({"grammarr": "x"}, r"unknown request.extra keys \['grammarr'\]"),
    ],
)
def test_bad_extra_is_named(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        kwargs(req(extra=extra))


def test_bad_sampling_values() -> None:
    with pytest.raises(ConfigError, match="max_tokens must be at least 1, not 0"):
        kwargs(req(max_tokens=0))
    with pytest.raises(ConfigError, match="temperature must be >= 0"):
        kwargs(req(temperature=-1.0))


def test_model_names(tmp_path: Path) -> None:
    assert resolve_model_name("Qwen/Qwen2.5-7B-Instruct") == "Qwen/Qwen2.5-7B-Instruct"
    assert resolve_model_name(str(tmp_path)) == str(tmp_path.resolve())
    with pytest.raises(ModelLoadError, match="does not exist or is not a folder"):
        resolve_model_name(str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="empty"):
        resolve_model_name("")


# -- RequestOutput -> Completion -------------------------------------------------------------


@dataclass
class FakeLogprob:  # vllm.logprobs.Logprob
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class FakeCompletionOutput:  # vllm.outputs.CompletionOutput
    text: str
    token_ids: list[int]
    logprobs: list[dict[int, FakeLogprob]] | None = None
    finish_reason: str | None = "stop"
    index: int = 0


@dataclass
class FakeRequestOutput:  # vllm.outputs.RequestOutput
    prompt_token_ids: list[int]
    outputs: list[FakeCompletionOutput] = field(default_factory=list)
    num_cached_tokens: int | None = None
    request_id: str = "jurist-1"
    finished: bool = True


def test_output_to_completion_with_top_logprobs_and_cache_hits() -> None:
    # vLLM puts the chosen token first, then the top-k by rank; the chosen token "Ye" (id 9)
    # ranks 3rd at the first position, so with k=2 it is not among the alternatives.
    positions = [
        {
            9: FakeLogprob(-1.5, 3, "Ye"),
            4: FakeLogprob(-0.5, 1, "No"),
            5: FakeLogprob(-1.2, 2, "Yes"),
        },
        {7: FakeLogprob(-0.1, 1, "s"), 8: FakeLogprob(-2.5, 2, "!")},
    ]
    output = FakeRequestOutput(
        prompt_token_ids=list(range(30)),
        outputs=[FakeCompletionOutput("Yes", [9, 7], positions, "length")],
        num_cached_tokens=16,
    )
    c = completion_from_output(
        output, req(logprobs=True, top_logprobs=2), model_name="m", latency=0.25
    )
    assert c.text == "Yes" and c.finish_reason == "length" and c.model == "m"
    assert c.latency == 0.25
    assert (c.usage.prompt_tokens, c.usage.completion_tokens, c.usage.cached_tokens) == (30, 2, 16)
    assert c.usage.calls == 1
    assert c.logprobs is not None
    first, second = c.logprobs
    assert (first.token, first.logprob) == ("Ye", -1.5)
    assert [(t.token, t.logprob) for t in first.top] == [("No", -0.5), ("Yes", -1.2)]
    assert (second.token, second.logprob) == ("s", -0.1)
    assert [t.token for t in second.top] == ["s", "!"]


def test_output_without_logprobs_asked_has_none_and_no_cache_field() -> None:
    output = FakeRequestOutput([1, 2, 3], [FakeCompletionOutput("4", [5])])
    c = completion_from_output(output, req(), model_name="m")
    assert c.logprobs is None and c.usage.cached_tokens == 0 and c.usage.completion_tokens == 1


def test_aborted_or_failed_requests_raise() -> None:
    for reason in ("abort", "error"):
        output = FakeRequestOutput([1], [FakeCompletionOutput("", [], None, reason)])
        with pytest.raises(ModelError, match=f"finish_reason='{reason}'"):
            completion_from_output(output, req(), model_name="m")
    with pytest.raises(ModelError, match="no output"):
        completion_from_output(FakeRequestOutput([1], []), req(), model_name="m")


def test_missing_logprobs_raise_instead_of_passing_silently() -> None:
    output = FakeRequestOutput([1], [FakeCompletionOutput("ab", [1, 2], [{1: FakeLogprob(-1)}])])
    with pytest.raises(ModelError, match="logprobs for 1 positions, not for the 2"):
        completion_from_output(output, req(logprobs=True), model_name="m")


# -- candidate scoring -----------------------------------------------------------------------


def test_plan_shares_the_prompt_row_and_teacher_forces_multi_token_candidates() -> None:
    plan = plan_scoring([1, 2, 3], {"1": [10], "10": [10, 11], "2": [12], "100": [10, 11, 11]})
    assert plan.prompt_tokens == 3
    assert plan.rows == [((1, 2, 3), (10, 12)), ((1, 2, 3, 10), (11,)), ((1, 2, 3, 10, 11), (11,))]
    assert plan.reads == {
        "1": [(0, 10)],
        "10": [(0, 10), (1, 11)],
        "2": [(0, 12)],
        "100": [(0, 10), (1, 11), (2, 11)],
    }
    rows = [{10: math.log(0.5), 12: math.log(0.25)}, {11: math.log(0.5)}, {11: math.log(0.1)}]
    s = candidate_scores_from(plan, rows, cached_tokens=2)
    assert s.logprobs["1"] == pytest.approx(math.log(0.5))
    assert s.logprobs["10"] == pytest.approx(math.log(0.25))
    assert s.logprobs["100"] == pytest.approx(math.log(0.025))
    total = 0.5 + 0.25 + 0.25 + 0.025
    assert s.probs["2"] == pytest.approx(0.25 / total)
    assert sum(s.probs.values()) == pytest.approx(1.0)
    assert s.coverage == 1.0  # "1" and "10" overlap: capped, as in the hf backend
    assert (s.usage.prompt_tokens, s.usage.cached_tokens, s.usage.calls) == (3, 2, 1)


def test_plan_splits_rows_past_vllms_token_id_limit() -> None:
    many = {str(i): [i] for i in range(MAX_LOGPROB_TOKEN_IDS + 5)}
    plan = plan_scoring([0], many)
    assert [len(ids) for _, ids in plan.rows] == [MAX_LOGPROB_TOKEN_IDS, 5]
    assert plan.reads[str(MAX_LOGPROB_TOKEN_IDS + 1)] == [(1, MAX_LOGPROB_TOKEN_IDS + 1)]


def test_scoring_errors_name_the_candidate() -> None:
    with pytest.raises(ConfigError, match="candidate 'x' has no tokens"):
        plan_scoring([1], {"x": []})
    plan = plan_scoring([1], {"a": [2], "b": [3]})
    with pytest.raises(ModelError, match="no logprob for token 3 of candidate 'b'"):
        candidate_scores_from(plan, [{2: -1.0}])
    with pytest.raises(ModelError, match="scored 2 rows, not 1"):
        candidate_scores_from(plan, [{2: -1.0}, {3: -1.0}])
    with pytest.raises(ModelError, match="probability of 0"):
        candidate_scores_from(plan, [{2: -math.inf, 3: -math.inf}])


async def test_plan_read_on_the_hf_model_reproduces_hf_candidate_scores(
    tiny_model_dir: Path,
) -> None:
    """The vllm backend's scoring plan, each row read with one forward of the tiny model,
    gives the hf backend's candidate scores: same prompt tokens, same candidate tokens
    (found by the same seam rule), same sums. This is what the vllm backend computes on a
    GPU, minus the engine."""
    import torch
    from transformers import AutoTokenizer

    from jurist.models._hf_compute import encode_prompts, render_prompt
    from jurist.models._hf_scoring import candidate_ids
    from jurist.models._vllm import tokenizer_facts

    hf = jurist.get_model(f"hf:{tiny_model_dir}")
    try:
        request = req()
        candidates = ("1", "10", "Yes", " No", "Correct")
        expected = await hf.candidate_scores(request, candidates)
        lm = hf._ensure_loaded()  # type: ignore[attr-defined]
        # the tokens as the vllm backend builds them: from the tokenizer alone
        facts = tokenizer_facts(AutoTokenizer.from_pretrained(tiny_model_dir))
        assert facts.has_chat_template and "<|im_start|>" in facts.added_tokens
        text = render_prompt(facts, request.messages)
        assert text == render_prompt(lm, request.messages)
        prompt = encode_prompts(facts, [text])[0]
        tokens = candidate_ids(facts, text, candidates)
        assert any(len(t) > 1 for t in tokens)  # a multi-token candidate is exercised
        plan = plan_scoring(prompt, dict(zip(candidates, tokens, strict=True)))
        rows: list[dict[int, float]] = []
        for row, ids in plan.rows:
            with torch.inference_mode():
                logits = lm.model(input_ids=torch.tensor([list(row)])).logits[0, -1]
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            rows.append({t: float(logprobs[t]) for t in ids})
        got = candidate_scores_from(plan, rows)
        assert got.logprobs.keys() == expected.logprobs.keys()
        for cand in candidates:
            assert got.logprobs[cand] == pytest.approx(expected.logprobs[cand], abs=1e-5)
            assert got.probs[cand] == pytest.approx(expected.probs[cand], abs=1e-5)
        assert got.usage.prompt_tokens == expected.usage.prompt_tokens
    finally:
        await hf.aclose()
