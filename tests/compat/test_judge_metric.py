"""JudgeMetric: per-instance results and global scores on the mock model, checked by hand."""

from __future__ import annotations

import asyncio
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats  # type: ignore[import-untyped]

import jurist
from jurist.errors import DataError, InternalServerError
from jurist.pipeline import JudgeMetric
from jurist.types import Request

QUESTIONS = ["What is the capital of Texas?", "What color is the sky?", "2+2?", "Largest planet?"]


def likert(outputs: Sequence[object]) -> jurist.LLMJudge:
    return jurist.LLMJudge(jurist.get_model("mock:judge", outputs=outputs), template="likert")


def test_known_verdicts_mean_and_interval_by_hand() -> None:
    verdicts = ["5", "2", "4", "4", "1", "3"]  # likert: (v - 1) / 4
    metric = JudgeMetric(likert(verdicts), context_fields={"prompt": "question"}, seed=7)
    preds = [f"answer {i}" for i in range(6)]
    res = metric.compute(preds, task_data=[{"question": f"q{i}"} for i in range(6)])
    expected = [1.0, 0.25, 0.75, 0.75, 0.0, 0.5]
    assert res.scores == expected
    g = res.global_scores
    assert (g.n, g.n_scored, g.n_failed) == (6, 6, 0)
    assert g.mean == pytest.approx(sum(expected) / 6) == pytest.approx(0.541666, abs=1e-6)
    # the interval is scipy's percentile bootstrap of the mean over the scores, seeded
    ref = stats.bootstrap(
        (np.array(expected),),
        np.mean,
        n_resamples=1000,
        confidence_level=0.95,
        method="percentile",
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert (g.ci_low, g.ci_high) == pytest.approx((ref.low, ref.high), abs=1e-9)
    assert g.ci_low is not None and g.ci_high is not None and g.mean is not None
    assert 0.0 <= g.ci_low < g.mean < g.ci_high <= 1.0
    # per-instance: verdict, the judge's input (the item message) and raw output
    first = res.instances[0]
    assert (first.verdict, first.raw_output, first.prediction) == (5, "5", "answer 0")
    assert first.judge_input is not None
    assert "q0" in first.judge_input and "answer 0" in first.judge_input


def test_interval_matches_the_normal_approximation() -> None:
    # 40 instances, half right: mean 0.5, 95% interval about 0.5 +- 1.96 * sqrt(.25 / 40)
    judge = jurist.LLMJudge(
        jurist.get_model("mock:j", outputs=["Correct", "Incorrect"] * 20), template="true_false"
    )
    g = JudgeMetric(judge, n_resamples=4000).compute(["a"] * 40, task_data=[{"prompt": "q"}] * 40)
    half = 1.96 * math.sqrt(0.25 / 40)
    assert g.global_scores.mean == 0.5
    assert g.global_scores.ci_low == pytest.approx(0.5 - half, abs=0.04)
    assert g.global_scores.ci_high == pytest.approx(0.5 + half, abs=0.04)


def test_degenerate_and_tiny_samples() -> None:
    same = JudgeMetric(likert(["4"] * 5)).compute(["a"] * 5, task_data=[{"prompt": "q"}] * 5)
    assert (same.global_scores.ci_low, same.global_scores.ci_high) == (0.75, 0.75)
    two = JudgeMetric(likert(["4", "2"])).compute(["a", "b"], task_data=[{"prompt": "q"}] * 2)
    assert two.global_scores.mean == 0.5
    assert (two.global_scores.ci_low, two.global_scores.ci_high) == (None, None)


def test_failed_instances_are_reported_and_excluded_never_zero() -> None:
    outputs: list[object] = [
        "5",
        InternalServerError("backend down", status_code=503),
        "no idea",
        "3",
    ]
    res = JudgeMetric(likert(outputs), context_fields={"prompt": "question"}).compute(
        ["Austin", "Blue", "4", "Jupiter"], task_data=[{"question": q} for q in QUESTIONS]
    )
    assert res.scores == [1.0, None, None, 0.5]
    g = res.global_scores
    assert (g.n_scored, g.n_failed, g.mean) == (2, 2, 0.75)
    assert g.failures == {"api": 1, "parse": 1}
    assert res.instances[1].error == "api: backend down"
    assert res.instances[2].error is not None and res.instances[2].error.startswith("parse: ")
    assert res.instances[2].raw_output == "no idea"
    assert [r.index for r in res.failed] == [1, 2]
    assert len(res.to_records()) == 4


def test_missing_field_stops_before_any_call() -> None:
    model = jurist.get_model("mock:judge", outputs=["5"], cycle=True)
    metric = JudgeMetric(jurist.LLMJudge(model, template="likert"))
    with pytest.raises(DataError) as e:
        metric.compute(["Austin", "Blue"], task_data=[{"prompt": "q"}, {"question": "q2"}])
    message = str(e.value)
    assert "instance 1" in message and "'prompt'" in message
    assert "the instance has fields ['question']" in message
    mapped = JudgeMetric(jurist.LLMJudge(model, template="likert"), context_fields={"prompt": "q"})
    with pytest.raises(DataError, match=r"field 'prompt' \(from task_data column 'q'\)"):
        mapped.compute(["a"], task_data=[{"question": "x"}])
    assert model.calls == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        (7, "an int (7)"),
        ({"answer": 4}, "a dict ({'answer': 4})"),
        (["a", "b"], "a list (['a', 'b'])"),
        (True, "a bool (True)"),
        (None, None),
        (float("nan"), None),
    ],
)
def test_a_prediction_that_is_not_text_stops_before_any_call(bad: Any, named: str | None) -> None:
    """Never judged as its ``str()`` (``"7"``, ``"{'answer': 4}"``, ``"None"``): refused by
    index and type, a missing one (None, NaN) as missing."""
    model = jurist.get_model("mock:judge", outputs=["5"], cycle=True)
    metric = JudgeMetric(jurist.LLMJudge(model, template="likert"))
    rows = [{"prompt": "q0"}, {"prompt": "q1"}, {"prompt": "q2"}]
    with pytest.raises(DataError) as e:
        metric.compute(["fine", "fine", bad], task_data=rows)
    if named is None:
        assert str(e.value).startswith("instance 2: the judge needs field 'response'")
        assert "which is missing" in str(e.value)
    else:
        assert str(e.value).startswith(f"instance 2: the prediction is {named}, not a string")
    from_column = JudgeMetric(jurist.LLMJudge(model, template="likert"), prediction_field="a")
    with pytest.raises(DataError, match=r"^instance 1: the (prediction is|judge needs field) "):
        from_column.compute(task_data=[{"prompt": "q", "a": "x"}, {"prompt": "q", "a": bad}])
    assert model.calls == 0  # type: ignore[attr-defined]


