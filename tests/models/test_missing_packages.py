"""A missing optional package never throws away judged work.

The packages of the ``metrics`` extra (scipy, scikit-learn, krippendorff) and the data
packages (pandas, pyarrow) are made unimportable for a test; what the README advertises
for the base install (JudgeMetric, evaluate_model, runs and their report) still returns or
keeps every judged result.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from scipy import stats  # type: ignore[import-untyped]

import jurist
from jurist.pipeline import JudgeMetric

OPTIONAL = ("scipy", "sklearn", "krippendorff", "pandas", "pyarrow")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def base_install(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every optional package (and its loaded submodules) raises ImportError on import."""
    for name in [m for m in sys.modules if m.split(".")[0] in OPTIONAL] + list(OPTIONAL):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError):
        import scipy.stats  # noqa: F401
    yield


def likert(outputs: list[str]) -> jurist.LLMJudge:
    return jurist.LLMJudge(jurist.get_model("mock:j", outputs=outputs), template="likert")


def test_judge_metric_on_the_base_install_keeps_every_score(base_install: None) -> None:
    verdicts = ["5", "2", "4", "oops", "1", "3"]  # five distinct scores and a failure
    res = JudgeMetric(likert(verdicts), seed=3).compute(
        [f"a{i}" for i in range(6)], task_data=[{"prompt": f"q{i}"} for i in range(6)]
    )
    assert res.scores == [1.0, 0.25, 0.75, None, 0.0, 0.5]
    g = res.global_scores
    assert (g.n_scored, g.n_failed) == (5, 1)
    assert g.ci_low is not None and g.ci_high is not None and g.mean is not None
    assert g.ci_low < g.mean < g.ci_high


def test_evaluate_model_on_the_base_install(base_install: None) -> None:
    data = [{"prompt": f"q{i}"} for i in range(4)]
    answers = jurist.get_model("mock:m", outputs=["x"], cycle=True)
    res = jurist.evaluate_model(data, answers, likert(["5", "1", "3", "4"]))
    assert res.scores == [1.0, 0.0, 0.5, 0.75]
    assert res.global_scores.ci_low is not None


def test_pairwise_metric_win_rate_interval_on_the_base_install(base_install: None) -> None:
    judge = jurist.PairwiseJudge(
        jurist.get_model("mock:p", outputs=["[[A]]", "[[B]]", "[[B]]", "[[A]]", "[[C]]"] * 2),
        swap=False,
    )
    rows = [{"prompt": f"q{i}", "baseline": "b"} for i in range(5)]
    g = JudgeMetric(judge, reference_field="baseline").compute(["a"] * 5, task_data=rows)
    assert g.global_scores.win_rate == pytest.approx(0.5)
    assert g.global_scores.win_rate_ci_low is not None


def test_the_interval_is_scipys_percentile_bootstrap_without_scipy() -> None:
    scores = [1.0, 0.25, 0.75, 0.75, 0.0, 0.5, 0.25, 1.0]
    ref = stats.bootstrap(
        (np.array(scores),),
        np.mean,
        n_resamples=500,
        confidence_level=0.9,
        method="percentile",
        rng=np.random.default_rng(11),
    ).confidence_interval
    metric = JudgeMetric(likert(["1"]), n_resamples=500, confidence=0.9, seed=11)
    low, high = metric.mean_interval(scores)
    assert (low, high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_numpy_is_a_core_dependency() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    core = [d.split(">")[0].split("=")[0].strip() for d in meta["project"]["dependencies"]]
    assert "numpy" in core


def test_report_on_the_base_install_has_its_agreement_figures(
    tmp_path: Path, base_install: None
) -> None:
    """Agreement is numpy alone since issue 21: the report's section has its figures and
    intervals where scipy, scikit-learn and krippendorff cannot be imported."""
    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=["Correct", "Incorrect"] * 2))
    items = [{"prompt": f"q{i}", "response": "a", "human": "Correct"} for i in range(4)]
    run = jurist.evaluate(items, judge, run_dir=tmp_path / "run")
    html = run.report(labels="human").read_text()
    assert 'id="agreement"' in html and "jurist[metrics]" not in html
    assert 'id="summary"' in html and 'id="sample-table"' in html
    assert run.summary().scored == 4
    table = jurist.metrics.agreement(["a", "b", "a", "b"], ["a", "b", "b", "b"], kind="nominal")
    assert table.metrics["accuracy"].value == 0.75 and table.metrics["accuracy"].low is not None
    assert table.metrics["cohen_kappa"].value == pytest.approx(0.5)
