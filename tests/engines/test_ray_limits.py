"""Cluster-wide calls/tokens per minute: one pacer for every actor of a run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jurist
from jurist.engines import RayEngine, RayOptions
from jurist.engines._ray_limits import ClusterPacer
from tests._fault_server import Fault, FaultServer, ok
from tests._ray_cluster import ray_session  # noqa: F401


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_pacer_spaces_calls_evenly_without_bursts() -> None:
    clock = _Clock()
    pacer = ClusterPacer(rpm=120, clock=clock)
    assert [pacer.reserve(0) for _ in range(4)] == [0.0, 0.5, 1.0, 1.5]
    clock.now = 10.0  # idle for a while: the next call starts now, one at a time after it
    assert [pacer.reserve(0) for _ in range(2)] == [0.0, 0.5]


def test_pacer_reserves_tokens_and_settles_with_real_usage() -> None:
    clock = _Clock()
    pacer = ClusterPacer(tpm=600, clock=clock)  # 10 tokens per second
    assert pacer.reserve(20) == 0.0
    assert pacer.reserve(20) == 2.0  # after the first call's 20 tokens
    pacer.settle(20, 5)  # the second used 5: the schedule moves back 1.5 s
    assert pacer.reserve(10) == 2.5


class _TimedServer(FaultServer):
    """Answers "Correct" and keeps the arrival time of each request."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []

    def _next_fault(self, prompt: str) -> Fault:
        with self._lock:
            self.arrivals.append(time.monotonic())
        super()._next_fault(prompt)
        return ok("Correct")


def test_rpm_holds_for_the_whole_cluster(ray_cluster: Any, tmp_path: Path) -> None:
    # 20 calls per 2.5 s window, shared by 2 actors: 24 calls paced for the cluster span
    # 23 x 0.125 s = 2.875 s, so a full window exists and holds about 20 of them; each
    # actor pacing on its own (twice the rate), they would span 1.44 s: no full window
    rpm, window = 480, 2.5
    share = rpm / 60 * window
    items = [{"prompt": f"q{i}", "response": "a"} for i in range(24)]
    with _TimedServer() as server:
        judge = jurist.LLMJudge(jurist.get_model("openai:tiny", base_url=server.url, api_key="x"))
        run = jurist.evaluate(
            items,
            judge,
            run_dir=tmp_path / "run",
            # tpm far above what is used: its reservations must not slow the calls
            engine=RayEngine(RayOptions(actors=2, batch_size=4, rpm=rpm, tpm=10_000_000)),
        )
        arrivals = sorted(server.arrivals)
    assert run.summary().items == len(items)
    assert {r["judge_score"] for r in run.records()} == {1.0}
    start, full = arrivals[0], []
    while start + window <= arrivals[-1]:
        full.append(sum(start <= t < start + window for t in arrivals))
        start += window
    assert full, "the run ended before one full window"
    print("calls per full window:", full, "share:", share)
    assert all(count <= 1.2 * share for count in full), (full, share)
