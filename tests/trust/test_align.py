"""Alignment from labels (issue 27, item 5): few-shot examples on an LLMJudge, the search
with its held-out discipline, the intervals and the refusal, versioned catalog entries
and ``jurist align``.

The golden part replays PandaLM's test set (../shared/realdata: 999 pairs, three human
annotators, GPT-3.5's recorded verdicts) through a judge whose answer is a fixed rule of
its prompt (tests/_pandalm_replay.py says exactly what the rule is). What it proves: the
search finds an example that changes the judge's answers for the better on a train slice,
the held-out part is judged once, after the search, and the held-out paired interval
decides whether a gain is claimed; with examples that only move answers at random, the
train slice improves by chance and the held-out check refuses to claim a gain. It does
not prove that a real model learns from examples.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import jurist
from jurist.errors import ConfigError, DataError
from jurist.judges import Example
from jurist.trust import CalibratedJudge, align_sync
from jurist.trust._align_data import label_space
from jurist.trust._propose import PROPOSER_SYSTEM
from jurist.types import Completion, Message, Request, Usage
from tests._cli_run import run as run_cli
from tests._fault_server import _completion
from tests._loopback import Loopback
from tests._pandalm_replay import PANDALM, REALDATA, TIE_HINT, Replay, load_items

# -- few-shot examples on an LLMJudge ---------------------------------------------------------

SHOTS: list[Example | dict[str, Any]] = [
    {"item": {"prompt": "2+2?", "response": "4", "human": 1}, "verdict": "correct"},
    Example(item={"prompt": "Capital of France?", "response": "Lyon"}, verdict=0.0),
]


def test_examples_sit_in_the_static_system_message_before_the_item() -> None:
    model = jurist.get_model("mock:j", outputs=["Correct"] * 2)
    judge = jurist.LLMJudge(model, template="true_false", examples=SHOTS)
    assert [e.verdict for e in judge.examples] == ["Correct", "Incorrect"]
    first = judge.messages({"prompt": "q1", "response": "a1"})
    second = judge.messages({"prompt": "q2", "response": "a2"})
    system = first[0].content
    assert first[0] == second[0]  # the same static prefix for every item
    assert "Example 1:" in system and "Verdict: Correct" in system
    assert "Example 2:" in system and "Lyon" in system and "Verdict: Incorrect" in system
    assert system.index("Reply with only the verdict") < system.index("Example 1:")
    assert "q1" not in system and first[-1].content.count("q1") == 1
    described = judge.describe()
    assert described["examples"][0] == {"item": SHOTS[0]["item"], "verdict": "Correct"}  # type: ignore[index]
    plain = jurist.LLMJudge(model, template="true_false")
    assert "examples" not in plain.describe()
    assert plain.with_options(examples=SHOTS).describe()["system"] == system
    assert judge.judge_one_sync({"prompt": "q", "response": "a"}).score == 1.0


def test_examples_are_checked_against_the_template() -> None:
    with pytest.raises(ConfigError, match=r"examples\[0\]: verdict 'maybe' is not a label"):
        jurist.LLMJudge(
            "mock:j",
            template="true_false",
            examples=[{"item": {"prompt": "q", "response": "a"}, "verdict": "maybe"}],
        )
    with pytest.raises(DataError, match=r"examples\[0\]: .*needs field\(s\) \['response'\]"):
        jurist.LLMJudge(
            "mock:j", template="true_false", examples=[{"item": {"prompt": "q"}, "verdict": 1}]
        )
    with pytest.raises(ConfigError, match=r"examples\[0\]: verdict 7 is off the scale"):
        jurist.LLMJudge(
            "mock:j",
            template="likert",
            examples=[{"item": {"prompt": "q", "response": "a"}, "verdict": 7}],
        )
    with pytest.raises(ConfigError, match=r"examples\[0\]\.verdict: Field required"):
        jurist.LLMJudge("mock:j", template="likert", examples=[{"item": {}}])


def test_the_catalog_keeps_a_judges_examples(tmp_path: Path) -> None:
    judge = jurist.LLMJudge("mock:j", template="true_false", examples=SHOTS)
    path = jurist.catalog.add(judge, "judges.shots.mine", root=tmp_path)
    assert "examples:" in path.read_text()
    back = jurist.catalog.get("judges.shots.mine", root=tmp_path)
    assert back.examples == judge.examples
    assert back.messages({"prompt": "q", "response": "a"}) == judge.messages(
        {"prompt": "q", "response": "a"}
    )
    names = [jurist.catalog.add_version(judge, "judges.shots.mine", root=tmp_path)[0] for _ in "ab"]
    assert names == ["judges.shots.mine.v1", "judges.shots.mine.v2"]


def test_label_space_reads_verdict_names_and_numbers() -> None:
    pair = jurist.templates.get_template("mt_bench_pair")
    space, values = label_space(["A", "tie", None, "c", "b"], pair)
    assert (space.kind, space.named, values) == ("nominal", True, [1.0, 0.5, None, 0.5, 0.0])
    assert space.of_score(0.8) == 1.0 and space.verdict(0.5, pair) == "tie"
    likert = jurist.templates.get_template("likert")
    space, values = label_space([1, 3, 5, 2], likert)
    assert (space.kind, space.low, space.high) == ("ordinal", 1.0, 5.0)
    assert space.of_score(0.5) == 3.0 and space.verdict(2.0, likert) == 2.0
    with pytest.raises(DataError, match="item 2: label 'great' is not a number nor a verdict"):
        label_space(["A", "great"], pair)
    with pytest.raises(DataError, match="label 'great' is text, but template 'likert'"):
        label_space(["great"], likert)


# -- the golden replay: PandaLM -------------------------------------------------------------


@pytest.fixture(scope="module")
def pandalm() -> list[dict[str, Any]]:
    if not PANDALM.exists():
        pytest.skip(f"{PANDALM} is absent (../shared/realdata is not here)")
    return load_items()


def replay_judge(replay: Replay) -> jurist.LLMJudge:
    model = jurist.get_model("mock:replay", outputs=replay, record=False)
    return jurist.LLMJudge(model, template="mt_bench_pair", output="text")


_RECORDED: list[float | None] = []


def run_alignment(items: list[dict[str, Any]], rule: str, **options: Any) -> tuple[Replay, Any]:
    replay = Replay(items, rule)  # type: ignore[arg-type]
    judge = replay_judge(replay)
    if not _RECORDED:  # the run's own scores, the "before": no examples, so for either rule
        _RECORDED.extend(judge.judge_sync(items).scores)
        replay.calls, replay.seen = 0, []
    recorded = list(_RECORDED)
    settings: dict[str, Any] = {
        "max_examples": 2,
        "pool": 8,
        "score_items": 120,
        "budget": 5000,
        "n_resamples": 500,
        **options,
    }
    result = align_sync(
        judge,
        items,
        [it["human"] for it in items],
        scores=recorded,
        keys=[it["id"] for it in items],
        label_field="human",
        **settings,
    )
    return replay, result


def test_pandalm_tie_examples_raise_held_out_agreement(pandalm: list[dict[str, Any]]) -> None:
    replay, result = run_alignment(pandalm, "tie")
    report = result.report
    by_id = {it["id"]: it for it in pandalm}
    # the search kept an example that teaches the rule: a tie between alike responses
    (key,) = report.example_keys
    assert by_id[key]["human"] == "tie" and by_id[key]["similarity"] >= 0.8
    assert result.judge.examples[0].verdict == "tie"
    assert report.train_after > report.train_before
    # held-out discipline: 500 items, judged once each, all after the search
    plan = report.plan
    assert (plan.pick, plan.score, plan.held_out) == (250, 120, 500)
    held = replay.seen[-plan.held_out :]
    search = replay.seen[: -plan.held_out]
    assert len(held) == 500 and not set(held) & set(search)  # duplicates stay together
    shots = result.judge.messages(pandalm[0])[0].content
    assert not any(text in shots for text in set(held))
    assert len(search) == len(report.candidates) * plan.score
    assert report.calls == replay.calls == len(replay.seen) <= 5000
    # the figures: a paired gain whose whole interval is above zero
    gain = report.gains["cohen_kappa"]
    assert report.headline == "cohen_kappa" and gain.low is not None and gain.low > 0
    assert report.supported and report.verdict().startswith("supported gain")
    assert report.failed_after <= report.failed_before
    assert report.before["accuracy"].value == pytest.approx(0.711, abs=1e-3)
    assert report.after["accuracy"].value == pytest.approx(0.743, abs=1e-3)
    assert report.fitted_on.items == plan.pick + plan.score and report.fitted_on.labels == "human"


def test_pandalm_random_examples_move_the_train_slice_but_claim_nothing(
    pandalm: list[dict[str, Any]],
) -> None:
    _, result = run_alignment(pandalm, "noise")
    report = result.report
    assert report.changed and report.train_after > report.train_before  # luck on the slice
    gain = report.gains["cohen_kappa"]
    assert gain.low is not None and gain.high is not None and gain.low < 0 < gain.high
    assert not report.supported
    assert report.verdict().startswith("no supported gain: held-out cohen_kappa gain")
    assert "no supported gain" in report.lines()[-1]


class Proposer:
    """A scripted proposer: answers ``replies`` in turn and keeps what it was shown."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.shown: list[str] = []

    def __call__(self, request: Request) -> Completion:
        self.shown.append(str(request.messages[-1].content))
        return Completion(text=self.replies.pop(0), usage=Usage(calls=1))


