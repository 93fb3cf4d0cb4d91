"""JudgeBench's published judge outputs replayed by ``jurist bench``: the accuracies equal
what JudgeBench's own ``utils/metrics.py`` computes on the same files, to 0.01 points.

Data: a copy of ``ScalerLab/JudgeBench`` (its ``data/``, ``outputs/`` and
``utils/metrics.py``) at ../shared/realdata/JudgeBench, or wherever ``$JURIST_JUDGEBENCH``
points; the test skips when neither holds it (never copied into the project). Its
``outputs/`` hold five reward models' scores (both orders) and arena-hard judges' raw
texts: the reward models replay through the ``scores`` column, the arena-hard judges
through ``recorded``, read with jurist's ``arena_hard`` template. JudgeBench's metrics
module is loaded from that folder and run on each output file, as its ``run_judge.py``
does: the two-order figure with ``reverse_order=True``, the first order's with ``False``,
overall and per source category.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import jurist
from jurist.benchmark import read_judgebench

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
FOLDER = Path(os.environ.get("JURIST_JUDGEBENCH") or REALDATA / "JudgeBench")
METRICS = FOLDER / "utils" / "metrics.py"
CATEGORIES = ("mmlu-pro", "livebench-reasoning", "livebench-math", "livecodebench")

pytestmark = pytest.mark.skipif(
    not METRICS.is_file() or not list(FOLDER.glob("outputs/*.jsonl")),
    reason=f"JudgeBench's outputs and utils/metrics.py are not at {FOLDER}",
)


def _metrics() -> ModuleType:
    spec = importlib.util.spec_from_file_location("judgebench_metrics", METRICS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _setup(path: Path) -> str | None:
    parts = dict(p.split("=", 1) for p in path.stem.split(",") if "=" in p)
    if parts["judge_name"] == "reward_model":
        return f"scores:{parts['judge_model']}"
    if parts["judge_name"] == "arena_hard":
        return f"recorded:arena_hard:{parts['judge_model']}@arena_hard"
    return None  # other judges' own output formats have no jurist template here


def _expected(pairs: list[dict[str, Any]], category: str = "") -> tuple[float, float]:
    metrics = _metrics()

    def keep(pair: dict[str, Any]) -> bool:
        return str(pair["source"]).startswith(category)

    return (
        metrics.compute_final_metrics(pairs, True, include_fn=keep),
        metrics.compute_final_metrics(pairs, False, include_fn=keep),
    )


def test_replayed_accuracies_equal_judgebenchs_own(tmp_path: Path) -> None:
    datasets = read_judgebench(FOLDER)
    checked = []
    for d in datasets:
        model = d.name.removeprefix("judgebench-")
        outputs = sorted(FOLDER.glob(f"outputs/dataset=judgebench,response_model={model},*.jsonl"))
        setups = {str(p): s for p in outputs if (s := _setup(p)) is not None}
        if not setups:
            continue
        result = jurist.bench([d], sorted(set(setups.values())), out=tmp_path / d.name)
        for path, spec in setups.items():
            pairs = [json.loads(line) for line in Path(path).read_text().splitlines() if line]
            table = result.table(spec, d.name)
            both, first = _expected(pairs)
            assert 100 * table.value.value == pytest.approx(both, abs=0.01), spec
            assert 100 * table.first_order_accuracy.value == pytest.approx(first, abs=0.01), spec
            assert table.n == len(pairs)
            by_source = {s.source: s for s in table.sources}
            for category in CATEGORIES:
                if category in by_source:
                    want, _ = _expected(pairs, category)
                    got = by_source[category].value.value
                    assert 100 * got == pytest.approx(want, abs=0.01), (spec, category)
            checked.append((spec, round(100 * table.value.value, 2), round(both, 2)))
    assert checked, "no reward-model or arena-hard output file was found"
    print("\n".join(f"{s}: jurist {a}, JudgeBench {b}" for s, a, b in checked))


def test_a_reward_model_cascading_to_a_replayed_judge(tmp_path: Path) -> None:
    d = next((d for d in read_judgebench(FOLDER) if "gpt-4o" in d.name), None)
    if d is None or not any("arena_hard:o1-mini" in k for k in d.rows[0]["recorded"]):
        pytest.skip("JudgeBench's gpt-4o pairs with the o1-mini arena-hard outputs are absent")
    rm = "scores:Skywork_Skywork-Reward-Llama-3.1-8B"
    strong = "o1-mini=recorded:arena_hard:o1-mini-2024-09-12@arena_hard"
    result = jurist.bench(
        [d], [rm, strong], out=tmp_path / "b", cascades=[(rm, "o1-mini")], cascade_splits=200
    )
    (c,) = result.cascades
    assert (c.n, c.splits) == (350, 200)
    assert 0.0 <= c.sent_on.low <= c.sent_on.value <= c.sent_on.high <= 1.0
    # each tier alone on the same test halves: the published accuracies, split by split
    assert c.cheap_accuracy.value == pytest.approx(result.table(rm, d.name).value.value, abs=0.02)
    assert c.strong_accuracy.value == pytest.approx(
        result.table("o1-mini", d.name).value.value, abs=0.02
    )
    print(c.model_dump_json(indent=1))