def test_unitxt_argument_order_is_refused_not_judged_the_wrong_way() -> None:
    """unitxt's metrics take (references, predictions, task_data): the same positional call
    on JudgeMetric must not judge the reference (issue 31, item 15)."""

    def grade(request: Request) -> str:  # 0.9 for the prediction, 0.1 for the reference
        return "Rating: [[9]]" if "PRED" in request.messages[-1].content else "Rating: [[1]]"

    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=grade), template="mt_bench")
    metric = JudgeMetric(judge)
    td = [{"prompt": "q"}]
    for call in (metric.compute, metric.items):
        with pytest.raises(TypeError, match=r"references= and task_data= by keyword") as err:
            call(["REF"], ["PRED"], td)  # type: ignore[operator]
        assert "JuristJudgeMetric" in str(err.value)
    with pytest.raises(TypeError, match="only positional argument"):
        asyncio.run(metric.acompute(["PRED"], ["REF"], td))  # the coroutine refuses it too
    assert model_calls(judge) == 0  # refused before any call
    res = metric.compute(["PRED"], references=["REF"], task_data=td)
    assert res.scores == [0.9] and res.instances[0].prediction == "PRED"


def model_calls(judge: jurist.LLMJudge) -> int:
    return int(judge.model.calls)  # type: ignore[attr-defined]


