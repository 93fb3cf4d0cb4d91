"""Must show (issue 25.2): a trajectory rubric on recorded agent traces in OpenTelemetry
form, deterministic checks beside an LLM judge's verdicts, run through jurist.evaluate
against a loopback OpenAI-compatible judge, and both in the run's records and report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.errors import ConfigError
from jurist.templates import NumericScale
from jurist.trajectories import (
    CheckCriterion,
    StepJudge,
    TrajectoryGrader,
    TrajectoryRubric,
    custom_check,
    load_traces,
    tool_used,
    trajectory_items,
)
from tests._flight_judge import FlightJudge

DATA = Path(__file__).parents[1] / "fixtures" / "traces"
FILES = [
    DATA / "flights_genai.json",
    DATA / "flights_openinference.json",
    DATA / "flights_legacy.jsonl",
]


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FlightJudge]:
    with FlightJudge() as server:
        yield server


def _grader(server: FlightJudge) -> TrajectoryGrader:
    model = jurist.get_model("openai:flight-judge", base_url=server.base_url, api_key="x")
    rubric = TrajectoryRubric.from_yaml(DATA / "flight_rubric.yaml")
    return TrajectoryGrader(rubric, jurist.CriterionGrader(judges=[model], seed=7))


EXPECTED = {  # trace -> (score, verdicts in rubric order: 4 checks, then the 2 LLM criteria)
    "5b8efff798038103d269b633813fc60c": (1.0, ["MET"] * 6),
    "0af7651916cd43dd8448eb211c80319c": (0.1, ["UNMET", "UNMET", "UNMET", "MET", "UNMET", "UNMET"]),
    "9c1f7e3a2b5d4c6e8f0a1b2c3d4e5f60": (0.5, ["MET", "MET", "UNMET", "MET", "UNMET", "UNMET"]),
    "4bf92f3577b34da6a3ce929d0e0e4736": (0.9, ["MET", "MET", "MET", "UNMET", "MET", "MET"]),
}  # fmt: skip
NAMES = [
    "searched_then_booked", "one_adult", "direct_only_search", "at_most_four_steps",
    "cheapest_direct", "grounded_answer",
]  # fmt: skip


def test_rubric_on_recorded_traces_through_evaluate(
    judge_server: FlightJudge, tmp_path: Path
) -> None:
    items = trajectory_items(load_traces(FILES))
    assert [it["id"] for it in items] == list(EXPECTED)
    run = jurist.evaluate(items, _grader(judge_server), run_dir=tmp_path / "run")
    rows = list(run.rows())
    assert len(rows) == 4
    for row in rows:
        outcome = row["outcome"]
        score, verdicts = EXPECTED[row["item"]["id"]]
        assert row["score"] == pytest.approx(score), row["item"]["id"]
        assert [c["name"] for c in outcome["criteria"]] == NAMES
        assert [c["final"]["verdict"] for c in outcome["criteria"]] == verdicts
        checks, judged = outcome["criteria"][:4], outcome["criteria"][4:]
        for c in checks:  # one vote each, from the checks, with the check's reason
            (vote,) = c["votes"]
            assert vote["judge_id"] == "check" and vote["reason"]
        for c in judged:
            (vote,) = c["votes"]
            assert vote["judge_id"] == "openai:flight-judge" and vote["reason"]
        assert set(outcome["judge_scores"]) == {"check", "openai:flight-judge"}
    loop = next(r for r in rows if r["item"]["id"].startswith("4bf9"))
    steps = next(c for c in loop["outcome"]["criteria"] if c["name"] == "at_most_four_steps")
    assert steps["votes"][0]["reason"] == "5 steps, more than the 4 allowed"
    # the judge saw the task as the query and the trajectory, compact, as the submission
    assert len(judge_server.bodies) >= 4
    user = judge_server.bodies[-1]["messages"][-1]["content"]
    assert "<query>\nBook the cheapest direct flight" in user
    assert "Step 1:\n  -> search_flights(" in user and "more characters]" in user
    # the report shows every criterion, checks and judged ones alike
    html = run.report(tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Per criterion" in html
    for name in NAMES:
        assert name in html
    records = list(run.records())
    assert [r["judge_score"] for r in records] == pytest.approx([s for s, _ in EXPECTED.values()])
    assert records[0]["judge_criteria"][0]["votes"][0]["judge_id"] == "check"


def test_checks_only_rubric_needs_no_model(tmp_path: Path) -> None:
    rubric = TrajectoryRubric.from_dict(
        {"checks": [{"name": "searched", "check": {"kind": "tool_used", "tool": "search_flights"}}]}
    )
    grader = TrajectoryGrader(rubric)
    assert grader.models() == ()
    run = jurist.evaluate(trajectory_items(load_traces(FILES)), grader, run_dir=tmp_path / "r")
    assert run.scores == [1.0, 0.0, 1.0, 1.0]


def test_a_failing_custom_check_fails_its_criterion_only() -> None:
    def broken(_: Any) -> bool:
        raise RuntimeError("lookup table missing")

    rubric = TrajectoryRubric(
        checks=(
            CheckCriterion(name="ok", check=tool_used("book_flight")),
            CheckCriterion(name="broken", check=custom_check(broken, "a broken check")),
        )
    )
    report = TrajectoryGrader(rubric).judge_sync(trajectory_items(load_traces(FILES[0]))[0])
    assert report.score == 1.0
    assert report.criterion("broken").error == "check: RuntimeError: lookup table missing"
    assert rubric.to_dict()["checks"][1]["check"] == {
        "kind": "custom",
        "description": "a broken check",
    }


def test_bad_items_and_configs_are_clear() -> None:
    rubric = TrajectoryRubric.from_yaml(DATA / "flight_rubric.yaml")
    with pytest.raises(ConfigError, match="pass a CriterionGrader"):
        TrajectoryGrader(rubric)
    checks_only = TrajectoryRubric(checks=rubric.checks)
    report = TrajectoryGrader(checks_only).judge_sync({"prompt": "x"})
    assert report.score is None and report.error is not None
    assert report.error.startswith("data: item: no 'trace' (or 'messages') field")
    with pytest.raises(
        ConfigError, match=r"check 1 \('x'\): check\.tool_used\.tool: Field required"
    ):
        TrajectoryRubric.from_dict({"checks": [{"name": "x", "check": {"kind": "tool_used"}}]})
    with pytest.raises(ConfigError, match="the name 'a' is given to two criteria"):
        TrajectoryRubric.from_dict({
            "checks": [{"name": "a", "check": {"kind": "step_count", "max": 3}}],
            "criteria": [{"name": "a", "requirement": "r"}],
        })  # fmt: skip
    judge = jurist.CriterionGrader(judges=[jurist.JudgeSpec("mock:j", judge_id="check")])
    with pytest.raises(ConfigError, match="the judge id 'check' is taken"):
        TrajectoryGrader(rubric, judge)


def test_step_judge_judges_each_step_and_aggregates(tmp_path: Path) -> None:
    def verdict(request: Any) -> str:
        step = request.messages[-1].content.split("<step>")[-1]
        wrong = ('book_flight({"flight_id": "FR8312"', 'book_flight({"flight_id": "AZ61"')
        return "Bad" if any(w in step for w in wrong) or "FR8312, a direct" in step else "Good"

    model = jurist.get_model("mock:steps", outputs=verdict)
    items = trajectory_items(load_traces(FILES))
    run = jurist.evaluate(items, StepJudge(model, aggregation="min"), run_dir=tmp_path / "s")
    by_id = {r["item"]["id"]: r for r in run.rows()}
    good = by_id["5b8efff798038103d269b633813fc60c"]["outcome"]
    assert good["score"] == 1.0 and good["n_counted"] == 3
    assert [s["verdict"] for s in good["steps"]] == ["Good"] * 3
    stop = by_id["9c1f7e3a2b5d4c6e8f0a1b2c3d4e5f60"]["outcome"]
    assert [s["verdict"] for s in stop["steps"]] == ["Good", "Bad", "Bad"] and stop["score"] == 0.0
    mean = StepJudge(model).judge_sync(items[2])
    assert mean.score == pytest.approx(1 / 3)
    with pytest.raises(ConfigError, match="has no 'step' field"):
        StepJudge(jurist.LLMJudge(model, template="likert"))


def _step_verdict(request: Any) -> str:
    step = request.messages[-1].content.split("<step>")[-1]
    wrong = ('book_flight({"flight_id": "AZ61"', 'book_flight({"flight_id": "FR8312"')
    if any(w in step for w in wrong) or "FR8312, a direct" in step:
        return "Bad"
    return "Neutral" if step.count("-> search_flights(") and "Step 2:" in step else "Good"


def test_step_verdicts_join_checks_in_one_rubric(tmp_path: Path) -> None:
    """A rubric with checks and a step criterion: the weakest step's verdict is the step
    criterion's vote, weighed with the checks by the same scoring."""
    rubric = TrajectoryRubric.from_dict(
        {
            "checks": [
                {"name": "searched", "check": {"kind": "tool_used", "tool": "search_flights"}}
            ],
            "steps": {"name": "sound_steps", "weight": 10},
        }
    )
    steps = StepJudge(jurist.get_model("mock:steps", outputs=_step_verdict), name="steps")
    grader = TrajectoryGrader(rubric, step_judge=steps)
    assert grader.models() == steps.models()
    run = jurist.evaluate(trajectory_items(load_traces(FILES)), grader, run_dir=tmp_path / "r")
    rows = {r["item"]["id"][:4]: r["outcome"] for r in run.rows()}
    good, hasty, stop, loop = rows["5b8e"], rows["0af7"], rows["9c1f"], rows["4bf9"]
    assert [c["name"] for c in good["criteria"]] == ["searched", "sound_steps"]
    assert good["score"] == 1.0
    assert good["criteria"][1]["final"]["selected_label"] == "Good"
    assert good["criteria"][1]["votes"][0]["reason"] == "all 3 steps Good"
    assert hasty["score"] == 0.0  # no search, and a bad step
    (vote,) = stop["criteria"][1]["votes"]
    assert vote["judge_id"] == "steps" and vote["selected_label"] == "Bad"
    assert vote["reason"] == "3 steps judged, below the top: step 2: Bad; step 3: Bad"
    assert stop["score"] == 0.5
    assert loop["criteria"][1]["final"]["selected_label"] == "Neutral" and loop["score"] == 0.75
    with pytest.raises(ConfigError, match="pass a StepJudge"):
        TrajectoryGrader(rubric)
    with pytest.raises(ConfigError, match="continuous scale"):
        continuous = jurist.get_template("trajectory_step").model_copy(
            update={"scale": NumericScale(low=0, high=1)}
        )
        TrajectoryGrader(rubric, step_judge=StepJudge(jurist.LLMJudge("mock:c", continuous)))
