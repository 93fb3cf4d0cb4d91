"""RubricDataset: ground truth in the seed's form, JSON round trips, errors, grading it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import jurist
from jurist import CriterionGrader, CriterionVerdict, RubricDataset
from jurist.errors import DataError
from jurist.models import MockModel

RUBRIC = jurist.Rubric.from_dict(
    {
        "guidelines": "Readers are new to biology.",
        "sections": [
            {
                "name": "Content",
                "criteria": [
                    {"name": "accurate", "requirement": "Is factually accurate", "weight": 10},
                ],
            },
            {
                "name": "Style",
                "criteria": [
                    {
                        "name": "clarity",
                        "requirement": "How clear is it, 1 to 4?",
                        "weight": 5,
                        "options": [
                            {"label": "1", "value": 0},
                            {"label": "2", "value": 0.33},
                            {"label": "3", "value": 0.67},
                            {"label": "4", "value": 1},
                        ],
                    },
                    {
                        "name": "tone",
                        "requirement": "How does the tone fit?",
                        "scale_type": "nominal",
                        "options": [
                            {"label": "Too formal", "value": 0.4},
                            {"label": "Just right", "value": 1},
                            {"label": "Too casual", "value": 0.4},
                        ],
                    },
                ],
            },
        ],
    }
)


def make() -> RubricDataset:
    dataset = RubricDataset(rubric=RUBRIC, prompt="Explain photosynthesis", name="bio-v1")
    dataset.add_item(
        submission="Plants use light to make sugar from CO2 and water.",
        description="Good response",
        ground_truth=[CriterionVerdict.MET, "4", "Just right"],
    )
    dataset.add_item(
        submission="Plants eat dirt.",
        description="Wrong",
        ground_truth=["unmet", "2", "too casual"],  # case is normalised to the rubric's
        prompt="Explain photosynthesis briefly",
    )
    dataset.add_item(submission="No labels yet.", description="unlabelled")
    return dataset


def test_add_item_in_the_seed_form_and_scores() -> None:
    dataset = make()
    assert len(dataset) == 3
    assert dataset[0].ground_truth == ["MET", "4", "Just right"]
    assert dataset[1].ground_truth == ["UNMET", "2", "Too casual"]
    assert dataset.ground_truth_scores() == pytest.approx([1.0, (0.33 * 5 + 4) / 25, None])
    assert dataset.query(0) == "Explain photosynthesis"
    assert dataset.query(1) == "Explain photosynthesis briefly"


def test_json_round_trip(tmp_path: Path) -> None:
    dataset = make()
    path = tmp_path / "bio.json"
    dataset.save(path)
    data = json.loads(path.read_text())
    assert data["items"][0]["ground_truth"] == ["MET", "4", "Just right"]
    assert data["rubric"]["sections"][1]["name"] == "Style"
    loaded = RubricDataset.load(path)
    assert loaded == dataset
    assert loaded.rubric.guidelines == "Readers are new to biology."
    assert [c.section for c in loaded.rubric.criteria] == ["Content", "Style", "Style"]


def test_reads_an_autorubric_style_file(tmp_path: Path) -> None:
    # autorubric writes the rubric as a plain list of criteria and null ground truth
    data = {
        "prompt": "Q",
        "rubric": [
            {"name": "a", "weight": 10.0, "requirement": "r"},
            {
                "name": "b",
                "weight": 5.0,
                "requirement": "s",
                "scale_type": "ordinal",
                "options": [
                    {"label": "lo", "value": 0.0, "na": False},
                    {"label": "hi", "value": 1.0, "na": False},
                ],
            },
        ],
        "items": [
            {"submission": "x", "description": "d", "ground_truth": ["MET", "hi"]},
            {"submission": "y", "description": "e", "ground_truth": None},
        ],
    }
    path = tmp_path / "ar.json"
    path.write_text(json.dumps(data))
    dataset = RubricDataset.load(path)
    assert dataset.ground_truth_scores() == [1.0, None]


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (
            [{"submission": "x", "ground_truth": ["MET", "5", "Just right"]}],
            r"ds\.json: item 0: criterion 'clarity': no option '5'",
        ),
        (
            [{"submission": "x", "ground_truth": ["YES", "4", "Just right"]}],
            r"item 0: criterion 'accurate': 'YES' is not MET, UNMET or CANNOT_ASSESS",
        ),
        (
            [{"submission": "x"}, {"submission": "y", "ground_truth": ["MET"]}],
            r"item 1: ground_truth has 1 labels but the rubric has 3 criteria",
        ),
        ([{"text": "x"}], r"item 0: field 'submission': Field required"),
        ([{"submission": "x", "rating": 3}], r"item 0: field 'rating': Extra inputs"),
    ],
)
def test_load_errors_name_the_item_and_criterion(
    tmp_path: Path, items: list[dict[str, object]], expected: str
) -> None:
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"rubric": RUBRIC.to_dict(), "items": items}))
    with pytest.raises(DataError, match=expected):
        RubricDataset.load(path)


def test_add_item_errors() -> None:
    dataset = make()
    with pytest.raises(DataError, match=r"item 4: criterion 'tone': a multi-choice criterion"):
        dataset.add_item(submission="z", ground_truth=["MET", "4", CriterionVerdict.MET])
    assert len(dataset) == 3


def test_grade_the_dataset_and_compare_with_ground_truth() -> None:
    answer = json.dumps({"c1": {"verdict": "MET"}, "c2": {"option": 1}, "c3": {"option": 1}})
    model = MockModel("j", outputs=[answer], cycle=True)
    grader = CriterionGrader(judges=[model], shuffle_options=False)
    dataset = make()
    reports = grader.grade_many_sync(dataset.rubric, dataset.to_items())
    assert [r.verdicts for r in reports] == [["MET", "1", "Too formal"]] * 3
    # the prompt of each item reached the judge
    assert "Explain photosynthesis briefly" in model.requests[1].messages[1].content
    truth = [item.ground_truth for item in dataset]
    exact = [r.verdicts == t for r, t in zip(reports, truth, strict=True) if t is not None]
    assert exact == [False, False]
