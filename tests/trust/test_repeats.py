"""Repeats (issue 27, item 1): the statistics, the stopping rule, the store, the engine.

The loopback-server and SIGKILL checks are in test_repeats_server.py and
test_repeats_kill.py; here the mock model judges (its ``outputs`` function sees each
request, with its ``repeat``).
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

import jurist
from jurist._sync import run_sync
from jurist.cli._summary import print_summary
from jurist.engines import BatchAPIEngine, RayEngine
from jurist.errors import ConfigError
from jurist.metrics import (
    flip_rate,
    krippendorff_alpha,
    repeat_stats,
    self_consistency,
    two_level_difference,
    two_level_interval,
)
from jurist.runs._store import RunStore
from jurist.trust import RepeatModel, RepeatPlan, judge_for_repeat
from jurist.types import Completion, Message, Request, Usage

# -- statistics ----------------------------------------------------------------------------


def test_flip_rate_is_the_share_of_disagreeing_pairs() -> None:
    assert flip_rate([1.0, 1.0, 1.0]) == 0.0
    assert flip_rate([1.0, 0.0]) == 1.0
    assert flip_rate([1.0, 1.0, 0.0, 0.0]) == pytest.approx(4 / 6)
    assert flip_rate([1.0, None, 1.0]) == 0.0  # a failed repeat is no verdict
    assert flip_rate([None, 1.0]) is None
    stats = repeat_stats([[0.25, 0.75, 0.75], [None, None]])
    assert stats[0].mean == pytest.approx(7 / 12) and stats[0].mode == 0.75
    assert (stats[1].mean, stats[1].mode, stats[1].flip_rate) == (None, None, None)


def test_self_consistency_is_alpha_with_the_repeats_as_raters() -> None:
    scores: list[list[float | None]] = [
        [1.0, 1.0, 0.0],
        [0.0, 0.0, 0.0],
        [0.5, 1.0, None],
        [1.0, 1.0, 1.0],
    ]
    raters = [[item[r] if r < len(item) else None for item in scores] for r in range(3)]
    expected = krippendorff_alpha(raters, level="interval")
    assert self_consistency(scores) == pytest.approx(expected)
    assert self_consistency([[1.0, 1.0], [0.0, 0.0]]) == pytest.approx(1.0)


def test_the_two_level_interval_includes_the_judges_variance() -> None:
    rng = np.random.default_rng(3)
    means = rng.uniform(0.3, 0.7, 40)
    # each item judged 5 times by a coin of its own mean: unstable verdicts
    shaky = [[float(x) for x in rng.random(5) < m] for m in means]
    steady = [[float(np.mean(s))] for s in shaky]  # the same item means, no variance left
    low, high = two_level_interval(shaky, seed=1)
    s_low, s_high = two_level_interval(steady, seed=1)
    assert high - low > s_high - s_low
    mean = float(np.mean([np.mean(s) for s in shaky]))
    assert low < mean < high
    with pytest.raises(Exception, match="confidence"):
        two_level_interval(shaky, confidence=1.5)
    assert all(np.isnan(two_level_interval([[1.0]])))


def test_the_paired_difference_is_narrower_than_the_unpaired() -> None:
    rng = np.random.default_rng(5)
    base = rng.uniform(0, 1, 60)
    a = [[float(x)] for x in base]
    b = [[float(x) - 0.02] for x in base]  # the same items, each a little lower
    d, low, high = two_level_difference(b, a, paired=True)
    assert d == pytest.approx(-0.02) and low == pytest.approx(-0.02)
    _, u_low, u_high = two_level_difference(b, a, paired=False)
    assert u_high - u_low > high - low + 0.05
    with pytest.raises(Exception, match="same items"):
        two_level_difference(b[:3], a, paired=True)


# -- the stopping rule -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "settled"),
    [
        ([1.0, 1.0], False),  # under min_repeats (3)
        ([1.0, 1.0, 1.0], True),  # unanimous
        ([1.0, 1.0, None], True),  # unanimous among the scored
        ([None, None, None], False),  # no verdict yet
        ([1.0, 0.0, 1.0], False),  # leads 2-1 with 2 repeats left: could still lose
        ([1.0, 0.0, 1.0, 0.0], False),  # 2-2
        ([1.0, 0.0, 1.0, 1.0], True),  # leads 3-1 with 1 left: cannot lose the lead
        ([1.0, 0.0, 1.0, 0.0, 0.5], True),  # the most (5) reached
    ],
)
def test_the_adaptive_stopping_rule(scores: list[float | None], settled: bool) -> None:
    assert RepeatPlan(repeats=5, adaptive=True).settled(scores) == settled


def test_repeat_plans_check_their_numbers() -> None:
    assert RepeatPlan(repeats=4).first == 4
    assert RepeatPlan(repeats=6, adaptive=True).first == 3
    assert RepeatPlan(repeats=2, adaptive=True).first == 2
    assert RepeatPlan(repeats=6, adaptive=True, min_repeats=2).first == 2
    for bad in ({"repeats": 0}, {"repeats": 3, "min_repeats": 2}):
        with pytest.raises(ConfigError):
            jurist.engines.RunOptions(**bad)
    with pytest.raises(ConfigError, match="between 1 and repeats"):
        jurist.engines.RunOptions(repeats=3, adaptive=True, min_repeats=4)


def test_a_repeat_keys_the_cache_apart_but_repeat_zero_keys_as_before() -> None:
    request = Request(messages=(Message(role="user", content="q"),), temperature=0)
    assert "repeat" not in request.cache_fields()
    assert request.model_copy(update={"repeat": 2}).cache_fields()["repeat"] == 2


# -- the engine (mock model) ------------------------------------------------------------------

ITEMS = [{"prompt": f"question {i}", "response": "answer"} for i in range(4)]


class Scripted:
    """A mock model's outputs: item ``i``'s repeat ``r`` answers ``verdict(i, r)``; every
    request is kept as ``(item, repeat, seed)``."""

    def __init__(self, verdict: Any) -> None:
        self.verdict = verdict
        self.seen: list[tuple[int, int, int | None]] = []

    def __call__(self, request: Request) -> str:
        item = int(request.messages[-1].content.split("question ")[1].split()[0])
        self.seen.append((item, request.repeat, request.seed))
        return str(self.verdict(item, request.repeat))


def judge_with(script: Scripted, **options: Any) -> jurist.LLMJudge:
    return jurist.LLMJudge(jurist.get_model("mock:judge", outputs=script), **options)


def test_each_item_is_judged_n_times_and_stored_per_repeat(tmp_path: Path) -> None:
    script = Scripted(lambda i, r: "Incorrect" if i == 3 and r == 1 else "Correct")
    run = jurist.evaluate(ITEMS, judge_with(script), run_dir=tmp_path, repeats=3)
    assert sorted(script.seen) == [(i, r, None) for i in range(4) for r in range(3)]
    records = list(run.records())
    assert [r["judge_score"] for r in records] == [1.0, 1.0, 1.0, pytest.approx(2 / 3)]
    assert records[3]["judge_verdict"] == "Correct"  # the mode's verdict
    assert records[3]["judge_repeats"]["scores"] == [1.0, 0.0, 1.0]
    assert records[3]["judge_repeats"]["flip_rate"] == pytest.approx(2 / 3)
    assert all(r["judge_calls"] == 3 for r in records)
    db = sqlite3.connect(tmp_path / "run.sqlite")
    assert db.execute("SELECT COUNT(*) FROM repeats").fetchone()[0] == 12
    db.close()
    summary = run.summary()
    assert summary.calls == 12 and summary.items == 4 and summary.status == "complete"
    assert summary.repeats is not None
    assert (summary.repeats.repeats, summary.repeats.unstable_items) == (3, 1)
    assert run.item_scores()[3] == [1.0, 0.0, 1.0]
    assert run.manifest.options["repeats"] == {"repeats": 3, "adaptive": False, "min_repeats": 3}


def test_a_repeat_marks_its_requests_and_offsets_their_seed() -> None:
    backend = jurist.models.MockModel(outputs=["Correct"], cycle=True)
    model = RepeatModel(backend, 2)
    request = Request(messages=(Message(role="user", content="q"),), seed=7)
    run_sync(model.complete(request))
    run_sync(model.complete(request.model_copy(update={"seed": None})))
    assert [(r.repeat, r.seed) for r in backend.requests] == [(2, 9), (2, None)]
    judge = jurist.LLMJudge(backend)
    assert judge_for_repeat(judge, 0) is judge
    assert judge_for_repeat(judge, 3).model.repeat == 3


def test_resume_judges_again_only_the_failed_repeats(tmp_path: Path) -> None:
    """A repeat without a score (an unreadable verdict) is judged again on resume, alone;
    the item's row then holds every repeat, and the spend of the failed one is kept."""
    fail_once = {(2, 1)}

    def verdict(i: int, r: int) -> str:
        if (i, r) in fail_once:
            fail_once.discard((i, r))
            return "no idea"
        return "Correct"

    script = Scripted(verdict)
    first = jurist.evaluate(ITEMS, judge_with(script), run_dir=tmp_path, repeats=2)
    assert first.item_scores()[2] == [1.0, None]
    assert first.summary().scored == 4  # the item has a score from its other repeat
    assert first.summary().repeats.failed == 1  # type: ignore[union-attr]
    script.seen.clear()
    again = jurist.evaluate(ITEMS, judge_with(script), run_dir=tmp_path, repeats=2)
    assert script.seen == [(2, 1, None)]
    assert again.item_scores()[2] == [1.0, 1.0]
    summary = again.summary()
    assert summary.calls == 9 and summary.superseded == 1
    # no retry_failed: the failure stays and nothing is judged
    script.seen.clear()
    fail_once.add((0, 0))
    jurist.evaluate(ITEMS, judge_with(script), run_dir=tmp_path / "b", repeats=2)
    jurist.evaluate(
        ITEMS, judge_with(script), run_dir=tmp_path / "b", repeats=2, retry_failed=False
    )
    assert script.seen.count((0, 0, None)) == 1


