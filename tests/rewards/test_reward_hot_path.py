"""The reward paths' hot spots, counted rather than timed (issue 22; ``benchmarks/rewards.py``
times them against bare aiohttp).

- the reward server renders each sample's judge messages once: the coalescing key is built
  from the very messages that are judged (it rendered every sample twice);
- verl's per-sample ``compute_score_async`` resolves its ``reward_kwargs`` (the checks gate,
  the cached judge) once per distinct keyword arguments, not once per call;
- ``gc_freeze`` (verl, opt-in) and ``jurist serve-reward`` (always, its process is the
  server's) freeze the heap out of the garbage collector's way: full collections of a
  verl worker's ~510,000 objects took ~0.3 s per 1,024 rollouts, the server's ~0.16 s.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from jurist.errors import ConfigError
from jurist.judges import LLMJudge
from jurist.rewards import _heap, _verl, compute_score_async
from jurist.rewards._reward_judge import RewardJudge
from jurist.rewards._server import RewardService
from jurist.rewards._server_app import make_app
from jurist.rewards._trajectory import TrajectoryGate
from jurist.templates import Template

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts ``Template.render`` calls by the item's response."""
    counts: Counter[str] = Counter()
    render = Template.render

    def counted(self: Template, item: Any, *args: Any, **kwargs: Any) -> Any:
        counts[str(item.get("response"))] += 1
        return render(self, item, *args, **kwargs)

    monkeypatch.setattr(Template, "render", counted)
    return counts


async def test_a_streamed_sample_is_rendered_once(renders: Counter[str]) -> None:
    judge = LLMJudge("mock:j", outputs=["Score: 0.8"], cycle=True, template="reward")
    service = RewardService(RewardJudge(judge), concurrency=4)
    n = 12
    async with TestClient(TestServer(make_app(service), host="127.0.0.1")) as client:

        async def one(i: int) -> Any:
            body = {"query": [f"Q{i}? A: {i}"], "prompts": [f"Q{i}? A:"], "labels": ["x"]}
            return await (await client.post("/get_reward", json=body)).json()

        streamed = await asyncio.gather(*(one(i) for i in range(n)))
        batched = {
            "query": [f"B{i}? A: {i}" for i in range(n)],
            "prompts": [f"B{i}? A:" for i in range(n)],
            "labels": ["x"] * n,
        }
        together = await (await client.post("/get_reward", json=batched)).json()
    await service.aclose()
    assert [s["rewards"] for s in streamed] == [[0.8]] * n
    assert together["rewards"] == [0.8] * n
    # one render per sample, whether it came alone or in a batch (it was two)
    assert renders == Counter({f" {i}": 2 for i in range(n)})  # " i" streamed + batched
    assert service.batcher.batched_items == 2 * n


async def test_a_refused_sample_is_not_rendered_for_judging(renders: Counter[str]) -> None:
    judge = LLMJudge("mock:j", outputs=["Score: 0.8"], cycle=True, template="reward")
    service = RewardService(RewardJudge(judge), concurrency=2)
    items = service.openrlhf_items({"query": ["Q? A: 1", "Q? A: 2"], "labels": ["x", ""]})
    records = await service.score(items, "/get_reward")
    await service.aclose()
    assert [r["refused"] for r in records] == [False, True]
    assert renders == Counter({"Q? A: 1": 1})  # the refused one needs no messages


