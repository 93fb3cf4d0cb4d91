"""Deterministic trajectory checks: tool used, tool sequence, arguments, step count, custom."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from jurist.errors import ConfigError
from jurist.trajectories import (
    CheckResult,
    Trajectory,
    custom_check,
    load_traces,
    step_count,
    tool_args,
    tool_sequence,
    tool_used,
)

DATA = Path(__file__).parents[1] / "fixtures" / "traces"


@pytest.fixture(scope="module")
def runs() -> dict[str, Trajectory]:
    good, hasty = load_traces(DATA / "flights_genai.json")
    (loop,) = load_traces(DATA / "flights_legacy.jsonl")
    (stop,) = load_traces(DATA / "flights_openinference.json")
    return {"good": good, "hasty": hasty, "loop": loop, "stop": stop}


def test_tool_used(runs: dict[str, Trajectory]) -> None:
    assert tool_used("search_flights").check(runs["good"]).passed
    r = tool_used("search_flights").check(runs["hasty"])
    assert (r.passed, r.reason) == (
        False,
        "'search_flights' was called 0 times, expected at least 1",
    )
    r = tool_used("search_flights", max_times=1).check(runs["loop"])
    assert (r.passed, r.reason) == (
        False,
        "'search_flights' was called 3 times, expected at most 1",
    )
    assert tool_used("search_flights", min_times=3).check(runs["loop"]).passed
    assert tool_used("book_flight", min_times=0, max_times=0).check(runs["hasty"]).passed is False


@pytest.mark.parametrize(
    ("tools", "mode", "run", "passed", "reason"),
    [
        (["search_flights", "book_flight"], "in_order", "good", True,
         "called ['search_flights', 'book_flight'] in order "
         "(called ['search_flights', 'book_flight'])"),
        (["search_flights", "book_flight"], "in_order", "loop", True, None),
        (["book_flight", "search_flights"], "in_order", "good", False,
         "called ['search_flights', 'book_flight']: 'search_flights' does not follow "
         "['book_flight'] in order"),
        (["search_flights", "book_flight"], "in_order", "hasty", False,
         "called ['book_flight']: no 'search_flights' to start the sequence "
         "['search_flights', 'book_flight']"),
        (["search_flights", "book_flight"], "exact", "good", True, None),
        (["search_flights", "book_flight"], "exact", "loop", False,
         "the tools called were "
         "['search_flights', 'search_flights', 'search_flights', 'book_flight'], "
         "not exactly ['search_flights', 'book_flight']"),
        (["book_flight", "search_flights"], "subset", "good", True, None),
        (["book_flight", "search_flights"], "subset", "hasty", False,
         "never called ['search_flights'] (called ['book_flight'])"),
    ],
)  # fmt: skip
def test_tool_sequence(
    runs: dict[str, Trajectory],
    tools: list[str],
    mode: str,
    run: str,
    passed: bool,
    reason: str | None,
) -> None:
    r = tool_sequence(tools, mode=mode).check(runs[run])  # type: ignore[arg-type]
    assert r.passed is passed and r.check == "tool_sequence"
    if reason is not None:
        assert r.reason == reason


def test_tool_args_exact_subset_nested_and_which(runs: dict[str, Trajectory]) -> None:
    good, hasty, stop = runs["good"], runs["hasty"], runs["stop"]
    assert tool_args("book_flight", {"passengers": 1}).check(good).passed
    r = tool_args("book_flight", {"passengers": 1}).check(hasty)
    assert not r.passed
    assert r.reason.startswith("0 of 1 call of 'book_flight' match")
    assert (
        tool_args("book_flight", {"flight_id": "IB3234", "passengers": 1}, mode="exact")
        .check(good)
        .passed
    )
    assert not tool_args("book_flight", {"flight_id": "IB3234"}, mode="exact").check(good).passed
    assert not tool_args("search_flights", {"direct": True}).check(stop).passed  # it left it out
    assert not tool_args("cancel", {"x": 1}).check(good).passed
    args = '{"a": {"b": 1, "c": 2}, "d": 3}'
    call = {"id": "1", "function": {"name": "f", "arguments": args}}
    nested = Trajectory.from_messages([{"role": "assistant", "tool_calls": [call]}])
    assert tool_args("f", {"a": {"b": 1}}).check(nested).passed
    assert not tool_args("f", {"a": {"b": 2}}).check(nested).passed
    loop = runs["loop"]
    assert tool_args("search_flights", {"direct": True}, which="all").check(loop).passed


def test_tool_args_custom_match(runs: dict[str, Trajectory]) -> None:
    cheap = tool_args(
        "book_flight", match=lambda a: isinstance(a, dict) and a.get("flight_id") == "IB3234"
    )
    assert cheap.check(runs["good"]).passed and not cheap.check(runs["stop"]).passed
    assert "match (arguments accepted by" in cheap.check(runs["stop"]).reason
    with pytest.raises(ConfigError, match="one"):
        tool_args("book_flight")
    with pytest.raises(ConfigError, match="one"):
        tool_args("book_flight", {"a": 1}, match=lambda a: True)


def test_step_count(runs: dict[str, Trajectory]) -> None:
    r = step_count(max=4).check(runs["loop"])
    assert (r.passed, r.reason) == (False, "5 steps, more than the 4 allowed")
    assert step_count(max=4).check(runs["good"]).passed
    r = step_count(min=3).check(runs["hasty"])
    assert (r.passed, r.reason) == (False, "2 steps, fewer than the 3 required")
    assert step_count(max=2, count="tool_calls").check(runs["good"]).passed
    assert step_count(min=1, max=1, count="tool_calls").check(runs["hasty"]).reason == (
        "1 tool call, within bounds"
    )
    with pytest.raises(ValidationError, match="needs min, max or both"):
        step_count()
    with pytest.raises(ValidationError, match=r"min \(3\) is above max \(1\)"):
        step_count(min=3, max=1)


def test_custom_check_results_and_a_bad_return(runs: dict[str, Trajectory]) -> None:
    def pnr(t: Trajectory) -> tuple[bool, str]:
        answer = t.final_answer or ""
        return "reference" in answer.lower(), f"answer: {answer[:20]}"

    assert custom_check(pnr, "gives the booking reference").check(runs["good"]).passed
    plain = custom_check(lambda t: len(t.steps) < 3, "is short").check(runs["hasty"])
    assert plain == CheckResult(check="custom", passed=True, reason="is short: yes")
    with pytest.raises(
        ConfigError, match="must return a bool, \\(bool, reason\\) or a CheckResult"
    ):
        custom_check(lambda t: 1, "bad").check(runs["good"])


def test_checks_are_data() -> None:
    spec = tool_sequence(["a", "b"], mode="subset")
    assert spec.model_dump() == {"kind": "tool_sequence", "tools": ("a", "b"), "mode": "subset"}
    with pytest.raises(ValidationError):
        tool_sequence(["a"], mode="sideways")  # type: ignore[arg-type]
