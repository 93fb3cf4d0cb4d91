"""A bad suite file stops ``jurist run`` with exit 2 and one line naming the file, the line
and the key, before any call (issue 36)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jurist.cli import main

GOOD = """version: 1
datasets:
  qa:
    path: qa.jsonl
judges:
  j:
    model: "mock:j"
    template: true_false
bars:
  - mean_score: 0.5
"""


def suite(tmp_path: Path, text: str) -> Path:
    (tmp_path / "qa.jsonl").write_text('{"prompt": "2+2?", "response": "4"}\n')
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        (GOOD.replace("mean_score: 0.5", "mean_scor: 0.5"), 10,
         "bars[0]: a bar names exactly one of mean_score, pass_rate, max_drop, corrected_mean"),
        (GOOD.replace("mean_score: 0.5", "mean_score: 1.5"), 10,
         "bars[0].mean_score: Input should be less than or equal to 1"),
        (GOOD + "  - pass_rate: 0.8\n    treshold: 0.5\n", 12, "bars[1].treshold: unknown key"),
        (GOOD.replace("version: 1", "version: 2"), 1, "version: 2; this jurist reads"),
        (GOOD.replace("    path: qa.jsonl", "    path: nowhere.jsonl"), 4,
         "datasets.qa.path: no such file"),
        (GOOD.replace("    template: true_false", "    temprature: 0"), 8,
         "judges.j.temprature: unknown key for a 'judge' entry"),
        (GOOD.replace('    model: "mock:j"\n    template: true_false', "    kind: jduge"), 7,
         "judges.j.kind: kind 'jduge' is not one of"),
        (GOOD.replace('  j:\n    model: "mock:j"\n    template: true_false',
                      "  j: judges.likert.nope"), 6,
         "judges.j: no catalog entry named 'judges.likert.nope'"),
        (GOOD + "    judges: [k]\n", 11, "bars[0].judges: no judge named 'k' in the suite"),
        (GOOD.replace("  qa:\n", "  9qa:\n"), 3, "datasets.9qa: a name is letters"),
        (GOOD + "settings:\n  retries: -1\n", 12,
         "settings.retries: Input should be greater than or equal to 0"),
        (GOOD.replace("  j:\n    model", "  j:\n    grader: g.json\n    model"), 7,
         "judges.j.grader: unknown key"),
        (GOOD + "  - max_drop: 0.1\n    baseline: base\n", 12,
         "bars[1].baseline: no baseline run for cell qa/j at"),
        ("version: 1\ndatasets: [\n", 3, "the suite file is not valid YAML"),
    ],
)  # fmt: skip
def test_a_bad_suite_file_is_one_line_naming_the_file_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, says: str
) -> None:
    path = suite(tmp_path, text)
    code = main(["run", str(path), "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"error: {path}:{line}: "), err
    assert says in lines[0], err
    assert not (tmp_path / "runs").exists()


def test_a_grader_judge_without_the_grader_loader_says_it_is_not_available(
    tmp_path: Path,
) -> None:
    from jurist.errors import ConfigError
    from jurist.pipeline.suites import load_suite

    (tmp_path / "g.json").write_text('{"type": "string_check"}')
    text = GOOD.replace(
        '  j:\n    model: "mock:j"\n    template: true_false', "  j: {grader: g.json}"
    )
    path = suite(tmp_path, text)
    with pytest.raises(
        ConfigError, match=r"suite.yaml:6: judges\.j\.grader: OpenAI graders are not"
    ):
        load_suite(path)
    seen = []
    loaded = load_suite(path, graders=lambda p: seen.append(p) or "a judge")
    assert loaded.judges == {"j": "a judge"} and seen == [tmp_path / "g.json"]
