"""CriterionGrader end to end on the mock backend: calls, shuffling, failures, reports."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

import jurist
from jurist import CriterionGrader, Rubric
from jurist.errors import APITimeoutError, ConfigError, InternalServerError
from jurist.judges import ItemJudge
from jurist.judges.rubric import AUTO_NA_LABEL, JudgeSpec
from jurist.models import MockModel
from jurist.types import Completion, Request, Usage

RUBRIC = Rubric.from_dict(
    {
        "guidelines": "Be strict about arithmetic.",
        "criteria": [
            {"name": "correct", "requirement": "Gives the right answer", "weight": 10},
            {"name": "rude", "requirement": "Is rude to the user", "weight": -5},
            {
                "name": "clarity",
                "requirement": "How clear is it?",
                "weight": 5,
                "options": [
                    {"label": "Poor", "value": 0},
                    {"label": "Fair", "value": 0.5},
                    {"label": "Good", "value": 1},
                ],
            },
            {
                "name": "tone",
                "requirement": "What is the tone?",
                "scale_type": "nominal",
                "options": [
                    {"label": "Formal", "value": 1},
                    {"label": "Casual", "value": 0.8},
                    {"label": "Hostile", "value": 0},
                ],
            },
        ],
    }
)
PREFS = {"correct": "MET", "rude": "UNMET", "clarity": "Good", "tone": "Casual"}


def _options(text: str) -> dict[str, list[str]]:
    """Each criterion id's options as shown (in shown order) in a user message."""
    out: dict[str, list[str]] = {}
    for block in re.split(r"\n\n(?=Options for )", text):
        m = re.match(r"Options for (c\d+|the criterion):\n(.*)", block, re.DOTALL)
        if m:
            out[m.group(1)] = [line.split(". ", 1)[1] for line in m.group(2).splitlines()]
    return out


def chooser(
    prefs: dict[str, str], rubric: Rubric = RUBRIC, explain: bool = True
) -> Callable[[Request], str]:
    """A judge that answers each criterion with a fixed label, reading the shown options."""
    names = rubric.criterion_names()

    def answer_one(name: str, shown: list[str] | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"explanation": f"about {name}"} if explain else {}
        if shown is None:
            entry["verdict"] = prefs[name]
        else:
            entry["option"] = shown.index(prefs[name]) + 1
        return entry

    def fn(request: Request) -> str:
        system, user = request.messages[0].content, request.messages[1].content
        shown = _options(user)
        if "Rubric:\n" in system:  # one call for the whole rubric
            ids = re.findall(r"^(c\d+) \[", system, re.MULTILINE)
            return json.dumps(
                {cid: answer_one(names[int(cid[1:]) - 1], shown.get(cid)) for cid in ids}
            )
        requirement = re.search(r"Criterion \[[^\]]+\]: (.*)", user)
        assert requirement is not None
        index = [c.requirement for c in rubric.criteria].index(requirement.group(1))
        return json.dumps(answer_one(names[index], shown.get("the criterion")))

    return fn


def mock(prefs: dict[str, str] = PREFS, **kw: Any) -> MockModel:
    return MockModel("judge", outputs=chooser(prefs), **kw)


@pytest.mark.parametrize("calls", ["per_item", "per_criterion"])
async def test_grade_maps_answers_back_through_the_shuffle(calls: str) -> None:
    model = mock()
    grader = CriterionGrader(judges=[model], seed=7, calls=calls)  # type: ignore[arg-type]
    report = await grader.grade(RUBRIC, "2 + 2 = 4", query="What is 2 + 2?")
    assert report.verdicts == ["MET", "UNMET", "Good", "Casual"]
    assert report.error is None and report.seed == 7 and report.calls == calls
    # 10 (correct) + 0 (not rude) + 5 (Good) + 0.8 * 10 (Casual) over 25 positive weight
    assert report.score == pytest.approx(23 / 25)
    assert report.raw_score == pytest.approx(23)
    assert model.calls == (1 if calls == "per_item" else 4)
    clarity = report.criterion("clarity")
    vote = clarity.votes[0]
    assert vote.selected_index == 2 and vote.selected_label == "Good" and vote.value == 1.0
    # the recorded order is the one the judge saw: shown position -> rubric index
    order = vote.shuffle_order
    assert order is not None and sorted(order) == [0, 1, 2, 3]  # + the auto NA option
    user = model.requests[0 if calls == "per_item" else 2].messages[1].content
    shown = _options(user)["c3" if calls == "per_item" else "the criterion"]
    labels = ["Poor", "Fair", "Good", AUTO_NA_LABEL]
    assert shown == [labels[i] for i in order]
    assert vote.reason == "about clarity" and clarity.reason == "mock:judge: about clarity"


