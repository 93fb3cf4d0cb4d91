"""Rubrics: the data model, the YAML / JSON loader and its errors, and the scoring rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jurist import Rubric
from jurist.errors import ConfigError
from jurist.judges.rubric import AUTO_NA_LABEL, Criterion, CriterionVerdict, Option
from jurist.judges.rubric._scoring import ScoredCriterion, weighted_score

RUBRIC_YAML = """\
name: explainer
guidelines: |
  The reader is a curious twelve-year-old.
sections:
  - name: Content
    criteria:
      - name: correct
        requirement: States that plants make sugar from light
        weight: 10
      - name: wrong_claim
        requirement: Claims that plants eat soil
        weight: -5
  - name: Style
    criteria:
      - name: clarity
        requirement: How clear is the explanation?
        weight: 5
        options:
          - {label: "1", value: 0}
          - {label: "2", value: 0.33}
          - {label: "3", value: 0.67}
          - {label: "4", value: 1}
      - name: tone
        requirement: How does the tone fit the reader?
        scale_type: nominal
        aggregation: unanimous
        options:
          - {label: Too formal, value: 0.5}
          - {label: Just right, value: 1.0}
          - {label: Too childish, value: 0.3}
          - {label: No tone to speak of, na: true}
"""


def write(tmp_path: Path, text: str, name: str = "rubric.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_yaml_with_sections_and_guidelines(tmp_path: Path) -> None:
    rubric = Rubric.from_yaml(write(tmp_path, RUBRIC_YAML))
    assert rubric.name == "explainer"
    assert rubric.guidelines is not None and "twelve-year-old" in rubric.guidelines
    assert [c.name for c in rubric.criteria] == ["correct", "wrong_claim", "clarity", "tone"]
    assert [c.kind for c in rubric.criteria] == ["binary", "binary", "ordinal", "nominal"]
    assert [c.section for c in rubric.criteria] == ["Content", "Content", "Style", "Style"]
    assert rubric.sections == ["Content", "Style"]
    assert rubric.criteria[1].weight == -5
    assert rubric.criteria[3].aggregation == "unanimous"
    assert rubric.criteria[3].na_index == 3
    assert rubric.total_positive_weight == 25  # tone has the default weight, 10


def test_round_trip_through_dict_json_and_yaml(tmp_path: Path) -> None:
    rubric = Rubric.from_yaml(write(tmp_path, RUBRIC_YAML))
    assert Rubric.from_dict(rubric.to_dict()) == rubric
    as_json = write(tmp_path, json.dumps(rubric.to_dict()), "rubric.json")
    assert Rubric.from_json(as_json) == rubric
    assert Rubric.from_file(as_json) == rubric
    assert Rubric.from_yaml(write(tmp_path, rubric.to_yaml(), "again.yml")) == rubric


def test_other_accepted_shapes() -> None:
    as_list = Rubric.from_dict([{"requirement": "a"}, {"requirement": "b", "weight": 2}])
    assert [c.weight for c in as_list.criteria] == [10.0, 2.0]  # the default weight is 10
    assert as_list.criterion_names() == ["c1", "c2"]
    wrapped = Rubric.from_dict({"rubric": {"criteria": [{"requirement": "a"}]}, "guidelines": "g"})
    assert wrapped.guidelines == "g" and len(wrapped) == 1
    mixed = Rubric.from_dict(
        [{"name": "S", "criteria": [{"requirement": "x"}]}, {"requirement": "y"}]
    )
    assert [c.section for c in mixed.criteria] == ["S", None]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # value out of [0, 1]: names the line, the criterion and the field
        (
            "criteria:\n  - name: depth\n    requirement: r\n    options:\n"
            "      - {label: a, value: 1.5}\n      - {label: b, value: 0}\n",
            r"rubric\.yaml:2: criterion 'depth': field 'options\[0\]\.value': value 1\.5 is "
            r"outside \[0, 1\]",
        ),
        # fewer than two scored options (an NA option does not count)
        (
            "criteria:\n  - name: depth\n    requirement: r\n    options:\n"
            "      - {label: a, value: 1}\n      - {label: n/a, na: true}\n",
            r"criterion 'depth': field 'options': a multi-choice criterion needs at least two "
            r"scored \(non-NA\) options, got 1",
        ),
        # duplicate labels (case and spacing ignored)
        (
            "criteria:\n  - requirement: r\n    options:\n"
            "      - {label: Good, value: 1}\n      - {label: ' good', value: 0}\n",
            r"criterion #1: field 'options': duplicate option label ' good' \(same as 'Good'\)",
        ),
        # unknown keys: in a criterion, an option, the top level, a section
        (
            "criteria:\n  - name: x\n    requirement: r\n    wieght: 3\n",
            r"rubric\.yaml:2: criterion 'x': unknown key 'wieght' \(known keys: requirement, ",
        ),
        (
            "criteria:\n  - name: x\n    requirement: r\n    options:\n"
            "      - {label: a, value: 1, score: 2}\n      - {label: b, value: 0}\n",
            r"criterion 'x': field 'options\[0\]': unknown key 'score'",
        ),
        ("criterias:\n  - requirement: r\n", r"rubric\.yaml:1: unknown key 'criterias'"),
        (
            "sections:\n  - name: S\n    weight: 2\n    criteria:\n      - requirement: r\n",
            r"rubric\.yaml:2: section 'S': unknown key 'weight'",
        ),
        # other field errors
        ("criteria:\n  - name: x\n", r"criterion 'x': field 'requirement' is missing"),
        (
            "criteria:\n  - name: x\n    requirement: r\n    weight: heavy\n",
            r"criterion 'x': field 'weight': ",
        ),
        (
            "criteria:\n  - {name: x, requirement: r}\n  - {name: x, requirement: s}\n",
            r"rubric\.yaml:3: criterion 'x': field 'name': duplicate name \(criterion #1",
        ),
        (
            "criteria:\n  - name: x\n    requirement: r\n    scale_type: ordinal\n"
            "    aggregation: weighted_mode\n    options:\n"
            "      - {label: a, value: 1}\n      - {label: b, value: 0}\n",
            r"criterion 'x': field 'aggregation': aggregation 'weighted_mode' is not one for "
            r"a ordinal criterion",
        ),
        (
            "criteria:\n  - name: x\n    requirement: r\n    options:\n"
            "      - {label: a}\n      - {label: b, value: 0}\n",
            r"field 'options\[0\]\.value': option 'a' needs a value in \[0, 1\]",
        ),
        ("criteria: []\n", r"rubric\.yaml: the rubric has no criteria"),
        ("criteria:\n  - requirement: [unclosed\n", r"rubric\.yaml:\d+: not valid YAML"),
    ],
)
def test_loader_errors_name_file_criterion_and_field(
    tmp_path: Path, body: str, expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected):
        Rubric.from_yaml(write(tmp_path, body))


def test_json_errors_name_the_file(tmp_path: Path) -> None:
    bad = write(
        tmp_path, '[{"requirement": "r", "options": [{"label": "a", "value": 2}]}]', "r.json"
    )
    with pytest.raises(ConfigError, match=r"r\.json: criterion #1: field 'options\[0\]\.value'"):
        Rubric.from_json(bad)
    with pytest.raises(ConfigError, match=r"broken\.json:1: not valid JSON"):
        Rubric.from_json(write(tmp_path, "[{", "broken.json"))
    with pytest.raises(ConfigError, match=r"missing\.yaml: cannot read"):
        Rubric.from_yaml(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match=r"must end in \.yaml, \.yml or \.json"):
        Rubric.from_file(tmp_path / "rubric.txt")


def test_auto_na_option_is_appended_and_keeps_indices() -> None:
    c = Criterion(requirement="r", options=(Option(label="a", value=0), Option(label="b", value=1)))
    with_na = c.with_na_option()
    assert [o.label for o in with_na.options or ()] == ["a", "b", AUTO_NA_LABEL]
    assert with_na.na_index == 2
    assert with_na.with_na_option() is with_na  # an existing NA option is kept as it is
    assert Criterion(requirement="r").with_na_option().is_binary


# -- scoring -----------------------------------------------------------------------------


def test_compute_score_strategies() -> None:
    rubric = Rubric.from_dict(
        [
            {"requirement": "a", "weight": 10},
            {"requirement": "b", "weight": 10},
            {"requirement": "penalty", "weight": -5},
            {
                "requirement": "d",
                "weight": 10,
                "options": [{"label": "lo", "value": 0.2}, {"label": "hi", "value": 1}],
            },
        ]
    )
    verdicts = ["MET", CriterionVerdict.CANNOT_ASSESS, "UNMET", "hi"]
    assert rubric.compute_score(verdicts) == pytest.approx(20 / 20)  # skip: b left out
    assert rubric.compute_score(verdicts, cannot_assess="zero") == pytest.approx(20 / 30)
    assert rubric.compute_score(verdicts, cannot_assess="partial", partial_credit=0.3) == (
        pytest.approx(23 / 30)
    )
    assert rubric.compute_score(verdicts, cannot_assess="fail") == pytest.approx(20 / 30)
    assert rubric.compute_score(["MET", "MET", "MET", "lo"], normalize=False) == pytest.approx(17)
    assert rubric.compute_score(["MET", "MET", "MET", "lo"]) == pytest.approx(17 / 30)
    assert rubric.compute_score(["UNMET", "UNMET", "MET", "lo"]) == pytest.approx(0.0)  # clamped
    with pytest.raises(ConfigError, match="expected 4 verdicts"):
        rubric.compute_score(["MET"])
    with pytest.raises(ConfigError, match=r"criterion 'c4': no option 'mid'"):
        rubric.compute_score(["MET", "MET", "MET", "mid"])


def test_nothing_to_score_is_none_never_zero() -> None:
    rubric = Rubric.from_dict([{"requirement": "a"}, {"requirement": "b", "weight": 3}])
    assert rubric.compute_score(["CANNOT_ASSESS", "CANNOT_ASSESS"]) is None
    assert rubric.compute_score(["CANNOT_ASSESS", "CANNOT_ASSESS"], normalize=False) is None
    assert rubric.compute_score(["CANNOT_ASSESS", "CANNOT_ASSESS"], cannot_assess="zero") == 0.0


def test_fail_strategy_is_weight_sign_aware() -> None:
    opts = [
        {"label": "lo", "value": 0.2},
        {"label": "hi", "value": 0.9},
        {"label": "na", "na": True},
    ]
    rubric = Rubric.from_dict(
        [
            {"requirement": "good", "weight": 10, "options": opts},
            {"requirement": "bad", "weight": -10, "options": opts},
            {"requirement": "bad2", "weight": -10},
        ]
    )
    # worst for +10 is lo (0.2 -> 2), for -10 the highest option (0.9 -> -9) and MET (-10)
    raw = rubric.compute_score(["na", "na", "CANNOT_ASSESS"], cannot_assess="fail", normalize=False)
    assert raw == pytest.approx(2 - 9 - 10)


def test_penalties_only_rubric_scores_one_when_clean() -> None:
    rubric = Rubric.from_dict(
        [{"requirement": "a", "weight": -2}, {"requirement": "b", "weight": -2}]
    )
    assert rubric.compute_score(["UNMET", "UNMET"]) == 1.0
    assert rubric.compute_score(["MET", "UNMET"]) == 0.5


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(min_value=-20, max_value=20, allow_nan=False),
            st.one_of(st.none(), st.floats(min_value=0, max_value=1)),
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["skip", "zero", "partial", "fail"]),
)
def test_score_is_in_unit_interval_or_none(
    rows: list[tuple[float, float | None]], strategy: str
) -> None:
    scored = [ScoredCriterion(w, v, na=v is None) for w, v in rows]
    score = weighted_score(scored, cannot_assess=strategy)  # type: ignore[arg-type]
    counted = [w for w, v in rows if v is not None or strategy != "skip"]
    if not counted or all(w == 0 for w in counted):
        assert score is None  # nothing counts, or nothing that counts carries weight
    else:
        assert score is not None and 0.0 <= score <= 1.0
