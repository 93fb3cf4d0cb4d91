"""Bench datasets and the replay judges: labels read, rows checked, outputs replayed."""

from __future__ import annotations

import pytest

from jurist.benchmark import RecordedJudge, ScoresJudge, bench_dataset, order_items
from jurist.errors import DataError

PAIR = {"prompt": "2+2?", "response_a": "4", "response_b": "5"}


def test_pair_labels_in_every_published_spelling() -> None:
    labels = ["A", "a>b", "B>A", "2", 1, "tie", "A=B", 0, "C", 2.0]
    ds = bench_dataset([{**PAIR, "id": str(i), "label": v} for i, v in enumerate(labels)])
    assert ds.labels == ["A", "A", "B", "B", "A", "tie", "tie", "tie", "tie", "B"]


def test_a_bad_row_is_named() -> None:
    with pytest.raises(DataError, match=r"row 2: label 'maybe' is not A, B or tie"):
        bench_dataset([{**PAIR, "label": "A"}, {**PAIR, "label": "maybe"}])
    with pytest.raises(DataError, match=r"row 2: a pointwise row in a pairwise dataset"):
        bench_dataset([{**PAIR, "label": "A"}, {"prompt": "q", "response": "r", "label": 1}])
    with pytest.raises(DataError, match=r"row 2: id 'x' repeats row 1"):
        bench_dataset([{**PAIR, "id": "x", "label": "A"}, {**PAIR, "id": "x", "label": "B"}])
    with pytest.raises(DataError, match=r"row 1: no 'label'"):
        bench_dataset([PAIR])


def test_a_pair_is_asked_in_both_orders_without_its_label() -> None:
    ds = bench_dataset([{**PAIR, "id": "p", "label": "A", "source": "math"}])
    items = list(order_items(ds))
    assert [(i["id"], i["order"], i["response_a"], i["response_b"]) for i in items] == [
        ("p:ab", "ab", "4", "5"),
        ("p:ba", "ba", "5", "4"),
    ]
    assert all("label" not in i and i["pair"] == "p" and i["source"] == "math" for i in items)


def test_pointwise_labels_numbers_or_categories() -> None:
    numbers = bench_dataset([{"prompt": "q", "response": "r", "label": "4.5"}])
    names = bench_dataset([{"prompt": "q", "response": "r", "label": "Correct"}])
    assert numbers.labels == [4.5] and numbers.numeric
    assert names.labels == ["Correct"] and not names.numeric


def _outcome(judge: ScoresJudge | RecordedJudge, held: dict, order: str) -> tuple:
    out = judge.judge_one_sync({"id": "x", **held, "order": order})
    return out.verdict, out.score, out.error


def test_scores_one_pair_serves_both_orders_and_a_swapped_pair_is_used_when_given() -> None:
    # a verdict names the positions shown, as a live judge's does: in order "ba" the
    # response shown first ("A") is the pair's B
    judge = ScoresJudge("rm")
    same = {"scores": {"rm": [3.0, 1.0]}}
    assert _outcome(judge, same, "ab")[0] == "A" and _outcome(judge, same, "ba")[0] == "B"
    # the swapped order's own pair, [score of B, score of A] as the model gave it
    both = {"scores": {"rm": [[3.0, 1.0], [2.0, 0.5]]}}
    verdict, score, _ = _outcome(judge, both, "ba")
    assert verdict == "A" and score == pytest.approx(1 / (1 + 2.718281828459045**-1.5))
    tie = _outcome(judge, {"scores": {"rm": [1.0, 1.0]}}, "ab")
    assert tie[:2] == ("tie", 0.5)


def test_scores_temperature_and_confidence() -> None:
    out = ScoresJudge("rm", temperature=2.0).judge_one_sync(
        {"scores": {"rm": [0.0, 2.0]}, "order": "ab"}
    )
    assert out.score == pytest.approx(1 / (1 + 2.718281828459045))
    assert out.confidence == pytest.approx(1 - out.score)


def test_a_missing_or_malformed_replay_is_a_data_error_never_a_score() -> None:
    judge = ScoresJudge("rm")
    _, score, error = _outcome(judge, {"scores": {"other": [1, 2]}}, "ab")
    assert score is None and error.startswith("data: ") and "'other'" in error
    _, score, error = _outcome(judge, {"scores": {"rm": [1, "x"]}}, "ab")
    assert score is None and "is not a number" in error
    with pytest.raises(DataError, match="must be"):
        judge.check({"id": "x", "scores": {"rm": [1, 2, 3]}, "order": "ab"})


def test_recorded_outputs_are_read_with_the_setups_template() -> None:
    judge = RecordedJudge("gpt", template="arena_hard")
    held = {"recorded": {"gpt": ["so: [[A>>B]]", "[[A>B]] or maybe [[B>A]]"]}}
    assert _outcome(judge, held, "ab")[:2] == ("A>>B", 1.0)
    _, score, error = _outcome(judge, held, "ba")  # two verdicts: the template refuses
    assert score is None and error.startswith("parse: conflicting verdicts")
    failed = _outcome(judge, {"recorded": {"gpt": ["[[A=B]]", None]}}, "ba")
    assert failed[1] is None and failed[2] == "api: the recorded judge gave no output"


def test_recorded_pointwise_output() -> None:
    judge = RecordedJudge("g", template="likert")
    out = judge.judge_one_sync({"recorded": {"g": "Score: 4"}})
    assert (out.verdict, out.score) == (4, 0.75)


def test_replay_judges_call_no_model() -> None:
    assert RecordedJudge("g").models() == () and ScoresJudge("r").models() == ()
    assert ScoresJudge("r").describe() == {"kind": "scores", "name": "scores:r", "temperature": 1.0}


def test_setup_specs_with_options() -> None:
    from jurist.benchmark import setup_of
    from jurist.errors import ConfigError

    assert setup_of("scores:rm[temperature=2]", "pairwise").judge.temperature == 2.0
    llm = setup_of("fast=mock:j@arena_hard[max_tokens=32,temperature=0]", "pairwise")
    assert llm.name == "fast" and llm.judge.config.max_tokens == 32
    with pytest.raises(ConfigError, match="takes no options"):
        setup_of("recorded:g@arena_hard[temperature=1]", "pairwise")
    with pytest.raises(ConfigError, match="takes temperature, not"):
        setup_of("scores:rm[x=1]", "pairwise")
    with pytest.raises(ConfigError, match="pointwise data needs a judge"):
        setup_of("mock:j@arena_hard", "pointwise")