async def test_same_seed_same_orders_other_seed_other_orders() -> None:
    def orders(seed: int, calls: str = "per_item") -> list[list[int] | None]:
        grader = CriterionGrader(judges=[mock()], seed=seed, calls=calls)  # type: ignore[arg-type]
        reports = grader.grade_many_sync(RUBRIC, [f"answer {i}" for i in range(6)])
        return [c.votes[0].shuffle_order for r in reports for c in r.criteria]

    assert orders(1) == orders(1)
    assert orders(1) == orders(1, "per_criterion")  # the same order, however it is asked
    assert orders(1) != orders(2)
    # binary criteria are never shuffled
    assert all(o is None for o in orders(1)[0::4] + orders(1)[1::4])


async def test_each_judge_sees_its_own_order_and_shuffle_off_is_identity() -> None:
    judges = [JudgeSpec(mock(), judge_id=f"j{i}") for i in range(4)]
    report = await CriterionGrader(judges=judges, seed=3).grade(RUBRIC, "x")
    orders = [tuple(v.shuffle_order or ()) for v in report.criterion("clarity").votes]
    assert len(set(orders)) > 1
    assert report.verdicts == ["MET", "UNMET", "Good", "Casual"]
    model = mock()
    plain = await CriterionGrader(judges=[model], shuffle_options=False).grade(RUBRIC, "x")
    assert plain.seed is None and plain.criterion("clarity").votes[0].shuffle_order is None
    shown = _options(model.requests[0].messages[1].content)
    assert shown["c3"] == ["Poor", "Fair", "Good", AUTO_NA_LABEL]
    assert plain.verdicts == report.verdicts


async def test_static_text_first_for_prefix_caching() -> None:
    for calls in ("per_item", "per_criterion"):
        model = mock()
        grader = CriterionGrader(judges=[model], calls=calls)
        await grader.grade_many(RUBRIC, ["first answer", "second answer"], queries=["q1", "q2"])
        systems = {r.messages[0].content for r in model.requests}
        assert len(systems) == 1  # one system message for every item (and criterion)
        for r in model.requests:
            user = r.messages[1].content
            # the item comes after the static part, the shuffled options after the item
            assert user.index("<submission>") < user.find("Options for") or "Options" not in user
            if calls == "per_criterion":
                assert user.startswith("Guidelines for every criterion:")
        if calls == "per_item":
            (system,) = systems
            assert "Be strict about arithmetic." in system and "c4 [choice]" in system
            assert "c2 [yes/no, penalty]" in system


async def test_json_schema_is_sent_when_the_backend_supports_it() -> None:
    model = mock(json_schema=True)
    await CriterionGrader(judges=[model], explanations=False).grade(RUBRIC, "x")
    schema = model.requests[0].json_schema
    assert schema is not None and schema["required"] == ["c1", "c2", "c3", "c4"]
    assert schema["properties"]["c1"]["properties"]["verdict"]["enum"] == [
        "MET",
        "UNMET",
        "CANNOT_ASSESS",
    ]
    assert schema["properties"]["c3"]["properties"]["option"]["enum"] == [1, 2, 3, 4]
    assert schema["properties"]["c3"]["required"] == ["option"]
    plain = mock()
    await CriterionGrader(judges=[plain]).grade(RUBRIC, "x")
    assert plain.requests[0].json_schema is None  # strict parsing instead