def test_a_proposal_is_kept_only_when_it_raises_train_agreement(
    pandalm: list[dict[str, Any]],
) -> None:
    current = jurist.templates.get_template("mt_bench_pair").instructions
    helpful = Proposer(f"<instructions>{current} {TIE_HINT}</instructions>")
    replay, result = run_alignment(
        pandalm, "tie", max_examples=0, proposer=jurist.get_model("mock:p", outputs=helpful)
    )
    report = result.report
    assert report.instructions is not None and TIE_HINT in report.instructions
    assert [c.kind for c in report.candidates] == ["instructions"]
    assert report.candidates[0].accepted and report.supported
    assert report.calls == 1 + 120 + 500
    # the proposer saw score-slice disagreements only, never a held-out item
    shown = helpful.shown[0]
    assert shown.count("### Item ") == 5 and "People's verdict:" in shown
    assert not any(text in shown for text in set(replay.seen[-500:]))
    useless = Proposer("<instructions>Judge the replies carefully.</instructions>", "no tags")
    _, result = run_alignment(
        pandalm,
        "tie",
        max_examples=0,
        proposer=jurist.get_model("mock:p", outputs=useless),
        proposer_rounds=2,
    )
    report = result.report
    assert [c.accepted for c in report.candidates] == [False]  # the reply with no tags: skipped
    assert not report.changed and not report.supported
    assert report.verdict() == "no supported gain: nothing raised agreement on the train slice"
    assert report.calls == 2 + 120  # nothing changed: the held-out part is not judged again


