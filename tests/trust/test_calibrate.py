"""Calibration: the isotonic fit, held-out before/after with paired gains, the calibrated
judge (in every judge-shaped place: evaluate, the catalog) and ``jurist calibrate``.

The golden part replays UniEval's own Topical-Chat predictions (../shared/realdata)
through the mock model as a judge's 0-100 verdicts, and calibrates them to the human
ratings shipped beside them.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.errors import DataError
from jurist.metrics import accuracy
from jurist.metrics._calibration import IsotonicMap, isotonic_fit, paired_gain
from jurist.trust import CalibratedJudge, Calibration, FittedOn, fit_calibration
from jurist.types import Request
from tests._cli_run import run as run_cli

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
TOPICAL = REALDATA / "UniEval" / "reproduce" / "unieval_predict" / "dialogue"


# -- the isotonic fit ------------------------------------------------------------------------


def test_isotonic_fit_matches_scikit_learn_on_random_data() -> None:
    np = pytest.importorskip("numpy")
    isotonic = pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(7)
    for t in range(60):
        n = int(rng.integers(1, 50))
        x = rng.integers(0, 8, n) / 8 if t % 2 else rng.random(n)  # with and without ties
        y = rng.random(n) * 4 + 3 * x
        w = rng.random(n) + 0.1
        ours = isotonic_fit(x, y, weights=w)
        ref = isotonic.IsotonicRegression(out_of_bounds="clip").fit(x, y, sample_weight=w)
        grid = np.linspace(-0.5, 1.5, 41)
        assert np.allclose(ours.many(grid), ref.predict(grid)), t


def test_isotonic_fit_refuses_what_it_cannot_fit() -> None:
    with pytest.raises(DataError, match="no pair with both"):
        isotonic_fit([None, 0.5], [1.0, None])  # type: ignore[list-item]
    with pytest.raises(DataError, match="differ in length"):
        isotonic_fit([0.1, 0.2], [1.0])
    with pytest.raises(ValueError, match="non-decreasing"):
        IsotonicMap(x=(0.0, 1.0), y=(2.0, 1.0))


def test_paired_gain_is_zero_for_no_change_and_signed_otherwise() -> None:
    truth = [1, 0, 1, 1, 0, 1, 0, 1] * 4
    same = paired_gain(accuracy, truth, truth, truth, n_resamples=200)
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0)
    worse = paired_gain(accuracy, truth, [1 - t for t in truth], truth, n_resamples=200)
    assert worse.value == -1.0 and worse.high == -1.0


# -- fit_calibration -------------------------------------------------------------------------


def _bent(n: int, seed: int = 0) -> tuple[list[float], list[int]]:
    """A judge whose 0-1 score is monotone in the 1-5 label but bends the scale."""
    rng = random.Random(seed)
    scores = [rng.random() for _ in range(n)]
    labels = [1 + round(4 * s**3) for s in scores]
    return scores, labels


def test_a_bent_judge_is_straightened_on_held_out_items() -> None:
    scores, labels = _bent(300)
    report = fit_calibration(scores, labels, n_resamples=300)
    assert report.kind == "ordinal" and report.headline == "quadratic_kappa"
    assert (report.n_calibration, report.n_test) == (150, 150)
    assert report.before["accuracy"].value < 0.5 < 0.9 < report.after["accuracy"].value
    gain = report.gains["quadratic_kappa"]
    assert gain.low is not None and gain.low > 0 and report.supported
    assert "clears zero" in report.lines()[-1]
    # the fitted-on fingerprint: the calibration half only, order-free, and reproducible
    again = fit_calibration(scores, labels, n_resamples=50)
    assert again.calibration.fitted_on == report.calibration.fitted_on
    assert report.calibration.fitted_on.items == 150
    other = fit_calibration(scores, labels, n_resamples=50, seed=1)
    assert other.calibration.fitted_on.fingerprint != report.calibration.fitted_on.fingerprint


def test_no_gain_is_claimed_where_the_judge_is_already_on_the_labels_scale() -> None:
    rng = random.Random(3)
    labels = [rng.randint(1, 5) for _ in range(200)]
    noisy = [min(5, max(1, y + rng.choice((-1, 0, 0, 0, 1)))) for y in labels]
    scores = [(v - 1) / 4 for v in noisy]  # a 1-5 judge: before is its own verdict
    report = fit_calibration(scores, labels, n_resamples=300)
    gain = report.gains[report.headline]
    assert not report.supported
    assert gain.low is not None and gain.low <= 0 <= (gain.high or 0)
    assert "does not clear zero" in report.lines()[-1]


def test_interval_labels_use_rmse_and_no_rounding() -> None:
    rng = random.Random(5)
    scores = [rng.random() for _ in range(120)]
    labels = [10 + 30 * s**2 + rng.gauss(0, 0.5) for s in scores]
    report = fit_calibration(scores, labels, n_resamples=200)
    assert report.kind == "interval" and report.headline == "rmse"
    assert report.calibration.values is None
    assert report.after["rmse"].value < report.before["rmse"].value
    assert report.supported  # rmse fell: the gain's upper bound is below zero


def test_bad_inputs_name_the_item() -> None:
    with pytest.raises(DataError, match="2 of 2 items have a label; at least 10 are needed"):
        fit_calibration([0.1, 0.2], [1, 2])
    with pytest.raises(DataError, match=r"item 'b' \(row 2\): label 'good' is not a number"):
        fit_calibration([0.1, 0.2] * 6, [1, "good"] * 6, keys=["a", "b"] * 6)


# -- the calibrated judge --------------------------------------------------------------------


def _calibration() -> Calibration:
    return Calibration(
        map=IsotonicMap(x=(0.0, 0.5, 1.0), y=(1.0, 2.2, 5.0)),
        values=(1.0, 2.0, 3.0, 4.0, 5.0),
        low=1.0,
        high=5.0,
        fitted_on=FittedOn(fingerprint="f00d", items=40, labels="human"),
    )


def test_a_calibrated_judge_runs_through_evaluate_and_keeps_the_raw_verdict(
    tmp_path: Path,
) -> None:
    inner = jurist.LLMJudge(jurist.get_model("mock:j", outputs=["5", "3", "1", "??"]), "likert")
    judge = CalibratedJudge(inner, _calibration())
    items = [{"prompt": f"q{i}", "response": "a"} for i in range(4)]
    run = jurist.evaluate(items, judge, run_dir=tmp_path / "run", concurrency=1)
    rows = list(run.rows())
    assert [r["outcome"]["verdict"] for r in rows] == [5.0, 2.0, 1.0, None]
    assert [r["outcome"]["raw_verdict"] for r in rows] == [5.0, 3.0, 1.0, None]
    assert [r["score"] for r in rows] == [1.0, 0.25, 0.0, None]
    assert rows[3]["error"].startswith("parse:")  # a failure stays a failure
    assert run.manifest.judge["kind"] == "calibrated"
    assert judge.models() == inner.models()
    swapped = judge.with_models(lambda m: jurist.get_model("mock:k", outputs=["4"]))
    assert swapped.calibration is judge.calibration and swapped.models()[0].name == "k"


def test_the_catalog_stores_and_rebuilds_a_calibrated_judge(tmp_path: Path) -> None:
    judge = CalibratedJudge(jurist.LLMJudge("mock:j", template="likert"), _calibration())
    path = jurist.catalog.add(judge, "judges.calibrated.mine", root=tmp_path)
    text = path.read_text()
    assert "kind: calibrated_judge" in text and "fingerprint: f00d" in text
    back = jurist.catalog.get("judges.calibrated.mine", root=tmp_path)
    assert isinstance(back, CalibratedJudge)
    assert back.calibration == judge.calibration
    assert back.inner.template.name == "likert"


# -- jurist calibrate ------------------------------------------------------------------------


def _mock_run(folder: Path, verdicts: list[float], labels: list[float]) -> None:
    """A likert run whose mock judge says ``verdicts[i]`` for the item tagged ``[i]``."""

    def answer(request: Request) -> str:
        tag = re.search(r"\[(\d+)\]", str(request.messages[-1].content))
        assert tag is not None
        return str(verdicts[int(tag.group(1))])

    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=answer), template="likert")
    items = [
        {"id": f"item-{i}", "prompt": "q", "response": f"[{i}] a", "human": y}
        for i, y in enumerate(labels)
    ]
    jurist.evaluate(items, judge, run_dir=folder)


def test_the_cli_reports_saves_and_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(11)
    labels = [rng.randint(1, 5) for _ in range(80)]
    verdicts = [min(5, y + 2) if y > 1 else 1 for y in labels]  # a judge too generous by 2
    _mock_run(tmp_path / "run", verdicts, labels)
    code, out = run_cli(
        [
            "calibrate",
            str(tmp_path / "run"),
            "--labels",
            "human",
            "--save",
            "judges.cal.generous",
            "--catalog",
            str(tmp_path / "cat"),
            "--json",
            str(tmp_path / "cal.json"),
        ],
        capsys,
    )
    assert code == 0, out
    assert "fitted on 40 items, tested on 40 held-out items (ordinal labels)" in out
    assert "quadratic_kappa" in out and "saved judges.cal.generous" in out
    saved = json.loads((tmp_path / "cal.json").read_text())
    assert (
        saved["after"]["metrics"]["accuracy"]["value"]
        > saved["before"]["metrics"]["accuracy"]["value"]
    )
    judge = jurist.catalog.get("judges.cal.generous", root=tmp_path / "cat")
    assert isinstance(judge, CalibratedJudge)
    assert judge.calibration.fitted_on.labels == "human"
    assert judge.calibration.fitted_on.source == str(tmp_path / "run")
    # bad labels: named, and exit code 2 (a user error)
    code, out = run_cli(["calibrate", str(tmp_path / "run"), "--labels", "prompt"], capsys)
    assert code == 2 and "are not numbers (e.g. 'q')" in out
    code, out = run_cli(["calibrate", str(tmp_path / "run"), "--labels", "nope"], capsys)
    assert code == 2 and "no item has that field" in out


# -- golden: UniEval's Topical-Chat predictions against its human ratings ----------------------


@pytest.fixture(scope="module")
def topical() -> list[dict[str, Any]]:
    path = TOPICAL / "topical_chat_result.json"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/realdata is not here)")
    data: list[dict[str, Any]] = json.loads(path.read_text())
    return data


@pytest.mark.parametrize("dimension", ["naturalness", "groundedness"])
def test_unieval_topical_chat_calibrated_to_human_ratings(
    topical: list[dict[str, Any]], dimension: str, tmp_path: Path
) -> None:
    predicted = [r["predict_scores"][dimension] for r in topical]
    human = [r["scores"][dimension] for r in topical]

    def answer(request: Request) -> str:  # the recorded prediction, as a 0-100 verdict
        tag = re.search(r"\[(\d+)\]", str(request.messages[-1].content))
        assert tag is not None
        return f"{100 * predicted[int(tag.group(1))]:.6f}"

    judge = jurist.LLMJudge(jurist.get_model("mock:unieval", outputs=answer), "continuous")
    items = [
        {"prompt": r["source"][-200:], "response": f"[{i}] {r['system_output']}", "human": y}
        for i, (r, y) in enumerate(zip(topical, human, strict=True))
    ]
    run = jurist.evaluate(items, judge, run_dir=tmp_path / "run")
    from jurist.cli._calibrate import calibrate_run

    report = calibrate_run(run, "human", kind="interval", n_resamples=300)
    before, after = report.before["rmse"], report.after["rmse"]
    print(f"{dimension}: held-out RMSE {before} -> {after}; gain {report.gains['rmse']}")
    assert (report.n_calibration, report.n_test) == (180, 180)
    assert after.value < before.value and report.supported
    # a monotone map keeps the ranking: the rank correlations barely move
    rho_before, rho_after = report.before["spearman"].value, report.after["spearman"].value
    assert abs(rho_after - rho_before) < 0.1


def test_records_hold_the_input_then_the_calibrated_and_raw_figures() -> None:
    inner = jurist.LLMJudge(jurist.get_model("mock:j", outputs=["5", "3", "??"]), "likert")
    judge = CalibratedJudge(inner, _calibration())
    items = [{"prompt": f"q{i}", "response": "a", "human": i} for i in range(3)]
    rows = judge.judge_sync(items, concurrency=1).to_records()
    assert [r["human"] for r in rows] == [0, 1, 2]  # the input fields first, untouched
    assert [r["judge_verdict"] for r in rows] == [5.0, 2.0, None]
    assert [r["judge_raw_verdict"] for r in rows] == [5.0, 3.0, None]
    assert [r["judge_score"] for r in rows] == [1.0, 0.25, None]
    assert rows[2]["judge_error"].startswith("parse:")
