"""A Ray actor killed mid-run: Ray restarts it and retries its batch; one row per item.

No call is answered until the test has killed an actor (the ``release`` file), so the
actor it kills is surely at work, however slow the machine."""

from __future__ import annotations

import asyncio
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
    release = tmp_path / "release"

    async def answer(request: Request) -> str:
        (pids / str(os.getpid())).touch()  # which processes judge (the actors)
        while not release.exists():  # held until the test has killed an actor
            await asyncio.sleep(0.01)
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
    deadline = time.monotonic() + 600
    try:
        while victim is None and thread.is_alive() and time.monotonic() < deadline:
            seen = [int(p.name) for p in pids.iterdir() if int(p.name) != os.getpid()]
            if seen:
                victim = seen[0]
            time.sleep(0.05)
        assert victim is not None, f"no actor asked for a judgment: {failed}"
        os.kill(victim, signal.SIGKILL)  # while it waits for its answers
    finally:
        release.touch()
    thread.join(timeout=600)  # Ray restarts the actor: minutes on a loaded machine
    assert not thread.is_alive(), "the run did not end"
    assert not failed, failed
    assert sorted(r["id"] for r in rows) == list(range(n))
    assert all(r["judge_score"] == 1.0 for r in rows)
    # the killed actor was replaced by a new process that judged the rest of its work
    assert len([p for p in pids.iterdir() if int(p.name) != victim]) >= 1
