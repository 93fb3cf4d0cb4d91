"""``jurist estimate`` and ``jurist gate --labels`` (issue 35) on a judge biased by a
planted amount, judged for real by the mock model through :func:`jurist.evaluate`.

The run has 600 items; an item is truly correct (its ``human`` label 1) with probability
0.6. The judge says ``Correct`` for 95% of the correct items and, its planted bias, for
40% of the wrong ones, so its mean score is about 0.13 above the truth. People labelled a
random 150 of the items (``human`` on those, absent elsewhere). The corrected interval must
cover the true rate (the mean of every item's label, known here); the judge's own must not.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import jurist
from jurist.cli import EXIT_OK, EXIT_USAGE
from jurist.cli._gate import EXIT_GATE_FAILED
from jurist.runs import Run
from jurist.runs._estimate import estimate_run
from jurist.runs._labels import LABELS_NAME
from jurist.runs._plan import read_plan
from jurist.types import Request
from tests._cli_run import run as cli

N, LABELLED = 600, 150


def _truth_and_verdicts(seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = (rng.random(N) < 0.6).astype(int)
    says = np.where(truth == 1, rng.random(N) < 0.95, rng.random(N) < 0.40)
    labelled = np.zeros(N, dtype=bool)
    labelled[rng.choice(N, LABELLED, replace=False)] = True
    return truth, says, labelled


@pytest.fixture(scope="module")
def biased(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    truth, says, labelled = _truth_and_verdicts()
    folder = tmp_path_factory.mktemp("est") / "run"

    def answer(request: Request) -> str:
        i = int(request.messages[-1].content.split("ITEM-")[1].split("-")[0])
        return "Correct" if says[i] else "Incorrect"

    items = []
    for i in range(N):
        item = {"id": f"q{i}", "prompt": f"ITEM-{i}-", "response": "x", "topic": f"t{i % 2}"}
        if labelled[i]:
            item["human"] = int(truth[i])
        items.append(item)
    judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=answer))
    jurist.evaluate(items, judge, run_dir=folder)
    return folder, float(truth.mean())


def test_the_corrected_interval_covers_the_truth_and_the_judges_does_not(
    biased: tuple[Path, float], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, truth = biased
    out = tmp_path / "est.json"
    code, text = cli(["estimate", str(folder), "--labels", "human", "--json", str(out)], capsys)
    assert code == EXIT_OK, text
    got = json.loads(out.read_text())
    assert got["labels"] == LABELLED and got["items"] == N
    assert got["lower"] <= truth <= got["upper"]
    judge = got["judge_only"]
    assert not judge["lower"] <= truth <= judge["upper"]
    assert judge["estimate"] - truth > 0.08  # the planted bias shows in the judge alone
    assert got["labels_only"]["lower"] <= truth <= got["labels_only"]["upper"]
    assert got["labels_only"]["labels"] == LABELLED and judge["labels"] == 0
    assert got["upper"] - got["lower"] < got["labels_only"]["upper"] - got["labels_only"]["lower"]
    assert "corrected (PPI++)" in text and "judge only" in text


def test_bootstrap_and_strata_agree_with_the_analytic_interval(biased: tuple[Path, float]) -> None:
    folder, truth = biased
    run = Run(folder)
    analytic = estimate_run(run, "human").result
    boot = estimate_run(run, "human", method="bootstrap", n_resamples=1000).result
    strat = estimate_run(run, "human", strata="topic").result
    assert boot.estimate == analytic.estimate
    assert abs(boot.width - analytic.width) < 0.25 * analytic.width
    assert boot.lower <= truth <= boot.upper
    assert strat.strata is not None and set(strat.strata) == {"t0", "t1"}
    assert sum(s.labels for s in strat.strata.values()) == LABELLED
    assert strat.lower <= truth <= strat.upper


def test_gate_on_labels_fails_a_run_the_judge_alone_passes(
    biased: tuple[Path, float], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, truth = biased
    bar = "0.66"  # the truth is about 0.6; the judge alone says about 0.73
    assert truth < float(bar)
    code, text = cli(["gate", str(folder), "--min-score", bar], capsys)
    assert code == EXIT_OK and "✅ pass" in text
    code, text = cli(["gate", str(folder), "--min-score", bar, "--labels", "human"], capsys)
    assert code == EXIT_GATE_FAILED, text
    assert "mean score corrected by 150 labels" in text and "The judge alone:" in text


def _label_lines(folder: Path, items: list[int], truth: np.ndarray) -> str:
    from jurist.runs._folder import STORE_NAME
    from jurist.runs._store import RunStore

    store = RunStore(folder / STORE_NAME, readonly=True)
    try:
        return "".join(
            json.dumps(
                {
                    "item": f"q{i}",
                    "item_hash": store.hash_of(i),
                    "label": int(truth[i]),
                    "annotator": "ana",
                    "at": "2026-12-02T04:00:00Z",
                    "note": None,
                }
            )
            + "\n"
            for i in items
        )
    finally:
        store.close()


def test_labels_from_a_file_need_a_plan_and_a_plan_gives_an_unbiased_estimate(
    tmp_path: Path, biased: tuple[Path, float], capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from jurist.cli._review_plan import make_plan

    src, truth_rate = biased
    folder = tmp_path / "run"
    shutil.copytree(src, folder)
    truth, _, _ = _truth_and_verdicts()
    # labels a person picked (the first 80 items, in data order) without a plan: refused
    (folder / LABELS_NAME).write_text(_label_lines(folder, list(range(80)), truth))
    code, text = cli(["estimate", str(folder), "--labels", LABELS_NAME], capsys)
    assert code == EXIT_USAGE and "not a random sample" in text and "--plan" in text
    # the same items with the probability each was drawn with (every one 80/600): weighted
    lines = _label_lines(folder, list(range(80)), truth).replace(
        '"note": null', f'"note": null, "inclusion_probability": {80 / N}'
    )
    (folder / LABELS_NAME).write_text(lines)
    est = estimate_run(Run(folder), LABELS_NAME, min_labels=30)
    assert est.result.design == "weighted" and est.result.labels == 80
    assert any("carries its inclusion probability" in n for n in est.notes)
    (folder / LABELS_NAME).unlink()
    plan = make_plan(folder, 120, seed=3, target_width=0.1)
    assert plan.planned == 120 and plan.spread == "judge uncertainty"
    entries = read_plan(folder)
    assert entries is not None and [e.rank for e in entries] == list(range(1, 121))
    assert all(0 < e.inclusion_probability <= 1 for e in entries)
    # the annotator labels the first 100 of the plan, in its order
    planned = [int(str(e.item)[1:]) for e in entries[:100]]
    (folder / LABELS_NAME).write_text(_label_lines(folder, planned, truth))
    out = tmp_path / "plan.json"
    code, text = cli(["estimate", str(folder), "--labels", LABELS_NAME, "--json", str(out)], capsys)
    assert code == EXIT_OK, text
    got = json.loads(out.read_text())
    assert got["design"] == "weighted" and got["labels"] == 100
    assert got["lower"] <= truth_rate <= got["upper"]
    assert not got["judge_only"]["lower"] <= truth_rate <= got["judge_only"]["upper"]
    assert any("100 of 120 planned items labelled" in n for n in got["notes"])
    # 60 more labels on random items outside the plan: left out, unless said to be random
    rest = [i for i in range(N) if i not in {int(str(e.item)[1:]) for e in entries}]
    extra = [int(i) for i in np.random.default_rng(5).choice(rest, 60, replace=False)]
    (folder / LABELS_NAME).write_text(_label_lines(folder, planned + extra, truth))
    code, text = cli(["estimate", str(folder), "--labels", LABELS_NAME, "--json", str(out)], capsys)
    got = json.loads(out.read_text())
    assert code == EXIT_OK and got["labels"] == 100 and got["left_out"] == 60
    args = ["estimate", str(folder), "--labels", LABELS_NAME, "--random-subset", "--json", str(out)]
    code, text = cli(args, capsys)
    both = json.loads(out.read_text())
    assert code == EXIT_OK and both["labels"] == 160 and both["left_out"] == 0
    assert both["lower"] <= truth_rate <= both["upper"]
    assert any("outside the plan used as a uniform batch" in n for n in both["notes"])


def test_refusals_name_the_reason(
    biased: tuple[Path, float], capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _ = biased
    code, text = cli(["estimate", str(folder), "--labels", "human", "--min-labels", "200"], capsys)
    assert code == EXIT_USAGE and "150 labels; an interval from labels needs at least 200" in text
    code, text = cli(["estimate", str(folder), "--labels", "nope"], capsys)
    assert code == EXIT_USAGE and "no item has a field 'nope'" in text


def test_a_plan_from_the_labels_so_far_says_what_a_width_needs(
    tmp_path: Path, biased: tuple[Path, float], capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from jurist.cli._review_plan import run_plan

    src, _ = biased
    folder = tmp_path / "run"
    shutil.copytree(src, folder)
    assert run_plan(folder, 50, labels="human", target_width=0.1, seed=1) == EXIT_OK
    text = " ".join(capsys.readouterr().out.split())
    assert "plan: 50 items to label, in order" in text
    assert "probabilities from: labels so far" in text
    assert "an interval 0.1 wide needs about" in text and "from 150 labels so far" in text
    entries = read_plan(folder)
    assert entries is not None and len(entries) == 50
    assert {e.spread for e in entries} == {"labels so far"}
    run_plan(folder, 40, by="uniform", seed=2)
    entries = read_plan(folder)
    assert entries is not None and len(entries) == 40  # a new plan replaces the old
    assert {round(e.inclusion_probability, 9) for e in entries} == {round(40 / N, 9)}


def test_a_pairwise_runs_win_rate_is_corrected_by_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(11)
    n = 300
    human = np.where(rng.random(n) < 0.45, "A", "B")
    # the judge prefers the first response of the data (R1) on every A item and, its
    # planted bias, on 40% of the B items
    likes_r1 = (human == "A") | (rng.random(n) < 0.40)
    labelled = np.zeros(n, dtype=bool)
    labelled[rng.choice(n, 120, replace=False)] = True

    def answer(request: Request) -> str:
        text = request.messages[-1].content
        a = text.split("<answer_a>")[1].split("</answer_a>")[0]
        i = int(a.split("-")[1])
        first_is_r1 = a.startswith("R1")
        return "[[A]]" if likes_r1[i] == first_is_r1 else "[[B]]"

    items = []
    for i in range(n):
        item = {"prompt": f"q{i}", "response_a": f"R1-{i}-", "response_b": f"R2-{i}-"}
        if labelled[i]:
            item["human"] = str(human[i])
        items.append(item)
    judge = jurist.PairwiseJudge(jurist.get_model("mock:p", outputs=answer))
    folder = tmp_path / "pairs"
    jurist.evaluate(items, judge, run_dir=folder)
    out = tmp_path / "w.json"
    code, text = cli(["estimate", str(folder), "--labels", "human", "--json", str(out)], capsys)
    assert code == EXIT_OK, text
    got = json.loads(out.read_text())
    truth = float(np.mean(human == "A"))
    assert got["kind"] == "win_rate" and got["labels"] == 120
    assert got["lower"] <= truth <= got["upper"]
    assert not got["judge_only"]["lower"] <= truth <= got["judge_only"]["upper"]


def test_a_suites_corrected_mean_bar_reads_the_corrected_interval(
    biased: tuple[Path, float],
) -> None:
    from jurist.pipeline.suites._bars import check_bars
    from jurist.pipeline.suites._model import CorrectedMeanBar, MeanScoreBar, Settings
    from jurist.runs import Run

    folder, truth = biased  # the judge says 0.74, the truth is about 0.59
    bars = [
        MeanScoreBar(mean_score=0.66),
        CorrectedMeanBar(corrected_mean=0.66, labels="human"),
        CorrectedMeanBar(corrected_mean=0.66, labels="nobody"),
    ]
    judged, corrected, unlabelled = check_bars(
        Run(folder), bars, Settings(), dataset="d", judge="j", resolve=Path
    )
    assert judged.outcome == "pass"  # on the judge alone the biased run clears the bar
    assert corrected.outcome == "fail" and corrected.high is not None
    assert corrected.low is not None and corrected.low <= truth <= corrected.high
    assert unlabelled.outcome == "fail" and unlabelled.note  # no labels: refused, with why
