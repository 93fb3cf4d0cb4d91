"""Every judge kind names its models (``models()``) and swaps them (``with_models(fn)``).

The engines see a judge's models only through these two calls (pricing, pacing on a
cluster, keys for Ray actors), so every kind must have them, nested kinds included, and
``with_models`` must give a copy that calls the new models and leaves the judge as it was.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
from collections.abc import Callable
from typing import Any

import pytest

import jurist
import jurist.judges
from jurist.compat.uqlm import LLMJudge as UqlmJudge
from jurist.judges import (
    CriterionGrader,
    LLMJudge,
    PairwiseJudge,
    Panel,
    RewardModelJudge,
    RubricJudge,
)
from jurist.judges._protocol import ModelJudge, models_of, with_models_of
from jurist.models import Model, WrapperModel
from jurist.types import Completion, Request

ITEM = {
    "prompt": "What is 2+2?",
    "response": "4",
    "response_a": "4",
    "response_b": "5",
    "answer": "4",
}
RUBRIC = jurist.Rubric.from_dict([{"name": "ok", "requirement": "Answers the question"}])


class Counting(WrapperModel):
    """Counts the calls that go through it."""

    def __init__(self, wrapped: Model) -> None:
        super().__init__(wrapped)
        self.calls = 0

    async def complete(self, request: Request) -> Completion:
        self.calls += 1
        return await self.wrapped.complete(request)


def _mock(name: str, answer: str) -> Model:
    return jurist.get_model(f"mock:{name}", outputs=[answer], cycle=True)


def _llm(name: str, **kwargs: Any) -> LLMJudge:
    return LLMJudge(_mock(name, "Correct"), name=name, **kwargs)


def _grader() -> CriterionGrader:
    met = '{"c1": {"verdict": "MET"}}'
    return CriterionGrader(judges=[_mock("r1", met), (_mock("r2", met), 2.0)], seed=7)


# kind -> (a judge of that kind, the specs of its models in order, how to judge ITEM)
KINDS: dict[str, tuple[Callable[[], Any], list[str], Callable[[Any], Any]]] = {
    "llm_judge": (lambda: _llm("a"), ["mock:a"], lambda j: j.judge(ITEM)),
    "llm_judge_paced": (
        lambda: _llm("a", max_calls_per_min=6000),
        ["mock:a"],
        lambda j: j.judge(ITEM),
    ),
    "pairwise": (
        lambda: PairwiseJudge(_mock("p", "[[A]]"), template="mt_bench_pair"),
        ["mock:p"],
        lambda j: j.judge(ITEM),
    ),
    "panel": (
        lambda: Panel([_llm("a"), _llm("b"), _llm("c")], aggregation="mean"),
        ["mock:a", "mock:b", "mock:c"],
        lambda j: j.judge(ITEM),
    ),
    "panel_of_panels": (
        lambda: Panel([Panel([_llm("a"), _llm("b")], name="inner"), _llm("c")], name="outer"),
        ["mock:a", "mock:b", "mock:c"],
        lambda j: j.judge(ITEM),
    ),
    "rubric_judge": (
        lambda: _grader().for_rubric(RUBRIC, submission_field="answer"),
        ["mock:r1", "mock:r2"],
        lambda j: j.judge(ITEM),
    ),
    "criterion_grader": (
        _grader,
        ["mock:r1", "mock:r2"],
        lambda g: g.grade(RUBRIC, "4", query="What is 2+2?"),
    ),
    "reward_model": (
        lambda: RewardModelJudge(
            jurist.get_model("mock:rm", outputs=[1.0, 0.5], cycle=True, scalar=True),
            pairwise=True,
        ),
        ["mock:rm"],
        lambda j: j.judge(ITEM),
    ),
    "uqlm_llm_judge": (
        lambda: UqlmJudge(_mock("u", "Correct")),
        ["mock:u"],
        lambda j: j.judge_responses(["What is 2+2?"], ["4"]),
    ),
}


def _score(outcome: Any) -> Any:
    return outcome["scores"] if isinstance(outcome, dict) else outcome.score


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_models_names_every_model_in_order(kind: str) -> None:
    make, specs, _ = KINDS[kind]
    judge = make()
    assert isinstance(judge, ModelJudge)
    assert [m.spec for m in judge.models()] == specs
    assert all(isinstance(m, Model) for m in judge.models())


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_with_models_is_a_copy_that_calls_the_new_models(kind: str) -> None:
    make, _, run = KINDS[kind]
    judge = make()
    before = judge.models()
    seen: list[Model] = []
    wrappers: list[Counting] = []

    def wrap(model: Model) -> Model:
        seen.append(model)
        wrappers.append(Counting(model))
        return wrappers[-1]

    other = judge.with_models(wrap)
    assert other is not judge and type(other) is type(judge)
    # fn saw each model once, in the order models() names them
    assert seen == list(before)
    assert other.models() == tuple(wrappers)
    # the judge itself is unchanged
    assert judge.models() == before
    if hasattr(judge, "describe") and kind != "criterion_grader":
        assert other.describe() == judge.describe()
    got, want = asyncio.run(run(other)), asyncio.run(run(judge))
    assert _score(got) == _score(want)
    assert all(w.calls >= 1 for w in wrappers), [w.calls for w in wrappers]


def test_a_paced_judge_keeps_its_pacing_through_with_models() -> None:
    judge = _llm("a", max_calls_per_min=6000)
    other = judge.with_models(Counting)
    (model,) = other.models()
    assert isinstance(model, Counting)
    assert repr(model.wrapped).startswith("LimitedModel(")  # once, not twice
    assert "LimitedModel(LimitedModel" not in repr(model)


class _Custom:
    """A custom item judge of a user's own: it calls no jurist model."""

    name = "custom"
    required_fields = ("prompt",)

    def describe(self) -> dict[str, Any]:
        return {"kind": "custom"}

    async def judge(self, item: Any, *, retries: int = 0) -> Any:
        raise AssertionError("not called")


