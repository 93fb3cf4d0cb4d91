"""Golden: a leaderboard over AlpacaEval's own recorded annotations, end to end.

13 systems' ``weighted_alpaca_eval_gpt4_turbo`` annotations (802-805 GPT-4-turbo
preferences each against gpt4_1106_preview, with both outputs) are replayed as a pairwise run: a
pairwise judge on a 0-1 scale whose scripted model answers each pair with the recorded
preference for the system, over pairs that name their two systems, through
:func:`jurist.evaluate` into a real run store. :func:`jurist.runs.leaderboard` then reads
the run back: its raw win rates must equal the published ``win_rate`` to 0.01 for every
system (the preference read from the system's side, every item counted), its lengths
are the outputs' characters, and its length control must bring the concise and verbose
variants of alpaca-7b closer together than the raw rates, as AlpacaEval reports.

The data is read from ../shared/realdata (never copied); the test skips without it.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.runs import Leaderboard, leaderboard
from jurist.templates import NumericScale, Template
from jurist.types import Request

ALPACA = Path(__file__).resolve().parents[3] / "shared" / "realdata" / "alpaca_eval"
PUBLISHED = (
    ALPACA / "src/alpaca_eval/leaderboards/data_AlpacaEval_2"
    "/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"
)
ANNOTATIONS = "weighted_alpaca_eval_gpt4_turbo/annotations.json"
SYSTEMS = sorted(p.parent.parent.name for p in ALPACA.glob(f"results/*/{ANNOTATIONS}"))
BASELINE = "gpt4_1106_preview"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not PUBLISHED.exists(), reason="../shared/realdata is absent"),
]

REPLAY = Template(
    name="replay",
    kind="pairwise",
    instructions="How likely is answer A better than answer B? Say a probability.",
    item="{prompt}\n<a>{response_a}</a>\n<b>{response_b}</b>",
    fields=("prompt", "response_a", "response_b"),
    scale=NumericScale(low=0.0, high=1.0),
)


def _pairs() -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The pairs (the system as A, the baseline as B) and each pair's recorded preference
    for the system, keyed by the tag its prompt starts with."""
    pairs: list[dict[str, Any]] = []
    preference: dict[str, float] = {}
    for system in SYSTEMS:
        records = json.loads((ALPACA / "results" / system / ANNOTATIONS).read_text())
        for i, r in enumerate(records):
            assert r["generator_1"] == BASELINE and r["generator_2"] == system
            tag = f"[{system}/{i}]"
            p = float(r["preference"])
            preference[tag] = 0.5 if p == 0 else p - 1  # AlpacaEval: 1-2 (2: output_2), 0 a draw
            pairs.append(
                {
                    "prompt": f"{tag}\n{r['instruction']}",
                    "response_a": r["output_2"],
                    "response_b": r["output_1"],
                    "system_a": system,
                    "system_b": BASELINE,
                    "item": r["instruction"],
                }
            )
    return pairs, preference


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Leaderboard:
    pairs, preference = _pairs()

    def replay(request: Request) -> str:
        found = re.match(r"\[[^\]]+\]", request.messages[-1].content)
        assert found is not None
        return f"{preference[found.group(0)]:.17f}"  # fixed point: the parser reads no 1e-05

    judge = jurist.PairwiseJudge(
        jurist.get_model("mock:replay", outputs=replay), template=REPLAY, swap=False
    )
    folder = tmp_path_factory.mktemp("alpaca") / "run"
    run = jurist.evaluate(pairs, judge, run_dir=folder, progress=False, concurrency=64)
    board = leaderboard([run], bootstrap=0)
    assert len(SYSTEMS) == 13 and board.runs[0].battles == len(pairs)
    return board


def _published() -> dict[str, dict[str, str]]:
    with PUBLISHED.open(newline="") as f:
        return {row[""]: row for row in csv.DictReader(f)}


def test_leaderboard_of_alpaca_eval_annotations(board: Leaderboard) -> None:
    assert board.baseline == BASELINE
    assert board.lc_difficulty == "joint" and not board.notes
    published = _published()
    rows = {r.system: r for r in board.rows}
    for system in SYSTEMS:
        row = rows[system]
        assert row.pairs_vs_baseline == int(published[system]["n_total"])
        assert row.win_rate == pytest.approx(float(published[system]["win_rate"]), abs=0.01)
        assert row.win_rate_se == pytest.approx(
            float(published[system]["standard_error"]), abs=0.01
        )
    concise, verbose = rows["alpaca-7b_concise"], rows["alpaca-7b_verbose"]
    assert concise.mean_length < rows["alpaca-7b"].mean_length < verbose.mean_length
    assert None not in (concise.lc_win_rate, verbose.lc_win_rate)
    raw_gap = abs(verbose.win_rate - concise.win_rate)  # type: ignore[operator]
    lc_gap = abs(verbose.lc_win_rate - concise.lc_win_rate)  # type: ignore[operator]
    assert lc_gap < raw_gap


def test_length_controlled_rates_near_the_published_ones(board: Leaderboard) -> None:
    """Within 2 points of AlpacaEval's published LC win rate, but text_davinci_001 (whose
    published fit leans on annotations outside AlpacaEval's repository; see
    tests/golden/test_winrate_golden.py)."""
    published = _published()
    for row in board.rows:
        if row.system in (BASELINE, "text_davinci_001"):
            continue
        expected = float(published[row.system]["length_controlled_winrate"])
        assert row.lc_win_rate == pytest.approx(expected, abs=2.0), row.system
