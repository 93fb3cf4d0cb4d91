"""The guarantee on the Trust-or-Escalate paper's own calibration files (Jung et al., ICLR
2025): 500 Chatbot Arena pairs with human preferences and the probabilities of Mistral-7B,
GPT-3.5 and GPT-4. Over random 50/50 calibration/test splits, at target 0.85 and delta
0.1, each judge and the cascade mistral -> gpt-3.5 -> gpt-4 keep their promise, with a
useful coverage. benchmarks/selective.py runs the same with 200 splits and more rows.

The data is read from ../shared/realdata (never copied); the test skips without it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from jurist.metrics import selective_threshold
from jurist.trust import fit_cascade, guarantee_study

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import selective  # noqa: E402

FOLDER: Path | None
try:
    FOLDER = selective.realdata()
except FileNotFoundError:
    FOLDER = None
pytestmark = pytest.mark.skipif(FOLDER is None, reason="../shared/realdata is absent")

TARGET, DELTA = 0.85, 0.1


@pytest.fixture(scope="module")
def data() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    assert FOLDER is not None
    return selective.load(FOLDER)


def test_the_files_are_the_papers(
    data: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
) -> None:
    _, ok = data
    assert {j: len(ok[j]) for j in selective.JUDGES} == dict.fromkeys(selective.JUDGES, 500)
    # agreement with people when the judge never abstains
    assert [round(float(ok[j].mean()), 3) for j in selective.JUDGES] == [0.75, 0.756, 0.784]


@pytest.mark.parametrize(
    ("tiers", "min_coverage", "min_certified"),
    [
        (("mistral-7b-instruct",), 0.15, 0.5),
        (("gpt-3.5-turbo",), 0.35, 0.9),
        (("gpt-4-turbo",), 0.55, 0.95),
        (selective.JUDGES, 0.35, 0.9),
    ],
    ids=["mistral", "gpt-3.5", "gpt-4", "cascade"],
)
def test_the_guarantee_holds_over_random_splits(
    data: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
    tiers: tuple[str, ...],
    min_coverage: float,
    min_certified: float,
) -> None:
    conf, ok = data
    s = guarantee_study(
        [conf[t] for t in tiers],
        [ok[t] for t in tiers],
        target=TARGET,
        delta=DELTA,
        splits=40,
        seed=0,
    )
    # held-out agreement >= target, up to the test half's own noise (about 3 points)
    assert s.noise_se is not None and s.noise_se < 0.04
    assert s.pass_within_noise >= 1 - DELTA
    # and without test noise: the items as the population
    assert s.population_pass >= 1 - DELTA
    # far above what a judge exactly at the target would show on these test halves
    assert s.boundary_pass is not None and s.pass_raw > s.boundary_pass + 0.2
    # not by certifying nothing
    assert s.certified >= min_certified and s.coverage >= min_coverage


def test_the_papers_procedure_on_all_500(
    data: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
) -> None:
    """Fitted on all 500 (the paper's calibration size): the certified coverage of each
    judge; the cascade's first tier takes what Mistral is sure of, the rest goes on."""
    conf, ok = data
    got = {
        j: selective_threshold(conf[j], ok[j], target=TARGET, delta=DELTA) for j in selective.JUDGES
    }
    assert {j: (s.threshold, s.coverage) for j, s in got.items() if s is not None} == {
        "mistral-7b-instruct": (pytest.approx(0.909), 0.508),
        "gpt-3.5-turbo": (pytest.approx(0.801), 0.548),
        "gpt-4-turbo": (pytest.approx(0.914), 0.712),
    }
    fit = fit_cascade(
        [conf[j] for j in selective.JUDGES],
        [ok[j] for j in selective.JUDGES],
        target=TARGET,
        delta=DELTA,
        names=selective.JUDGES,
    )
    # Mistral decides 201 items, GPT-3.5 78 of the 299 left; GPT-4 certifies nothing on
    # the 221 hard ones left (they go to people)
    assert fit.thresholds == (pytest.approx(0.981), pytest.approx(0.97), None)
    assert [t.reached for t in fit.tiers] == [500, 299, 221]
    assert fit.coverage == pytest.approx(279 / 500)
    assert fit.agreement is not None and fit.agreement >= TARGET
