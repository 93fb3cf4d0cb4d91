"""Golden: PandaLM's inter-annotator Cohen's kappas (0.85 / 0.88 / 0.86, as published).

PandaLM's README gives the pairwise Cohen's kappa of its three human annotators on
``data/testset-v1.json`` (999 pairs, labels 0 tie / 1 / 2) rounded to two decimals.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jurist.metrics import agreement, cohen_kappa, fleiss_kappa, krippendorff_alpha

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
TESTSET = REALDATA / "PandaLM" / "data" / "testset-v1.json"
PUBLISHED = {(1, 2): 0.85, (1, 3): 0.88, (2, 3): 0.86}


@pytest.fixture(scope="module")
def annotators() -> dict[int, list[int]]:
    if not TESTSET.exists():
        pytest.skip(f"{TESTSET} is absent (../shared/realdata is not here)")
    rows = json.loads(TESTSET.read_text())
    assert len(rows) == 999
    return {k: [r[f"annotator{k}"] for r in rows] for k in (1, 2, 3)}


@pytest.mark.parametrize(("a", "b"), sorted(PUBLISHED))
def test_annotator_pair_kappa(annotators: dict[int, list[int]], a: int, b: int) -> None:
    kappa = cohen_kappa(annotators[a], annotators[b])
    assert round(kappa, 2) == PUBLISHED[(a, b)]


def test_label_distribution_matches_the_readme(annotators: dict[int, list[int]]) -> None:
    # the README's table (105 ties, 422 for response 1, 472 for response 2) is the
    # annotators' majority label
    majority = []
    for votes in zip(annotators[1], annotators[2], annotators[3], strict=True):
        top = max(set(votes), key=votes.count)
        assert votes.count(top) >= 2
        majority.append(top)
    assert {v: majority.count(v) for v in (0, 1, 2)} == {0: 105, 1: 422, 2: 472}


def test_three_annotators_together(annotators: dict[int, list[int]]) -> None:
    rows = list(zip(annotators[1], annotators[2], annotators[3], strict=True))
    fleiss = fleiss_kappa(rows)
    alpha = krippendorff_alpha([annotators[1], annotators[2], annotators[3]], level="nominal")
    pairwise = [cohen_kappa(annotators[a], annotators[b]) for a, b in PUBLISHED]
    # multi-rater figures sit within the range of the pairwise ones
    assert min(pairwise) - 0.01 <= fleiss <= max(pairwise) + 0.01
    assert abs(alpha - fleiss) < 0.01
    res = agreement(annotators[1], annotators[2], kind="nominal", n_resamples=200)
    est = res["cohen_kappa"]
    assert est.low is not None and est.high is not None
    assert est.low < est.value < est.high and round(est.value, 2) == 0.85