def test_changing_the_repeats_stops_a_resume(tmp_path: Path) -> None:
    script = Scripted(lambda i, r: "Correct")
    jurist.evaluate(ITEMS, judge_with(script), run_dir=tmp_path, repeats=2)
    with pytest.raises(ConfigError, match="repeats"):
        jurist.evaluate(ITEMS, judge_with(script), run_dir=tmp_path, repeats=3)


@pytest.mark.parametrize("engine", [RayEngine(), BatchAPIEngine()])
def test_ray_and_batch_engines_refuse_repeats_before_any_folder(
    engine: Any, tmp_path: Path
) -> None:
    script = Scripted(lambda i, r: "Correct")
    with pytest.raises(ConfigError, match="local engine only"):
        jurist.evaluate(
            ITEMS, judge_with(script), run_dir=tmp_path / "run", repeats=2, engine=engine
        )
    assert not (tmp_path / "run").exists() and script.seen == []


def test_a_store_from_before_repeats_opens_and_reads(tmp_path: Path) -> None:
    """An older run.sqlite (no repeats table) reads as a run without repeats, and gets the
    table (empty) when opened for writing."""
    script = Scripted(lambda i, r: "Correct")
    run = jurist.evaluate(ITEMS, judge_with(script), run_dir=tmp_path)
    db = sqlite3.connect(tmp_path / "run.sqlite")
    db.execute("DROP TABLE repeats")
    db.commit()
    db.close()
    again = jurist.Run(tmp_path)
    assert again.item_scores() == [[1.0]] * 4 and again.summary().repeats is None
    assert run.summary().calls == 4
    store = RunStore(tmp_path / "run.sqlite")
    table = store.repeat_table()
    assert table is not None and table.count() == 0
    store.close()


