"""OpenAI graders, unchanged: the examples of OpenAI's graders guide, on the guide's own
sample items, as jurist judges and as a TRL reward function (model graders answered by a
scripted loopback server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jurist.compat.openai_graders import grader_reward, load_grader, load_graders
from jurist.errors import ConfigError
from jurist.models import get_model
from tests._chat_server import ChatServer
from tests._cli_run import run as cli
from tests._cli_run import write

# -- the guide's examples ---------------------------------------------------------------

SCORE_MODEL = {  # the guide's "score model grader" example, as published
    "type": "score_model",
    "name": "my_score_model",
    "input": [
        {
            "role": "system",
            "content": "You are an expert grader. If the reference and model answer are exact "
            "matches, output a score of 1. If they are somewhat similar in meaning, output a "
            "score in 0.5. Otherwise, give a score of 0.",
        },
        {
            "role": "user",
            "content": "Reference: {{ item.reference_answer }}. "
            "Model answer: {{ sample.output_text }}",
        },
    ],
    "pass_threshold": 0.5,
    "model": "o4-mini-2025-04-16",
    "range": [0, 1],
    "sampling_params": {"max_completions_tokens": 32768, "top_p": 1, "reasoning_effort": "medium"},
}

NAME_EMAIL = {  # the guide's multigrader example
    "type": "multi",
    "graders": {
        "name": {
            "name": "name_grader",
            "type": "text_similarity",
            "input": "{{sample.output_json.name}}",
            "reference": "{{item.name}}",
            "evaluation_metric": "fuzzy_match",
            "pass_threshold": 0.9,
        },
        "email": {
            "name": "email_grader",
            "type": "string_check",
            "input": "{{sample.output_json.email}}",
            "reference": "{{item.email}}",
            "operation": "eq",
        },
    },
    "calculate_output": "(name + email) / 2",
}

TOOL_CALL = {  # the guide's tool-call grading example
    "type": "multi",
    "graders": {
        "function_name": {
            "name": "function_name",
            "type": "string_check",
            "input": "get_acceptors",
            "reference": "{{sample.output_tools[0].function.name}}",
            "operation": "eq",
        },
        "arguments": {
            "name": "arguments",
            "type": "string_check",
            "input": '{"smiles": "{{item.smiles}}"}',
            "reference": "{{sample.output_tools[0].function.arguments}}",
            "operation": "eq",
        },
    },
    "calculate_output": "0.5 * function_name + 0.5 * arguments",
}


def _check(op: str) -> dict[str, Any]:
    return {
        "type": "string_check",
        "name": op,
        "operation": op,
        "input": "{{ sample.output_text }}",
        "reference": "{{ item.reference_answer }}",
    }


@pytest.mark.parametrize(
    ("op", "sample", "expected"),
    [
        ("eq", "Paris", 1.0),
        ("eq", "paris", 0.0),  # case-sensitive
        ("ne", "paris", 1.0),
        ("ne", "Paris", 0.0),
        ("like", "The capital is Paris.", 1.0),
        ("like", "The capital is paris.", 0.0),
        ("ilike", "THE CAPITAL IS PARIS.", 1.0),
        ("ilike", "Lyon", 0.0),
    ],
)
def test_string_check_operations_as_the_guide_defines_them(
    op: str, sample: str, expected: float
) -> None:
    judge = load_grader(_check(op))
    [j] = judge.judge_sync([{"response": sample, "reference_answer": "Paris"}])
    assert j.score == expected and j.verdict == expected and j.error is None


def test_text_similarity_fuzzy_match_on_the_guides_sample_is_rapidfuzz_ratio() -> None:
    fuzz = pytest.importorskip("rapidfuzz.fuzz")
    grader = {
        "type": "text_similarity",
        "name": "fuzzy",
        "input": "{{ sample.output_text }}",
        "reference": "{{ item.reference_answer }}",
        "evaluation_metric": "fuzzy_match",
        "pass_threshold": 0.7,
    }
    item = {"reference_answer": "fuzzy wuzzy had no hair", "response": "fuzzy wuzzy was a bear"}
    [j] = load_grader(grader).judge_sync([item])
    expected = fuzz.ratio("fuzzy wuzzy was a bear", "fuzzy wuzzy had no hair") / 100
    assert j.score == pytest.approx(expected)
    assert "pass_threshold 0.7: passed" in (j.explanation or "")


def _score_server(result: float) -> ChatServer:
    def answer(body: dict[str, Any]) -> str:
        return json.dumps(
            {"steps": [{"description": "compare", "conclusion": "close"}], "result": result}
        )

    return ChatServer(answer)


def test_score_model_example_on_the_guides_item_against_a_scripted_server() -> None:
    with _score_server(0.5) as server:
        model = get_model("openai:o4-mini-2025-04-16", base_url=server.base_url, api_key="x")
        judge = load_grader(SCORE_MODEL, model=model)
        [j] = judge.judge_sync([{"reference_answer": 1.0, "response": "0.9"}])
        body = server.bodies[0]
    assert j.score == 0.5 and j.verdict == 0.5 and j.error is None
    assert "pass_threshold 0.5: passed" in (j.explanation or "")
    # the messages as templated, the sampling parameters sent
    assert body["messages"][1]["content"] == "Reference: 1.0. Model answer: 0.9"
    assert body["messages"][0]["role"] == "system"
    assert body["top_p"] == 1
    assert j.usage.calls == 1


def test_score_model_clips_to_range_and_rescales_the_score() -> None:
    grader = {**SCORE_MODEL, "range": [0, 10], "pass_threshold": 7}
    with _score_server(12.0) as server:
        model = get_model("openai:o4-mini", base_url=server.base_url, api_key="x")
        [j] = load_grader(grader, model=model).judge_sync(
            [{"reference_answer": 1, "response": "1"}]
        )
    assert j.verdict == 10.0 and j.score == 1.0


def test_score_model_without_a_number_is_a_parse_failure_not_a_made_up_zero() -> None:
    with ChatServer(lambda body: "I think it is fine") as server:
        model = get_model("openai:o4-mini", base_url=server.base_url, api_key="x")
        judge = load_grader(SCORE_MODEL, model=model)
        [j] = judge.judge_sync([{"reference_answer": 1, "response": "1"}])
        reward = grader_reward(SCORE_MODEL, model=model)
        assert reward(completions=["1"], reference_answer=[1]) == [0.0]  # OpenAI's 0
    assert j.score is None and (j.error or "").startswith("parse:")


def test_label_model_passing_labels() -> None:
    grader = {
        "type": "label_model",
        "name": "sentiment",
        "model": "gpt-4o-mini-2024-07-18",
        "input": [
            {"role": "developer", "content": "Label the sentiment of: {{ sample.output_text }}"}
        ],
        "labels": ["positive", "neutral", "negative"],
        "passing_labels": ["positive", "neutral"],
    }
    labels = iter(["positive", "negative"])
    with ChatServer(lambda body: json.dumps({"steps": [], "result": next(labels)})) as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.base_url, api_key="x")
        out = load_grader(grader, model=model).judge_sync(
            [{"response": "great"}, {"response": "awful"}]
        )
    assert [(j.verdict, j.score) for j in out] == [("positive", 1.0), ("negative", 0.0)]


def test_multi_name_email_example_scores_as_the_guide_says() -> None:
    judge = load_grader(NAME_EMAIL)
    rows = [  # email right: 0.5 to 1; email wrong: 0 to 0.5 (the guide's words)
        {
            "name": "John Doe",
            "email": "john.doe@gmail.com",
            "response": json.dumps({"name": "John Doe", "email": "john.doe@gmail.com"}),
        },
        {
            "name": "John Doe",
            "email": "john.doe@gmail.com",
            "response": json.dumps({"name": "Jon Doe", "email": "john.doe@gmail.com"}),
        },
        {
            "name": "John Doe",
            "email": "john.doe@gmail.com",
            "response": json.dumps({"name": "John Doe", "email": "jon.doe@gmail.com"}),
        },
    ]
    exact, typo, wrong_email = judge.judge_sync(rows)
    assert exact.score == 1.0
    assert 0.5 < typo.score < 1.0  # type: ignore[operator]
    assert wrong_email.score == 0.5
    assert "name=" in (typo.explanation or "") and "(name + email) / 2" in (typo.explanation or "")


def test_multi_tool_call_example() -> None:
    judge = load_grader(TOOL_CALL)
    right = {"function": {"name": "get_acceptors", "arguments": '{"smiles": "CCO"}'}}
    wrong = {"function": {"name": "get_acceptors", "arguments": '{"smiles": "CC"}'}}
    out = judge.judge_sync(
        [
            {"smiles": "CCO", "response": {"output_text": "", "output_tools": [right]}},
            {"smiles": "CCO", "response": {"output_text": "", "output_tools": [wrong]}},
            {"smiles": "CCO", "response": {"output_text": "", "output_tools": []}},
        ]
    )
    assert [j.score for j in out[:2]] == [1.0, 0.5]
    assert out[2].score is None and "function_name" in (out[2].error or "")


def test_guide_examples_as_a_trl_reward_function() -> None:
    reward = grader_reward(NAME_EMAIL, name="name_email")
    rewards = reward(
        prompts=["Who?", "Who?"],
        completions=[
            [{"role": "assistant", "content": json.dumps({"name": "John Doe", "email": "j@x.io"})}],
            [{"role": "assistant", "content": json.dumps({"name": "John Doe", "email": "k@x.io"})}],
        ],
        name=["John Doe", "John Doe"],
        email=["j@x.io", "j@x.io"],
        completion_ids=[[1], [2]],
        trainer_state=None,
    )
    assert rewards == [1.0, 0.5] and reward.__name__ == "name_email"
    with _score_server(0.5) as server:
        model = get_model("openai:o4-mini", base_url=server.base_url, api_key="x")
        score_reward = grader_reward(SCORE_MODEL, model=model)
        assert score_reward(completions=["0.9"], reference_answer=[1.0]) == [0.5]


def test_a_registered_grader_reward_is_found_by_name() -> None:
    from jurist.rewards import get_reward_from_name

    grader_reward(_check("eq"), name="capital_eq_test", register=True)
    fn = get_reward_from_name("capital_eq_test")
    assert fn(completions=["Paris", "Rome"], reference_answer=["Paris", "Paris"]) == [1.0, 0.0]


# -- python graders: opt-in, bounded --------------------------------------------------------

PY = {  # the guide's python grader example
    "type": "python",
    "name": "py",
    "source": "from rapidfuzz import fuzz, utils\n\ndef grade(sample, item) -> float:\n"
    "    output_text = sample['output_text']\n    reference_answer = item['reference_answer']\n"
    "    return fuzz.WRatio(output_text, reference_answer, "
    "processor=utils.default_process) / 100.0\n",
}


def test_python_grader_is_refused_without_opt_in() -> None:
    with pytest.raises(ConfigError, match="allow_python=True"):
        load_grader(PY)


def test_python_grader_runs_the_guides_example_in_a_child_process() -> None:
    fuzz = pytest.importorskip("rapidfuzz.fuzz")
    utils = pytest.importorskip("rapidfuzz.utils")
    judge = load_grader(PY, allow_python=True)
    [j] = judge.judge_sync(
        [{"reference_answer": "fuzzy wuzzy had no hair", "response": "fuzzy wuzzy was a bear"}]
    )
    expected = (
        fuzz.WRatio(
            "fuzzy wuzzy was a bear", "fuzzy wuzzy had no hair", processor=utils.default_process
        )
        / 100
    )
    assert j.score == pytest.approx(expected)


def test_python_grader_bounds_time_and_memory() -> None:
    from jurist.compat.openai_graders import PythonLimits

    slow = {
        "type": "python",
        "name": "slow",
        "source": "def grade(s, i):\n    while True:\n        pass\n",
    }
    hog = {
        "type": "python",
        "name": "hog",
        "source": "def grade(s, i):\n    x = bytearray(2 * 1024**3)\n    return 1.0\n",
    }
    bad = {"type": "python", "name": "bad", "source": "def grade(s, i):\n    return 'yes'\n"}
    limits = PythonLimits(seconds=2, memory_bytes=512 * 1024**2)
    [t] = load_grader(slow, allow_python=True, python_limits=limits).judge_sync([{"response": "x"}])
    [m] = load_grader(hog, allow_python=True, python_limits=limits).judge_sync([{"response": "x"}])
    [b] = load_grader(bad, allow_python=True, python_limits=limits).judge_sync([{"response": "x"}])
    assert t.score is None and ("2 s" in (t.error or "") or "exited" in (t.error or ""))
    assert m.score is None and "MemoryError" in (m.error or "")
    assert b.score is None and "ValueError" in (b.error or "")


# -- loading --------------------------------------------------------------------------------


def test_an_evals_testing_criteria_load_as_a_panel(tmp_path: Path) -> None:
    path = tmp_path / "eval.json"
    path.write_text(json.dumps({"name": "e", "testing_criteria": [_check("eq"), _check("ilike")]}))
    assert [j.name for j in load_graders(path)] == ["eq", "ilike"]
    panel = load_grader(path)
    [j] = panel.judge_sync([{"response": "PARIS", "reference_answer": "Paris"}])
    assert j.score == 0.5


def test_bad_grader_files_name_the_grader_and_field(tmp_path: Path) -> None:
    bad = {**NAME_EMAIL, "calculate_output": "0.5 * name +  0.5 * email)"}
    with pytest.raises(ConfigError, match=r"unexpected '\)' at column"):
        load_grader(bad)
    with pytest.raises(ConfigError, match="unknown name 'score'"):
        load_grader({**NAME_EMAIL, "calculate_output": "score"})
    path = tmp_path / "g.json"
    path.write_text(json.dumps({**_check("eq"), "operation": "neq"}))
    with pytest.raises(ConfigError, match=r"g.json: grader 'eq' \(string_check\): operation"):
        load_grader(path)
    nested = {"type": "multi", "graders": {"a": NAME_EMAIL}, "calculate_output": "a"}
    with pytest.raises(ConfigError, match="cannot hold another"):
        load_grader(nested)


def test_cli_judge_with_a_grader_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grader = tmp_path / "grader.json"
    grader.write_text(json.dumps(NAME_EMAIL))
    data = write(
        tmp_path / "data.jsonl",
        [
            {
                "name": "John Doe",
                "email": "j@x.io",
                "answer": json.dumps({"name": "John Doe", "email": "j@x.io"}),
            },
            {
                "name": "John Doe",
                "email": "j@x.io",
                "answer": json.dumps({"name": "John Doe", "email": "x@x.io"}),
            },
        ],
    )
    out = tmp_path / "run"
    code, text = cli(
        [
            "judge",
            str(data),
            "--grader",
            str(grader),
            "--response-field",
            "answer",
            "--out",
            str(out),
        ],
        capsys,
    )
    assert code == 0, text
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["judge_score"] for r in rows] == [1.0, 0.5]
    code, text = cli(["judge", str(data), "--grader", str(grader), "--template", "likert"], capsys)
    assert code == 2 and "--grader names the judge" in text
