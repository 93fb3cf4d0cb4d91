"""Golden: jurist's MT-bench parsers reproduce FastChat's recorded GPT-4 verdicts.

Data: four FastChat forks' ``model_judgment`` files in ../shared/realdata (1,610 single
judgments, 75 pairwise records); skipped when that folder is absent.

Single: FastChat read the first ``[[x]]`` (or ``[x]``) number of any size, -1 when none.
jurist reads every ``[[x]]`` on the 1-10 whole-number scale; no verdict is -1 here.
Pairwise: FastChat looked for ``[[A]]``, ``[[B]]``, ``[[C]]`` (tie), "error" when none;
game 2 shows the answers swapped, so its A is model_2.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from jurist.templates import get_template

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
JUDGMENTS = "fastchat/llm_judge/data/mt_bench/model_judgment"
SINGLE_FILES = {
    "alvarobartt-FastChat": ("gpt-4_single.jsonl", 800),
    "Stefanstud-FastChat": ("gpt-4_single.jsonl", 160),
    "dreaming-panda-MTBench": ("gpt-4_single-origin.jsonl", 330),
    "muhan421-fastchat-eval": ("gpt-4_single.jsonl", 320),
}
PAIR_FILE = REALDATA / "Stefanstud-FastChat" / JUDGMENTS / "gpt-4_pair.jsonl"

# FastChat's judge prompt name -> the jurist template for that kind of record.
SINGLE_TEMPLATE = {
    "single-v1": "mt_bench",
    "single-math-v1": "mt_bench_reference",
    "single-v1-multi-turn": "mt_bench_multi_turn",
    "single-math-v1-multi-turn": "mt_bench_reference_multi_turn",
}
PAIR_TEMPLATE = {"pair-v2": "mt_bench_pair", "pair-math-v1": "mt_bench_pair"}

# Where our policy deliberately differs from FastChat, each record named by
# (folder, line in its file, question_id, model, turn); the files hold reruns, so the line
# tells records apart. All twelve are half-point ratings ("[[8.5]]", "[[9.5]]"): the
# mt_bench scale is the whole numbers 1-10 that the prompt asks for (and that logprob
# scoring weighs), and the policy reads only values the scale allows, so a half point is a
# parse failure (the judge is re-asked) where FastChat took any number it found.
HALF_POINT = "half-point rating on the whole-number 1-10 scale"
Key = tuple[str, int, int, str, int]
DELIBERATE: dict[Key, str] = {
    ("alvarobartt-FastChat", 17, 97, "mistral-orpo-mix", 1): HALF_POINT,  # [[8.5]]
    ("alvarobartt-FastChat", 238, 160, "mistral-orpo", 1): HALF_POINT,  # [[9.5]]
    ("alvarobartt-FastChat", 269, 146, "mistral-orpo", 1): HALF_POINT,  # [[8.5]]
    ("alvarobartt-FastChat", 289, 145, "mistral-orpo", 1): HALF_POINT,  # [[8.5]]
    ("alvarobartt-FastChat", 453, 143, "mistral-orpo", 1): HALF_POINT,  # [[8.5]]
    ("alvarobartt-FastChat", 642, 88, "mistral-orpo-trl", 1): HALF_POINT,  # [[8.5]]
    ("dreaming-panda-MTBench", 180, 90, "Meta-Llama-3-8B-Instruct-Griffin", 1): HALF_POINT,
    ("dreaming-panda-MTBench", 198, 138, "Meta-Llama-3-8B-Instruct-Griffin", 1): HALF_POINT,
    ("muhan421-fastchat-eval", 21, 91, "claude-3-5-sonnet-20240620", 1): HALF_POINT,  # [[8.5]]
    ("muhan421-fastchat-eval", 67, 144, "claude-3-5-sonnet-20240620", 1): HALF_POINT,  # [[9.5]]
    ("muhan421-fastchat-eval", 70, 145, "claude-3-opus-20240229", 1): HALF_POINT,  # [[8.5]]
    ("muhan421-fastchat-eval", 186, 93, "claude-3-opus-20240229", 2): HALF_POINT,  # [[9.5]]
}

pytestmark = pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata is absent")


def _records(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _single_records() -> list[tuple[Key, dict[str, Any]]]:
    out: list[tuple[Key, dict[str, Any]]] = []
    for folder, (name, count) in SINGLE_FILES.items():
        path = REALDATA / folder / JUDGMENTS / name
        if not path.is_file():
            pytest.skip(f"{path} is absent")
        records = _records(path)
        assert len(records) == count, f"{path}: {len(records)} records, expected {count}"
        out.extend(
            ((folder, line, r["question_id"], r["model"], r["turn"]), r)
            for line, r in enumerate(records, start=1)
        )
    return out


def test_mt_bench_reproduces_fastchat_single_scores() -> None:
    records = _single_records()
    assert len(records) == 1610
    agree = 0
    differs: dict[Key, tuple[float, float]] = {}
    templates_used: Counter[str] = Counter()
    for key, r in records:
        assert r["judge"][0] == "gpt-4"
        name = SINGLE_TEMPLATE[r["judge"][1]]
        templates_used[name] += 1
        verdict = get_template(name).parse(r["judgment"])
        ours = -1.0 if verdict.value is None else float(verdict.value)
        if verdict.value is None:
            assert verdict.score is None and (verdict.error or "").startswith("parse: ")
        else:
            assert verdict.score == pytest.approx(ours / 10)  # normalised x/10
        if ours == float(r["score"]):
            agree += 1
        else:
            differs[key] = (r["score"], ours)
    assert set(differs) == set(DELIBERATE), sorted(set(differs) ^ set(DELIBERATE))
    for recorded, ours in differs.values():
        assert ours == -1.0 and recorded in (8.5, 9.5)
    assert len(differs) <= 0.01 * len(records)
    assert agree == len(records) - len(DELIBERATE) == 1598
    assert set(templates_used) == set(SINGLE_TEMPLATE.values())


def test_fastchat_no_verdict_records_fail_here_too() -> None:
    none_found = [(f, r) for f, r in _single_records() if r["score"] == -1]
    assert len(none_found) == 5  # four "$ERROR$" API failures, one judgment with no rating
    for _key, r in none_found:
        v = get_template(SINGLE_TEMPLATE[r["judge"][1]]).parse(r["judgment"])
        assert v.score is None and v.error == "parse: no '[[...]]' verdict in the output"


def test_half_point_ratings_are_failures_not_rounded() -> None:
    by_key = dict(_single_records())
    for key in DELIBERATE:
        r = by_key[key]
        v = get_template(SINGLE_TEMPLATE[r["judge"][1]]).parse(r["judgment"])
        assert v.score is None
        assert v.error == (
            f"parse: {r['score']:g} is not a whole number on the scale "
            "(a whole number from 1 to 10)"
        )


def _winner(judgment: str, template: str, game: int) -> str:
    v = get_template(template).parse(judgment)
    if v.value is None:
        return "error"
    if v.value == "tie":
        return "tie"
    to_model = {"A": "model_1", "B": "model_2"} if game == 1 else {"A": "model_2", "B": "model_1"}
    return to_model[str(v.value)]


def test_mt_bench_pair_reproduces_fastchat_winners() -> None:
    if not PAIR_FILE.is_file():
        pytest.skip(f"{PAIR_FILE} is absent")
    records = _records(PAIR_FILE)
    assert len(records) == 75
    outcomes: Counter[str] = Counter()
    for r in records:
        template = PAIR_TEMPLATE[r["judge"][1]]
        assert get_template(template).kind == "pairwise"
        for game in (1, 2):
            ours = _winner(r[f"g{game}_judgment"], template, game)
            assert ours == r[f"g{game}_winner"], (r["question_id"], r["model_1"], game)
            outcomes[ours] += 1
    # every outcome kind occurs, so the mapping back to model names is really exercised
    assert outcomes == {"model_1": 60, "model_2": 62, "tie": 25, "error": 3}


def test_pair_scores_follow_the_preference_convention() -> None:
    if not PAIR_FILE.is_file():
        pytest.skip(f"{PAIR_FILE} is absent")
    t = get_template("mt_bench_pair")
    for r in _records(PAIR_FILE):
        v = t.parse(r["g1_judgment"])
        expected = {"model_1": 1.0, "model_2": 0.0, "tie": 0.5, "error": None}[r["g1_winner"]]
        assert v.score == expected