@pytest.fixture
def counted_resolution(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    counts: Counter[str] = Counter()
    build = _verl.reward_judge_from_kwargs  # type: ignore[attr-defined]
    pop_from = TrajectoryGate.pop_from.__func__  # type: ignore[attr-defined]

    def counted_build(**kwargs: Any) -> Any:
        counts["reward_judge_from_kwargs"] += 1
        return build(**kwargs)

    def counted_pop(cls: type[TrajectoryGate], kwargs: dict[str, Any]) -> Any:
        counts["pop_from"] += 1
        return pop_from(cls, kwargs)

    monkeypatch.setattr(_verl, "reward_judge_from_kwargs", counted_build)
    monkeypatch.setattr(TrajectoryGate, "pop_from", classmethod(counted_pop))
    monkeypatch.setattr(_verl, "_RESOLVED", {})
    yield counts


async def test_verl_kwargs_are_resolved_once_per_distinct_kwargs(
    counted_resolution: Counter[str],
) -> None:
    kwargs = {"model": "mock:hot", "outputs": ("Score: 0.7",), "cycle": True}
    kwargs["concurrency"] = 8
    out = await asyncio.gather(
        *(compute_score_async("src", f"answer {i}", "ref", {}, **kwargs) for i in range(20))
    )
    assert [o["score"] for o in out] == [0.7] * 20
    assert counted_resolution == Counter({"reward_judge_from_kwargs": 1, "pop_from": 1})
    # 0 and 0.0 are equal keys but not the same arguments (the judge cache keys on repr)
    await compute_score_async("src", "x", "ref", {}, failure_value=0, **kwargs)
    await compute_score_async("src", "x", "ref", {}, failure_value=0.0, **kwargs)
    assert counted_resolution["reward_judge_from_kwargs"] == 3


async def test_unhashable_verl_kwargs_resolve_per_call_to_the_same_judge(
    counted_resolution: Counter[str],
) -> None:
    kwargs = {"model": "mock:hot-list", "outputs": ["Score: 0.6"], "cycle": True}  # unhashable
    out = [await compute_score_async("src", f"a{i}", "ref", **kwargs) for i in range(3)]
    assert [o["score"] for o in out] == [0.6] * 3
    assert counted_resolution["reward_judge_from_kwargs"] == 3  # the judge cache still holds


@pytest.fixture
def fresh_heap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_heap, "_frozen", False)
    monkeypatch.setattr(_verl, "_RESOLVED", {})
    gc.unfreeze()
    yield
    gc.unfreeze()


async def test_gc_freeze_is_opt_in_and_freezes_once(
    fresh_heap: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Count gc.freeze calls rather than comparing gc.get_freeze_count() across calls: frozen
    # objects can still be freed (another xdist test's garbage), so that count may shrink.
    freezes: list[int] = []
    real_freeze = gc.freeze

    def counted_freeze() -> None:
        freezes.append(1)
        real_freeze()

    monkeypatch.setattr(gc, "freeze", counted_freeze)
    kwargs = {"model": "mock:frozen", "outputs": ("Score: 0.5",), "cycle": True}
    assert (await compute_score_async("s", "a", "r", **kwargs))["score"] == 0.5
    assert freezes == [] and gc.get_freeze_count() == 0  # never without asking
    out = await compute_score_async("s", "a", "r", gc_freeze=True, **kwargs)
    assert out["score"] == 0.5
    assert freezes == [1] and gc.get_freeze_count() > 0
    assert _heap.freeze_heap(once=True) is False  # once per process
    assert freezes == [1]
    with pytest.raises(ConfigError, match="gc_freeze must be true or false"):
        await compute_score_async("s", "a", "r", gc_freeze="yes", **kwargs)


def test_serve_reward_freezes_its_heap_once_bound(tmp_path: Path) -> None:
    """``jurist serve-reward`` (the real command, in a process of its own) freezes its heap
    once the socket is bound, then serves; SIGTERM stops it."""
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(
            """
            import gc, os, signal, sys
            from jurist.cli import main
            from jurist.rewards import _server_app

            freeze = _server_app.freeze_process_heap

            def watched() -> None:
                freeze()
                print("frozen", gc.get_freeze_count(), flush=True)
                os.kill(os.getpid(), signal.SIGTERM)  # the server's own handler stops it

            _server_app.freeze_process_heap = watched
            sys.exit(main(["serve-reward", "--model", "mock:j", "--port", "0"]))
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("frozen ")]
    assert len(lines) == 1 and int(lines[0].split()[1]) > 1000, proc.stdout
