"""The suite file's published JSON Schema is the one its model generates, and a suite file
that follows it is read."""

from __future__ import annotations

import json
from pathlib import Path

from jurist.pipeline.suites import SuiteFile
from jurist.pipeline.suites.schema import schema_text

SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "suite.schema.json"


def test_the_published_schema_is_current() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == schema_text(), (
        "schemas/suite.schema.json is stale: run "
        "`python -m jurist.pipeline.suites.schema schemas/suite.schema.json`"
    )


def test_the_schema_names_every_part_and_refuses_unknown_keys() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert set(schema["properties"]) == {
        "version",
        "name",
        "datasets",
        "judges",
        "bars",
        "settings",
    }
    assert schema["properties"]["version"]["const"] == 1
    assert schema["additionalProperties"] is False
    bar_kinds = {
        ref["$ref"].rsplit("/", 1)[1] for ref in schema["properties"]["bars"]["items"]["oneOf"]
    }
    assert bar_kinds == {"MeanScoreBar", "PassRateBar", "MaxDropBar", "CorrectedMeanBar"}
    assert all(schema["$defs"][k]["additionalProperties"] is False for k in bar_kinds)


def test_jsonschema_accepts_a_suite_and_refuses_a_typo() -> None:
    import jsonschema

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    good = {
        "version": 1,
        "datasets": {"qa": {"path": "qa.jsonl", "fields": {"prompt": "question"}}},
        "judges": {"likert": "judges.likert.openai_gpt_4o_mini", "inline": {"kind": "judge"}},
        "bars": [{"mean_score": 0.6}, {"max_drop": 0.05, "baseline": "runs/main"}],
    }
    jsonschema.validate(good, schema)
    SuiteFile.model_validate(good)
    bad = {**good, "bars": [{"mean_scroe": 0.6}]}
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(bad))
    assert errors
