"""Multi-call judges through the batch API: every call goes into the batch and the
results are assembled per item exactly as live (issue 12, item 3)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.engines import BatchAPIEngine, BatchAPIOptions
from jurist.runs import Run
from tests._batch_server import BatchServer, answer_from

ITEMS = [{"prompt": f"q{i}", "response": f"a{i}", "other": f"b{i}"} for i in range(6)]
FAST = BatchAPIOptions(poll_interval=0.01)


def model(server: BatchServer, name: str = "judge") -> Any:
    # json_mode=None: the text format from the first call, so no judge adapts between runs
    return jurist.get_model(f"openai:{name}", base_url=server.base_url, api_key="k", json_mode=None)


def _same_part(value: Any) -> Any:
    """``value`` without what differs by how a call travelled: latency, batch_calls."""
    if isinstance(value, dict):
        return {
            k: _same_part(v) for k, v in value.items() if "latency" not in k and k != "batch_calls"
        }
    if isinstance(value, list):
        return [_same_part(v) for v in value]
    return value


def outcomes(run: Run) -> list[dict[str, Any]]:
    """Each item's outcome, score and tokens, the same whichever way the calls went."""
    return [
        _same_part(r["outcome"])
        | {"score": r["score"], "tokens": r["usage"].total_tokens, "calls": r["usage"].calls}
        for r in run.rows()
    ]


def live_and_batch(
    server: BatchServer, judge: Any, tmp_path: Path, **options: Any
) -> tuple[Run, Run]:
    live = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "live", **options)
    calls = server.live_calls
    creations = server.creations
    batch = jurist.evaluate(
        ITEMS, judge, run_dir=tmp_path / "batch", engine=BatchAPIEngine(FAST), **options
    )
    assert server.live_calls == calls  # nothing went live in batch mode
    assert server.creations > creations
    assert set(server.submissions.values()) == {1}  # no request submitted twice
    return live, batch


@pytest.fixture()
def server() -> Iterator[BatchServer]:
    with BatchServer(
        delay=0.01, answer=answer_from(("Correct", "Incorrect", "I am not sure"))
    ) as s:
        yield s


def test_panel_puts_every_judges_call_in_the_batch(server: BatchServer, tmp_path: Path) -> None:
    same = jurist.LLMJudge(model(server))
    panel = jurist.Panel(
        [same, jurist.LLMJudge(model(server)), jurist.LLMJudge(model(server, "other"))],
        aggregation="mean",
    )
    live, batch = live_and_batch(server, panel, tmp_path)
    assert outcomes(batch) == outcomes(live)
    assert len({r["score"] for r in batch.rows()}) > 1
    # two identical judges: the same body twice per item, two lines (occurrence 1 and 2)
    per_item = [c for c in server.submissions if c.startswith("0-")]
    assert len(per_item) == 3 and sorted(c.rsplit("-", 1)[1] for c in per_item) == ["1", "1", "2"]
    # one file per model: two files in one round
    assert server.creations == 2
    assert batch.summary().batch_calls == 3 * len(ITEMS)


def test_pairwise_judge_with_swap_sends_both_orders(tmp_path: Path) -> None:
    with BatchServer(delay=0.01, answer=answer_from(("[[A]]", "[[B]]", "[[C]]"))) as server:
        judge = jurist.PairwiseJudge(model(server), "mt_bench_pair", swap=True)
        fields = {"response_a": "response", "response_b": "other"}
        live, batch = live_and_batch(server, judge, tmp_path, fields=fields)
        assert outcomes(batch) == outcomes(live)
        assert len(server.submissions) == 2 * len(ITEMS) and server.creations == 1
        assert len({r["outcome"]["winner"] for r in batch.rows()}) > 1


def test_rubric_grader_ensemble_through_the_batch(tmp_path: Path) -> None:
    answers = (
        '{"c1": {"verdict": "MET"}, "c2": {"verdict": "MET"}}',
        '{"c1": {"verdict": "UNMET"}, "c2": {"verdict": "MET"}}',
        '{"c1": {"verdict": "UNMET"}, "c2": {"verdict": "UNMET"}}',
    )
    rubric = jurist.Rubric.from_dict(
        [
            {"name": "polite", "requirement": "Is polite"},
            {"name": "short", "requirement": "Is short"},
        ]
    )
    with BatchServer(delay=0.01, answer=answer_from(answers)) as server:
        grader = jurist.CriterionGrader(
            judges=[model(server, "g1"), model(server, "g2"), model(server, "g3")], seed=3
        )
        judge = grader.for_rubric(rubric)
        live, batch = live_and_batch(server, judge, tmp_path)
        assert outcomes(batch) == outcomes(live)
        assert len({r["score"] for r in batch.rows()}) > 1
        assert server.creations == 3  # one file per model
        assert len(server.submissions) == 3 * len(ITEMS)
