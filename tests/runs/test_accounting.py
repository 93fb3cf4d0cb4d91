"""True accounting: cache hits, tokens and attempts read the same in every scoring mode.

A cached rerun reports ``calls == 0`` and ``cache_hits == items`` with the prompt tokens of
the first run, whether the verdict was parsed, weighed from top logprobs, or scored in one
forward pass over the candidates (mock and a real tiny ``hf`` model). ``usage.attempts``
counts every request sent, so a run where calls fail after retries reports
``attempts > calls`` exactly.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.errors import status_error
from jurist.models import CachedModel, MockModel, RetryModel
from jurist.types import Completion, Request, TokenLogprob, TopLogprob, Usage

ITEMS = [{"prompt": f"q{i}", "response": f"r{i}"} for i in range(6)]
PROBS = {"1": 0.05, "2": 0.1, "3": 0.2, "4": 0.4, "5": 0.25}


async def _no_wait(_: float) -> None:
    return None


def _run_twice(
    model: jurist.models.Model, path: Path, **judge: Any
) -> tuple[Usage, Usage, list[bool]]:
    cached = CachedModel(model, path)
    lj = jurist.LLMJudge(cached, template="likert", **judge)
    first = lj.judge_sync(ITEMS)
    again = lj.judge_sync(ITEMS)
    assert first.scores == again.scores and all(s is not None for s in again.scores)
    cached.close()
    return first.usage, again.usage, [j.cached for j in again]


def _check(first: Usage, again: Usage, flags: list[bool], calls_per_item: int = 1) -> None:
    n = len(ITEMS)
    assert (first.calls, first.cache_hits, first.attempts) == (
        calls_per_item * n,
        0,
        calls_per_item * n,
    )
    assert first.prompt_tokens > 0
    assert (again.calls, again.cache_hits, again.attempts) == (0, calls_per_item * n, 0)
    assert (again.prompt_tokens, again.completion_tokens) == (
        first.prompt_tokens,
        first.completion_tokens,
    )
    assert all(flags)


def test_parse_mode_cached_rerun(tmp_path: Path) -> None:
    model = MockModel("j", outputs=["4"], cycle=True)
    _check(*_run_twice(model, tmp_path / "c.sqlite", scoring="parse"))


@pytest.mark.parametrize("scoring", ["logprobs", "auto"])
def test_one_pass_candidate_scoring_cached_rerun(tmp_path: Path, scoring: str) -> None:
    # Before: the second run reported calls 6 / cache hits 0 and no prompt tokens.
    model = MockModel("j", outputs=[], candidate_probs=PROBS)
    first, again, flags = _run_twice(model, tmp_path / "c.sqlite", scoring=scoring)
    _check(first, again, flags)
    assert model.calls == len(ITEMS)


def test_top_logprobs_route_cached_rerun(tmp_path: Path) -> None:
    def answer(request: Request) -> Completion:
        tokens = (
            TokenLogprob(token="4", logprob=-0.5, top=(TopLogprob(token="5", logprob=-1.0),)),
        )
        return Completion(
            text="4", logprobs=tokens, usage=Usage(prompt_tokens=11, completion_tokens=1, calls=1)
        )

    model = MockModel("j", outputs=answer, top_logprobs=5)
    first, again, flags = _run_twice(model, tmp_path / "c.sqlite", scoring="logprobs")
    _check(first, again, flags)
    assert first.prompt_tokens == 11 * len(ITEMS)


def test_candidates_after_a_generated_answer_count_both_passes(tmp_path: Path) -> None:
    model = MockModel(
        "j",
        outputs=["Score: 4\nExplanation: ok"],
        cycle=True,
        candidate_probs={" 4": 0.5, " 5": 0.5},
    )
    first, again, flags = _run_twice(
        model, tmp_path / "c.sqlite", scoring="logprobs", explanations=True
    )
    _check(first, again, flags, calls_per_item=2)
    assert model.calls == 2 * len(ITEMS)


@pytest.mark.slow
def test_hf_one_pass_cached_rerun(tiny_model_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    model = jurist.get_model(f"hf:{tiny_model_dir}")
    # a random model's verdicts get little mass: flagged, not failed, so every item scores
    first, again, flags = _run_twice(
        model, tmp_path / "c.sqlite", scoring="logprobs", low_coverage="flag"
    )
    _check(first, again, flags)
    assert first.completion_tokens == 0  # a forward pass generates nothing


# -- attempts: requests sent, failures and retries included ----------------------------------


def _flaky(request: Request) -> str:
    """``q0``: fails every time; ``q1``: fails once then answers; the rest answer."""
    prompt = request.messages[-1].content
    counts = _flaky.counts  # type: ignore[attr-defined]
    key = "q0" if "q0" in prompt else "q1" if "q1" in prompt else "other"
    counts[key] = counts.get(key, 0) + 1
    if key == "q0" or (key == "q1" and counts[key] == 1):
        raise status_error(503, "busy")
    return "4"


def _retrying(**mock: Any) -> tuple[MockModel, RetryModel]:
    _flaky.counts = {}  # type: ignore[attr-defined]
    inner = MockModel("j", outputs=_flaky, **mock)
    return inner, RetryModel(inner, max_retries=2, sleep=_no_wait)


def test_failed_calls_after_retries_show_attempts_above_calls() -> None:
    inner, model = _retrying()
    res = jurist.LLMJudge(model, template="likert").judge_sync(ITEMS[:4])
    # q0: 3 tries, all failed; q1: 2 tries (one failed); q2, q3: 1 each.
    assert [j.attempts for j in res] == [3, 2, 1, 1]
    assert [j.usage.attempts for j in res] == [3, 2, 1, 1]
    assert (res.usage.calls, res.usage.attempts) == (3, 7) == (3, inner.calls)
    assert res[0].score is None and res[0].error is not None


def test_attempts_add_up_in_panels_and_pairwise() -> None:
    inner, model = _retrying()
    judge = jurist.LLMJudge(model, template="likert")
    panel = jurist.Panel([judge, judge]).judge_sync(ITEMS[:3])
    # two judges: q0 3+3, q1 2+1 (the second judge finds it recovered), q2 1+1
    assert (panel.usage.calls, panel.usage.attempts) == (4, inner.calls) == (4, 11)

    _flaky.counts = {}  # type: ignore[attr-defined]
    inner.calls = 0
    pair = jurist.PairwiseJudge(model, template="mt_bench_pair", swap=True)
    out = pair.judge_one_sync({"prompt": "q0", "response_a": "a", "response_b": "b"})
    assert (out.usage.calls, out.usage.attempts) == (0, 6) == (0, inner.calls)


def test_attempts_add_up_in_rubrics() -> None:
    def flaky_rubric(request: Request) -> str:
        flaky_rubric.n += 1  # type: ignore[attr-defined]
        if flaky_rubric.n == 1:  # type: ignore[attr-defined]
            raise status_error(503, "busy")
        return '{"c0": "MET"}'

    flaky_rubric.n = 0  # type: ignore[attr-defined]
    inner = MockModel("j", outputs=flaky_rubric, json_schema=True)
    model = RetryModel(inner, max_retries=2, sleep=_no_wait)
    rubric = jurist.Rubric.from_dict({"criteria": [{"name": "ok", "requirement": "Is ok"}]})
    report = jurist.CriterionGrader(judges=[model]).grade_sync(rubric, "x")
    assert (report.usage.calls, report.usage.attempts) == (1, 2) == (1, inner.calls)


def test_one_pass_failure_after_retries_counts_attempts() -> None:
    inner = MockModel("j", outputs=[], candidate_probs=PROBS)

    async def broken(request: Request, candidates: Any) -> Any:
        inner.calls += 1
        raise status_error(503, "busy")

    inner.candidate_scores = broken  # type: ignore[method-assign]
    model = RetryModel(inner, max_retries=2, sleep=_no_wait)
    j = jurist.LLMJudge(model, template="likert", scoring="logprobs").judge_one_sync(ITEMS[0])
    assert j.score is None and j.attempts == 3
    assert (j.usage.calls, j.usage.attempts) == (0, 3) == (0, inner.calls)


def test_retried_candidate_scores_count_their_attempts() -> None:
    inner = MockModel("j", outputs=[], candidate_probs=PROBS)
    real = inner.candidate_scores
    failures = [status_error(429, "slow")]

    async def once_then_ok(request: Request, candidates: Any) -> Any:
        if failures:
            inner.calls += 1
            raise failures.pop()
        return await real(request, candidates)

    inner.candidate_scores = once_then_ok  # type: ignore[method-assign]
    model = RetryModel(inner, max_retries=2, sleep=_no_wait)
    j = jurist.LLMJudge(model, template="likert", scoring="logprobs").judge_one_sync(ITEMS[0])
    assert j.score is not None and j.attempts == 2
    assert (j.usage.calls, j.usage.attempts) == (1, 2) == (1, inner.calls)


def test_over_http_with_the_fault_server() -> None:
    from tests._fault_server import FaultServer, ok, status

    with FaultServer() as server:
        model = jurist.get_model(
            "openai:x", base_url=server.url, api_key="x", timeout=5, max_retries=0
        )
        retrying = RetryModel(model, max_retries=2, backoff_base=0.001)
        judge = jurist.LLMJudge(retrying, template="likert", output="text")
        faults = [[status(503)] * 3, [status(429, retry_after_ms=1), ok("4")], [ok("4")]]
        for item, script in zip(ITEMS, faults, strict=False):
            server.script_for(judge.messages(item)[-1].content, *script)

        async def go() -> Any:
            try:
                return await judge.judge_items(ITEMS[:3])
            finally:
                await model.aclose()

        res = asyncio.run(go())
    assert res[0].score is None and [j.attempts for j in res] == [3, 2, 1]
    assert (res.usage.calls, res.usage.attempts) == (2, 6) == (2, server.requests)
