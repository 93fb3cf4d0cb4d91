"""The package ``jurist.evaluate`` moved to ``jurist.engines`` / ``runs`` / ``data`` /
``pipeline``: every old import keeps working with a DeprecationWarning that names the new
home, and the function ``jurist.evaluate`` keeps working after the old package is imported."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

OLD_NAMES = {
    "Run": "jurist.runs",
    "PriceTable": "jurist.runs",
    "RunOptions": "jurist.engines",
    "RayEngine": "jurist.engines",
    "evaluate": "jurist.engines",
    "read_records": "jurist.data",
    "JudgeMetric": "jurist.pipeline",
    "evaluate_model": "jurist.pipeline",
}


@pytest.mark.parametrize(("name", "home"), sorted(OLD_NAMES.items()))
def test_an_old_import_warns_and_gives_the_same_object(name: str, home: str) -> None:
    old = importlib.import_module("jurist.evaluate")
    with pytest.warns(DeprecationWarning, match=f"use 'from {home} import {name}'"):
        obj = getattr(old, name)
    assert obj is getattr(importlib.import_module(home), name)


def test_every_name_the_old_package_exported_still_imports() -> None:
    old = importlib.import_module("jurist.evaluate")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in dir(old):
            assert getattr(old, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    old = importlib.import_module("jurist.evaluate")
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        old.nothing_here  # noqa: B018


def test_jurist_evaluate_stays_callable_after_the_old_package_is_imported() -> None:
    # a fresh interpreter: importing jurist.evaluate rebinds the attribute to the module
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import jurist\n"
        "assert callable(jurist.evaluate) and not isinstance(jurist.evaluate, type(jurist))\n"
        "import jurist.evaluate\n"
        "assert isinstance(jurist.evaluate, type(jurist))\n"
        "judge = jurist.LLMJudge(jurist.get_model('mock:j', outputs=['4']), template='likert')\n"
        "run = jurist.evaluate([{'prompt': 'p', 'response': 'r'}], judge)\n"
        "print(run.summary().scored)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
