"""evaluate_model: dataset -> inference (a real local model) -> judge metric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import jurist
from jurist.errors import APITimeoutError, DataError
from jurist.pipeline import JudgeMetric, evaluate_model
from jurist.types import Request
from tests._llama_fixtures import llama_server, tiny_gguf  # noqa: F401

DATA = [
    {"question": "What is the capital of Texas?", "gold": "Austin"},
    {"question": "What color is the sky on a clear day?", "gold": "Blue"},
    {"question": "How many legs does a spider have?", "gold": "Eight"},
]


def _echo_judge(request: Request) -> str:
    # a mock judge that reads the item it was sent: rates 5 if the item holds the question
    return "5" if "<question>" in request.messages[-1].content else "1"


def test_pipeline_with_the_tiny_hf_model_and_a_mock_judge(tiny_model_dir: Path) -> None:
    judge_model = jurist.get_model("mock:judge", outputs=_echo_judge)
    judge = jurist.LLMJudge(judge_model, template="likert")
    res = evaluate_model(DATA, f"hf:{tiny_model_dir}", judge, prompt_field="question", max_tokens=6)
    assert res.model == f"hf:{tiny_model_dir.as_posix()}" or res.model.startswith("hf:")
    assert len(res.predictions) == 3
    assert all(isinstance(p, str) for p in res.predictions)
    assert all(g.error is None and g.usage.completion_tokens > 0 for g in res.generations)
    # the judge saw each question and the tiny model's own answer
    for gen, inst, row in zip(res.generations, res.instances, DATA, strict=True):
        assert gen.prompt == row["question"]
        assert inst.prediction == gen.prediction
        assert row["question"] in (inst.judge_input or "")
    assert res.scores == [1.0, 1.0, 1.0]
    g = res.global_scores
    assert (g.n, g.n_scored, g.n_failed, g.mean) == (3, 3, 0, 1.0)
    assert judge_model.calls == 3  # type: ignore[attr-defined]
    assert res.inference_usage.completion_tokens > 0
    records = res.to_records(DATA)
    assert records[0]["gold"] == "Austin" and records[0]["prediction"] == res.predictions[0]


def test_prompt_template_system_prompt_and_catalog_judge(tmp_path: Path) -> None:
    under_test = jurist.get_model("mock:model", outputs=["Austin.", "Blue.", "Eight."])
    entry = tmp_path / "judges" / "mock" / "ref.yaml"
    entry.parent.mkdir(parents=True)
    entry.write_text(
        "kind: judge\nmodel: 'mock:j'\nmodel_options: {outputs: ['[[9]]', '[[6]]', '[[3]]']}\n"
        "template: mt_bench_reference\n"
    )
    metric = JudgeMetric(
        "judges.mock.ref",
        reference_field="gold",
        context_fields={"prompt": "question"},
        catalog_root=tmp_path,
    )
    res = evaluate_model(
        DATA,
        under_test,
        metric,
        prompt_template="Answer in one word: {question}",
        system_prompt="Be brief.",
    )
    sent = under_test.requests  # type: ignore[attr-defined]
    assert sent[0].messages[0].content == "Be brief."
    assert sent[0].messages[1].content == "Answer in one word: What is the capital of Texas?"
    assert res.generations[0].prompt.startswith("Answer in one word:")
    assert res.scores == [0.9, 0.6, 0.3]
    assert res.global_scores.mean == pytest.approx(0.6)
    assert res.instances[0].reference == "Austin"


def test_failed_generations_are_recorded_not_judged() -> None:
    under_test = jurist.get_model(
        "mock:model", outputs=["Austin.", APITimeoutError("no answer in 5 s"), "Eight."]
    )
    judge_model = jurist.get_model("mock:judge", outputs=["5", "3"])
    judge = jurist.LLMJudge(judge_model, template="likert")
    res = evaluate_model(DATA, under_test, judge, prompt_field="question", concurrency=1)
    assert res.predictions == ["Austin.", None, "Eight."]
    assert res.generations[1].error == "timeout: inference: no answer in 5 s"
    assert res.scores == [1.0, None, 0.5]
    assert res.instances[1].error == "timeout: inference: no answer in 5 s"
    g = res.global_scores
    assert (g.n, g.n_scored, g.n_failed, g.mean, g.failures) == (3, 2, 1, 0.75, {"timeout": 1})
    assert judge_model.calls == 2  # type: ignore[attr-defined]


def test_missing_fields_stop_before_any_call(tmp_path: Path) -> None:
    under_test = jurist.get_model("mock:model", outputs=["x"], cycle=True)
    judge_model = jurist.get_model("mock:judge", outputs=["5"], cycle=True)
    judge = jurist.LLMJudge(judge_model, template="likert")
    data = [{"question": "q1"}, {"query": "q2"}]
    with pytest.raises(DataError) as e:
        evaluate_model(data, under_test, judge, prompt_field="question")
    assert "instance 1: the prompt field 'question' is missing" in str(e.value)
    assert "the instance has fields ['query']" in str(e.value)
    with pytest.raises(DataError, match="the prompt template needs field 'topic'"):
        evaluate_model(DATA, under_test, judge, prompt_template="Talk about {topic}")
    ref_judge = jurist.LLMJudge(judge_model, template="mt_bench_reference")
    with pytest.raises(DataError, match="needs field 'reference'"):
        evaluate_model(DATA, under_test, ref_judge, prompt_field="question")
    assert under_test.calls == 0 and judge_model.calls == 0  # type: ignore[attr-defined]
    # a file names its own problems
    bad = tmp_path / "d.jsonl"
    bad.write_text('{"question": "q"}\nnot json\n')
    with pytest.raises(DataError, match=r"d.jsonl:2: not valid JSON"):
        evaluate_model(bad, under_test, judge, prompt_field="question")


def test_dataset_from_a_file_and_a_dataframe(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in DATA))
    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=["4"], cycle=True), "likert")
    model = jurist.get_model("mock:m", outputs=["ok"], cycle=True)
    assert evaluate_model(path, model, judge, prompt_field="question").scores == [0.75] * 3
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(DATA)
    assert evaluate_model(frame, model, judge, prompt_field="question").scores == [0.75] * 3


def test_hf_model_under_test_judged_on_a_llama_server(
    tiny_model_dir: Path,
    llama_server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    # two real backends: transformers in process answers, llama.cpp's server judges
    entry = tmp_path / "judges" / "llama" / "tiny.yaml"
    entry.parent.mkdir(parents=True)
    entry.write_text(
        "kind: judge\nmodel: 'openai:tiny'\n"
        f"model_options: {{base_url: '{llama_server}', api_key: x, json_mode: json_object}}\n"
        "template: likert\nmax_tokens: 4\n"
    )
    metric = JudgeMetric("judges.llama.tiny", catalog_root=tmp_path)
    metric.context["prompt"] = "question"
    res = evaluate_model(
        DATA[:2], f"hf:{tiny_model_dir}", metric, prompt_field="question", max_tokens=4
    )
    assert all(isinstance(p, str) for p in res.predictions)
    # a random tiny judge rarely writes a valid rating: each instance is scored or failed
    # with a parse error, never an API error, and failures are never counted as 0
    for inst in res.instances:
        assert inst.raw_output is not None
        assert inst.score is not None or (inst.error or "").startswith("parse: ")
    g = res.global_scores
    assert g.n_scored + g.n_failed == 2
    assert set(g.failures) <= {"parse"}