async def test_failed_calls_abstain_and_are_marked() -> None:
    broken = MockModel("broken", outputs=[InternalServerError("HTTP 503", status_code=503)])
    grader = CriterionGrader(judges=[mock(), mock(), broken], seed=0)
    report = await grader.grade(RUBRIC, "x")
    assert report.verdicts == ["MET", "UNMET", "Good", "Casual"]
    for c in report.criteria:
        failed = [v for v in c.votes if v.is_error]
        assert len(failed) == 1 and failed[0].judge_id == "mock:broken"
        assert failed[0].error == "api: HTTP 503" and failed[0].na
        assert c.n_counted == 2 and c.agreement == 1.0 and c.error is None
    assert report.criterion("clarity").votes[2].selected_label == AUTO_NA_LABEL
    assert report.judge_scores["mock:broken"] is None
    assert report.judge_scores["mock:judge"] == report.score


async def test_every_call_failing_is_no_score_never_zero() -> None:
    timeouts = MockModel("t", outputs=lambda r: APITimeoutError("no answer within 5 s"))
    report = await CriterionGrader(judges=[timeouts, timeouts]).grade(RUBRIC, "x")
    assert report.score is None and report.raw_score is None
    assert report.error == "timeout: no answer within 5 s"
    assert all(c.is_error and c.final.na for c in report.criteria)
    assert report.criteria[0].agreement is None


async def test_unreadable_answers_fail_alone_and_retries_reask() -> None:
    partial = MockModel("p", outputs=['{"c1": {"verdict": "MET"}, "c3": {"option": 9}}'])
    report = await CriterionGrader(judges=[partial], shuffle_options=False).grade(RUBRIC, "x")
    assert report.verdicts[0] == "MET"
    assert report.criterion("rude").votes[0].error == "parse: the answer has no entry for it"
    assert report.criterion("clarity").votes[0].error == (
        "parse: option 9 is not a number from 1 to 4"
    )
    assert report.score == 1.0  # only 'correct' counted
    good = json.dumps({f"c{i}": {"verdict": "MET", "option": 1} for i in range(1, 5)})
    flaky = MockModel("f", outputs=["Sure! MET on everything.", good])
    no_retry = await CriterionGrader(judges=[flaky]).grade(RUBRIC, "x")
    err = no_retry.criteria[0].votes[0].error
    assert err is not None and err.startswith("parse: the answer is not a JSON object")
    flaky = MockModel("f", outputs=["Sure! MET on everything.", good])
    retried = await CriterionGrader(judges=[flaky]).grade(RUBRIC, "x", retries=1)
    assert retried.error is None and [r.attempt for r in flaky.requests] == [0, 1]
    assert retried.usage.calls == 2


async def test_reasoning_is_kept_apart_from_the_explanation() -> None:
    answer = json.dumps(
        {f"c{i}": {"explanation": "short", "verdict": "MET", "option": 1} for i in range(1, 5)}
    )
    thinker = MockModel(
        "t", outputs=[Completion(text=answer, reasoning="long deliberation", usage=Usage(calls=1))]
    )
    report = await CriterionGrader(judges=[thinker]).grade(RUBRIC, "x")
    vote = report.criteria[0].votes[0]
    assert vote.reason == "short" and vote.reasoning == "long deliberation"
    inline = MockModel("i", outputs=[f"<think>hmm, let me see</think>\n```json\n{answer}\n```"])
    report = await CriterionGrader(judges=[inline]).grade(RUBRIC, "x")
    assert report.criteria[0].votes[0].reasoning == "hmm, let me see"
    assert report.criteria[0].votes[0].reason == "short"


async def test_judge_weights_and_ids() -> None:
    yes = dict(PREFS, correct="MET")
    no = dict(PREFS, correct="UNMET")
    judges = [(mock(yes), 3.0), mock(no), mock(no)]
    weighted = await CriterionGrader(judges=judges, aggregation="weighted").grade(RUBRIC, "x")
    assert weighted.verdicts[0] == "MET"
    assert [v.judge_id for v in weighted.criteria[0].votes] == [
        "mock:judge",
        "mock:judge#2",
        "mock:judge#3",
    ]
    assert [v.weight for v in weighted.criteria[0].votes] == [3.0, 1.0, 1.0]
    majority = await CriterionGrader(judges=judges).grade(RUBRIC, "x")
    assert majority.verdicts[0] == "UNMET"
    assert majority.criteria[0].agreement == pytest.approx(2 / 3)
    with pytest.raises(ConfigError, match="given to two judges"):
        CriterionGrader(judges=[JudgeSpec(mock(), judge_id="a"), JudgeSpec(mock(), judge_id="a")])
    with pytest.raises(ConfigError, match="positive"):
        CriterionGrader(judges=[(mock(), 0.0)])
    with pytest.raises(ConfigError, match="ordinal_aggregation='avg' is not one of"):
        CriterionGrader(judges=[mock()], ordinal_aggregation="avg")
    with pytest.raises(ConfigError, match="at least one judge"):
        CriterionGrader(judges=[])


