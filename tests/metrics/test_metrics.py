"""jurist.metrics against published worked examples, the libraries, and properties."""

from __future__ import annotations

import builtins
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jurist
from jurist.errors import ConfigError, DataError, MissingDependencyError
from jurist.metrics import (
    accuracy,
    agreement,
    bootstrap_ci,
    cohen_kappa,
    confusion,
    criteria_info,
    fleiss_kappa,
    kendall_tau,
    krippendorff_alpha,
    length_bias,
    length_bias_pairwise,
    mae,
    pearson,
    position_consistency,
    rmse,
    rubric_metrics,
    spearman,
)
from jurist.metrics._measures import need

N = None


def test_fleiss_kappa_worked_example() -> None:
    # Fleiss (1971) as in the usual worked example: 10 subjects, 14 raters, 5 categories
    counts = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    rows = [[c for c, n in enumerate(row) for _ in range(n)] for row in counts]
    assert round(fleiss_kappa(rows), 3) == 0.210


def test_krippendorff_alpha_worked_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 coders, 12 units
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
        [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
    ]
    assert round(krippendorff_alpha(data, level="nominal"), 3) == 0.743
    assert round(krippendorff_alpha(data, level="interval"), 3) == 0.849


def test_text_labels_for_alpha_and_errors() -> None:
    assert krippendorff_alpha([["a", "b", "a"], ["a", "b", "a"]]) == 1.0
    with pytest.raises(DataError, match="needs numeric labels"):
        krippendorff_alpha([["a", "b"], ["a", "b"]], level="ordinal")
    with pytest.raises(DataError, match="item 1 has 1 ratings, expected 2"):
        fleiss_kappa([[1, 2], [1, None]])


def test_weighted_kappa_orders() -> None:
    a = [1, 2, 3, 4, 5, 1, 2, 3]
    b = [1, 2, 3, 5, 4, 2, 2, 3]
    plain, linear, quad = (cohen_kappa(a, b, weights=w) for w in (None, "linear", "quadratic"))
    assert plain < linear < quad  # near misses earn partial credit


def test_numeric_metrics() -> None:
    x, y = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 5.0, 4.0]
    assert rmse(x, y) == pytest.approx(math.sqrt((1 + 4 + 4 + 0) / 4))
    assert mae(x, y) == pytest.approx(1.25)
    assert kendall_tau([1, 2, 2, 3], [1, 2, 3, 3]) == pytest.approx(0.8)  # tau-b with ties
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))
    assert accuracy([N, "a"], ["a", "a"]) == 1.0


def test_confusion_matrix() -> None:
    labels, matrix = confusion(["a", "b", "b", "a"], ["a", "a", "b", "b"], labels=["a", "b"])
    assert labels == ["a", "b"] and matrix == [[1, 1], [1, 1]]


finite = st.integers(-100, 100).map(float)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=3, max_size=30), st.floats(0.1, 10))
def test_correlations_are_scale_free(pairs: list[tuple[float, float]], k: float) -> None:
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    for fn in (pearson, spearman, kendall_tau):
        a, b = fn(xs, ys), fn([k * x + 3 for x in xs], ys)
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=40))
def test_kappa_of_a_rater_with_itself(labels: list[int]) -> None:
    k = cohen_kappa(labels, labels)
    assert k == 1.0 or (len(set(labels)) == 1 and math.isnan(k))
    assert accuracy(labels, labels) == 1.0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3))), min_size=1))
def test_missing_values_are_left_out(pairs: list[tuple[int, int | None]]) -> None:
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    res = agreement(a, b, kind="nominal", ci=False)
    assert res.n == sum(v is not None for v in b) and res.n + res.dropped == len(pairs)


def test_agreement_kinds_and_intervals() -> None:
    judge = [1, 2, 3, 4, 5, 2, 3, 4, 1, 5, 3, 2]
    human = [1, 2, 3, 5, 5, 2, 2, 4, 1, 4, 3, 3]
    ordinal = agreement(judge, human, kind="ordinal", n_resamples=200)
    assert set(ordinal.metrics) == {
        "accuracy",
        "cohen_kappa",
        "linear_kappa",
        "quadratic_kappa",
        "spearman",
        "kendall_tau",
        "krippendorff_alpha",
    }
    for est in ordinal.metrics.values():
        assert est.low is not None and est.high is not None
        assert est.low - 1e-9 <= est.value <= est.high + 1e-9
    interval = agreement([j / 5 for j in judge], human, kind="interval", ci=False)
    assert interval["pearson"].value == pytest.approx(pearson(judge, human))
    assert set(interval.metrics) >= {"rmse", "mae", "pearson", "spearman", "kendall_tau"}
    with pytest.raises(ConfigError, match="needs numeric labels"):
        agreement(["a"], ["b"], kind="ordinal")
    with pytest.raises(ConfigError, match="unknown kind"):
        agreement([1], [1], kind="ratio")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="differ in length"):
        agreement([1, 2], [1], kind="nominal")


def test_bootstrap_is_reproducible() -> None:
    a, b = [1, 2, 3, 4, 5, 6, 7, 8], [1, 3, 2, 4, 6, 5, 8, 7]
    first, again = (bootstrap_ci(spearman, a, b, seed=7, n_resamples=300) for _ in range(2))
    assert first == again and first.low is not None and first.low < first.value


