"""The public layouts' readers: each on a small folder written here in the layout its
benchmark publishes (the field names and file places of its repository), and on the real
files in ../shared/realdata where they are (those tests skip without them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jurist.benchmark import (
    READERS,
    read_judge_bench,
    read_judgebench,
    read_llmbar,
    read_mtbench_human,
    read_pandalm,
    read_rewardbench2,
)
from jurist.errors import DataError

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_judgebench_layout(tmp_path: Path) -> None:
    pair = {
        "pair_id": "x1",
        "original_id": 3,
        "source": "mmlu-pro-law",
        "question": "q",
        "response_model": "m",
        "response_A": "a",
        "response_B": "b",
        "label": "B>A",
    }
    _jsonl(tmp_path / "data" / "dataset=judgebench,response_model=m.jsonl", [pair])
    out = tmp_path / "outputs"
    rm = {
        **pair,
        "judgments": [
            {"judgment": {"scores": [1.0, 2.0]}, "decision": "B>A"},
            {"judgment": {"scores": [2.0, 1.0]}, "decision": "A>B"},
        ],
    }
    judge = {
        **pair,
        "judgments": [
            {"judgment": {"response": "[[B>A]]"}, "decision": "B>A"},
            None,
        ],
    }
    _jsonl(
        out / "dataset=judgebench,response_model=m,judge_name=reward_model,judge_model=o_r.jsonl",
        [rm],
    )
    _jsonl(
        out / "dataset=judgebench,response_model=m,judge_name=arena_hard,judge_model=g.jsonl",
        [judge],
    )
    (d,) = read_judgebench(tmp_path)
    row = d.rows[0]
    assert (d.name, row["id"], row["label"], row["source"]) == (
        "judgebench-m",
        "x1",
        "B",
        "mmlu-pro",
    )
    assert row["scores"] == {"o_r": [[1.0, 2.0], [2.0, 1.0]]}
    assert row["recorded"] == {"arena_hard:g": ["[[B>A]]", None]}


def test_llmbar_layout(tmp_path: Path) -> None:
    for subset, label in (("Natural", 1), ("Adversarial/Neighbor", 2)):
        folder = tmp_path / "Dataset" / "LLMBar" / subset
        folder.mkdir(parents=True)
        (folder / "dataset.json").write_text(
            json.dumps([{"input": "i", "output_1": "o1", "output_2": "o2", "label": label}])
        )
    (d,) = read_llmbar(tmp_path)
    assert [(r["source"], r["label"]) for r in d.rows] == [
        ("Adversarial/Neighbor", "B"),
        ("Natural", "A"),
    ]


def test_rewardbench2_layout(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    (tmp_path / "data").mkdir()
    frame = pd.DataFrame(
        [
            {
                "id": "7",
                "prompt": "p",
                "chosen": ["good"],
                "rejected": ["bad1", "bad2", "bad3"],
                "subset": "Math",
            }
        ]
    )
    frame.to_parquet(tmp_path / "data" / "test-00000-of-00001.parquet")
    (d,) = read_rewardbench2(tmp_path)
    assert [(r["response_a"], r["response_b"], r["label"]) for r in d.rows] == [
        ("good", "bad1", "A"),
        ("bad2", "good", "B"),
        ("good", "bad3", "A"),
    ]
    assert {r["source"] for r in d.rows} == {"Math"}


def test_mtbench_human_layout(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    (tmp_path / "data").mkdir()
    conv = lambda who: [  # noqa: E731
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": f"{who}1"},
        {"role": "user", "content": "u2"},
        {"role": "assistant", "content": f"{who}2"},
    ]
    frame = pd.DataFrame(
        [
            {
                "question_id": 81,
                "model_a": "x",
                "model_b": "y",
                "winner": "model_b",
                "judge": "expert_1",
                "conversation_a": conv("a"),
                "conversation_b": conv("b"),
                "turn": 2,
            },
            {
                "question_id": 81,
                "model_a": "x",
                "model_b": "y",
                "winner": "tie (bothbad)",
                "judge": "expert_2",
                "conversation_a": conv("a"),
                "conversation_b": conv("b"),
                "turn": 1,
            },
        ]
    )
    frame.to_parquet(tmp_path / "data" / "human-00000-of-00001.parquet")
    (d,) = read_mtbench_human(tmp_path)
    first, second = d.rows
    assert (first["prompt"], first["response_a"], first["response_b"], first["label"]) == (
        "u1\n\nu2",
        "a2",
        "b2",
        "B",
    )
    assert (second["prompt"], second["response_a"], second["label"], second["source"]) == (
        "u1",
        "a1",
        "tie",
        "turn 1",
    )


def test_a_folder_without_the_layout_names_what_it_looked_for(tmp_path: Path) -> None:
    for reader in READERS.values():
        with pytest.raises(DataError, match="no "):
            reader(tmp_path)
    assert set(READERS) == {
        "judgebench",
        "llmbar",
        "rewardbench2",
        "mtbench-human",
        "pandalm",
        "judge-bench",
    }


@pytest.mark.skipif(not (REALDATA / "PandaLM").is_dir(), reason="../shared/realdata is absent")
def test_pandalm_realdata() -> None:
    (d,) = read_pandalm(REALDATA / "PandaLM")
    raw = json.loads((REALDATA / "PandaLM" / "data" / "testset-v1.json").read_text())
    assert 0 < len(d.rows) <= len(raw) == 999
    assert set(d.labels) == {"A", "B", "tie"}
    assert d.rows[0]["id"] == "0" and d.rows[0]["label"] == "B"  # annotators 2, 2, 2


@pytest.mark.skipif(not (REALDATA / "JUDGE-BENCH").is_dir(), reason="../shared/realdata is absent")
def test_judge_bench_realdata() -> None:
    found = {d.name: d for d in read_judge_bench(REALDATA / "JUDGE-BENCH")}
    d = found["newsroom:Informativeness"]
    assert d.kind == "pointwise" and d.numeric and len(d.rows) == 420
    assert d.rows[0]["label"] == 2.67 and d.rows[0]["prompt"].startswith("On a scale of 1")
    assert "### Generated Summary" in d.rows[0]["response"]
    assert set(found) == {
        f"newsroom:{m}" for m in ("Informativeness", "Relevance", "Fluency", "Coherence")
    }
