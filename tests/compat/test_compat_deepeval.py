"""jurist inside DeepEval: DeepEval's ``evaluate()`` with a jurist judge as the metric, on
a loopback OpenAI-compatible server."""

from __future__ import annotations

import os
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


# -- issue 31, item 17: DeepEval's options, errors and exit ---------------------------------


def test_every_deepeval_metric_option(
    judge: jurist.LLMJudge, capsys: pytest.CaptureFixture[str]
) -> None:
    strict = JuristMetric(judge, strict_mode=True, include_reason=False, verbose_mode=True)
    assert strict.threshold == 1  # DeepEval's strict mode
    assert strict.measure(CASES[1]) == 0.0  # 0.25 is under 1: strict mode scores it 0
    assert strict.reason is None and strict.success is False and strict.is_successful() is False
    assert "Verdict: 2.0" in (strict.verbose_logs or "")
    assert "jurist (likert@openai:judge)" in capsys.readouterr().out  # verbose: printed
    assert strict.measure(CASES[0]) == 1.0 and strict.success is True
    no_threshold = JuristMetric(judge, threshold=None)
    assert no_threshold.measure(CASES[0]) == 1.0
    assert no_threshold.is_successful() is None  # DeepEval's BaseMetric: no verdict
    assert no_threshold.reason == "verdict: 5.0"


def test_missing_actual_output_is_deepevals_error(judge: jurist.LLMJudge) -> None:
    from deepeval.errors import MissingTestCaseParamsError

    metric = JuristMetric(judge)
    with pytest.raises(MissingTestCaseParamsError, match="'actual_output' cannot be None"):
        metric.measure(LLMTestCase(input="Capital of Texas?", actual_output=None))
    assert metric.error is not None  # set by DeepEval's own check, as for its metrics


def test_evaluate_skips_missing_params(judge: jurist.LLMJudge) -> None:
    from deepeval.evaluate import ErrorConfig

    cases = [CASES[0], LLMTestCase(input="Capital of Texas?", actual_output=None)]
    for run_async in (True, False):
        result = evaluate(
            test_cases=cases,
            metrics=[JuristMetric(judge)],
            async_config=AsyncConfig(run_async=run_async),
            error_config=ErrorConfig(skip_on_missing_params=True),
            display_config=DisplayConfig(show_indicator=False, print_results=False),
        )
        by_output = {t.actual_output: t.metrics_data for t in result.test_results}
        assert [m.score for m in by_output["Austin"]] == [1.0]
        assert not by_output[None]  # skipped, not an error that stops evaluate()


def test_no_unclosed_session_at_exit(tmp_path: Path) -> None:
    """DeepEval runs metrics on an event loop it never shuts down: the judge's connections
    are still closed at exit (no "Unclosed client session")."""
    import subprocess
    import sys
    import textwrap

    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(root)!r})
            from deepeval import evaluate
            from deepeval.evaluate import AsyncConfig, DisplayConfig
            from deepeval.test_case import LLMTestCase
            import jurist
            from jurist.compat.deepeval import JuristMetric
            from tests._judge_server import JudgeServer
            with JudgeServer() as server:
                model = jurist.get_model("openai:judge", base_url=server.url, api_key="x")
                judge = jurist.LLMJudge(model, template="likert")
                result = evaluate(
                    test_cases=[LLMTestCase(input="Capital of Texas?", actual_output="Austin")],
                    metrics=[JuristMetric(judge)],
                    async_config=AsyncConfig(run_async=True),
                    display_config=DisplayConfig(show_indicator=False, print_results=False),
                )
            print("score", result.test_results[0].metrics_data[0].score)
            """
        )
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root / "src"), os.environ.get("PYTHONPATH", "")]),
        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
        "DEEPEVAL_DISABLE_DOTENV": "1",
    }
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "score 1.0" in done.stdout
    assert "Unclosed" not in done.stderr, done.stderr[-2000:]
