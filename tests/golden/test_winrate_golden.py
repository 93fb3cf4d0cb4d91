"""Golden: win rates, length-controlled win rates and Bradley-Terry intervals against the
figures AlpacaEval and Arena-Hard-Auto published (issue 23, item 2).

AlpacaEval: 13 systems' recorded ``weighted_alpaca_eval_gpt4_turbo`` annotations (805
GPT-4-turbo preferences each against gpt4_1106_preview, both outputs, so lengths can be
counted in characters as AlpacaEval counts them) and the leaderboard CSV with the published
``win_rate``, ``standard_error`` and ``length_controlled_winrate``; the length-controlled
GLM's published per-system weights are checked against ours.

Arena-Hard-Auto: 28 models' 1,000 published bootstrap scores (and 100 Elo-scale bootstrap
ratings) with the published 95% intervals.

The data is read from ../shared/realdata (never copied); the tests skip without it.
"""

from __future__ import annotations

import csv
import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jurist.metrics import (
    LengthControlledFit,
    bootstrap_interval,
    fit_length_controlled,
    length_controlled_win_rate,
    preference_from_alpaca,
    spearman,
    win_rate,
    win_rate_from_ratings,
)

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
ALPACA = REALDATA / "alpaca_eval"
LEADERBOARD = (
    ALPACA / "src/alpaca_eval/leaderboards/data_AlpacaEval_2"
    "/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"
)
WEIGHTS = (
    ALPACA / "src/alpaca_eval/metrics/weights/weighted_alpaca_eval_gpt4_turbo"
    "/length_controlled_v1/baseline_gpt4_1106_preview.csv"
)
ARENA = REALDATA / "arena-hard-auto" / "notebook"
SYSTEMS = [
    "FuseChat-Llama-3.1-8B-Instruct", "OpenHermes-2.5-Mistral-7B", "Qwen-14B-Chat",
    "alpaca-7b", "alpaca-7b_concise", "alpaca-7b_verbose", "claude-2", "gemma-2b-it",
    "gpt-3.5-turbo-0301", "oasst-sft-pythia-12b", "text_davinci_001", "vicuna-7b",
    "wizardlm-13b",
]  # fmt: skip
# AlpacaEval pins each system's length weight with annotations of "gamed" baselines that are
# not in its repository; text_davinci_001's published fit leans on them hardest (its
# instruction-difficulty weight is 0.43 where the others' are 0.58-1.15), and ours misses
# its published LC win rate by 3.6 points. The other twelve are within 2.
LC_EXCEPTION = "text_davinci_001"

alpaca = pytest.mark.skipif(not LEADERBOARD.exists(), reason="../shared/realdata is absent")
arena = pytest.mark.skipif(not ARENA.exists(), reason="../shared/realdata is absent")