def test_a_custom_judge_names_no_models_and_is_kept_as_it_is() -> None:
    custom = _Custom()
    assert models_of(custom) == ()
    assert with_models_of(custom, Counting) is custom
    panel = Panel([custom, _llm("a")])
    assert [m.spec for m in panel.models()] == ["mock:a"]
    other = panel.with_models(Counting)
    assert other.judges[0] is custom and isinstance(other.judges[1].model, Counting)


def _judge_classes() -> list[type]:
    """Every class in jurist.judges (and its submodules) that judges: it has an async
    ``judge`` or ``grade``."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(jurist.judges.__path__, "jurist.judges."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if not cls.__module__.startswith("jurist.judges") or inspect.isabstract(cls):
                continue
            if getattr(cls, "_is_protocol", False):
                continue
            calls = [getattr(cls, n, None) for n in ("judge", "grade")]
            if any(inspect.iscoroutinefunction(c) for c in calls):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return list(found.values())


def test_every_judge_class_names_its_models_and_is_in_this_test() -> None:
    classes = _judge_classes()
    assert {c.__name__ for c in classes} >= {"LLMJudge", "Panel", "PairwiseJudge"}
    lacking = [c.__name__ for c in classes if not (callable(getattr(c, "models", None)))]
    lacking += [c.__name__ for c in classes if not callable(getattr(c, "with_models", None))]
    assert not lacking, f"judge classes without models()/with_models(): {lacking}"
    covered = {type(make()) for make, _, _ in KINDS.values()}
    untested = [c.__name__ for c in classes if c not in covered]
    assert not untested, f"add these judge kinds to KINDS in this test: {untested}"


def test_the_rubric_judge_kind_is_covered() -> None:
    assert isinstance(KINDS["rubric_judge"][0](), RubricJudge)
