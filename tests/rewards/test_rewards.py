"""jurist.rewards: the registry, the lazily built backend, the seed reward, TRL/verl shapes."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jurist.errors import ConfigError, DataError, InternalServerError
from jurist.models import MockModel
from jurist.rewards import (
    RewardBackend,
    RewardFunction,
    UnknownRewardError,
    _registry,
    build_backend,
    compute_score,
    get_reward_from_name,
    judgment_to_reward,
    list_rewards,
    llm_as_judge_reward,
    llm_as_judge_reward_async,
    llm_as_judge_rewards,
    read_raw_score,
    reward,
    trl_reward_func,
    verl_compute_score,
)
from jurist.types import Judgment, Request

KEYS = {"reward", "raw_score", "judge_output", "clamped", "parse_failed", "error"}


def backend(outputs: Any, **kwargs: Any) -> RewardBackend:
    return RewardBackend(
        MockModel("judge", outputs=outputs, cycle=isinstance(outputs, list)), **kwargs
    )


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewards registered by a test vanish after it."""
    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))


# -- the registry ---------------------------------------------------------------------------


def test_lookup_is_case_insensitive_and_unknown_names_list_the_known() -> None:
    assert "llm_as_judge_reward" in list_rewards()
    assert get_reward_from_name("LLM_as_Judge_Reward") is llm_as_judge_reward
    with pytest.raises(
        UnknownRewardError, match="unknown reward 'llm_judge'; known rewards: "
    ) as e:
        get_reward_from_name("llm_judge")
    assert isinstance(e.value, KeyError) and isinstance(e.value, ConfigError)
    assert "llm_as_judge_reward" in str(e.value) and "Did you mean 'llm_as_judge_reward'" in str(
        e.value
    )


