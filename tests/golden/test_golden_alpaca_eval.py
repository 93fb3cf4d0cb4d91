"""Golden: alpaca_eval's weighted GPT-4-turbo annotations, re-scored from their top logprobs.

alpaca_eval's ``weighted_alpaca_eval_gpt4_turbo`` annotator shows the two outputs as
models ``m`` (first) and ``M`` (second) and asks for one token, the better model's
identifier (configs.yaml: ``numerator_token: "m"``, ``denominator_tokens: ["m", "M"]``,
top-5 logprobs). Which output is shown first is switched per instruction with a seeded
coin (``random.Random("is_switched_outputs" + instruction + "0")``, alpaca_eval's rule
with its default seed 0), and ``preference`` is 1 + the probability that output_2 (the
model under test) is better. In jurist's terms that is a two-label verdict whose labels
score the preference for output_2 (``M`` -> 1 when output_2 is shown second, ``m`` -> 1
when it is shown first): ``preference = 1 + expected score``, with exact token matching.
The leaderboard's win rate is the mean of ``preference - 1`` in percent, annotations
without a completion counting as a draw (1.5), as alpaca_eval does.

The data is read from ../shared/realdata (never copied); the test skips without it.
"""

from __future__ import annotations

import ast
import csv
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from jurist.judges._logprob import distribution_from_tokens
from jurist.types import TokenLogprob, TopLogprob

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata" / "alpaca_eval"
ANNOTATIONS = REALDATA / "results/alpaca-7b/weighted_alpaca_eval_gpt4_turbo/annotations.json"
LEADERBOARD = (
    REALDATA
    / "src/alpaca_eval/leaderboards/data_AlpacaEval_2"
    / "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"
)

pytestmark = pytest.mark.skipif(not ANNOTATIONS.exists(), reason="../shared/realdata is absent")


def _labels(record: dict[str, Any]) -> dict[str, float]:
    """Each identifier's score: 1 for the one output_2 (the model under test) was shown as."""
    coin = random.Random("is_switched_outputs" + record["instruction"] + "0")
    switched = coin.choices([False, True], k=1)[0]
    return {"m": 1.0, "M": 0.0} if switched else {"m": 0.0, "M": 1.0}


def _tokens(raw: Any) -> list[TokenLogprob]:
    data = ast.literal_eval(raw) if isinstance(raw, str) else raw
    return [
        TokenLogprob(
            token=item["token"],
            logprob=item["logprob"],
            top=tuple(
                TopLogprob(token=t["token"], logprob=t["logprob"]) for t in item["top_logprobs"]
            ),
        )
        for item in data["logprobs"]["content"]
    ]


def _records() -> list[dict[str, Any]]:
    return list(json.loads(ANNOTATIONS.read_text()))


def test_preference_from_top_logprobs_matches_every_record() -> None:
    records = _records()
    with_logprobs = [r for r in records if r["raw_completion"] is not None]
    assert len(records) == 805 and len(with_logprobs) == 802
    worst = 0.0
    for r in with_logprobs:
        d = distribution_from_tokens(_tokens(r["raw_completion"]), 0, _labels(r), match="exact")
        assert d is not None, r["instruction"][:60]
        preference = 1.0 + d.expected
        worst = max(worst, abs(preference - float(r["preference"])))
        assert preference == pytest.approx(float(r["preference"]), abs=1e-6), r["instruction"][:60]
    assert worst < 1e-6


def test_default_matching_agrees_on_this_set() -> None:
    """jurist's default (whitespace-insensitive) matching also counts ' m' / ' M', which
    GPT-4-turbo gave almost no mass here: the two modes agree within 1e-6 on every record."""
    for r in _records():
        if r["raw_completion"] is None:
            continue
        tokens = _tokens(r["raw_completion"])
        exact = distribution_from_tokens(tokens, 0, _labels(r), match="exact")
        loose = distribution_from_tokens(tokens, 0, _labels(r))
        assert exact is not None and loose is not None
        assert loose.expected == pytest.approx(exact.expected, abs=1e-6)


def test_win_rate_reproduces_the_leaderboard() -> None:
    prefs: list[float] = []
    for r in _records():
        if r["raw_completion"] is None:
            prefs.append(1.5)  # alpaca_eval's value for an annotation it could not read
            continue
        d = distribution_from_tokens(_tokens(r["raw_completion"]), 0, _labels(r), match="exact")
        assert d is not None
        prefs.append(1.0 + d.expected)
    win_rate = 100.0 * sum(p - 1.0 for p in prefs) / len(prefs)
    with LEADERBOARD.open(newline="") as f:
        row = next(r for r in csv.DictReader(f) if r[""] == "alpaca-7b")
    published = float(row["win_rate"])
    assert math.isclose(win_rate, published, abs_tol=1e-9), (win_rate, published)
    assert int(row["n_total"]) == len(prefs)