def test_references_fill_the_reference_field() -> None:
    model = jurist.get_model("mock:j", outputs=["Rating: [[8]]", "Rating: [[3]]"])
    judge = jurist.LLMJudge(model, template="mt_bench_reference")
    metric = JudgeMetric(judge, reference_field="gold")
    data = [{"prompt": "2+2?", "gold": "4"}, {"prompt": "3+3?", "gold": "6"}]
    res = metric.compute(["4", "7"], task_data=data)
    assert res.scores == [0.8, 0.3]
    assert res.instances[1].reference == "6"
    assert "6" in (res.instances[1].judge_input or "")
    with pytest.raises(DataError, match="needs field 'reference'"):
        JudgeMetric(judge).compute(["4"], task_data=[{"prompt": "2+2?"}])
    # explicit references win over the field
    res2 = JudgeMetric(
        jurist.LLMJudge(jurist.get_model("mock:k", outputs=["[[5]]"]), "mt_bench_reference")
    ).compute(["4"], references=["four"], task_data=[{"prompt": "2+2?"}])
    assert res2.instances[0].reference == "four"


def test_predictions_from_task_data_and_length_checks() -> None:
    metric = JudgeMetric(likert(["5", "1"]), prediction_field="answer")
    res = metric.compute(task_data=[{"prompt": "a", "answer": "x"}, {"prompt": "b", "answer": "y"}])
    assert res.scores == [1.0, 0.0]
    assert [r.prediction for r in res.instances] == ["x", "y"]
    with pytest.raises(DataError, match="differ in length: predictions=2, task_data=1"):
        metric.compute(["x", "y"], task_data=[{"prompt": "a"}])
    with pytest.raises(DataError, match=r"prediction \(column 'answer'\)"):
        metric.compute(task_data=[{"prompt": "a"}])


def _prefer_good(request: Request) -> str:
    text = request.messages[-1].content
    a = text.index("<answer_a>")
    b = text.index("<answer_b>")
    a_good = "GOOD" in text[a:b]
    b_good = "GOOD" in text[b:]
    if a_good == b_good:
        return "[[C]]"
    return "[[A]]" if a_good else "[[B]]"


def test_pairwise_metric_reports_win_rate() -> None:
    judge = jurist.PairwiseJudge(jurist.get_model("mock:p", outputs=_prefer_good))
    metric = JudgeMetric(judge, reference_field="baseline")
    preds = ["GOOD 1", "bad 2", "GOOD 3", "bad 4", "GOOD 5"]
    base = ["bad", "GOOD", "GOOD", "bad", "bad"]
    res = metric.compute(
        preds, task_data=[{"prompt": f"q{i}", "baseline": b} for i, b in enumerate(base)]
    )
    assert [r.verdict for r in res.instances] == ["A", "B", "tie", "tie", "A"]
    g = res.global_scores
    assert (g.n_a, g.n_b, g.n_tie, g.n_inconsistent) == (2, 1, 2, 0)
    assert g.win_rate == pytest.approx((2 + 2 * 0.5) / 5)
    assert g.consistency_rate == 1.0
    assert g.win_rate_ci_low is not None and g.win_rate is not None
    assert g.win_rate_ci_low <= g.win_rate
    assert [c.label for c in res.instances[0].calls] == ["A first", "B first"]
    assert "GOOD 1" in res.instances[0].calls[1].judge_input


def test_panel_metric_and_catalog_name(tmp_path: Path) -> None:
    entry = tmp_path / "judges" / "mock" / "likert.yaml"
    entry.parent.mkdir(parents=True)
    entry.write_text(
        "kind: judge\nmodel: 'mock:j'\nmodel_options: {outputs: ['4'], cycle: true}\n"
        "template: likert\n"
    )
    metric = JudgeMetric("judges.mock.likert", catalog_root=tmp_path)
    assert metric.judge.name == "judges.mock.likert"
    assert metric.compute(["a", "b", "c"], task_data=[{"prompt": "q"}] * 3).scores == [0.75] * 3
    panel = jurist.Panel([likert(["5"] * 2), likert(["3"] * 2)], aggregation="mean")
    res = JudgeMetric(panel).compute(["a", "b"], task_data=[{"prompt": "q"}] * 2)
    assert res.scores == [0.75, 0.75]
    assert len(res.instances[0].calls) == 2