def _csv(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as f:
        return {row[""]: row for row in csv.DictReader(f)}


@cache
def _annotations(system: str) -> dict[str, list[Any]]:
    path = ALPACA / "results" / system / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
    records = json.loads(path.read_text())
    assert {r["generator_1"] for r in records} == {"gpt4_1106_preview"}
    return {
        "preference": [float(r["preference"]) for r in records],
        "system_length": [len(r["output_2"]) for r in records],
        "baseline_length": [len(r["output_1"]) for r in records],
        "instruction": [r["instruction"] for r in records],
    }


@cache
def _joint_fit() -> LengthControlledFit:
    data = {s: _annotations(s) for s in SYSTEMS}
    return fit_length_controlled(
        {s: preference_from_alpaca(d["preference"]) for s, d in data.items()},
        {s: d["system_length"] for s, d in data.items()},
        {s: d["baseline_length"] for s, d in data.items()},
        items={s: d["instruction"] for s, d in data.items()},
    )


@alpaca
@pytest.mark.parametrize("system", SYSTEMS)
def test_win_rate_equals_the_published_leaderboard(system: str) -> None:
    published = _csv(LEADERBOARD)[system]
    wr = win_rate(preference_from_alpaca(_annotations(system)["preference"]))
    assert wr.value == pytest.approx(float(published["win_rate"]), abs=0.01)
    assert wr.standard_error == pytest.approx(float(published["standard_error"]), abs=0.01)
    assert wr.n == int(float(published["n_total"]))
    assert wr.n_draws == int(float(published["n_draws"]))
    assert wr.n_wins == int(float(published["n_wins"]))


@alpaca
def test_length_controlled_win_rate_is_near_the_published_one_and_keeps_the_ranking() -> None:
    published = _csv(LEADERBOARD)
    fit = _joint_fit()
    assert fit.converged
    ours = np.array([fit[s].value for s in SYSTEMS])
    theirs = np.array([float(published[s]["length_controlled_winrate"]) for s in SYSTEMS])
    gap = dict(zip(SYSTEMS, np.abs(ours - theirs), strict=True))
    assert {s: g for s, g in gap.items() if g >= 2.0 and s != LC_EXCEPTION} == {}
    assert gap[LC_EXCEPTION] < 4.0
    # The full ranking of the 13 is NOT preserved (Spearman 0.91): text_davinci_001 and
    # alpaca-7b_verbose fall among the six systems the published figures put between 4.4 and
    # 6.9, less than the published standard errors of their raw win rates apart. The six
    # systems above 9.5 keep their published order.
    assert spearman(ours.tolist(), theirs.tolist()) > 0.9
    top = [s for s in SYSTEMS if float(published[s]["length_controlled_winrate"]) > 9.5]
    assert sorted(top, key=lambda s: fit[s].value) == sorted(
        top, key=lambda s: float(published[s]["length_controlled_winrate"])
    )
    # every system's raw win rate is the published one, and length control lifts each of
    # these (all far shorter than gpt4_1106_preview's answers or losing on length)
    for s in SYSTEMS:
        assert fit[s].raw == pytest.approx(float(published[s]["win_rate"]), abs=0.01)
        assert fit[s].value > fit[s].raw


@alpaca
def test_fitted_glm_weights_agree_with_alpaca_evals_weights_file() -> None:
    weights = _csv(WEIGHTS)
    fit = _joint_fit()
    length = {s: -float(weights[s]["np.tanh(std_delta_len)"]) for s in SYSTEMS}  # sign: see docs
    for s in SYSTEMS:
        assert fit[s].length_coef > 0  # the judge favours the longer answer, as AlpacaEval found
        assert abs(fit[s].length_coef - length[s]) < 0.35, s
    # the model and difficulty weights depend on the scale of the difficulties, which
    # AlpacaEval estimated over its whole leaderboard; only the length weight is comparable


@alpaca
def test_length_control_brings_concise_and_verbose_alpaca_closer() -> None:
    fit = _joint_fit()
    concise, verbose = fit["alpaca-7b_concise"], fit["alpaca-7b_verbose"]
    raw_gap = verbose.raw - concise.raw
    lc_gap = verbose.value - concise.value
    assert raw_gap > 0
    assert abs(lc_gap) < raw_gap


@alpaca
def test_one_system_without_difficulty_is_documented_as_a_coarser_figure() -> None:
    # With one system the difficulty term is left out: for a system far below 50 the LC
    # figure then sits further from AlpacaEval's (here 9.5 against the published 5.9).
    published = float(_csv(LEADERBOARD)["alpaca-7b"]["length_controlled_winrate"])
    d = _annotations("alpaca-7b")
    one = length_controlled_win_rate(
        preference_from_alpaca(d["preference"]), d["system_length"], d["baseline_length"]
    )
    assert one.difficulty == "none"
    assert abs(one.value - published) > abs(_joint_fit()["alpaca-7b"].value - published)
    given = length_controlled_win_rate(
        preference_from_alpaca(d["preference"]),
        d["system_length"],
        d["baseline_length"],
        instruction_difficulty=[_joint_fit().difficulty[i] for i in d["instruction"]],
    )
    assert given.value == pytest.approx(_joint_fit()["alpaca-7b"].value, abs=1e-9)


def _jsonl(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ARENA / name).read_text().splitlines() if line]


@arena
@pytest.mark.parametrize(
    "name", ["bootstrap_stats_arena_hard.jsonl", "bootstrap_stats_arena_hard_bt.jsonl"]
)
def test_bootstrap_interval_reproduces_arena_hard_published_intervals(name: str) -> None:
    records = _jsonl(name)
    assert len(records) == 28
    for r in records:
        low, high = bootstrap_interval(r["results"], level=0.95)
        assert low == pytest.approx(r["lower"], abs=1e-6), r["model"]
        assert high == pytest.approx(r["upper"], abs=1e-6), r["model"]


@arena
def test_arena_hard_scores_are_win_rates_from_the_bt_ratings() -> None:
    bt = _jsonl("bootstrap_stats_arena_hard_bt.jsonl")
    ratings = {r["model"].lower(): r["score"] for r in bt}
    scores = win_rate_from_ratings(ratings, "gpt-4-0314")
    for r in _jsonl("bootstrap_stats_arena_hard.jsonl"):
        assert scores[r["model"].lower()] == pytest.approx(r["score"], abs=0.01), r["model"]


def _table() -> str:
    """The published and measured figures as docs/rankings.md shows them."""
    published, weights, fit = _csv(LEADERBOARD), _csv(WEIGHTS), _joint_fit()
    lines = [
        "| system | win rate published | ours | LC published | LC ours (joint) | gap | LC alone "
        "| length weight published | ours |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in sorted(SYSTEMS, key=lambda s: -float(published[s]["length_controlled_winrate"])):
        d = _annotations(s)
        p = preference_from_alpaca(d["preference"])
        alone = length_controlled_win_rate(p, d["system_length"], d["baseline_length"])
        lc, pub = fit[s], float(published[s]["length_controlled_winrate"])
        lines.append(
            f"| {s} | {float(published[s]['win_rate']):.2f} | {win_rate(p).value:.2f} "
            f"| {pub:.2f} | {lc.value:.2f} ± {lc.standard_error:.2f} | {lc.value - pub:+.2f} "
            f"| {alone.value:.2f} | {-float(weights[s]['np.tanh(std_delta_len)']):.2f} "
            f"| {lc.length_coef:.2f} |"
        )
    return "\n".join(lines)


@alpaca
def test_the_docs_table_is_the_measured_one() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "rankings.md"
    assert _table() in docs.read_text()


if __name__ == "__main__":  # PYTHONPATH=src python -m tests.golden.test_winrate_golden
    print(_table())