def test_the_budget_is_said_up_front_and_bounds_the_calls(pandalm: list[dict[str, Any]]) -> None:
    replay = Replay(pandalm, "tie")
    judge = replay_judge(replay)
    labels = [it["human"] for it in pandalm]
    with pytest.raises(ConfigError, match=r"budget 600 is below the least .* \(1240: "):
        align_sync(judge, pandalm, labels, budget=600, score_items=120)
    assert replay.calls == 0  # refused before any call
    lines: list[str] = []
    _, result = run_alignment(pandalm, "tie", budget=120 * 3 + 500, say=lines.append)
    assert (
        lines[-1]
        == "cost: at most 2300 calls (0 baseline, 1800 search, 500 held-out check); budget 860"
    )
    report = result.report
    assert len(report.candidates) == 3 and report.calls <= 860
    assert report.stopped.startswith("the budget (860 calls) stopped it at step")


# -- numeric labels: the calibration on top ---------------------------------------------------


def test_numeric_labels_get_a_calibration_when_it_helps(tmp_path: Path) -> None:
    rng = random.Random(4)
    labels = [rng.randint(1, 5) for _ in range(240)]
    verdicts = [min(5, y + 2) if y > 1 else 1 for y in labels]  # too generous by 2
    items = [{"id": f"i{i}", "prompt": "q", "response": f"[{i}] a"} for i in range(240)]

    def answer(request: Request) -> str:
        tag = re.search(r"\[(\d+)\]", str(request.messages[-1].content))
        assert tag is not None
        return str(verdicts[int(tag.group(1))])

    judge = jurist.LLMJudge(jurist.get_model("mock:g", outputs=answer), template="likert")
    result = align_sync(
        judge, items, labels, max_examples=1, pool=3, score_items=60, n_resamples=300
    )
    report = result.report
    assert report.space.kind == "ordinal" and report.headline == "quadratic_kappa"
    assert report.example_keys == ()  # the examples change nothing here
    assert report.calibration is not None and report.supported
    assert isinstance(result.judge, CalibratedJudge)
    assert report.plan.baseline_calls == 60 + 120  # no recorded scores: the judge is asked
    kappa = report.gains["quadratic_kappa"]
    assert kappa.low is not None and kappa.low > 0
    # saved: a calibrated_judge entry around the judge, with the alignment's record
    name, _ = jurist.catalog.add_version(
        result.judge, "judges.generous.aligned", alignment=report.record(), root=tmp_path
    )
    entry = jurist.catalog.load_entry(name, root=tmp_path)
    assert entry["kind"] == "calibrated_judge" and entry["alignment"]["calibrated"] is True
    back = jurist.catalog.get(name, root=tmp_path)
    assert isinstance(back, CalibratedJudge) and back.calibration == report.calibration