async def test_forced_choice_and_cannot_assess_everywhere() -> None:
    broken = MockModel("b", outputs=lambda r: InternalServerError("down", status_code=500))
    forced = CriterionGrader(judges=[broken], auto_na_option=False)
    report = await forced.grade(RUBRIC, "x")
    vote = report.criterion("clarity").votes[0]
    assert vote.selected_index is None and vote.na and vote.shuffle_order is not None
    assert len(vote.shuffle_order) == 3  # no "Cannot assess" option added
    abstain = dict(PREFS, correct="CANNOT_ASSESS", rude="CANNOT_ASSESS")
    abstain.update(clarity=AUTO_NA_LABEL, tone=AUTO_NA_LABEL)
    report = await CriterionGrader(judges=[mock(abstain)]).grade(RUBRIC, "x")
    assert report.score is None and report.cannot_assess_count == 4
    assert report.error is not None and report.error.startswith("abstain:")
    zero = CriterionGrader(judges=[mock(abstain)], cannot_assess="zero")
    assert (await zero.grade(RUBRIC, "x")).score == 0.0


async def test_grade_many_keeps_order_and_bounds_calls_in_flight() -> None:
    in_flight = 0
    peak = 0
    base = chooser(PREFS)

    async def slow(request: Request) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001)
        in_flight -= 1
        return base(request)

    grader = CriterionGrader(judges=[MockModel("s", outputs=slow)] * 2, calls="per_criterion")
    items = [{"submission": f"s{i}", "query": f"q{i}"} for i in range(12)]
    reports = await grader.grade_many(RUBRIC, items, concurrency=5)
    assert len(reports) == 12 and peak <= 5
    assert all(r.verdicts == ["MET", "UNMET", "Good", "Casual"] for r in reports)
    assert sum(r.usage.calls for r in reports) == 12 * 2 * 4


def test_item_judge_contract_and_sync_inside_a_loop() -> None:
    judge = CriterionGrader(judges=[mock()], seed=5).for_rubric(
        RUBRIC, submission_field="answer", query_field="question"
    )
    assert isinstance(judge, ItemJudge) and judge.required_fields == ("answer",)
    described = judge.describe()
    json.dumps(described)
    assert described["seed"] == 5 and described["rubric"] == RUBRIC.to_dict()
    assert described["fields"]["submission"] == "answer"

    async def inside_a_loop() -> jurist.GradeReport:
        return judge.judge_sync({"question": "q", "answer": "a"})

    report = asyncio.run(inside_a_loop())
    assert report.score == pytest.approx(23 / 25)
    assert report.model_dump(mode="json")["criteria"][0]["votes"][0]["verdict"] == "MET"
    missing = judge.judge_sync({"question": "q"})
    assert missing.score is None and missing.error is not None
    assert missing.error.startswith("data: field 'answer'")


def test_reports_to_pandas() -> None:
    pytest.importorskip("pandas")
    report = CriterionGrader(judges=[mock(), mock()]).grade_sync(RUBRIC, "x")
    frame = report.to_pandas()
    assert list(frame["criterion"]) == ["correct", "rude", "clarity", "tone"]
    assert list(frame["verdict"]) == ["MET", "UNMET", "Good", "Casual"]
    votes = report.to_pandas(votes=True)
    assert len(votes) == 8 and set(votes["judge_id"]) == {"mock:judge", "mock:judge#2"}
    import pandas as pd

    data = pd.DataFrame({"response": ["a", "b"], "prompt": ["q1", "q2"]})
    reports = CriterionGrader(judges=[mock()]).grade_many_sync(RUBRIC, data)
    assert [r.verdicts for r in reports] == [["MET", "UNMET", "Good", "Casual"]] * 2
