"""jurist's pytest plugin (``jurist.testing.pytest_plugin``, the ``pytest11`` entry point
``jurist``): ``assert_judged`` in a user's test suite, run by pytest's ``pytester``."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest

import jurist
from jurist.testing.pytest_plugin import JudgedWarning, assert_judged

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]


def plugin_args() -> list[str]:
    """``-p jurist.testing.pytest_plugin`` unless the installed entry point loads it."""
    names = {ep.name for ep in importlib.metadata.entry_points(group="pytest11")}
    return [] if "jurist" in names else ["-p", "jurist.testing.pytest_plugin"]


def test_pyproject_registers_the_plugin() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {
        "jurist": "jurist.testing.pytest_plugin"
    }


SUITE = """
import jurist
import pytest

def judged(tmp_path, good):
    def answer(request):
        i = int(request.messages[-1].content.split("ITEM-")[1].split()[0])
        return "Correct" if good(i) else "Incorrect"
    items = [{"prompt": f"ITEM-{i} ?", "response": "x"} for i in range(30)]
    judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=answer))
    return jurist.evaluate(items, judge, run_dir=tmp_path / "run", repeats=2)

def test_good_run(tmp_path, assert_judged):
    run = judged(tmp_path, lambda i: i % 10 != 0)
    result = assert_judged(run, min_score=0.7)
    assert result.status == "pass"

def test_bad_run(tmp_path, assert_judged):
    assert_judged(judged(tmp_path, lambda i: i % 10 < 3), min_score=0.7)

def test_folder_and_scores(tmp_path, assert_judged):
    run = judged(tmp_path, lambda i: True)
    assert_judged(str(run.run_dir), min_score=0.9)
    assert_judged([1.0, 1.0, 0.0, 1.0] * 5, min_score=0.5)

def test_inconclusive_warns(tmp_path, assert_judged):
    with pytest.warns(Warning, match="inconclusive"):
        assert_judged(judged(tmp_path, lambda i: i % 10 < 6), min_score=0.65)
"""


def test_assert_judged_passes_fails_and_lists_every_gate(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: ### jurist gate `*run`: * fail*",
            "*| mean score | 0.3000 | [[]*, *[]] | ≥ 0.7000 | fail |*",
            "*jurist gates*",
            "PASS *test_good_run: mean score 0.9000 [[]*[]] pass",
            "FAIL *test_bad_run: mean score 0.3000 [[]*[]] fail",
        ]
    )


def test_assert_judged_as_a_function(tmp_path: Path) -> None:
    results = jurist.LLMJudge(
        jurist.get_model("mock:judge", outputs=["Correct", "Incorrect"], cycle=True)
    ).judge_sync([{"prompt": "q", "response": "a"}] * 20)
    assert assert_judged(results, min_score=0.2).status == "pass"
    with pytest.raises(AssertionError, match="fail"):
        assert_judged(results, min_score=0.9)
    with pytest.warns(JudgedWarning):
        assert_judged(results, min_score=0.5)
    with pytest.raises(TypeError, match="assert_judged takes"):
        assert_judged(3.0, min_score=0.5)
