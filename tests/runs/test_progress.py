"""The progress bar's rate: items judged in this session over the time since it started."""

from __future__ import annotations

from jurist._progress import BatchProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_burst_of_completions_after_a_resume_reads_at_its_true_rate() -> None:
    # A resumed run (1,000 items already done) whose batched backend answers 64 items at
    # once, 8 s after the start: 8 items/s, not the thousands a window over the burst gives.
    clock = Clock()
    bar = BatchProgress(2000, enabled=True, completed=1000, clock=clock)
    with bar:
        clock.now += 8.0
        for _ in range(64):
            bar.advance(ok=True)
        fields = bar._progress.tasks[0].fields  # type: ignore[attr-defined]
    assert bar.rate == 8.0
    assert fields["rate"] == "8.0 items/s"
    assert fields["eta"] == "ETA 0:01:57"  # 936 left at 8 items/s


def test_no_rate_before_the_first_item() -> None:
    clock = Clock()
    bar = BatchProgress(10, clock=clock)
    clock.now += 5
    assert bar.rate is None
    bar.advance(ok=False)
    assert bar.rate == 0.2 and bar.failed == 1


def test_rate_counts_from_entering_the_bar() -> None:
    clock = Clock()
    bar = BatchProgress(None, clock=clock)
    clock.now += 50  # built long before the batch starts
    with bar:
        clock.now += 2
        bar.advance(ok=True)
    assert bar.rate == 0.5
    assert bar._rate_fields() == {"rate": "0.5 items/s", "eta": ""}
