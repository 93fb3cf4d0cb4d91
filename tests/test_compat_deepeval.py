"""jurist inside DeepEval: DeepEval's ``evaluate()`` with a jurist judge as the metric, on
a loopback OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip(
    "deepeval",
    reason="deepeval is not installed (pip install 'jurist[deepeval]'); it is not in the dev "
    "extra: deepeval 4.3.1 needs click<8.4, huggingface_hub 2.x (transformers 5.24) click>=8.4.2",
)

from deepeval import evaluate
from deepeval.evaluate import AsyncConfig, DisplayConfig
from deepeval.test_case import LLMTestCase

import jurist
from jurist.compat.deepeval import JuristMetric
from tests._judge_server import JudgeServer

CASES = [
    LLMTestCase(input="What is the capital of Texas?", actual_output="Austin"),
    LLMTestCase(input="What is the largest city in Texas?", actual_output="Dallas"),
    LLMTestCase(input="Which is the red planet?", actual_output="Mars"),
]


@pytest.fixture(scope="module")
def judge() -> Iterator[jurist.LLMJudge]:
    with JudgeServer() as server:
        model = jurist.get_model("openai:judge", base_url=server.url, api_key="x")
        yield jurist.LLMJudge(model, template="likert")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # DeepEval writes its run files under ./.deepeval
    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    monkeypatch.setenv("DEEPEVAL_DISABLE_DOTENV", "1")


def test_evaluate_end_to_end(judge: jurist.LLMJudge) -> None:
    metric = JuristMetric(judge, threshold=0.5)
    result = evaluate(
        test_cases=CASES,
        metrics=[metric],
        async_config=AsyncConfig(run_async=True),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
    )
    by_input = {t.input: t.metrics_data[0] for t in result.test_results}
    ok = by_input["What is the capital of Texas?"]
    assert (ok.score, ok.success, ok.error) == (1.0, True, None)
    low = by_input["What is the largest city in Texas?"]
    assert (low.score, low.success) == (0.25, False)
    bad = by_input["Which is the red planet?"]
    # unreadable: DeepEval's errored metric (no score, not a success) with jurist's reason
    assert bad.score is None and bad.success is False
    assert bad.error.startswith("parse: ")


def test_measure_and_a_measure(judge: jurist.LLMJudge) -> None:
    metric = JuristMetric(judge, threshold=0.9, async_mode=False)
    assert metric.measure(CASES[0]) == 1.0
    assert metric.is_successful() and metric.reason == "verdict: 5.0"
    assert metric.measure(CASES[2]) is None
    assert not metric.is_successful() and metric.error.startswith("parse: ")
