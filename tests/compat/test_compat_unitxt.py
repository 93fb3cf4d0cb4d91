"""jurist inside unitxt 1.26: the seed tutorial's flow (dataset -> inference -> judge
metric) through unitxt's own ``create_dataset`` / ``evaluate`` on a loopback server."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("unitxt", reason="unitxt is not installed (pip install 'jurist[unitxt]')")

from unitxt.api import create_dataset, evaluate
from unitxt.catalog import add_to_catalog

import jurist
from jurist.compat.unitxt import JuristInferenceEngine, JuristJudgeMetric, judge_metric
from tests._judge_server import JudgeServer

DATA = [
    {"question": "What is the capital of Texas?"},
    {"question": "What is the largest city in Texas?"},
    {"question": "Which is the red planet?"},
]


@pytest.fixture(scope="module")
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as s:
        yield s


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "x")  # catalog entries never hold secrets


def _judge(server: JudgeServer) -> jurist.LLMJudge:
    return jurist.LLMJudge(jurist.get_model("openai:judge", base_url=server.url), template="likert")


def test_tutorial_flow_end_to_end(server: JudgeServer) -> None:
    metric = judge_metric(_judge(server), context_fields={"prompt": "question"})
    dataset = create_dataset(
        task="tasks.qa.open",
        test_set=DATA,
        metrics=[metric],
        split="test",
        data_classification_policy=["public"],  # remote models take public data only
    )
    engine = JuristInferenceEngine(
        model="openai:sut", model_options={"base_url": server.url}, max_retries=1
    )
    predictions = engine(dataset)
    assert list(predictions) == ["Austin", "Dallas", "Mars"]
    results = evaluate(predictions=predictions, data=dataset)
    scores = [s["jurist_judge"] for s in results.instance_scores]
    assert scores[:2] == [1.0, 0.25]
    # an unreadable verdict is unitxt's missing value (NaN, skipped by the mean), with why
    assert math.isnan(scores[2])
    assert results.instance_scores[2]["jurist_judge_error"].startswith("parse: ")
    assert results.instance_scores[0]["jurist_judge_error"] == ""
    assert results.global_scores["score"] == pytest.approx(0.625, abs=0.01)
    assert results.global_scores["score_name"] == "jurist_judge"


def test_metric_in_a_unitxt_catalog_used_by_name(server: JudgeServer, tmp_path: Path) -> None:
    metric = judge_metric(_judge(server), context_fields={"prompt": "question"})
    add_to_catalog(metric, "metrics.jurist.likert_local", catalog_path=str(tmp_path))
    stored = (tmp_path / "metrics" / "jurist" / "likert_local.json").read_text()
    assert '"__type__": "jurist_judge_metric"' in stored and "api_key" not in stored
    from unitxt.artifact import fetch_artifact
    from unitxt.register import register_local_catalog, unregister_local_catalog

    register_local_catalog(str(tmp_path))
    try:
        loaded, _ = fetch_artifact("metrics.jurist.likert_local")
        assert isinstance(loaded, JuristJudgeMetric)
        dataset = create_dataset(
            task="tasks.qa.open",
            test_set=DATA[:1],
            metrics=["metrics.jurist.likert_local"],
            split="test",
            data_classification_policy=["public"],
        )
        results = evaluate(predictions=["Austin"], data=dataset)
    finally:
        unregister_local_catalog(str(tmp_path))
    assert results.instance_scores[0]["jurist_judge"] == 1.0


def test_compute_takes_unitxt_argument_order(server: JudgeServer) -> None:
    """unitxt calls compute(references, predictions, task_data): the prediction is judged."""
    likert = JuristJudgeMetric(judge=_judge(server), context_fields={"prompt": "question"})
    out = likert.compute(
        references=[["Dallas"]], predictions=["Austin"], task_data=[{"question": "q"}]
    )
    assert out[0]["jurist_judge"] == 1.0  # the prediction (Austin) was judged, not the reference


def test_non_text_source_is_a_data_error() -> None:
    engine = JuristInferenceEngine(model="mock:m", model_options={"outputs": ["x"]})
    with pytest.raises(jurist.errors.DataError, match="instance 0: unitxt 'source'"):
        engine._infer([{"source": 3}])


def test_engine_uses_jurists_cache(server: JudgeServer, tmp_path: Path) -> None:
    dataset = create_dataset(
        task="tasks.qa.open",
        test_set=DATA[:1],
        metrics=["metrics.rouge"],
        split="test",
        data_classification_policy=["public"],
    )
    cache = tmp_path / "cache.sqlite"
    engine = JuristInferenceEngine(
        model="openai:sut", model_options={"base_url": server.url}, cache=str(cache)
    )
    before = server.requests.get("sut", 0)
    assert list(engine(dataset)) == ["Austin"]
    again = JuristInferenceEngine(
        model="openai:sut", model_options={"base_url": server.url}, cache=str(cache)
    )
    assert list(again(dataset)) == ["Austin"]
    assert server.requests.get("sut", 0) == before + 1  # the second run was a cache hit


# -- issue 31, item 16 ------------------------------------------------------------------------


def test_context_fields_in_unitxts_list_form(server: JudgeServer) -> None:
    """``context_fields=["question"]`` (unitxt's form): not a judge field, so it is the
    judge's prompt, rendered as unitxt's judges render context ("question: ...")."""
    metric = JuristJudgeMetric(judge=_judge(server), context_fields=["question"])
    dataset = create_dataset(
        task="tasks.qa.open",
        test_set=DATA[:2],
        metrics=[metric],
        split="test",
        data_classification_policy=["public"],
    )
    results = evaluate(predictions=["Austin", "Dallas"], data=dataset)
    assert [s["jurist_judge"] for s in results.instance_scores] == [1.0, 0.25]
    item = metric._judge_metric().items(
        ["Austin"], task_data=[{"question": "Capital?", "__jurist_unitxt_context__": "x"}]
    )[0]
    assert item["prompt"] == "x"  # the rendered context column fills the prompt
    one = JuristJudgeMetric(judge=_judge(server), context_fields="question")
    out = one.compute(references=[[]], predictions=["Austin"], task_data=[{"question": "q"}])
    assert out[0]["jurist_judge"] == 1.0


def test_remote_judge_refuses_proprietary_data_as_unitxts_openai_engine(
    server: JudgeServer,
) -> None:
    """unitxt's loader marks dict data ``proprietary`` by default; unitxt's own
    OpenAiInferenceEngine takes ``public`` only, and so do a remote jurist judge and
    engine: unitxt's check refuses, before any call reaches the server."""
    from unitxt.error_utils import UnitxtError
    from unitxt.inference import OpenAiInferenceEngine

    assert OpenAiInferenceEngine.data_classification_policy == ["public"]
    metric = JuristJudgeMetric(judge=_judge(server), context_fields={"prompt": "question"})
    dataset = create_dataset(
        task="tasks.qa.open", test_set=DATA[:1], metrics=[metric], split="test"
    )
    assert dataset[0]["data_classification_policy"] == ["proprietary"]
    before = dict(server.requests)
    policy = (
        r"artifact 'JuristJudgeMetric' is only configured to support the data with "
        r"classification '\['public'\]'"
    )
    with pytest.raises(UnitxtError, match=policy):
        evaluate(predictions=["Austin"], data=dataset)
    engine = JuristInferenceEngine(model="openai:sut", model_options={"base_url": server.url})
    with pytest.raises(UnitxtError, match="'JuristInferenceEngine' is only configured"):
        engine(dataset)
    assert server.requests == before  # nothing was sent
    # the user's own policy is unitxt's way to allow it
    allowed = JuristJudgeMetric(
        judge=_judge(server),
        context_fields={"prompt": "question"},
        data_classification_policy=["public", "proprietary"],
    )
    dataset = create_dataset(
        task="tasks.qa.open", test_set=DATA[:1], metrics=[allowed], split="test"
    )
    assert evaluate(predictions=["Austin"], data=dataset).instance_scores[0]["jurist_judge"] == 1.0
    # a local judge has no policy (as unitxt's HF engines): proprietary data is judged
    local = jurist.LLMJudge(jurist.get_model("mock:j", outputs=["5"]), template="likert")
    dataset = create_dataset(
        task="tasks.qa.open",
        test_set=DATA[:1],
        metrics=[JuristJudgeMetric(judge=local, context_fields={"prompt": "question"})],
        split="test",
    )
    assert evaluate(predictions=["x"], data=dataset).instance_scores[0]["jurist_judge"] == 1.0


def test_jurists_own_metric_in_metrics_is_a_short_clear_error() -> None:
    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=["5"]), template="likert")
    with pytest.raises(jurist.errors.ConfigError, match="JuristJudgeMetric") as err:
        create_dataset(
            task="tasks.qa.open",
            test_set=DATA[:1],
            metrics=[jurist.JudgeMetric(judge, context_fields={"prompt": "question"})],
            split="test",
        )
    assert len(str(err.value)) < 400
    import copy

    plain = jurist.JudgeMetric(judge)  # copied outside unitxt: an ordinary shallow copy
    assert copy.copy(plain).judge is plain.judge