def test_decorator_builds_the_backend_once_lazily_and_passes_it(
    clean_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[dict[str, Any]] = []
    real_build = _registry.build_backend

    def counting_build(config: dict[str, Any]) -> RewardBackend:
        builds.append(config)
        return real_build(config)

    monkeypatch.setattr(_registry, "build_backend", counting_build)

    @reward(
        name="Echo",
        llm_config={"backend_type": "mock", "model_name": "j", "outputs": ["7"], "cycle": True},
    )
    def echo(prediction: str, golden_answer: str, llm_backend: Any = None) -> dict[str, Any]:
        return {"reward": 1.0, "text": llm_backend.generate(prediction), "backend": llm_backend}

    assert isinstance(echo, RewardFunction) and echo.__name__ == "echo" and builds == []
    results: list[dict[str, Any]] = []
    threads = [threading.Thread(target=lambda: results.append(echo("a", "b"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len(results) == 8
    assert {id(r["backend"]) for r in results} == {id(echo.backend())}
    assert results[0]["text"] == "7"
    b = results[0]["backend"]
    assert (b.model.spec, b.max_tokens, b.temperature) == ("mock:j", 10, 0.1)
    mine = backend(["9"])
    assert echo("a", "b", mine)["backend"] is mine  # positional llm_backend is honoured
    assert echo("a", "b", llm_backend=mine)["backend"] is mine
    assert get_reward_from_name("echo") is echo and len(builds) == 1


def test_registration_rules(clean_registry: None) -> None:
    with pytest.raises(ConfigError, match="takes no llm_backend parameter"):

        @reward(name="bad", llm_config={"backend_type": "mock"})
        def bad(prediction: str, golden_answer: str) -> float:
            return 0.0

    @reward(name="dup")
    def first(prediction: str, golden_answer: str) -> float:
        return 1.0

    with pytest.raises(ConfigError, match="already registered"):

        @reward(name="dup")
        def second(prediction: str, golden_answer: str) -> float:
            return 0.0

    @reward(name="dup", overwrite=True)
    def third(prediction: str, golden_answer: str) -> float:
        return 0.5

    assert get_reward_from_name("dup")("x", "y") == 0.5

    @reward()  # the same function defined again (a notebook cell re-run) replaces it
    def third(prediction: str, golden_answer: str) -> float:  # noqa: F811
        return 0.25

    assert get_reward_from_name("third")("x", "y") == 0.25


async def test_async_rewards_are_callable_sync_and_async(clean_registry: None) -> None:
    @reward(name="async_len")
    async def async_len(prediction: str, golden_answer: str) -> float:
        return float(len(prediction) == len(golden_answer))

    assert async_len("ab", "cd") == 1.0  # sync call inside a running loop
    assert await async_len.acall("ab", "c") == 0.0


# -- llm_as_judge_reward ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "value", "raw", "clamped"),
    [
        ("Score: 0.95", 0.95, 0.95, False),
        ("0.7", 0.7, 0.7, False),
        ("Score: 1.03", 1.0, 1.03, True),  # a hair outside [0, 1] is clamped
        ("Score: -0.02", 0.0, -0.02, True),
        ("Score: 0.8\nExplanation: 1 minor slip", 0.8, 0.8, False),
        ("<think>maybe 0.1</think>Score: 0.6", 0.6, 0.6, False),
    ],
)
def test_reward_and_raw_score(output: str, value: float, raw: float, clamped: bool) -> None:
    out = llm_as_judge_reward("Paris", "Paris", llm_backend=backend([output]))
    assert set(out) == KEYS
    assert out["reward"] == pytest.approx(value) and out["raw_score"] == pytest.approx(raw)
    assert out["clamped"] is clamped and out["parse_failed"] is False and out["error"] is None
    assert out["judge_output"] == output


@pytest.mark.parametrize(
    "output",
    ["garbage", "Score: high", "Score: 0.2\nScore: 0.9", "", "Score: 85", "Score: 1.2"],
)
def test_garbage_gives_zero_with_the_flag(output: str) -> None:
    out = llm_as_judge_reward("Paris", "Paris", llm_backend=backend([output]))
    assert out["reward"] == 0.0 and out["raw_score"] is None
    assert out["parse_failed"] is True and out["error"].startswith("parse: ")


def test_api_failure_gives_zero_with_the_error_not_the_parse_flag() -> None:
    out = llm_as_judge_reward("P", "P", backend([InternalServerError("down", status_code=503)]))
    assert out["reward"] == 0.0 and out["parse_failed"] is False
    assert out["error"].startswith("api: ")


def test_the_judge_sees_reference_response_and_question_with_seed_sampling() -> None:
    b = backend(["Score: 1"])
    llm_as_judge_reward("Paris, of course", "Paris", b, prompt="Capital of France?")
    assert isinstance(b.model, MockModel)
    request: Request = b.model.requests[0]
    text = request.messages[-1].content
    assert "Paris, of course" in text and "Capital of France?" in text and "<reference>" in text
    assert (request.max_tokens, request.temperature) == (10, 0.1)
    llm_as_judge_reward("Paris, of course", "Paris", b, retries=0)
    assert "Capital" not in b.model.requests[1].messages[-1].content


async def test_async_and_batch_forms_keep_order() -> None:
    def fn(request: Request) -> str:
        return "Score: 1.0" if "<response>\nParis" in request.messages[-1].content else "Score: 0.1"

    b = RewardBackend(MockModel("j", outputs=fn))
    assert (await llm_as_judge_reward_async("Paris", "Paris", b))["reward"] == 1.0
    outs = llm_as_judge_rewards(["Lyon", "Paris", "Nice"], ["Paris"] * 3, b, prompts=["q"] * 3)
    assert [o["reward"] for o in outs] == [0.1, 1.0, 0.1]
    with pytest.raises(DataError, match="differ in length"):
        llm_as_judge_rewards(["a"], ["b", "c"], b)


@pytest.mark.slow
def test_default_backend_is_local_transformers_from_the_env(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_JUDGE_MODEL", str(tiny_model_dir))
    monkeypatch.setattr(llm_as_judge_reward, "_backend", None)  # built afresh for this test
    out = llm_as_judge_reward(prediction="Paris is the capital", golden_answer="Paris")
    built = llm_as_judge_reward.backend()
    assert built is not None and built.model.spec == f"hf:{tiny_model_dir}"
    assert (built.max_tokens, built.temperature) == (10, 0.1)
    _check_shape(out)
    monkeypatch.setattr(llm_as_judge_reward, "_backend", None)


@pytest.mark.slow
def test_llm_config_with_the_tiny_hf_model(tiny_model_dir: Path, clean_registry: None) -> None:
    @reward(
        name="tiny_judge",
        llm_config={"backend_type": "transformers", "model_name": str(tiny_model_dir)},
    )
    def tiny_judge(prediction: str, golden_answer: str, llm_backend: Any = None) -> dict[str, Any]:
        return llm_as_judge_reward(prediction, golden_answer, llm_backend=llm_backend)

    outs = [tiny_judge("Paris", "Paris"), tiny_judge("Lyon", "Paris")]
    for out in outs:
        _check_shape(out)
    b = tiny_judge.backend()
    assert b is not None and b.model.spec == f"hf:{tiny_model_dir}"
    batch = llm_as_judge_rewards(["Paris", "Lyon"], ["Paris", "Paris"], b)
    assert len(batch) == 2  # temperature 0.1 samples: the texts may differ from the above
    for out in batch:
        _check_shape(out)


def _check_shape(out: dict[str, Any]) -> None:
    """A random tiny model: a number or garbage; either way the documented shape."""
    assert set(out) == KEYS and isinstance(out["judge_output"], str)
    assert 0.0 <= out["reward"] <= 1.0
    if out["parse_failed"]:
        assert out["reward"] == 0.0 and out["raw_score"] is None
        assert out["error"].startswith("parse: ")
    else:
        assert out["raw_score"] is not None
        assert out["reward"] == min(1.0, max(0.0, out["raw_score"]))


def test_build_backend_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="backend_type"):
        build_backend({"backend_type": ""})
    with pytest.raises(ConfigError, match="max_tokens must be a positive integer"):
        build_backend({"backend_type": "mock", "max_tokens": 0})
    with pytest.raises(ConfigError, match="unknown model provider 'nope'"):
        build_backend({"backend_type": "nope", "model_name": "x"})
    monkeypatch.delenv("LLM_JUDGE_MODEL", raising=False)
    b = build_backend({"backend_type": "transformers"})  # lazy: nothing loads before a call
    assert b.model.spec == "hf:Qwen/Qwen2.5-0.5B-Instruct"
    monkeypatch.setenv("LLM_JUDGE_MODEL", "org/other-judge")
    assert build_backend({"backend_type": "hf"}).model.spec == "hf:org/other-judge"


# -- adapters -----------------------------------------------------------------------------


def test_trl_reward_func_shapes() -> None:
    b = backend(["Score: 1.0", "???", "Score: 0.3"])
    fn = trl_reward_func(answer_column="solution", llm_backend=b, failure_value=None)
    out = fn(
        completions=["Paris", "x", "Nice"],
        prompts=[[{"role": "user", "content": "Capital?"}]] * 3,
        solution=["Paris"] * 3,
    )
    assert out == [1.0, None, 0.3]
    assert "Capital?" in b.model.requests[0].messages[-1].content  # type: ignore[attr-defined]
    with pytest.raises(DataError, match="column 'solution'"):
        fn(completions=["a"], answer=["b"])
    with pytest.raises(DataError, match="cannot read text"):
        fn(completions=[3], solution=["b"])


def test_trl_with_another_registered_reward(clean_registry: None) -> None:
    @reward(name="exact")
    def exact(prediction: str, golden_answer: str) -> dict[str, Any]:
        return {"reward": float(prediction == golden_answer), "error": None}

    fn = trl_reward_func("exact")
    assert fn(completions=["a", "b"], answer=["a", "a"]) == [1.0, 0.0]
    assert fn.__name__ == "exact"


def test_verl_compute_score() -> None:
    b = backend(["Score: 1.04", "nonsense"])
    compute = verl_compute_score(llm_backend=b)
    assert compute("gsm8k", "42", "42") == {
        "score": 1.0,
        "raw_score": 1.04,
        "parse_failed": 0.0,
        "clamped": 1.0,
        "failed": 0.0,
    }
    out = compute(data_source="gsm8k", solution_str="41", ground_truth=42, extra_info={})
    assert out["score"] == 0.0 and out["failed"] == 1.0 and out["parse_failed"] == 1.0
    assert out["raw_score"] is None  # verl drops None before averaging; NaN would poison it
    assert compute_score.__name__ == "compute_score"


# -- properties -----------------------------------------------------------------------------


@given(st.text(max_size=80))
def test_raw_read_never_raises(text: str) -> None:
    raw, why = read_raw_score(text)
    assert (raw is None) != (why is None)
    if why is not None:
        assert why.startswith("parse: ")


@given(
    st.one_of(
        st.text(max_size=40),
        st.floats(-5, 5, allow_nan=False).map(lambda x: f"Score: {x:.3f}"),
    )
)
def test_reward_is_always_in_range_and_failures_are_flagged(text: str) -> None:
    from jurist.templates import get_template

    parsed = get_template("reward").parse(text)
    judgment = Judgment(
        score=parsed.score,
        verdict=parsed.value,
        error=parsed.error,
        response=text,
    )
    out = judgment_to_reward(judgment)
    assert 0.0 <= out["reward"] <= 1.0
    assert out["parse_failed"] == (out["raw_score"] is None)
    if out["parse_failed"]:
        assert out["reward"] == 0.0 and out["error"].startswith("parse: ")
