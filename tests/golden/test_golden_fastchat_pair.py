"""Golden: FastChat's 75 recorded GPT-4 pairwise judgments replayed through PairwiseJudge.

Each record holds the judge's text for both orders (``g1``: model_1 shown as A; ``g2``:
swapped) and the winners FastChat read from them, already mapped back to model_1 /
model_2. A scripted model returns the recorded text for whichever order it is asked, so
the whole path runs: rendering both orders, reading the verdict with the ``mt_bench_pair``
template, mapping the swapped verdict back, and the consistency rule. FastChat's combined
outcome (``show_result.py``, pairwise mode) drops rows with an error in either order and
counts a pair as a tie when g1 is a tie or the orders disagree; that is
``consistency="tie"``. No record's verdict is read differently from FastChat.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jurist.judges import PairwiseJudge
from jurist.models import MockModel

PAIRS = (
    Path(__file__).resolve().parents[3]
    / "shared/realdata/Stefanstud-FastChat/fastchat/llm_judge/data/mt_bench/model_judgment"
    / "gpt-4_pair.jsonl"
)

_Q = "[User Question]\n"
_A_START, _A_END = "[The Start of Assistant A's Answer]\n", "\n[The End of Assistant A's Answer]"
_B_START, _B_END = "[The Start of Assistant B's Answer]\n", "\n[The End of Assistant B's Answer]"


def _between(text: str, start: str, end: str) -> str:
    i = text.index(start) + len(start)
    return text[i : text.index(end, i)]


def _records() -> list[dict[str, Any]]:
    if not PAIRS.exists():
        pytest.skip(f"real data not present: {PAIRS}")
    return [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line]


def _item(record: dict[str, Any]) -> dict[str, str]:
    prompt = record["g1_user_prompt"]
    question = _between(prompt, _Q, "\n\n[The Start of Assistant A's Answer]")
    return {
        "prompt": question,
        "response_a": _between(prompt, _A_START, _A_END),  # model_1 is A in g1
        "response_b": _between(prompt, _B_START, _B_END),
    }


def _fastchat_combined(record: dict[str, Any]) -> str | None:
    g1, g2 = record["g1_winner"], record["g2_winner"]
    if "error" in (g1, g2):
        return None  # dropped by show_result.py
    if g1 == "tie" or g1 != g2:
        return "tie"
    return str(g1)


def test_fastchat_pairwise_records_replay() -> None:
    records = _records()
    assert len(records) == 75
    items = [_item(r) for r in records]
    keys = {(i["prompt"], i["response_a"], i["response_b"]) for i in items}
    assert len(keys) == 75 and all(i["response_a"] != i["response_b"] for i in items)

    judge = PairwiseJudge(
        MockModel("gpt-4-replay", outputs=lambda r: script[r.messages[-1].content])
    )
    script: dict[str, str] = {}  # the exact message the judge sends -> the recorded reply
    for item, record in zip(items, records, strict=True):
        swapped = {**item, "response_a": item["response_b"], "response_b": item["response_a"]}
        script[judge.llm_judge.messages(item)[-1].content] = record["g1_judgment"]
        script[judge.llm_judge.messages(swapped)[-1].content] = record["g2_judgment"]
    assert len(script) == 150
    results = judge.judge_sync(items, concurrency=8)

    side = {"A": "model_1", "B": "model_2", "tie": "tie"}
    for k, (pair, record) in enumerate(zip(results, records, strict=True)):
        assert pair.swapped is not None
        orders = []
        for judgment, pref in zip((pair.forward, pair.swapped), pair.preferences, strict=True):
            if judgment.score is None:
                orders.append("error")
            else:
                assert pref is not None
                orders.append(side["A" if pref > 0.5 else "B" if pref < 0.5 else "tie"])
        assert orders == [record["g1_winner"], record["g2_winner"]], k
        expected = _fastchat_combined(record)
        if expected is None:
            assert pair.score is None and pair.error is not None and pair.error.startswith("parse")
        else:
            assert pair.winner is not None and side[pair.winner] == expected, k

    kept = [r for r in records if _fastchat_combined(r) is not None]
    wins = sum(_fastchat_combined(r) == "model_1" for r in kept)
    ties = sum(_fastchat_combined(r) == "tie" for r in kept)
    s = results.summary()
    assert (s.n_failed, s.n_counted) == (75 - len(kept), len(kept)) == (2, 73)
    assert s.n_a == wins and s.n_tie == ties
    # FastChat's adjusted win rate of model_1: (win + tie / 2) / (win + loss + tie)
    assert s.win_rate == pytest.approx((wins + 0.5 * ties) / len(kept))
    assert s.n_consistent == sum(r["g1_winner"] == r["g2_winner"] for r in kept)
