"""A Ray actor killed mid-run: Ray restarts it and retries its batch; one row per item."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import jurist
from jurist.engines import RayOptions, judge_ray_dataset
from jurist.types import Request
from tests._ray_cluster import ray_session  # noqa: F401


def test_a_killed_actor_loses_and_duplicates_no_row(ray_cluster: Any, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()

    def answer(request: Request) -> str:
        (pids / str(os.getpid())).touch()  # which processes judge (the actors)
        return "Correct"

    n = 30
    model = jurist.get_model("mock:a", outputs=answer, latency=0.2)
    items = [{"id": i, "prompt": f"q{i}", "response": "a"} for i in range(n)]
    ds = judge_ray_dataset(
        ray_cluster.data.from_items(items),
        jurist.LLMJudge(model),
        options=RayOptions(actors=2, batch_size=3),
    )
    rows: list[dict[str, Any]] = []
    failed: list[BaseException] = []

    def consume() -> None:
        try:
            rows.extend(ds.iter_rows())
        except BaseException as e:
            failed.append(e)

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    victim = None
    while victim is None and thread.is_alive():
        seen = [int(p.name) for p in pids.iterdir() if int(p.name) != os.getpid()]
        if seen:
            victim = seen[0]
        time.sleep(0.05)
    assert victim is not None, "no actor judged an item before the run ended"
    os.kill(victim, signal.SIGKILL)
    thread.join(timeout=120)
    assert not failed, failed
    assert sorted(r["id"] for r in rows) == list(range(n))
    assert all(r["judge_score"] == 1.0 for r in rows)
    # the killed actor was replaced by a new process that judged the rest of its work
    assert len([p for p in pids.iterdir() if int(p.name) != victim]) >= 1
