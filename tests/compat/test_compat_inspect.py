"""jurist inside Inspect: Inspect's ``eval()`` on a small task, the jurist judge on a
loopback OpenAI-compatible server. The model under test is Inspect's own ``mockllm``:
Inspect's OpenAI provider needs openai>=3.4, which litellm 1.103.7 (a dev pin) forbids."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip(
    "inspect_ai", reason="inspect_ai is not installed (pip install 'jurist[inspect]')"
)

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage
from inspect_ai.model import get_model as inspect_model
from inspect_ai.solver import generate

import jurist
from jurist.compat.inspect import jurist_scorer
from tests._judge_server import JudgeServer

SAMPLES = [
    Sample(input="What is the capital of Texas?", target="Austin"),
    Sample(input="What is the largest city in Texas?", target="Dallas"),
    Sample(input="Which is the red planet?", target="Mars"),
]


@pytest.fixture(scope="module")
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as s:
        yield s


def _output(text: str) -> ModelOutput:
    out = ModelOutput.from_content("mockllm/model", text)
    # with usage given, mockllm does not count tokens with tiktoken (a download)
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return out


def _run(server: JudgeServer, judge: object, tmp_path: Path, **task: object) -> object:
    outputs = [_output(a) for a in ("Austin", "Dallas", "Mars")]
    epochs = int(task.get("epochs", 1))  # type: ignore[call-overload]
    model = inspect_model("mockllm/model", custom_outputs=outputs * epochs)
    t = Task(dataset=SAMPLES, solver=generate(), scorer=jurist_scorer(judge), **task)
    [log] = eval(t, model=model, log_dir=str(tmp_path), display="none", max_samples=1)
    assert log.status == "success", log.error
    return log


def test_eval_with_a_jurist_judge(server: JudgeServer, tmp_path: Path) -> None:
    judge = jurist.LLMJudge(
        jurist.get_model("openai:judge", base_url=server.url, api_key="x"), template="likert"
    )
    log = _run(server, judge, tmp_path)
    scores = [s.scores["jurist"] for s in log.samples]
    assert [s.value for s in scores[:2]] == [1.0, 0.25]
    assert scores[0].metadata["verdict"] == 5.0 and scores[0].metadata["error"] is None
    # unreadable: Inspect's unscored value (NaN) with jurist's reason, skipped by mean()
    assert math.isnan(scores[2].value)
    assert str(scores[2].reason).startswith("parse: ")
    metrics = log.results.scores[0].metrics
    assert metrics["mean"].value == pytest.approx(0.625)


def test_epochs_and_reducers(server: JudgeServer, tmp_path: Path) -> None:
    panel = jurist.Panel(
        [
            jurist.LLMJudge(
                jurist.get_model("openai:judge", base_url=server.url, api_key="x"),
                template="likert",
            )
        ]
        * 2,
        aggregation="mean",
    )
    log = _run(server, panel, tmp_path, epochs=2)
    sample = log.samples[0]
    assert sample.epoch in (1, 2)
    assert log.results.scores[0].metrics["mean"].value == pytest.approx(0.625)
    assert log.eval.config.epochs == 2


def test_pairwise_judge_compares_output_with_target(tmp_path: Path) -> None:
    def prefers_longer(request: object) -> str:
        text = request.messages[-1].content  # type: ignore[attr-defined]
        a = text.split("<answer_a>")[1].split("</answer_a>")[0]
        b = text.split("<answer_b>")[1].split("</answer_b>")[0]
        return "[[A]]" if len(a) > len(b) else "[[B]]" if len(b) > len(a) else "[[C]]"

    pair = jurist.PairwiseJudge(jurist.get_model("mock:p", outputs=prefers_longer))
    task = Task(
        dataset=[Sample(input="q", target="a short one")],
        solver=generate(),
        scorer=jurist_scorer(pair),
    )
    model = inspect_model("mockllm/model", custom_outputs=[_output("a much longer answer")])
    [log] = eval(task, model=model, log_dir=str(tmp_path), display="none")
    score = log.samples[0].scores["jurist"]
    assert score.value == 1.0 and score.metadata["verdict"] == "A"


def test_rubric_judge_as_scorer(tmp_path: Path) -> None:
    rubric = jurist.Rubric.from_dict([{"name": "ok", "requirement": "Answers the question"}])
    grader = jurist.CriterionGrader(
        judges=[jurist.get_model("mock:j", outputs=['{"c1": {"verdict": "MET"}}'], cycle=True)]
    )
    task = Task(
        dataset=[Sample(input="What is the capital of Texas?")],
        solver=generate(),
        scorer=jurist_scorer(grader.for_rubric(rubric)),
    )
    model = inspect_model("mockllm/model", custom_outputs=[_output("Austin")])
    [log] = eval(task, model=model, log_dir=str(tmp_path), display="none")
    score = log.samples[0].scores["jurist"]
    assert score.value == 1.0 and score.metadata["error"] is None


def test_named_scorers_and_the_judges_calls_in_inspects_usage_and_events(
    server: JudgeServer, tmp_path: Path
) -> None:
    """Issue 31, item 19: ``name=`` names each scorer, and the judge's calls are Inspect
    model calls: a ModelEvent each in the sample's transcript, their tokens in the sample's
    and the eval's model usage, as for Inspect's own model_graded_qa."""
    from inspect_ai.log import read_eval_log

    judge = jurist.LLMJudge(
        jurist.get_model("openai:judge", base_url=server.url, api_key="x"), template="likert"
    )
    task = Task(
        dataset=SAMPLES,
        solver=generate(),
        scorer=[jurist_scorer(judge, name="likert"), jurist_scorer(judge, name="likert_b")],
    )
    model = inspect_model(
        "mockllm/model", custom_outputs=[_output(a) for a in ("Austin", "Dallas", "Mars")]
    )
    before = server.requests.get("judge", 0)
    [log] = eval(task, model=model, log_dir=str(tmp_path), display="none", max_samples=1)
    assert log.status == "success", log.error
    log = read_eval_log(log.location)
    assert log.samples is not None
    sent = server.requests.get("judge", 0) - before
    assert sent == 6  # 3 samples x 2 scorers, no re-asks
    calls = []
    for sample in log.samples:
        assert set(sample.scores or {}) == {"likert", "likert_b"}
        events = [
            e for e in sample.events if e.event == "model" and e.model == "jurist/openai:judge"
        ]
        assert len(events) == 2  # one judge call per scorer
        calls += events
        assert sample.model_usage["jurist/openai:judge"].input_tokens == sum(
            e.output.usage.input_tokens for e in events
        )
    assert [e.output.completion for e in calls[:2]] == ["5", "5"]
    assert "Austin" in calls[0].input[-1].text  # the judge prompt, as sent
    assert all(e.error is None for e in calls)
    judge_usage = log.stats.model_usage["jurist/openai:judge"]
    assert judge_usage.input_tokens == sum(e.output.usage.input_tokens for e in calls) > 0
    assert judge_usage.output_tokens == sum(e.output.usage.output_tokens for e in calls) > 0
    assert "mockllm/model" in log.stats.model_usage  # the solver's model, as before
    first = log.samples[0].scores
    assert first["likert"].value == first["likert_b"].value == 1.0
    assert math.isnan(log.samples[2].scores["likert"].value)
