"""Retries on by default for models built from a spec string (issue 13.2).

A plain ``LLMJudge(get_model("openai:..."))`` used to have no retry at all: one 429 or 503
from the server was a ``score=None``. These tests run a real aiohttp server on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.cli._model_options import build_model
from jurist.errors import ConfigError
from jurist.models import (
    CachedModel,
    LimitedModel,
    Model,
    RetryModel,
    WrapperModel,
    get_model,
)
from jurist.models._openai import OpenAIModel
from jurist.models._registry import DEFAULT_MAX_RETRIES
from jurist.rewards._backend import build_backend
from tests._fault_server import FaultServer, ok, status

ITEM = {"prompt": "2+2?", "response": "4"}
CORRECT = '{"verdict": "Correct"}'  # the openai backend asks for a JSON verdict
BUSY = status(503, retry_after_ms=1)  # a short server hint keeps the backoff fast


def _chain(model: Model) -> list[str]:
    names = []
    while isinstance(model, WrapperModel):
        names.append(type(model).__name__)
        model = model.wrapped
    return [*names, type(model).__name__]


def test_plain_python_api_survives_a_429_then_200() -> None:
    with FaultServer([status(429, retry_after_ms=1), ok(CORRECT)]) as server:
        judge = jurist.LLMJudge(jurist.get_model("openai:x", base_url=server.url, api_key="x"))
        j = judge.judge_one_sync(ITEM)
        assert server.requests == 2
    assert j.score == 1.0 and j.error is None and j.attempts == 2


def test_spec_string_judge_retries_too() -> None:
    with FaultServer([BUSY, BUSY, ok('{"verdict": "Incorrect"}')]) as server:
        judge = jurist.LLMJudge("openai:x", base_url=server.url, api_key="x")
        j = judge.judge_one_sync(ITEM)
        assert server.requests == 3
    assert j.score == 0.0 and j.attempts == 3


def test_max_retries_zero_turns_it_off() -> None:
    with FaultServer([status(503), ok("Correct")]) as server:
        model = jurist.get_model("openai:x", base_url=server.url, api_key="x", max_retries=0)
        j = jurist.LLMJudge(model).judge_one_sync(ITEM)
        assert server.requests == 1
    assert j.score is None and j.error is not None and "503" in j.error


def test_the_default_gives_up_after_two_retries() -> None:
    with FaultServer([BUSY] * 5) as server:
        j = jurist.LLMJudge("openai:x", base_url=server.url, api_key="x").judge_one_sync(ITEM)
        assert server.requests == DEFAULT_MAX_RETRIES + 1 == 3
    assert j.score is None and j.attempts == 3


def test_wrapping_rules() -> None:
    remote = get_model("openai:x", api_key="x")
    assert isinstance(remote, RetryModel) and remote.max_retries == DEFAULT_MAX_RETRIES
    assert isinstance(remote.wrapped, OpenAIModel)
    assert get_model("openai:x", api_key="x", max_retries=5).max_retries == 5  # type: ignore[attr-defined]
    assert isinstance(get_model("openai:x", api_key="x", max_retries=0), OpenAIModel)
    # a local model is not wrapped unless asked; an existing model object never is
    assert _chain(get_model("mock:m")) == ["MockModel"]
    assert _chain(get_model("mock:m", max_retries=1)) == ["RetryModel", "MockModel"]
    mine = get_model("mock:m")
    assert get_model(mine) is mine
    with pytest.raises(ConfigError, match="max_retries"):
        get_model(mine, max_retries=2)
    bad: Any
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ConfigError, match="max_retries must be a whole number"):
            get_model("openai:x", api_key="x", max_retries=bad)


def test_the_cli_stack_retries_once_not_twice(tmp_path: Path) -> None:
    stack = build_model(
        "openai:x",
        base_url="http://127.0.0.1:9/v1",
        api_key="x",
        timeout=1.0,
        max_retries=3,
        rpm=60,
        cache_path=tmp_path / "c.sqlite",
    )
    assert _chain(stack) == ["CachedModel", "RetryModel", "LimitedModel", "OpenAIModel"]
    assert isinstance(stack, CachedModel) and isinstance(stack.wrapped, RetryModel)
    assert stack.wrapped.max_retries == 3
    assert isinstance(stack.wrapped.wrapped, LimitedModel)
    off = build_model(
        "openai:x", base_url=None, api_key="x", timeout=1.0, max_retries=0, cache=False
    )
    assert _chain(off) == ["OpenAIModel"]


def test_every_spec_string_path_gets_the_default() -> None:
    judge = jurist.LLMJudge("openai:x", api_key="x")
    assert _chain(judge.model) == ["RetryModel", "OpenAIModel"]
    quiet = jurist.LLMJudge("openai:x", api_key="x", max_retries=0)
    assert _chain(quiet.model) == ["OpenAIModel"]
    pair = jurist.PairwiseJudge("openai:x", api_key="x")
    assert _chain(pair.llm_judge.model) == ["RetryModel", "OpenAIModel"]
    reward = build_backend({"backend_type": "openai", "model_name": "x", "api_key": "x"})
    assert _chain(reward.model) == ["RetryModel", "OpenAIModel"]
    reward0 = build_backend(
        {"backend_type": "openai", "model_name": "x", "api_key": "x", "max_retries": 0}
    )
    assert _chain(reward0.model) == ["OpenAIModel"]


def test_catalog_model_options_take_max_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JURIST_CATALOG", str(tmp_path / "catalog"))  # never the user's
    name = "judges.likert.openai_gpt_4o_mini"
    judge = jurist.catalog.get(f"{name}[model_options.base_url='http://127.0.0.1:9/v1']")
    assert "RetryModel" in _chain(judge.model)
    quiet = jurist.catalog.get(
        f"{name}[model_options.base_url='http://127.0.0.1:9/v1',model_options.max_retries=0]"
    )
    assert "RetryModel" not in _chain(quiet.model)