def _thinking_answer() -> Completion:
    usage = Usage(
        prompt_tokens=10,
        completion_tokens=12,
        reasoning_tokens=10,
        cache_write_tokens=5,
        calls=1,
        attempts=1,
    )
    return Completion(text="Correct", usage=usage, reasoning="2 + 2 is 4.")


def test_each_repeat_keeps_what_its_thinking_and_cache_writes_spent(tmp_path: Path) -> None:
    """A repeat's row keeps its reasoning and cache-write tokens, so the item's row (the
    sum of its repeats, read back from the table) and the run's totals count them."""
    model = jurist.get_model("mock:judge", outputs=[_thinking_answer()], cycle=True)
    run = jurist.evaluate(
        ITEMS, jurist.LLMJudge(model, template="true_false"), run_dir=tmp_path, repeats=3
    )
    records = list(run.records())
    assert [r["judge_reasoning_tokens"] for r in records] == [30] * 4  # 3 repeats of 10
    assert run.summary().reasoning_tokens == 4 * 3 * 10
    store = RunStore(tmp_path / "run.sqlite")
    totals = store.totals().usage
    assert (totals.reasoning_tokens, totals.cache_write_tokens) == (120, 60)
    table = store.repeat_table()
    assert table is not None
    assert {(r.usage.reasoning_tokens, r.usage.cache_write_tokens) for r in table.all()} == {
        (10, 5)
    }
    store.close()


