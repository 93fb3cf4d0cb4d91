"""Golden test on real data: Prometheus score rubrics with three real GPT-4 gradings each.

prometheus-eval's ``vicuna_eval.json`` holds 320 absolute-grading records: an instruction,
a response, a five-level score rubric (``Score 1: ...`` to ``Score 5: ...``) and three
GPT-4 gradings (feedback and score). Each record becomes a one-criterion ordinal rubric
whose options are the rubric's five descriptions (values 0, 0.25, ..., 1), graded by an
ensemble of three scripted judges that answer GPT-4's three scores by *reading the shuffled
option texts*. The grader must map every answer back to the right level, record the order
the judge saw, and aggregate the three real scores exactly as the rules say.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.judges.rubric import JudgeSpec
from jurist.models import MockModel
from jurist.types import Request

DATA = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "realdata"
    / "prometheus-eval"
    / "eval"
    / "benchmark"
    / "data"
    / "vicuna_eval.json"
)
N_RECORDS = 60


def _records() -> list[dict[str, Any]]:
    if not DATA.exists():
        pytest.skip(f"real data not found at {DATA}")
    records = []
    for raw in json.loads(DATA.read_text())[:N_RECORDS]:
        text = raw["instruction"]
        response = re.search(r"###Response to evaluate:\n(.*?)\n\n###Reference Answer", text, re.S)
        question = re.search(r"###Score Rubrics:\n\[(.*?)\]\n", text, re.S)
        levels = re.findall(r"^Score ([1-5]): (.*)$", text, re.M)
        assert response and question and [n for n, _ in levels] == ["1", "2", "3", "4", "5"]
        records.append(
            {
                "response": response.group(1),
                "question": question.group(1),
                "levels": [d.strip() for _, d in levels],
                "scores": raw["gpt4_score"],
                "feedback": raw["gpt4_feedback"],
            }
        )
    return records


def _judge(record: dict[str, Any], k: int) -> MockModel:
    """GPT-4's k-th grading, answered as the number the matching description is shown at."""
    wanted = record["levels"][record["scores"][k] - 1]

    def answer(request: Request) -> str:
        user = request.messages[1].content
        shown = [line.split(". ", 1)[1] for line in user.split("Options for c1:\n")[1].splitlines()]
        entry = {"explanation": record["feedback"][k], "option": shown.index(wanted) + 1}
        return json.dumps({"c1": entry})

    return MockModel(f"gpt4-{k}", outputs=answer, cycle=True)


@pytest.mark.parametrize("aggregation", ["mean", "median", "mode"])
def test_prometheus_gradings_map_back_and_aggregate(aggregation: str) -> None:
    records = _records()
    for i, record in enumerate(records):
        rubric = jurist.Rubric.from_dict(
            [
                {
                    "name": "rubric",
                    "requirement": record["question"],
                    "options": [
                        {"label": d, "value": n / 4} for n, d in enumerate(record["levels"])
                    ],
                }
            ]
        )
        judges = [JudgeSpec(_judge(record, k), judge_id=f"gpt4-{k}") for k in range(3)]
        grader = jurist.CriterionGrader(judges=judges, ordinal_aggregation=aggregation, seed=i)
        report = grader.grade_sync(rubric, record["response"])
        c = report.criteria[0]
        values = [(s - 1) / 4 for s in record["scores"]]
        # every real score came back as the level GPT-4 gave, through the shuffle
        assert [v.selected_index for v in c.votes] == [s - 1 for s in record["scores"]]
        assert [v.value for v in c.votes] == values
        assert [v.reason for v in c.votes] == record["feedback"]
        for v in c.votes:
            assert v.shuffle_order is not None and sorted(v.shuffle_order) == [0, 1, 2, 3, 4, 5]
        if aggregation == "mean":
            assert c.final.aggregated_value == pytest.approx(statistics.mean(values))
            nearest = min(
                range(5), key=lambda n: (abs(n / 4 - statistics.mean(values)), n)
            )  # weight > 0: ties go to the lower level
            assert c.final.selected_index == nearest
        elif aggregation == "median":
            assert c.final.selected_index == int(statistics.median(record["scores"])) - 1
        else:
            counts = {s: record["scores"].count(s) for s in record["scores"]}
            top = max(counts.values())
            assert c.final.selected_index == min(s for s, n in counts.items() if n == top) - 1
        assert report.score == c.final.value
        agree = sum(1 for v in c.votes if v.selected_index == c.final.selected_index) / 3
        assert c.agreement == pytest.approx(agree)