async def test_acompute_and_compute_inside_a_running_loop() -> None:
    metric = JudgeMetric(likert(["5", "1", "3", "3"]))
    data = [{"prompt": "q"}] * 2
    first = await metric.acompute(["a", "b"], task_data=data)
    second = metric.compute(["c", "d"], task_data=data)  # sync twin, inside the loop
    assert first.scores == [1.0, 0.0]
    assert second.scores == [0.5, 0.5]
    assert statistics.fmean([s for s in first.scores if s is not None]) == 0.5


_verdicts = st.lists(
    st.one_of(st.sampled_from(["1", "2", "3", "4", "5"]), st.just("??")), min_size=1, max_size=12
)


@settings(max_examples=40, deadline=None)
@given(_verdicts)
def test_failures_never_move_the_mean(verdicts: list[str]) -> None:
    res = JudgeMetric(likert(verdicts)).compute(
        ["x"] * len(verdicts), task_data=[{"prompt": "q"}] * len(verdicts)
    )
    expected = [None if v == "??" else (int(v) - 1) / 4 for v in verdicts]
    assert res.scores == expected
    scored = [s for s in expected if s is not None]
    g = res.global_scores
    assert (g.n, g.n_scored, g.n_failed) == (
        len(verdicts),
        len(scored),
        len(verdicts) - len(scored),
    )
    assert g.mean == (statistics.fmean(scored) if scored else None)
    if g.ci_low is not None and g.ci_high is not None and g.mean is not None:
        assert min(scored) <= g.ci_low <= g.mean + 1e-12 and g.mean - 1e-12 <= g.ci_high <= max(
            scored
        )


REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
MT_BENCH_SINGLE = (
    REALDATA
    / "alvarobartt-FastChat"
    / "fastchat/llm_judge/data/mt_bench/model_judgment/gpt-4_single.jsonl"
)


def test_golden_mt_bench_judgments_through_the_catalog_judge() -> None:
    """Real GPT-4 MT-bench judgments replayed through the catalog's MT-bench judge."""
    if not MT_BENCH_SINGLE.is_file():
        pytest.skip("../shared/realdata is not available")
    import json
    import re
    from collections import defaultdict

    records = [json.loads(line) for line in MT_BENCH_SINGLE.read_text().splitlines()]

    def replay(request: Request) -> str:
        m = re.search(r"record-(\d+)", request.messages[-1].content)
        assert m is not None
        return str(records[int(m.group(1))]["judgment"])

    judge = jurist.catalog.get(
        "judges.mt_bench.hf_qwen2_5_0_5b_instruct",
        model=jurist.get_model("mock:gpt-4", outputs=replay),
    )
    groups: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        groups[(r["model"], r["turn"])].append(i)
    assert len(groups) == 8
    for key, idx in sorted(groups.items()):
        res = JudgeMetric(judge).compute(
            [f"record-{i}" for i in idx],
            task_data=[{"prompt": f"q{records[i]['question_id']}"} for i in idx],
        )
        g = res.global_scores
        fastchat = [records[i]["score"] for i in idx]
        # what FastChat could not score (-1) is a failed instance here, never a 0
        for inst, score in zip(res.instances, fastchat, strict=True):
            if score == -1:
                assert inst.score is None and (inst.error or "").startswith("parse: ")
        # on the instances scored, the metric's mean is FastChat's average of the same records
        same = [
            s for inst, s in zip(res.instances, fastchat, strict=True) if inst.score is not None
        ]
        assert g.n_scored == len(same) and g.n_failed == len(idx) - len(same)
        assert g.mean is not None
        assert g.mean * 10 == pytest.approx(statistics.fmean(same), abs=1e-9), key
        # and within 0.06 of FastChat's published-style average over all its scored records
        assert g.mean * 10 == pytest.approx(
            statistics.fmean([s for s in fastchat if s != -1]), abs=0.06
        )
        assert g.ci_low is not None and g.ci_high is not None
        assert g.ci_low < g.mean < g.ci_high and g.ci_high - g.ci_low < 0.2
