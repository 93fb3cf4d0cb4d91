"""The batch-API engine against the fake Batch API server (issue 12, items 1-2)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.engines import BatchAPIEngine, BatchAPIOptions
from jurist.runs import Run
from tests._batch_server import BatchServer, Knobs

ITEMS = [{"prompt": f"What is {i}+{i}?", "response": str(2 * i + (i % 3 == 0))} for i in range(8)]
FAST = BatchAPIOptions(poll_interval=0.01)


def right_or_wrong(body: dict[str, Any]) -> str:
    """Deterministic: right when the response is twice the number asked about."""
    text = body["messages"][-1]["content"]
    for i in range(8):
        if f"What is {i}+{i}?" in text:
            return "Correct" if f"\n{2 * i}\n" in text else "Incorrect"
    return "Incorrect"


@pytest.fixture()
def server() -> Iterator[BatchServer]:
    with BatchServer(delay=0.02, answer=right_or_wrong) as s:
        yield s


def judge_of(server: BatchServer, **options: Any) -> jurist.LLMJudge:
    model = jurist.get_model("openai:judge", base_url=server.base_url, api_key="k")
    return jurist.LLMJudge(model, **options)


def scores(run: Run) -> list[float | None]:
    return [r["judge_score"] for r in run.records()]


def test_round_trip_sends_one_batch_and_no_live_call(server: BatchServer, tmp_path: Path) -> None:
    run = jurist.evaluate(
        ITEMS, judge_of(server), run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST)
    )
    summary = run.summary()
    assert summary.status == "complete" and summary.items == len(ITEMS)
    assert summary.failed == 0
    assert (server.uploads, server.creations, server.live_calls) == (1, 1, 0)
    assert len(server.submissions) == len(ITEMS)
    assert set(server.submissions.values()) == {1}
    assert summary.batch_calls == summary.calls == len(ITEMS)
    # custom_id = item-hash-occurrence
    assert sorted(int(c.split("-")[0]) for c in server.submissions) == list(range(len(ITEMS)))
    assert {c.rsplit("-", 1)[1] for c in server.submissions} == {"1"}


def test_live_and_batch_give_identical_scores(server: BatchServer, tmp_path: Path) -> None:
    judge = judge_of(server)
    live = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "live")
    assert server.live_calls == len(ITEMS) and server.creations == 0
    batch = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "batch", engine=BatchAPIEngine(FAST))
    assert server.live_calls == len(ITEMS) and server.creations == 1
    assert scores(batch) == scores(live)
    assert 0.0 in scores(live) and 1.0 in scores(live)
    assert [r["judge_verdict"] for r in batch.records()] == [
        r["judge_verdict"] for r in live.records()
    ]


def test_files_are_split_at_the_limits(server: BatchServer, tmp_path: Path) -> None:
    options = BatchAPIOptions(poll_interval=0.01, max_requests_per_file=3)
    run = jurist.evaluate(
        ITEMS, judge_of(server), run_dir=tmp_path / "run", engine=BatchAPIEngine(options)
    )
    assert run.summary().failed == 0
    assert (server.uploads, server.creations) == (3, 3)  # 3 + 3 + 2 requests
    assert set(server.submissions.values()) == {1}


def unreadable_first() -> Any:
    """An unreadable verdict the first time an item is asked, a readable one after."""
    asked: set[str] = set()

    def answer(body: dict[str, Any]) -> str:
        key = body["messages"][-1]["content"].split("<answer>")[-1]
        if key in asked:
            return "Correct"
        asked.add(key)
        return "let me think about it"

    return answer


def test_reasks_go_to_a_follow_up_batch(tmp_path: Path) -> None:
    with BatchServer(delay=0.0, answer=unreadable_first()) as server:
        run = jurist.evaluate(
            ITEMS[:3],
            judge_of(server),
            run_dir=tmp_path / "run",
            retries=1,
            engine=BatchAPIEngine(FAST),
        )
        assert scores(run) == [1.0, 1.0, 1.0]
        assert (server.creations, server.live_calls) == (2, 0)
        assert len(server.submissions) == 6 and set(server.submissions.values()) == {1}


def test_reasks_go_live_with_followup_live(tmp_path: Path) -> None:
    with BatchServer(delay=0.0, answer=unreadable_first()) as server:
        options = BatchAPIOptions(poll_interval=0.01, followup="live")
        run = jurist.evaluate(
            ITEMS[:3],
            judge_of(server),
            run_dir=tmp_path / "run",
            retries=1,
            engine=BatchAPIEngine(options),
        )
        assert scores(run) == [1.0, 1.0, 1.0]
        assert (server.creations, server.live_calls) == (1, 3)
        summary = run.summary()
        assert summary.batch_calls == 3 and summary.calls == 6


def test_expired_batch_keeps_its_lines_and_resubmits_the_rest(
    server: BatchServer, tmp_path: Path
) -> None:
    server.next_batch(Knobs(expire_after=3))
    run = jurist.evaluate(
        ITEMS, judge_of(server), run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST)
    )
    assert run.summary().failed == 0
    assert server.creations == 2
    counts = sorted(server.submissions.values())
    assert counts == [1] * 3 + [2] * (len(ITEMS) - 3)  # the expired ones, once more


def test_expired_batch_in_error_mode_records_the_rest_as_errors(
    server: BatchServer, tmp_path: Path
) -> None:
    server.next_batch(Knobs(expire_after=3))
    options = BatchAPIOptions(poll_interval=0.01, on_expired="error")
    run = jurist.evaluate(
        ITEMS, judge_of(server), run_dir=tmp_path / "run", engine=BatchAPIEngine(options)
    )
    rows = list(run.records())
    assert [r["judge_score"] is not None for r in rows] == [True] * 3 + [False] * 5
    batch_id = next(iter(server.batches))
    for row in rows[3:]:
        assert row["judge_error"].startswith(f"api: batch: {batch_id} expired before")
    assert server.creations == 1
    # on resume the failed items are sent again (retry_failed), the scored ones are not
    again = jurist.evaluate(
        ITEMS, judge_of(server), run_dir=tmp_path / "run", engine=BatchAPIEngine(options)
    )
    assert again.summary().failed == 0 and server.creations == 2


def test_failed_batch_resubmits_everything(server: BatchServer, tmp_path: Path) -> None:
    server.next_batch(Knobs(fail="the input was refused"))
    run = jurist.evaluate(
        ITEMS, judge_of(server), run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST)
    )
    assert run.summary().failed == 0 and server.creations == 2


def test_malformed_output_line_is_that_items_error_naming_its_custom_id(
    server: BatchServer, tmp_path: Path
) -> None:
    judge = judge_of(server)
    probe = jurist.evaluate(
        ITEMS[:1], judge, run_dir=tmp_path / "probe", engine=BatchAPIEngine(FAST)
    )
    assert probe.summary().failed == 0
    broken = next(iter(server.submissions))  # item 0's custom_id: the same in the next run
    server.next_batch(Knobs(malformed={broken}))
    run = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))
    rows = list(run.records())
    assert rows[0]["judge_score"] is None
    error = rows[0]["judge_error"]
    assert error.startswith("api: batch: ") and broken in error and ".jsonl:" in error
    assert all(r["judge_score"] is not None for r in rows[1:])


def test_error_line_raises_the_error_live_mode_would(server: BatchServer, tmp_path: Path) -> None:
    judge = judge_of(server)
    jurist.evaluate(ITEMS[:2], judge, run_dir=tmp_path / "probe", engine=BatchAPIEngine(FAST))
    first, second = sorted(server.submissions, key=lambda c: int(c.split("-")[0]))
    server.next_batch(Knobs(line_errors={first: 429, second: 400}))
    run = jurist.evaluate(ITEMS[:2], judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))
    rows = list(run.records())
    # a 429 line is transient: the batcher sends the same line again in the next round
    # (its resubmit, not the retry wrapper's: the batcher sits above it), as one more attempt
    assert rows[0]["judge_score"] is not None and rows[0]["judge_attempts"] == 2
    assert server.submissions[first] == 3  # the probe run, the 429 line, its resubmission
    assert not any(c.endswith("-2") for c in server.submissions)
    # a 400 line is a BadRequestError, not retried: the item's error
    assert rows[1]["judge_error"].startswith("api: ") and "HTTP 400" in rows[1]["judge_error"]
    assert f"test error 400 for {second}" in rows[1]["judge_error"]


def test_dropped_line_is_resubmitted(server: BatchServer, tmp_path: Path) -> None:
    judge = judge_of(server)
    jurist.evaluate(ITEMS[:1], judge, run_dir=tmp_path / "probe", engine=BatchAPIEngine(FAST))
    dropped = next(iter(server.submissions))
    server.next_batch(Knobs(drop={dropped}))
    run = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))
    assert run.summary().failed == 0
    assert server.submissions[dropped] == 3  # probe, dropped, resubmitted


def test_batch_api_on_a_finished_run_sends_nothing(server: BatchServer, tmp_path: Path) -> None:
    judge = judge_of(server)
    jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))
    before = (
        server.uploads,
        server.creations,
        server.polls,
        server.lists,
        server.live_calls,
        server.downloads,
    )
    run = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))
    after = (
        server.uploads,
        server.creations,
        server.polls,
        server.lists,
        server.live_calls,
        server.downloads,
    )
    assert after == before
    assert run.summary().status == "complete"


def test_a_concurrency_limit_does_not_hold_back_batch_requests(
    server: BatchServer, tmp_path: Path
) -> None:
    # the batcher sits above the limits: a request in a batch file is no call to the
    # server, so a limit of 2 calls at once still sends every item in one batch
    from jurist.models import LimitedModel

    inner = jurist.get_model("openai:judge", base_url=server.base_url, api_key="k")
    judge = jurist.LLMJudge(LimitedModel(inner, max_concurrency=2))
    run = jurist.evaluate(ITEMS[:4], judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))
    assert run.summary().failed == 0
    assert server.creations == 1 and set(server.submissions.values()) == {1}


def test_a_judge_without_an_openai_model_is_refused(tmp_path: Path) -> None:
    judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=["Correct"], cycle=True))
    with pytest.raises(jurist.errors.ConfigError, match=r"this judge calls mock:judge"):
        jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))


def test_batch_cancelled_elsewhere_keeps_its_lines_and_resubmits_the_rest(
    tmp_path: Path,
) -> None:
    import threading
    import urllib.request

    with BatchServer(delay=0.02, answer=right_or_wrong) as server:
        server.next_batch(Knobs(delay=30.0))  # the first batch runs until it is cancelled

        def cancel_the_first_batch() -> None:  # as a user would in the provider's dashboard
            while not server.batches:
                threading.Event().wait(0.005)
            batch_id = next(iter(server.batches))
            url = f"{server.base_url}/batches/{batch_id}/cancel"
            urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=10)

        canceller = threading.Thread(target=cancel_the_first_batch)
        canceller.start()
        run = jurist.evaluate(
            ITEMS, judge_of(server), run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST)
        )
        canceller.join()
        first = next(iter(server.batches.values()))
        assert first.status == "cancelled"
        assert run.summary().failed == 0 and server.creations == 2
        again = [c for c, n in server.submissions.items() if n == 2]
        assert len(again) == len(ITEMS) - first.completed  # only what it did not finish


def test_requests_a_provider_keeps_expiring_become_errors_after_max_resubmits(
    server: BatchServer, tmp_path: Path
) -> None:
    server.knobs = Knobs(expire_after=0)  # every batch expires before any line runs
    options = BatchAPIOptions(poll_interval=0.01, max_resubmits=2)
    run = jurist.evaluate(
        ITEMS, judge_of(server), run_dir=tmp_path / "run", engine=BatchAPIEngine(options)
    )
    rows = list(run.records())
    assert all(r["judge_score"] is None for r in rows)
    assert all("expired before this request ran" in r["judge_error"] for r in rows)
    assert all("sent 3 times" in r["judge_error"] for r in rows)
    assert server.creations == 3  # the first batch and 2 resubmissions, then no more
    assert sorted(set(server.submissions.values())) == [3]


def test_a_create_whose_answer_was_lost_is_found_again_not_sent_twice(
    server: BatchServer, tmp_path: Path
) -> None:
    """The server creates the batch but the client sees HTTP 502: the engine looks the
    batch up by its metadata before creating one, in the same session."""
    server.lose_next_answer("POST", "/v1/batches")
    run = jurist.evaluate(
        ITEMS, judge_of(server), run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST)
    )
    assert run.summary().failed == 0
    assert server.creations == 1 and server.lists >= 1
    assert set(server.submissions.values()) == {1}


def test_a_create_refused_by_a_transient_error_is_tried_again(
    server: BatchServer, tmp_path: Path
) -> None:
    server.fail_next("POST", "/v1/batches", 503)
    run = jurist.evaluate(
        ITEMS, judge_of(server), run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST)
    )
    assert run.summary().failed == 0
    assert server.creations == 1
    assert set(server.submissions.values()) == {1}


def test_parked_items_hold_no_task_and_their_requests_are_on_disk(
    server: BatchServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from jurist.batching import BatchSession

    seen: list[tuple[int, int]] = []
    send_round = BatchSession.send_round

    async def spy(self: BatchSession) -> Any:
        for out in self._files.values():  # written as parked; closed (flushed) to count
            out.close()
        files = sorted((tmp_path / "run" / "batch").glob("requests-*.jsonl"))
        lines = sum(len(f.read_bytes().splitlines()) for f in files)
        seen.append((len(asyncio.all_tasks()), lines))
        return await send_round(self)

    monkeypatch.setattr(BatchSession, "send_round", spy)
    items = [{"prompt": f"What is {i}+{i}?", "response": str(2 * i)} for i in range(600)]
    run = jurist.evaluate(
        items, judge_of(server), run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST)
    )
    assert run.summary().failed == 0 and server.creations == 1
    ((tasks, lines),) = seen
    assert lines == 600  # every request streamed to the round's file before it went
    assert tasks < 10  # the 600 parked items hold no task (nor what their frames held)
    assert not list((tmp_path / "run" / "batch").glob("requests-*.jsonl"))  # sent: removed


def test_identical_items_under_a_cache_do_not_wait_on_each_other_forever(
    server: BatchServer, tmp_path: Path
) -> None:
    # the cache coalesces identical calls in flight: the second item waits on the first
    # one's call, which parks; the second item is set aside too, and answered from the
    # cache (filled by the first) when it runs again
    from jurist.models import CachedModel

    inner = jurist.get_model("openai:judge", base_url=server.base_url, api_key="k")
    judge = jurist.LLMJudge(CachedModel(inner, tmp_path / "cache.sqlite"))
    items = [ITEMS[1], ITEMS[1], ITEMS[2]]
    run = jurist.evaluate(items, judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))
    rows = list(run.records())
    assert run.summary().failed == 0 and rows[0]["judge_score"] == rows[1]["judge_score"]
    assert server.creations == 1 and len(server.submissions) == 2


class SlowToFinish(jurist.LLMJudge):
    """An LLMJudge with work of its own after each answer (here a sleep: I/O, a busy
    loop), far longer than the poll interval."""

    async def judge(self, item: Any, *, retries: int = 0) -> Any:
        judgment = await super().judge(item, retries=retries)
        await asyncio.sleep(0.2)
        return judgment

    def with_models(self, fn: Any) -> SlowToFinish:
        return SlowToFinish(fn(self.model), template=self.template)


def test_an_item_busy_after_its_answer_is_not_set_aside_and_its_answer_not_taken_for_a_hit(
    server: BatchServer, tmp_path: Path
) -> None:
    # it waits on nothing parked, so it is waited for. Before, an idle timer (the poll
    # interval) set it aside while it worked: run again, it took its batch answer, cached
    # meanwhile, for a cache hit (cached, no call, no attempt), and was set aside again
    # until the run stopped ("set aside 3 times with no request to send")
    from jurist.models import CachedModel

    inner = jurist.get_model("openai:judge", base_url=server.base_url, api_key="k")
    judge = SlowToFinish(CachedModel(inner, tmp_path / "cache.sqlite"))
    run = jurist.evaluate(ITEMS[:3], judge, run_dir=tmp_path / "run", engine=BatchAPIEngine(FAST))
    rows = list(run.records())
    assert [(r["judge_cached"], r["judge_calls"], r["judge_attempts"]) for r in rows] == [
        (False, 1, 1)
    ] * 3
    assert server.creations == 1
