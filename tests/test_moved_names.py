"""``jurist.evaluate`` is the function, whatever has been imported.

The forwarding package ``jurist/evaluate/`` of 0.x versions is gone: its names live in
``jurist.engines``, ``jurist.runs``, ``jurist.data`` and ``jurist.pipeline``, and no
submodule of jurist shadows a public name of ``jurist`` once it is imported (importing a
submodule binds it as an attribute of its parent package: a package named like a function
would replace the function). The check imports every module of jurist in a fresh
interpreter (``pkgutil.walk_packages``), skipping only the adapters whose optional package
is not installed, which say so with a :class:`~jurist.errors.MissingDependencyError`.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys

import pytest

import jurist
import jurist.engines

WALK = r"""
import importlib, importlib.util, json, pkgutil, sys
import jurist
from jurist.errors import MissingDependencyError

before = {name: getattr(jurist, name) for name in jurist.__all__}
imported, skipped, failed = [], {}, {}
for info in pkgutil.walk_packages(jurist.__path__, "jurist.", onerror=lambda name: None):
    if info.name.rpartition(".")[2] == "__main__":  # python -m jurist: runs the CLI
        continue
    try:
        importlib.import_module(info.name)
    except MissingDependencyError as e:
        if importlib.util.find_spec(e.package.split("[")[0]) is None:
            skipped[info.name] = e.package  # an adapter whose package is not installed
        else:
            failed[info.name] = f"{type(e).__name__}: {e}"
    except Exception as e:
        failed[info.name] = f"{type(e).__name__}: {e}"
    else:
        imported.append(info.name)
from jurist.engines import _evaluate
print(json.dumps({
    "imported": imported,
    "skipped": skipped,
    "failed": failed,
    "shadowed": sorted(n for n, obj in before.items() if getattr(jurist, n) is not obj),
    "evaluate_is_the_function": jurist.evaluate is _evaluate.evaluate,
    "aevaluate_is_the_function": jurist.aevaluate is _evaluate.aevaluate,
    "callable": callable(jurist.evaluate),
}))
"""


@pytest.fixture(scope="module")
def walked() -> dict[str, object]:
    """What importing every module of jurist in a fresh interpreter leaves behind."""
    out = subprocess.run(
        [sys.executable, "-c", WALK], capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_every_module_imports_and_jurist_evaluate_stays_the_engines_function(
    walked: dict[str, object],
) -> None:
    assert walked["failed"] == {}
    imported = walked["imported"]
    assert isinstance(imported, list)
    # the walk reached every layer, the engines and the CLI commands included
    for name in ("jurist.engines._evaluate", "jurist.cli._judge", "jurist.runs", "jurist.models"):
        assert name in imported
    assert "jurist.evaluate" not in imported
    # only adapters of optional packages may be skipped
    skipped = walked["skipped"]
    assert isinstance(skipped, dict)
    assert all(name.startswith(("jurist.compat.", "jurist.models.")) for name in skipped)
    assert walked["callable"] is True
    assert walked["evaluate_is_the_function"] is True
    assert walked["aevaluate_is_the_function"] is True
    assert walked["shadowed"] == []


def test_the_old_package_is_gone() -> None:
    assert importlib.util.find_spec("jurist.evaluate") is None
    with pytest.raises(ModuleNotFoundError, match=r"jurist\.evaluate"):
        importlib.import_module("jurist.evaluate")
    assert jurist.evaluate is jurist.engines.evaluate
    assert callable(jurist.evaluate) and not isinstance(jurist.evaluate, type(jurist))
    # BatchAPIOptions is the batcher's own class, exported by jurist.engines as well
    assert importlib.util.find_spec("jurist.engines._batch_options") is None
    batching = importlib.import_module("jurist.batching")
    assert jurist.engines.BatchAPIOptions is batching.BatchAPIOptions


@pytest.mark.parametrize(
    ("name", "home"),
    [
        ("Run", "jurist.runs"),
        ("PriceTable", "jurist.runs"),
        ("RunOptions", "jurist.engines"),
        ("RayEngine", "jurist.engines"),
        ("BatchAPIOptions", "jurist.engines"),
        ("evaluate", "jurist.engines"),
        ("read_records", "jurist.data"),
        ("JudgeMetric", "jurist.pipeline"),
        ("evaluate_model", "jurist.pipeline"),
    ],
)
def test_the_names_of_the_old_package_import_from_their_homes(name: str, home: str) -> None:
    module = importlib.import_module(home)
    assert name in module.__all__
    assert getattr(module, name) is not None
