"""Suite judges of every kind (inline panels and cascades, catalog entries), the dry run's
bound over them, and a suite run with the scripted mock model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jurist.cli import main
from jurist.pipeline.suites import load_suite, plan

SUITE = """version: 1
datasets:
  qa: {path: qa.jsonl}
judges:
  panel:
    kind: panel
    aggregation: mean
    judges:
      - {model: "mock:a", model_options: {outputs: ["Rating: 4"], cycle: true}, template: likert}
      - {model: "mock:b", model_options: {outputs: ["Rating: 2"], cycle: true}, template: likert}
  cascade:
    kind: cascade
    thresholds: [0.5, null]
    tiers:
      - {model: "mock:c", model_options: {outputs: ["Correct"], cycle: true}, template: true_false}
      - {model: "mock:d", model_options: {outputs: ["Correct"], cycle: true}, template: true_false}
  rubric: judges.rubric.answer_quality_hf_qwen2_5_0_5b_instruct
bars:
  - mean_score: 0.4
    judges: [panel, cascade]
settings:
  retries: 1
  prices: {"mock:*": {prompt: 1.0, completion: 2.0}}
"""


def write(tmp_path: Path, text: str = SUITE) -> Path:
    rows = [{"prompt": f"q{i}", "response": f"a{i}"} for i in range(4)]
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


def test_the_bound_counts_every_member_and_every_retry(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path))
    assert type(suite.judges["panel"]).__name__ == "Panel"
    assert type(suite.judges["cascade"]).__name__ == "CascadeJudge"
    cells = {c.judge: c for c in plan(suite).cells}
    # two members (a panel: both; a cascade, at worst: every tier), each asked 1 + 1 times
    assert cells["panel"].calls == cells["cascade"].calls == 4 * 2 * 2
    assert cells["panel"].cost is not None and cells["panel"].cost > 0
    rubric = cells["rubric"]
    assert rubric.calls is None and rubric.cost is None
    assert rubric.note is not None and "no bound" in rubric.note
    assert cells["panel"].bars == ["mean score ≥ 0.4"] and cells["rubric"].bars == []


def test_a_suite_of_mock_judges_runs_and_a_second_run_asks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = SUITE.replace("  rubric: judges.rubric.answer_quality_hf_qwen2_5_0_5b_instruct\n", "")
    path = write(tmp_path, text)
    # the mock gives no confidence, so the cascade abstains on every item: its cell has no
    # score to read, and misses its bar
    assert main(["run", str(path), "--no-progress"]) == 1
    said = " ".join(capsys.readouterr().out.split())
    assert "1 of 2 bar(s) missed: qa/cascade: mean score ≥ 0.4" in said
    out = tmp_path / "runs" / "suite"
    record = json.loads((out / "suite.json").read_text())
    cells = {c["judge"]: c for c in record["cells"]}
    assert cells["panel"]["mean_score"] == pytest.approx(0.5)
    assert cells["panel"]["bars"][0]["outcome"] == "pass"
    assert cells["cascade"]["scored"] == 0 and cells["cascade"]["failed"] == 4
    assert "at least two scored items" in cells["cascade"]["bars"][0]["note"]
    calls = json.loads((out / "qa" / "panel" / "summary.json").read_text())["calls"]
    assert calls == 8
    assert main(["run", str(path), "--no-progress"]) == 1
    again = json.loads((out / "qa" / "panel" / "summary.json").read_text())
    assert again["calls"] == 8 and again["sessions"] == 2  # resumed, nothing asked
