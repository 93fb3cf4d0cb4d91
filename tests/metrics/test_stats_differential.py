"""jurist's numpy statistics against the libraries they replace (issue 21, item 2).

The measures run on the base install (numpy alone); scipy, scikit-learn and krippendorff
stay in the dev extra as the references checked here, on random data (hypothesis) and on
real human labels from ../shared/realdata (skipped when that folder is absent).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jurist.metrics import (
    _stats,
    bootstrap_ci,
    cohen_kappa,
    kendall_tau,
    krippendorff_alpha,
    spearman,
)

krippendorff = pytest.importorskip("krippendorff")
sk_metrics = pytest.importorskip("sklearn.metrics")
sp_stats = pytest.importorskip("scipy.stats")

REALDATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "realdata"
if not REALDATA.is_dir():
    REALDATA = Path("/work/shared/realdata")


def close(a: float, b: float, tol: float = 1e-9) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol * max(1.0, abs(b))


def ref_kappa(a: list[Any], b: list[Any], weights: Any) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(sk_metrics.cohen_kappa_score(a, b, weights=weights))


def ref_alpha(data: Any, level: str) -> float:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    except ValueError:  # fewer than two values, or no pairable unit: jurist says NaN
        return float("nan")


pairs = st.integers(3, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 5), min_size=n, max_size=n),
        st.lists(st.integers(1, 5), min_size=n, max_size=n),
    )
)
floats = st.floats(-100, 100, allow_nan=False, allow_subnormal=False)
float_pairs = st.integers(3, 40).flatmap(
    lambda n: st.tuples(
        st.lists(floats, min_size=n, max_size=n), st.lists(floats, min_size=n, max_size=n)
    )
)


@settings(max_examples=150, deadline=None)
@given(pairs)
def test_kappa_matches_scikit_learn(ab: tuple[list[int], list[int]]) -> None:
    a, b = ab
    for weights in (None, "linear", "quadratic"):
        assert close(_stats.kappa(a, b, weights), ref_kappa(a, b, weights)), weights
    labels = sorted(set(a) | set(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one label only: scikit-learn warns, the shape is right
        reference = sk_metrics.confusion_matrix(a, b, labels=labels)
    assert (_stats.confusion_matrix(a, b, labels) == reference).all()


@settings(max_examples=100, deadline=None)
@given(
    st.integers(2, 30).flatmap(
        lambda n: st.tuples(
            st.lists(
                st.sampled_from(["Correct", "Incorrect", "Uncertain"]), min_size=n, max_size=n
            ),
            st.lists(
                st.sampled_from(["Correct", "Incorrect", "Uncertain"]), min_size=n, max_size=n
            ),
        )
    )
)
def test_kappa_and_alpha_on_text_labels(ab: tuple[list[str], list[str]]) -> None:
    a, b = ab
    assert close(cohen_kappa(a, b), ref_kappa(a, b, None))
    assert close(krippendorff_alpha([a, b]), ref_alpha(np.array([a, b]), "nominal"))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(2, 4).flatmap(
        lambda raters: st.integers(2, 25).flatmap(
            lambda units: st.lists(
                st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=units, max_size=units),
                min_size=raters,
                max_size=raters,
            )
        )
    )
)
def test_alpha_matches_krippendorff(rows: list[list[int | None]]) -> None:
    data = np.array([[np.nan if v is None else float(v) for v in r] for r in rows])
    for level in ("nominal", "ordinal", "interval", "ratio"):
        assert close(_stats.alpha(data, level), ref_alpha(data, level)), level


@settings(max_examples=150, deadline=None)
@given(st.one_of(pairs, float_pairs))
def test_correlations_match_scipy(ab: tuple[list[float], list[float]]) -> None:
    x, y = ab
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refs = {
            "pearson": float(sp_stats.pearsonr(x, y).statistic),
            "spearman": float(sp_stats.spearmanr(x, y).statistic),
            "kendall": float(sp_stats.kendalltau(x, y, variant="b").statistic),
        }
    constant = len(set(x)) < 2 or len(set(y)) < 2
    ours = {
        "pearson": _stats.pearson_r(x, y),
        "spearman": _stats.spearman_rho(x, y),
        "kendall": _stats.kendall_tau_b(x, y),
    }
    for name, value in ours.items():
        if constant:
            assert math.isnan(value), name
        else:
            assert close(value, refs[name], 1e-7), (name, value, refs[name])


def test_kendall_many_distinct_values_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    for n in (300, 5000):  # the pairwise path and the blocked-count path
        x, y = rng.normal(size=n), rng.normal(size=n).round(1)
        ref = float(sp_stats.kendalltau(x, y, variant="b").statistic)
        assert close(_stats.kendall_tau_b(x.tolist(), y.tolist()), ref, 1e-9)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_binomial_test_matches_scipy(kn: tuple[int, int]) -> None:
    k, n = kn
    for p in (0.5, 0.3):
        ref = float(sp_stats.binomtest(k, n, p).pvalue)
        assert close(_stats.binom_test(k, n, p), ref, 1e-8), (k, n, p)


def ref_bootstrap(
    metric: Any, xs: list[Any], ys: list[Any], method: str, seed: int
) -> tuple[float, float]:
    x_arr, y_arr = np.array(xs, dtype=object), np.array(ys, dtype=object)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sp_stats.bootstrap(
            (np.arange(len(xs)),),
            lambda idx: metric(list(x_arr[idx]), list(y_arr[idx])),
            n_resamples=300,
            confidence_level=0.9,
            method=method,
            vectorized=False,
            rng=np.random.default_rng(seed),
        )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


@settings(max_examples=25, deadline=None)
@given(pairs, st.integers(0, 2**32), st.sampled_from(["percentile", "basic", "BCa"]))
def test_bootstrap_matches_scipy(ab: tuple[list[int], list[int]], seed: int, method: str) -> None:
    a, b = ab
    for metric in (spearman, cohen_kappa):
        est = bootstrap_ci(metric, a, b, n_resamples=300, confidence=0.9, method=method, seed=seed)  # type: ignore[arg-type]
        if math.isnan(est.value):
            continue
        low, high = ref_bootstrap(metric, a, b, method, seed)
        assert (est.low is None) == math.isnan(low) and (est.high is None) == math.isnan(high)
        if est.low is not None and est.high is not None:
            assert close(est.low, low, 1e-9) and close(est.high, high, 1e-9), (est, low, high)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["nominal", "ordinal", "interval"]),
    st.one_of(pairs, float_pairs),
    st.integers(0, 2**32),
)
def test_batched_measures_equal_the_measures_on_each_resample(
    kind: str, ab: tuple[list[float], list[float]], seed: int
) -> None:
    """The bootstrap asks each measure for all its resamples at once (metrics._batched):
    resample by resample, the same figure as the measure asked once, NaN where it is NaN."""
    from jurist.metrics._agreement import metric_functions
    from jurist.metrics._batched import _MAX_LABELS, batched

    a, b = ab
    if kind == "nominal":
        labels = ([f"label {round(v) % 5}" for v in a], [f"label {round(v) % 5}" for v in b])
        a, b = labels  # type: ignore[assignment]
    elif kind == "ordinal":
        a, b = [round(v) % 7 for v in a], [round(v) % 7 for v in b]
    rows = np.random.default_rng(seed).integers(0, len(a), (20, len(a)))
    for name, metric in metric_functions(kind):  # type: ignore[arg-type]
        kernel = batched(metric, a, b)
        assert kernel is not None, name
        for row, value in zip(rows, kernel(rows), strict=True):
            expected = metric([a[i] for i in row], [b[i] for i in row])
            assert close(float(value), expected, 1e-12), (name, row, value, expected)
    many = [f"label {i}" for i in range(_MAX_LABELS + 1)]  # a table per resample saves nothing:
    assert batched(metric_functions("nominal")[1][1], many, many) is None  # one at a time


# -- real data ------------------------------------------------------------------------------


def pandalm() -> list[dict[str, Any]]:
    path = REALDATA / "PandaLM" / "data" / "testset-v1.json"
    if not path.is_file():
        pytest.skip(f"real data absent: {path}")
    rows: list[dict[str, Any]] = json.loads(path.read_text())
    return rows


def test_real_pandalm_annotators_match_the_references() -> None:
    rows = pandalm()
    a1, a2, a3 = ([r[f"annotator{i}"] for r in rows] for i in (1, 2, 3))
    for weights in (None, "linear", "quadratic"):
        assert close(_stats.kappa(a1, a2, weights), ref_kappa(a1, a2, weights))
    data = np.array([a1, a2, a3], dtype=float)
    data[0, ::7] = np.nan  # some missing labels
    for level in ("nominal", "ordinal", "interval", "ratio"):
        assert close(_stats.alpha(data, level), ref_alpha(data, level))
    low, high = ref_bootstrap(cohen_kappa, a1[:200], a2[:200], "BCa", 7)
    est = bootstrap_ci(
        cohen_kappa, a1[:200], a2[:200], n_resamples=300, confidence=0.9, method="BCa", seed=7
    )
    assert est.low is not None and est.high is not None
    assert close(est.low, low) and close(est.high, high)


def test_real_summeval_correlations_match_scipy() -> None:
    path = REALDATA / "PPairS" / "data" / "summeval.jsonl"
    if not path.is_file():
        pytest.skip(f"real data absent: {path}")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    coherence = [float(r["coherence"]) for r in rows]
    relevance = [float(r["relevance"]) for r in rows]
    assert close(
        _stats.pearson_r(coherence, relevance),
        float(sp_stats.pearsonr(coherence, relevance).statistic),
    )
    assert close(
        spearman(coherence, relevance), float(sp_stats.spearmanr(coherence, relevance).statistic)
    )
    ref_tau = float(sp_stats.kendalltau(coherence, relevance, variant="b").statistic)
    assert close(kendall_tau(coherence, relevance), ref_tau)


# -- agreement() end to end against the libraries, on real judge verdicts vs human labels ---


def _guarded(fn: Any) -> Any:
    def metric(a: list[Any], b: list[Any]) -> float:
        if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
            return float("nan")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(fn(a, b))

    return metric


def _ref_alpha(level: str) -> Any:
    def metric(a: list[Any], b: list[Any]) -> float:
        values = sorted({*a, *b}, key=str)
        if len(values) < 2:
            return float("nan")
        numeric = all(isinstance(v, int | float) for v in values)
        codes = {v: float(i) for i, v in enumerate(values)}
        data = np.array([[float(v) if numeric else codes[v] for v in row] for row in (a, b)])
        return ref_alpha(data, level)

    return metric


def reference_agreement(
    judge: list[Any], human: list[Any], kind: str
) -> dict[str, tuple[float, float, float]]:
    """What ``agreement`` computed with scikit-learn, scipy and krippendorff before issue 21."""
    from jurist.metrics import accuracy, mae, rmse
    from jurist.metrics._agreement import _METRICS

    ref = {
        "accuracy": accuracy,
        "cohen_kappa": lambda a, b: ref_kappa(a, b, None),
        "linear_kappa": lambda a, b: ref_kappa(a, b, "linear"),
        "quadratic_kappa": lambda a, b: ref_kappa(a, b, "quadratic"),
        "pearson": _guarded(lambda a, b: sp_stats.pearsonr(a, b).statistic),
        "spearman": _guarded(lambda a, b: sp_stats.spearmanr(a, b).statistic),
        "kendall_tau": _guarded(lambda a, b: sp_stats.kendalltau(a, b, variant="b").statistic),
        "rmse": rmse,
        "mae": mae,
        "krippendorff_alpha": _ref_alpha(kind),
    }
    out = {}
    x_arr, y_arr = np.array(judge, dtype=object), np.array(human, dtype=object)
    for name, _ in _METRICS[kind]:
        fn = ref[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = sp_stats.bootstrap(
                (np.arange(len(judge)),),
                lambda idx, fn=fn: fn(list(x_arr[idx]), list(y_arr[idx])),
                n_resamples=200,
                confidence_level=0.95,
                method="percentile",
                vectorized=False,
                rng=np.random.default_rng(5),
            )
        ci = res.confidence_interval
        out[name] = (fn(judge, human), float(ci.low), float(ci.high))
    return out


def assert_same_agreement(judge: list[Any], human: list[Any], kind: str) -> None:
    from jurist.metrics import agreement

    ours = agreement(judge, human, kind=kind, n_resamples=200, seed=5)  # type: ignore[arg-type]
    ref = reference_agreement(judge, human, kind)
    assert set(ours.metrics) == set(ref)
    for name, (value, low, high) in ref.items():
        est = ours[name]
        assert close(est.value, value), (name, est, value)
        assert est.low is not None and est.high is not None, (name, est)
        assert close(est.low, low) and close(est.high, high), (name, est, low, high)


def test_real_pandalm_gpt35_verdicts_against_humans_nominal() -> None:
    path = REALDATA / "PandaLM" / "data" / "gpt-3.5-turbo-testset-v1.json"
    rows = pandalm()
    verdicts = {str(r["idx"]): r["gpt_result"] for r in json.loads(path.read_text())}
    pairs = [
        (verdicts[str(r["idx"])], str(r["annotator1"]))
        for r in rows[:150]
        if verdicts.get(str(r["idx"])) in ("0", "1", "2")
    ]
    assert len(pairs) > 100
    assert_same_agreement([j for j, _ in pairs], [h for _, h in pairs], "nominal")
    numbers = [(int(j), int(h)) for j, h in pairs]
    assert_same_agreement([j for j, _ in numbers], [h for _, h in numbers], "ordinal")


def test_real_unieval_scores_against_human_coherence_interval() -> None:
    path = (
        REALDATA
        / "UniEval"
        / "reproduce"
        / "unieval_predict"
        / "dialogue"
        / "topical_chat_result.json"
    )
    if not path.is_file():
        pytest.skip(f"real data absent: {path}")
    rows = json.loads(path.read_text())[:120]
    human = [float(r["scores"]["coherence"]) for r in rows]
    judge = [float(r["predict_scores"]["coherence"]) for r in rows]
    assert_same_agreement(judge, human, "interval")