def test_position_consistency_and_length_bias() -> None:
    assert position_consistency(
        ["first", "second", "tie"], ["second", "second", "tie"], by="position"
    ) == pytest.approx(2 / 3)
    lb = length_bias([0.1, 0.5, 0.9, None], ["a", "aaaa", "aaaaaaaa", "x"], seed=1)
    assert lb.n == 3 and lb.correlation is not None and lb.correlation.value == 1.0
    pw = length_bias_pairwise(["A"] * 20, ["long answer"] * 20, ["short"] * 20)
    assert pw.n == 20 and pw.longer_wins == 1.0 and pw.p_value is not None and pw.p_value < 1e-4


def test_measures_need_no_optional_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """The measures are numpy alone (issue 21): blocking krippendorff changes nothing."""
    real_import = builtins.__import__

    def fake(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("krippendorff"):
            raise ImportError("no krippendorff")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(__import__("sys").modules, "krippendorff", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake)
    assert krippendorff_alpha([[1, 2], [1, 2]]) == 1.0
    with pytest.raises(MissingDependencyError, match=r"pip install 'jurist\[metrics\]'"):
        need("krippendorff", "Krippendorff's alpha")


# -- rubric datasets ----------------------------------------------------------------------


def rubric() -> Any:
    return jurist.Rubric.from_dict(
        [
            {"name": "correct", "requirement": "The answer is correct"},
            {
                "name": "clarity",
                "requirement": "How clear?",
                "options": [
                    {"label": "poor", "value": 0},
                    {"label": "fair", "value": 0.5},
                    {"label": "good", "value": 1},
                ],
            },
            {
                "name": "tone",
                "requirement": "Tone?",
                "scale_type": "nominal",
                "options": [{"label": "formal", "value": 1}, {"label": "casual", "value": 0.5}],
            },
        ]
    )


def report(final: list[str], votes: dict[str, list[str | None]]) -> dict[str, Any]:
    """A grade report as the run store keeps it (model_dump of a GradeReport)."""
    criteria = []
    for i, label in enumerate(final):
        criteria.append(
            {
                "name": ["correct", "clarity", "tone"][i],
                "final": {"verdict": label} if i == 0 else {"selected_label": label},
                "votes": [
                    {
                        "judge_id": j,
                        **({"verdict": v[i]} if i == 0 else {"selected_label": v[i]}),
                        "error": None if v[i] else "api: failed",
                    }
                    for j, v in votes.items()
                ],
            }
        )
    return {"score": 1.0, "criteria": criteria}


def test_rubric_metrics_per_criterion_between_and_per_judge() -> None:
    info = criteria_info(rubric())
    assert [c.kind for c in info] == ["binary", "ordinal", "nominal"]
    truth = [
        ["MET", "good", "formal"],
        ["UNMET", "poor", "casual"],
        ["MET", "fair", "formal"],
        ["MET", "good", "casual"],
    ]
    reports = [
        report(
            ["MET", "good", "formal"],
            {"a": ["MET", "good", "formal"], "b": ["MET", "good", "formal"]},
        ),
        report(
            ["UNMET", "fair", "casual"],
            {"a": ["UNMET", "fair", "casual"], "b": ["UNMET", "poor", "casual"]},
        ),
        report(
            ["MET", "fair", "formal"],
            {"a": ["MET", "fair", "formal"], "b": ["UNMET", None, "formal"]},
        ),
        report(
            ["MET", "good", "formal"],
            {"a": ["MET", "good", "formal"], "b": ["MET", "good", "casual"]},
        ),
    ]
    m = rubric_metrics(info, truth, reports)
    correct, clarity, tone = m.criteria
    assert correct.n == 4 and correct.accuracy == 1.0 and correct.kappa == 1.0
    assert clarity.accuracy == 0.75 and clarity.quadratic_kappa is not None
    assert clarity.linear_kappa is not None and clarity.linear_kappa > clarity.kappa  # type: ignore[operator]
    assert clarity.rmse == pytest.approx(math.sqrt(0.25 / 4)) and clarity.mae == pytest.approx(
        0.5 / 4
    )
    assert clarity.confusion_labels == ["poor", "fair", "good"]
    assert clarity.confusion == [[0, 1, 0], [0, 1, 0], [0, 0, 2]]
    assert tone.accuracy == 0.75 and tone.linear_kappa is None
    assert correct.judges_alpha is not None and correct.judges_fleiss_kappa is not None
    assert clarity.judges_items == 3  # judge b failed on item 2: left out of Fleiss
    assert m.judges["a"] == pytest.approx(10 / 12)
    assert m.judges["b"] == pytest.approx(10 / 11)  # its failed vote is not counted
    assert m.judges_per_criterion["b"]["correct"] == 0.75
    assert m.overall_accuracy == pytest.approx(10 / 12)


def test_rubric_metrics_on_real_grade_reports() -> None:
    rub = jurist.Rubric.from_dict([{"name": "polite", "requirement": "Is polite"}])
    model = jurist.get_model("mock:j", outputs=['{"c1": {"verdict": "MET"}}'], cycle=True)
    grader = jurist.CriterionGrader(judges=[model])
    dataset = jurist.RubricDataset(rubric=rub)
    dataset.add_item(submission="Thank you!", ground_truth=["MET"])
    dataset.add_item(submission="Go away.", ground_truth=["UNMET"])
    reports = [grader.grade_sync(rub, item.submission) for item in dataset]
    m = rubric_metrics(criteria_info(rub), [i.ground_truth for i in dataset], reports)
    assert m.criteria[0].n == 2 and m.criteria[0].accuracy == 0.5
    assert len(m.judges) == 1 and next(iter(m.judges.values())) == 0.5