def test_a_repeats_table_from_before_its_token_columns_opens_and_reads(
    tmp_path: Path,
) -> None:
    """A repeats table without the reasoning and cache-write columns (written before they
    were kept) reads them as 0, and gets them when the store is opened for writing."""
    model = jurist.get_model("mock:judge", outputs=[_thinking_answer()], cycle=True)
    jurist.evaluate(
        ITEMS, jurist.LLMJudge(model, template="true_false"), run_dir=tmp_path, repeats=2
    )
    db = sqlite3.connect(tmp_path / "run.sqlite")
    for column in ("cache_write_tokens", "reasoning_tokens"):
        db.execute(f"ALTER TABLE repeats DROP COLUMN {column}")
    db.execute("DELETE FROM results WHERE idx = 3")  # a killed run: item 3 not aggregated
    db.commit()
    db.close()
    old = RunStore(tmp_path / "run.sqlite", readonly=True)
    table = old.repeat_table()
    assert table is not None
    assert {r.usage.reasoning_tokens for r in table.all()} == {0}
    assert old.totals().usage.reasoning_tokens == 3 * 20  # items 0-2's rows; 3's pending: 0
    old.close()
    store = RunStore(tmp_path / "run.sqlite")  # for writing: the columns are added
    assert store.totals().usage.reasoning_tokens == 3 * 20
    store.close()
    db = sqlite3.connect(tmp_path / "run.sqlite")
    columns = {r[1] for r in db.execute("PRAGMA table_info(repeats)")}
    db.close()
    assert {"cache_write_tokens", "reasoning_tokens"} <= columns


def test_the_summary_and_the_report_show_the_repeat_figures(tmp_path: Path) -> None:
    script = Scripted(lambda i, r: "Incorrect" if (i, r) == (1, 0) else "Correct")
    run = jurist.evaluate(ITEMS, judge_with(script), run_dir=tmp_path / "run", repeats=3)
    html = run.report().read_text()
    assert "unstable items (flip rate &gt; 0)" in html and "1 of 4, mean flip rate" in html
    assert "self-consistency (alpha)" in html and "with the judge variance" in html
    console = Console(width=200, record=True)
    print_summary(console, {**run.summary().model_dump(), "results": "r.jsonl"}, [])
    text = console.export_text()
    assert "repeats" in text and "3 per item: 12 judgments" in text


def test_an_adaptive_run_cut_inside_items_resumes_where_it_stopped(tmp_path: Path) -> None:
    """The store of a whole adaptive run, less some repeats and item rows (what a kill
    leaves), resumed: exactly the missing repeats are judged, and the result is the same."""

    def verdict(i: int, r: int) -> str:
        return "Correct" if i % 2 == 0 or (i * 7 + r * 3) % 5 < 3 else "Incorrect"

    items = [{"prompt": f"question {i}", "response": "answer"} for i in range(8)]
    script = Scripted(verdict)
    whole = jurist.evaluate(items, judge_with(script), run_dir=tmp_path, repeats=7, adaptive=True)
    expected = whole.item_scores()
    assert {len(s) for s in expected[0::2]} == {3} and max(len(s) for s in expected) > 3
    db = sqlite3.connect(tmp_path / "run.sqlite")
    cut = db.execute(
        "SELECT idx, repeat FROM repeats WHERE (idx % 2 = 1 AND repeat >= 2) OR idx = 4"
    ).fetchall()
    db.execute("DELETE FROM repeats WHERE (idx % 2 = 1 AND repeat >= 2) OR idx = 4")
    db.execute("DELETE FROM results WHERE idx % 2 = 1 OR idx = 4")
    db.commit()
    db.close()
    # the calls of repeats whose item has no row yet still count in the totals
    assert jurist.Run(tmp_path).summary().calls == sum(len(s) for s in expected) - len(cut)
    script.seen.clear()
    again = jurist.evaluate(items, judge_with(script), run_dir=tmp_path, repeats=7, adaptive=True)
    assert sorted((i, r) for i, r, _ in script.seen) == sorted(cut)
    assert again.item_scores() == expected
    assert again.summary().calls == sum(len(s) for s in expected)