# -- jurist align: a run judged through a real OpenAI-compatible server on loopback ----------


class ReplayServer(Loopback):
    """An OpenAI-compatible server on 127.0.0.1 that answers with a :class:`Replay`."""

    def __init__(self, replay: Replay) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.replay = replay

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        messages = tuple(Message(role=m["role"], content=m["content"]) for m in body["messages"])
        if messages[0].content == PROPOSER_SYSTEM:  # asked as the proposer: add the hint
            current = str(messages[-1].content).split("<current>\n", 1)[1].split("\n</current>")[0]
            text = f"<instructions>{current} {TIE_HINT}</instructions>"
            return web.json_response(_completion(body, text))
        return web.json_response(_completion(body, self.replay(Request(messages=messages))))


def test_the_cli_aligns_a_run_saves_versions_and_refuses_an_unsupported_gain(
    pandalm: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = str(tmp_path / "catalog")
    with ReplayServer(Replay(pandalm, "tie")) as server:
        backend = jurist.get_model("openai:replay", base_url=server.url, api_key="x")
        judge = jurist.LLMJudge(backend, template="mt_bench_pair", output="text")
        jurist.evaluate(pandalm, judge, run_dir=tmp_path / "run")
        assert server.replay.calls == 999
        base = ["align", str(tmp_path / "run"), "--labels", "human", "--catalog", catalog]
        small = ["--max-examples", "1", "--score-items", "120"]
        code, out = run_cli([*base, *small, "--save", "judges.pandalm.aligned"], capsys)
        assert code == 0, out
        assert "cost: at most 1460 calls (0 baseline, 960 search, 500 held-out check)" in out
        assert "supported gain: held-out cohen_kappa 0.0588 [0.0341, 0.0892]" in out
        assert "saved judges.pandalm.aligned.v1" in out
        assert server.replay.calls == 999 + 1460
        entry = jurist.catalog.load_entry("judges.pandalm.aligned.v1", root=catalog)
        assert entry["kind"] == "judge" and entry["model_options"]["base_url"] == server.url
        assert [e["verdict"] for e in entry["examples"]] == ["tie"]
        record = entry["alignment"]
        assert record["examples"] == ["pandalm-574"] and record["supported"] is True
        assert (
            record["fitted_on"]["labels"] == "human"
            and len(record["fitted_on"]["fingerprint"]) == 16
        )
        assert record["metric"] == "cohen_kappa" and record["held_out"] == 500
        assert record["before"]["value"] < record["after"]["value"] and record["gain"]["low"] > 0
        aligned = jurist.catalog.get("judges.pandalm.aligned.v1", root=catalog)
        assert aligned.examples[0].item["response_a"] == pandalm[574]["response_a"]
        # examples that only move answers at random: exit 1, nothing saved unless asked
        server.replay.rule = "noise"
        tiny = ["--pool", "4", "--score-items", "60"]
        code, out = run_cli([*base, *tiny, "--save", "judges.pandalm.aligned"], capsys)
        assert code == 1 and "no supported gain: held-out cohen_kappa gain" in out
        assert "not saved: no supported gain" in out
        code, out = run_cli(
            [*base, *tiny, "--save", "judges.pandalm.aligned", "--save-anyway"], capsys
        )
        assert code == 1 and "saved judges.pandalm.aligned.v2" in out
        entry = jurist.catalog.load_entry("judges.pandalm.aligned.v2", root=catalog)
        assert entry["alignment"]["supported"] is False
        assert "(no supported gain)" in entry["description"]
        # usage errors: exit 2 before any call
        calls = server.replay.calls
        code, out = run_cli([*base, "--budget", "100"], capsys)
        assert code == 2 and "budget 100 is below the least" in out
        code, out = run_cli(["align", str(tmp_path / "run"), "--labels", "nope"], capsys)
        assert code == 2 and "--labels 'nope': no item has that field" in out
        assert server.replay.calls == calls
        # new instructions from a proposer model (the same server, asked as the proposer)
        server.replay.rule = "tie"
        proposer = f"openai:proposer[base_url='{server.url}',api_key=x]"
        code, out = run_cli(
            [
                *base,
                "--max-examples",
                "0",
                "--score-items",
                "120",
                "--proposer",
                proposer,
                "--save",
                "judges.pandalm.instructed",
            ],
            capsys,
        )
        assert code == 0 and "instructions: the proposer's, kept" in out, out
        entry = jurist.catalog.load_entry("judges.pandalm.instructed.v1", root=catalog)
        assert TIE_HINT in entry["instructions"]  # the judge's own key (its template by name)
        assert entry["alignment"]["instructions_changed"] is True
        assert server.replay.calls == calls + 120 + 500


def test_the_cli_aligns_only_a_single_llm_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = jurist.get_model("mock:p", outputs=["Correct"], cycle=True)
    panel = jurist.Panel([jurist.LLMJudge(model), jurist.LLMJudge(model)])
    items = [{"prompt": f"q{i}", "response": "a", "human": "Correct"} for i in range(12)]
    jurist.evaluate(items, panel, run_dir=tmp_path / "run")
    code, out = run_cli(["align", str(tmp_path / "run"), "--labels", "human"], capsys)
    assert code == 2 and "align works on a single LLM judge" in out


def test_unieval_topical_chat_gets_the_calibration_on_top() -> None:
    """UniEval's own Topical-Chat predictions replayed as a 0-100 judge (as in
    tests/trust/test_calibrate.py): examples change nothing in a replay, so none is kept, and the
    map on top is what moves held-out RMSE, on 180 held-out items."""
    path = REALDATA / "UniEval" / "reproduce" / "unieval_predict" / "dialogue"
    path = path / "topical_chat_result.json"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/realdata is not here)")
    rows = json.loads(path.read_text())
    predicted = [r["predict_scores"]["naturalness"] for r in rows]

    def answer(request: Request) -> str:
        tag = re.search(r"\[(\d+)\]", str(request.messages[-1].content))
        assert tag is not None
        return f"{100 * predicted[int(tag.group(1))]:.6f}"

    judge = jurist.LLMJudge(jurist.get_model("mock:unieval", outputs=answer), "continuous")
    items = [
        {"id": f"tc-{i}", "prompt": r["source"][-200:], "response": f"[{i}] {r['system_output']}"}
        for i, r in enumerate(rows)
    ]
    human = [r["scores"]["naturalness"] for r in rows]
    recorded = judge.judge_sync(items).scores
    result = align_sync(
        judge,
        items,
        human,
        scores=recorded,
        kind="interval",
        max_examples=1,
        pool=3,
        score_items=90,
        n_resamples=300,
    )
    report = result.report
    assert report.headline == "rmse" and report.example_keys == ()
    assert report.calibration is not None and isinstance(result.judge, CalibratedJudge)
    assert report.n_test == 180 and report.calls == 3 * 90
    gain = report.gains["rmse"]
    assert gain.high is not None and gain.high < 0 and report.supported
    print(f"held-out RMSE {report.before['rmse']} -> {report.after['rmse']}; gain {gain}")


def test_a_candidate_that_fails_on_the_hard_items_is_never_kept() -> None:
    """With any example in its prompt this judge gives no verdict on exactly the items it
    gets wrong: its accuracy over the items it scored is perfect, and it must not win."""
    items = [
        {"id": f"i{i}", "prompt": f"q{i}", "response": "good" if i % 2 else "bad"}
        for i in range(60)
    ]
    labels = ["Correct" if it["response"] == "good" else "Incorrect" for it in items]

    def answer(request: Request) -> str:
        shown = "Example 1:" in str(request.messages[0].content)
        bad = "bad" in str(request.messages[-1].content)
        return "no idea" if shown and bad else "Correct"

    judge = jurist.LLMJudge(jurist.get_model("mock:f", outputs=answer), template="true_false")
    result = align_sync(judge, items, labels, metric="accuracy", pool=2, n_resamples=100)
    report = result.report
    assert [c.metric for c in report.candidates] == [1.0, 1.0]  # perfect where it answered
    assert all(c.failed > 0 and not c.accepted for c in report.candidates)
    assert not report.changed and not report.supported and result.judge is judge
