"""CachedModel: what the key covers, what is cached, hits, persistence and coalescing."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from jurist._sync import run_sync
from jurist.errors import status_error
from jurist.models import CachedModel, MockModel, RetryModel, default_cache_path
from jurist.models._cache import cache_key
from jurist.models._openai import OpenAIModel
from jurist.types import Completion, Message, Request, TokenLogprob, TopLogprob, Usage

REQ = Request(messages=(Message(role="user", content="Is 2+2=4?"),), temperature=0, max_tokens=5)


def key(request: Request = REQ, **options: object) -> str:
    options.setdefault("base_url", "http://127.0.0.1:8000/v1")
    return cache_key(OpenAIModel("judge", **options), request)  # type: ignore[arg-type]


def test_key_covers_what_changes_the_output() -> None:
    base = key()
    assert key(base_url="http://127.0.0.1:9000/v1") != base
    assert cache_key(OpenAIModel("other", base_url="http://127.0.0.1:8000/v1"), REQ) != base
    changed = [
        REQ.model_copy(update={"messages": (Message(role="user", content="Is 2+2=5?"),)}),
        REQ.model_copy(update={"messages": (Message(role="system", content="Is 2+2=4?"),)}),
        REQ.model_copy(update={"temperature": 0.5}),
        REQ.model_copy(update={"max_tokens": 6}),
        REQ.model_copy(update={"top_p": 0.9}),
        REQ.model_copy(update={"seed": 1}),
        REQ.model_copy(update={"stop": ("\n",)}),
        REQ.model_copy(update={"logprobs": True}),
        REQ.model_copy(update={"json_schema": {"type": "object"}}),
        REQ.model_copy(update={"extra": {"grammar": "root ::= [01]"}}),
    ]
    keys = {key(r) for r in changed}
    assert base not in keys
    assert len(keys) == len(changed)


def test_key_ignores_secrets_and_timeouts() -> None:
    base = key()
    assert key(api_key="sk-one") == key(api_key="sk-two") == base
    assert key(timeout=3.0) == base
    assert key(REQ.model_copy(update={"timeout": 1.0})) == base
    assert key(headers={"X-Trace": "1"}) == base


def test_key_is_the_documented_sha256() -> None:
    import hashlib
    import json

    model = MockModel("judge")
    doc = {"model": model.identity(), "request": REQ.cache_fields(), "v": 1}
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    assert cache_key(model, REQ) == hashlib.sha256(canonical.encode()).hexdigest()
    assert cache_key(model, REQ, ["Yes", "No"]) != cache_key(model, REQ, ["No", "Yes"])


async def test_hit_returns_the_stored_completion_marked_cached(tmp_path: Path) -> None:
    mock = MockModel(
        outputs=[Completion(text="Correct", latency=7.5, usage=Usage(prompt_tokens=9, calls=1))],
        cycle=True,
    )
    model = CachedModel(mock, tmp_path / "c.sqlite")
    first = await model.complete(REQ)
    again = await model.complete(REQ)
    assert mock.calls == 1
    assert (first.cached, first.attempts, first.usage.calls) == (False, 1, 1)
    assert (again.cached, again.attempts) == (True, 0)
    assert again.text == first.text and again.finish_reason == first.finish_reason
    assert again.usage.prompt_tokens == first.usage.prompt_tokens
    assert (again.usage.calls, again.usage.cache_hits) == (0, 1)
    assert (first.usage + again.usage).calls == 1
    # the hit reports its own lookup, not the stored call's 7.5 s (no wall-clock bound)
    assert first.latency == 7.5 and again.latency >= 0 and again.latency != 7.5
    assert (model.hits, model.misses) == (1, 1)
    await model.aclose()


async def test_sampled_requests_are_not_cached_by_default(tmp_path: Path) -> None:
    mock = MockModel(outputs=["a", "b", "c", "d"])
    model = CachedModel(mock, tmp_path / "c.sqlite")
    hot = REQ.model_copy(update={"temperature": 0.7})
    default = REQ.model_copy(update={"temperature": None})  # the server's default: sampled
    texts = [(await model.complete(r)).text for r in (hot, hot, default, default)]
    assert texts == ["a", "b", "c", "d"]
    assert (model.hits, model.misses) == (0, 0)
    model.close()


async def test_only_deterministic_false_caches_everything(tmp_path: Path) -> None:
    mock = MockModel(outputs=["a"], cycle=True)
    model = CachedModel(mock, tmp_path / "c.sqlite", only_deterministic=False)
    hot = REQ.model_copy(update={"temperature": 0.7})
    assert [(await model.complete(hot)).cached for _ in range(3)] == [False, True, True]
    assert mock.calls == 1
    model.close()


async def test_the_file_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "c.sqlite"
    first = CachedModel(MockModel(outputs=["Correct"]), path)
    await first.complete(REQ)
    await first.aclose()
    # A fresh model whose script is empty would raise if it were called.
    second = CachedModel(MockModel(outputs=[]), path)
    out = await second.complete(REQ)
    assert (out.text, out.cached) == ("Correct", True)
    assert second.entry_count() == 1
    second.close()


def test_the_file_survives_a_process_restart(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    script = (
        "from jurist._sync import run_sync\n"
        "from jurist.models import CachedModel, MockModel\n"
        "from jurist.types import Message, Request\n"
        "m = CachedModel(MockModel('judge', outputs=['from another process']), "
        f"{str(path)!r})\n"
        "req = Request(messages=(Message(role='user', content='Is 2+2=4?'),), "
        "temperature=0, max_tokens=5)\n"
        "print(run_sync(m.complete(req)).text)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    model = CachedModel(MockModel("judge", outputs=[]), path)
    assert run_sync(model.complete(REQ)).text == "from another process"
    model.close()


async def test_keyed_on_the_model_identity(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    a = CachedModel(MockModel("judge-a", outputs=["A"], cycle=True), path)
    b = CachedModel(MockModel("judge-b", outputs=["B"], cycle=True), path)
    assert [(await a.complete(REQ)).text, (await b.complete(REQ)).text] == ["A", "B"]
    assert (await a.complete(REQ)).text == "A"
    a.close()
    b.close()


async def test_identical_requests_in_flight_make_one_call(tmp_path: Path) -> None:
    mock = MockModel(outputs=["Correct"], cycle=True, latency=0.05)
    model = CachedModel(mock, tmp_path / "c.sqlite")
    other = REQ.model_copy(update={"max_tokens": 9})
    outs = await model.complete_many([REQ] * 10 + [other] * 5)
    assert mock.calls == 2
    assert (model.misses, model.hits) == (2, 13)
    assert sum(o.usage.calls for o in outs) == 2
    assert sum(not o.cached for o in outs) == 2
    model.close()


async def test_failures_are_not_stored_and_reach_every_waiter(tmp_path: Path) -> None:
    async def answer(request: Request) -> str:
        await asyncio.sleep(0.02)
        raise status_error(500, "boom")

    calls = 0

    async def flaky(request: Request) -> str:
        nonlocal calls
        calls += 1
        return await answer(request) if calls == 1 else "Correct"

    model = CachedModel(MockModel(outputs=flaky), tmp_path / "c.sqlite")
    results = await asyncio.gather(*(model.complete(REQ) for _ in range(4)), return_exceptions=True)
    assert all(isinstance(r, Exception) and "boom" in str(r) for r in results)
    assert calls == 1
    assert model.entry_count() == 0
    assert (await model.complete(REQ)).text == "Correct"
    assert (await model.complete(REQ)).cached
    model.close()


async def test_a_cancelled_lone_waiter_cancels_its_call(tmp_path: Path) -> None:
    started = asyncio.Event()
    calls = 0

    async def slow(request: Request) -> str:
        nonlocal calls
        calls += 1
        started.set()
        await asyncio.sleep(0 if calls > 1 else 10)
        return "Correct"

    model = CachedModel(MockModel(outputs=slow), tmp_path / "c.sqlite")
    task = asyncio.ensure_future(model.complete(REQ))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    out = await asyncio.wait_for(model.complete(REQ), 1)  # a new call, not the dead one
    assert (out.text, out.cached, calls) == ("Correct", False, 2)
    model.close()


async def test_candidate_scores_are_cached_per_candidate_list(tmp_path: Path) -> None:
    mock = MockModel(candidate_probs={"Yes": 0.6, "No": 0.2, "Maybe": 0.2})
    model = CachedModel(mock, tmp_path / "c.sqlite")
    hot = REQ.model_copy(update={"temperature": 1.0})  # a forward pass samples nothing
    first = await model.candidate_scores(hot, ["Yes", "No"])
    again = await model.candidate_scores(hot, ["Yes", "No"])
    other = await model.candidate_scores(hot, ["Yes", "No", "Maybe"])
    assert (again.logprobs, again.probs, again.coverage) == (
        first.logprobs,
        first.probs,
        first.coverage,
    )
    # accounted like a cached completion: no call, a hit, the prompt's tokens kept
    assert (first.cached, first.attempts, first.usage.calls) == (False, 1, 1)
    assert (again.cached, again.attempts, again.usage.calls, again.usage.cache_hits) == (
        True,
        0,
        0,
        1,
    )
    assert again.usage.prompt_tokens == first.usage.prompt_tokens > 0
    assert set(other.probs) == {"Yes", "No", "Maybe"}
    assert mock.calls == 2
    assert (model.hits, model.misses) == (1, 2)
    model.close()


async def test_minus_infinity_round_trips(tmp_path: Path) -> None:
    top = (TopLogprob(token="Yes", logprob=-0.1), TopLogprob(token="No", logprob=-math.inf))
    stored = Completion(
        text="Yes",
        logprobs=(TokenLogprob(token="Yes", logprob=-0.1, top=top),),
        usage=Usage(prompt_tokens=3, completion_tokens=1, calls=1),
    )
    model = CachedModel(MockModel(outputs=[stored]), tmp_path / "c.sqlite")
    await model.complete(REQ)
    hit = await model.complete(REQ)
    assert hit.logprobs == stored.logprobs
    scores_model = CachedModel(MockModel(candidate_probs={"A": 1.0}), tmp_path / "c.sqlite")
    await scores_model.candidate_scores(REQ, ["A", "B"])
    assert (await scores_model.candidate_scores(REQ, ["A", "B"])).logprobs["B"] == -math.inf
    model.close()
    scores_model.close()


async def test_an_unreadable_entry_is_recomputed(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    model = CachedModel(MockModel(outputs=["old", "new"]), path)
    await model.complete(REQ)
    with sqlite3.connect(path) as conn:
        conn.execute('UPDATE entries SET value = \'{"not": "a completion"}\'')
    out = await model.complete(REQ)
    assert (out.text, out.cached) == ("new", False)
    assert (await model.complete(REQ)).text == "new"
    model.close()


async def test_disabled_passes_through_and_touches_no_file(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    mock = MockModel(outputs=["a", "b"])
    model = CachedModel(mock, path, enabled=False)
    assert [(await model.complete(REQ)).text for _ in range(2)] == ["a", "b"]
    assert not path.exists()


def test_default_path_follows_the_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JURIST_CACHE_DIR", str(tmp_path / "jc"))
    assert default_cache_path() == tmp_path / "jc" / "cache.sqlite"
    model = CachedModel(MockModel(outputs=["x"]))
    assert model.path == tmp_path / "jc" / "cache.sqlite"
    run_sync(model.complete(REQ))  # the sync twins' shared loop
    assert run_sync(model.complete(REQ)).cached
    model.close()
    monkeypatch.delenv("JURIST_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_cache_path() == tmp_path / "home" / ".cache" / "jurist" / "cache.sqlite"


async def test_the_file_uses_wal(tmp_path: Path) -> None:
    model = CachedModel(MockModel(), tmp_path / "c.sqlite")
    await model.complete(REQ)
    with sqlite3.connect(tmp_path / "c.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    model.close()


async def test_retries_inside_the_cache_are_not_repeated_on_a_hit(tmp_path: Path) -> None:
    mock = MockModel(outputs=[status_error(429, "slow", retry_after=0), "Correct"])
    model = CachedModel(RetryModel(mock), tmp_path / "c.sqlite")
    first = await model.complete(REQ)
    hit = await model.complete(REQ)
    assert (first.attempts, hit.attempts, hit.cached, mock.calls) == (2, 0, True, 2)
    model.close()
