"""The run store: one row per item, durable writes, streamed reads, totals."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from jurist.runs._store import Bitmap, RunStore, StoredResult
from jurist.types import Usage


def result(idx: int, score: float | None = 1.0, **kw: object) -> StoredResult:
    return StoredResult(
        idx=idx,
        item_hash=f"h{idx}",
        item={"i": idx},
        score=score,
        error=None if score is not None else "parse: nothing",
        outcome={"score": score, "verdict": "Correct" if score else None},
        usage=kw.pop("usage", Usage(prompt_tokens=10, completion_tokens=2, calls=1)),  # type: ignore[arg-type]
        cost=kw.pop("cost", 0.5),  # type: ignore[arg-type]
    )


@given(st.sets(st.integers(0, 50_000), max_size=200), st.lists(st.integers(0, 60_000), max_size=50))
def test_bitmap_is_a_set(members: set[int], probes: list[int]) -> None:
    bits = Bitmap()
    for m in members:
        bits.add(m)
        bits.add(m)
    assert bits.count == len(members)
    for p in [*members, *probes]:
        assert bits.has(p) == (p in members)


def test_one_result_per_item_and_totals(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run.sqlite")
    assert store.write(result(0)) is True
    assert store.write(result(0, score=0.0)) is False  # an item never gets a second result
    store.write(result(2, score=None, cost=None))
    store.write(result(1, score=0.5))
    assert [r["idx"] for r in store.rows()] == [0, 1, 2]
    assert next(store.rows())["score"] == 1.0
    assert [r["idx"] for r in store.rows(failed_only=True)] == [2]
    totals = store.totals()
    assert (totals.items, totals.scored, totals.mean_score) == (3, 2, 0.75)
    # the refused second result of item 0 was paid for: its calls stay in the totals
    assert totals.usage.prompt_tokens == 40 and totals.usage.calls == 4
    assert totals.superseded == 1
    # one unpriced item makes the total unknown; the priced items' sum is kept apart
    assert totals.cost is None and totals.cost_known == 1.5 and totals.cost_unknown == 1
    assert store.error_counts() == {"parse": 1}
    store.set_meta("status", "running")
    assert store.get_meta("status") == "running" and store.get_meta("absent") is None
    store.close()


def test_writes_are_visible_to_another_connection_at_once(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    writer = RunStore(path)
    reader = RunStore(path, readonly=True)
    for i in range(5):
        writer.write(result(i))
        assert reader.count() == i + 1  # committed as written, no batching
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reader.close()
    writer.close()


def test_clear_starts_over(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run.sqlite")
    store.write(result(0))
    store.set_meta("sessions", 3)
    store.clear()
    assert store.count() == 0 and store.get_meta("sessions") is None
    store.close()