def test_a_resumed_adaptive_item_counts_only_the_repeats_its_rule_counts(
    tmp_path: Path,
) -> None:
    """Issue 31, defect 12: answers Correct, Incorrect, unreadable, Correct, Incorrect (min
    2 of 5): the first session judges all five; on resume the unreadable repeat reads
    Correct and settles the rule at 4, so the fifth is not counted: the item's row, its
    repeat figures and the run's summary are a fresh run's (n 4, mean 0.75), and what the
    set-aside repeat spent stays in the run's totals."""
    answers = ["Correct", "Incorrect", "no idea", "Correct", "Incorrect"]
    options: dict[str, Any] = {"repeats": 5, "adaptive": True, "min_repeats": 2}
    items = ITEMS[:1]
    script = Scripted(lambda i, r: answers[r])
    first = jurist.evaluate(items, judge_with(script), run_dir=tmp_path / "run", **options)
    assert first.item_scores() == [[1.0, 0.0, None, 1.0, 0.0]]
    answers[2] = "Correct"  # the repeat judged again reads this time
    script.seen.clear()
    again = jurist.evaluate(items, judge_with(script), run_dir=tmp_path / "run", **options)
    assert script.seen == [(0, 2, None)]
    fresh = jurist.evaluate(
        items, judge_with(Scripted(lambda i, r: answers[r])), run_dir=tmp_path / "fresh", **options
    )
    assert again.item_scores() == fresh.item_scores() == [[1.0, 0.0, 1.0, 1.0]]
    (resumed,), (whole,) = list(again.records()), list(fresh.records())
    assert resumed["judge_repeats"] == whole["judge_repeats"]
    assert (resumed["judge_repeats"]["n"], resumed["judge_score"]) == (4, 0.75)
    assert resumed["judge_calls"] == whole["judge_calls"] == 4
    summary, expected = again.summary(), fresh.summary()
    assert summary.repeats == expected.repeats and summary.mean_score == 0.75
    # six calls were made: the failed repeat and the one past the stop are superseded
    assert (summary.calls, summary.superseded) == (6, 2)
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    assert db.execute("SELECT repeat FROM repeats ORDER BY repeat").fetchall() == [
        (0,),
        (1,),
        (2,),
        (3,),
    ]
    db.close()


def test_a_pairwise_judge_repeats_with_both_orders(tmp_path: Path) -> None:
    pairs = [{"prompt": f"q{i}", "response_a": "a", "response_b": "b"} for i in range(3)]
    model = jurist.get_model("mock:judge", outputs=["[[A]]"], cycle=True)
    judge = jurist.PairwiseJudge(model, template="mt_bench_pair", swap=True)
    run = jurist.evaluate(pairs, judge, run_dir=tmp_path, repeats=2)
    records = list(run.records())
    assert [r["judge_repeats"]["n"] for r in records] == [2, 2, 2]
    assert all(r["judge_calls"] == 4 for r in records)  # 2 repeats x 2 orders
    assert run.summary().repeats.judgments == 6  # type: ignore[union-attr]


class Counting(jurist.models.Model):
    """A model that answers "Correct" after a short wait and keeps the most calls it had
    in flight at once."""

    provider, name = "count", "calls"

    def __init__(self) -> None:
        self.now = self.peak = self.calls = 0

    async def complete(self, request: Request) -> Completion:
        self.now += 1
        self.calls += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(0.005)
        self.now -= 1
        return Completion(text="Correct", usage=Usage(calls=1, attempts=1))


def test_concurrency_bounds_the_calls_in_flight_over_all_repeats(tmp_path: Path) -> None:
    model = Counting()
    items = [{"prompt": f"question {i}", "response": "a"} for i in range(12)]
    jurist.evaluate(items, jurist.LLMJudge(model), run_dir=tmp_path, repeats=5, concurrency=4)
    assert model.calls == 60 and model.peak == 4
