"""Golden: UniEval's published Topical-Chat turn-level correlations, to 6 decimals.

The figures are the table in UniEval's ``reproduce/README.md``; the scores are UniEval's
own predictions and the human ratings shipped with it (../shared/realdata/UniEval).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jurist.metrics import kendall_tau, pearson, spearman

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
UNIEVAL = REALDATA / "UniEval" / "reproduce"
DIMENSIONS = [
    "naturalness",
    "coherence",
    "engagingness",
    "groundedness",
    "understandability",
    "overall",
]


def published() -> dict[str, tuple[float, float, float]]:
    """The Topical-Chat table of the README: dimension -> (Pearson, Spearman, Kendall)."""
    text = (UNIEVAL / "README.md").read_text()
    block = text.split("Results for dialogue response generation should be:", 1)[1]
    block = block.split("```", 2)[1]
    table: dict[str, tuple[float, float, float]] = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"[\d.]+", cells[1]):
            table[cells[0]] = (float(cells[1]), float(cells[2]), float(cells[3]))
    return table


@pytest.fixture(scope="module")
def records() -> list[dict[str, dict[str, float]]]:
    path = UNIEVAL / "unieval_predict" / "dialogue" / "topical_chat_result.json"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/realdata is not here)")
    data: list[dict[str, dict[str, float]]] = json.loads(path.read_text())
    return data


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_topical_chat_correlations(
    records: list[dict[str, dict[str, float]]], dimension: str
) -> None:
    table = published()
    assert sorted(table) == sorted(DIMENSIONS)
    predicted = [r["predict_scores"][dimension] for r in records]
    human = [r["scores"][dimension] for r in records]
    assert len(predicted) == 360
    got = (pearson(predicted, human), spearman(predicted, human), kendall_tau(predicted, human))
    for value, expected in zip(got, table[dimension], strict=True):
        # the README prints 6 decimals with trailing zeros dropped (0.55651 is 0.556510)
        assert round(value, 6) == pytest.approx(expected, abs=1e-12)
