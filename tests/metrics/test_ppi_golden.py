"""PPI++ intervals on real judges and real people (issue 35): Trust-or-Escalate's 500 pairs
(GPT-4-turbo's probabilities) and PandaLM's 999 pairs (three annotators, GPT-3.5's verdicts).

For 50, 100 and 200 labels, 4,000 draws of the labelled items each (vectorised: a few
seconds a set): the 95% PPI++ interval covers the truth (every item's label, averaged) in
at least 94% of the draws, and on Trust-or-Escalate it is at least 15% narrower than the
labels alone at 100 labels. Items chosen by the plan keep their coverage; how wide their
intervals are is measured, not asserted (docs/estimate.md gives the figures:
on these sets chosen items do not beat a uniform draw). The two-batch design
(pilot+chosen) runs 400 draws here; ``benchmarks/ppi_estimate.py`` runs 4,000.

The data is read from ../shared/realdata (never copied); the test skips without it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import ppi_estimate  # noqa: E402

ROOT: Path | None
try:
    ROOT = ppi_estimate.realdata()
except FileNotFoundError:
    ROOT = None
pytestmark = pytest.mark.skipif(ROOT is None, reason="../shared/realdata is absent")

DRAWS = 4000
SETS = {"toe": ppi_estimate.trust_or_escalate, "pandalm": ppi_estimate.pandalm}


@pytest.fixture(scope="module")
def results() -> dict[tuple[str, int], dict[str, dict[str, float]]]:
    assert ROOT is not None
    out = {}
    for name, load in SETS.items():
        data = load(ROOT)
        for n in ppi_estimate.BUDGETS:
            out[name, n] = ppi_estimate.study(data, n, DRAWS, seed=0, pilot_reps=400)
    return out


@pytest.mark.parametrize("name", sorted(SETS))
@pytest.mark.parametrize("n", ppi_estimate.BUDGETS)
def test_the_ppi_interval_covers_the_truth_in_at_least_94_percent_of_draws(
    results: dict[tuple[str, int], dict[str, dict[str, float]]], name: str, n: int
) -> None:
    res = results[name, n]
    assert res["PPI++"]["coverage"] >= 0.94, res
    assert res["chosen"]["coverage"] >= 0.94, res
    assert res["PPI++"]["width"] < res["labels only"]["width"], res


def test_at_100_labels_ppi_is_at_least_15_percent_narrower_on_trust_or_escalate(
    results: dict[tuple[str, int], dict[str, dict[str, float]]],
) -> None:
    res = results["toe", 100]
    gain = 1 - res["PPI++"]["width"] / res["labels only"]["width"]
    assert gain >= 0.15, res
    # the issue measured 0.161 against 0.196
    assert (
        abs(res["PPI++"]["width"] - 0.161) < 0.01
        and abs(res["labels only"]["width"] - 0.196) < 0.01
    )


def test_the_two_batch_plan_is_refused_below_30_labels_a_batch_and_covers_above(
    results: dict[tuple[str, int], dict[str, dict[str, float]]],
) -> None:
    for name in SETS:
        assert "pilot+chosen" not in results[name, 50]
        for n in (100, 200):
            assert results[name, n]["pilot+chosen"]["coverage"] >= 0.93, (name, n)
