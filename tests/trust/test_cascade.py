"""CascadeJudge: tiers judge only what the tiers before them passed on, abstentions are
results (never made-up scores) written to a review file, fitting sets the thresholds on
labelled items, and a run through jurist.evaluate stores, prices and resumes it.

The tiers are LLMJudges over scripted models that answer with token logprobs (the real
logprob scoring path): for item i the cheap model is sure (0.97) unless i % 4 == 3, the
strong one is sure (0.99) unless i % 8 == 7, and both are right wherever they are sure.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jurist
from jurist.errors import ConfigError, DataError
from jurist.models import MockModel
from jurist.trust import (
    CascadeJudge,
    CascadeJudgment,
    NotAsked,
    cascade_summary,
    fit_cascade,
    fit_recorded,
    replay_cascade,
    replay_recorded,
    write_review,
)
from jurist.types import Completion, Request, TokenLogprob, TopLogprob, Usage
from tests._fault_server import FaultServer, hang, ok, status

N = 200


def truth(i: int) -> int:
    return 1 if i % 3 else 0


def items(n: int = N) -> list[dict[str, Any]]:
    return [{"prompt": f"q{i}?", "response": f"ans-{i}", "human": truth(i)} for i in range(n)]


def _index(request: Request) -> int:
    text = request.messages[-1].content
    return int(text.split("ans-")[1].split("\n")[0].split("<")[0])


def scripted(name: str, sure: Any, p_sure: float) -> MockModel:
    """A model that answers item i's verdict with probability ``p_sure`` where
    ``sure(i)``, else 0.55 for a coin flip that is wrong."""

    def answer(request: Request) -> Completion:
        i = _index(request)
        right = "Correct" if truth(i) else "Incorrect"
        wrong = "Incorrect" if truth(i) else "Correct"
        top, p = (right, p_sure) if sure(i) else (wrong, 0.55)
        other = wrong if top == right else right
        token = TokenLogprob(
            token=top,
            logprob=math.log(p),
            top=(
                TopLogprob(token=top, logprob=math.log(p)),
                TopLogprob(token=other, logprob=math.log(1 - p)),
            ),
        )
        usage = Usage(prompt_tokens=100, completion_tokens=1, calls=1, attempts=1)
        return Completion(text=top, logprobs=(token,), usage=usage)

    return MockModel(name, outputs=answer, top_logprobs=5)


def tiers() -> tuple[MockModel, MockModel, list[jurist.LLMJudge]]:
    cheap = scripted("cheap", lambda i: i % 4 != 3, 0.97)
    strong = scripted("strong", lambda i: i % 8 != 7, 0.99)
    judges = [
        jurist.LLMJudge(m, template="true_false", scoring="logprobs", name=m.name)
        for m in (cheap, strong)
    ]
    return cheap, strong, judges


def agree(score: float, label: Any) -> bool:
    return round(score) == int(label)


def test_each_tier_judges_only_what_the_tiers_before_passed_on() -> None:
    cheap, strong, judges = tiers()
    cascade = CascadeJudge(judges, thresholds=[0.9, 0.95])
    out = cascade.judge_sync(items(40))
    assert (cheap.calls, strong.calls) == (40, 10)
    assert out.tiers == [0 if i % 4 != 3 else (None if i % 8 == 7 else 1) for i in range(40)]
    decided = out[3]
    assert isinstance(decided, CascadeJudgment)
    assert (decided.tier_name, decided.confidence) == ("strong", pytest.approx(0.99))
    assert [s.name for s in decided.steps] == ["cheap", "strong"]
    assert decided.usage.calls == 2 and decided.usage.prompt_tokens == 200
    first = out[0]
    assert first.tier == 0 and isinstance(first.judgments[1], NotAsked)
    assert first.judgments[1].usage == Usage() and first.usage.calls == 1


def test_an_item_no_tier_is_sure_of_is_abstained_never_scored() -> None:
    _, _, judges = tiers()
    out = CascadeJudge(judges, thresholds=[0.9, 0.95]).judge_one_sync(
        {"prompt": "q7?", "response": "ans-7"}
    )
    assert out.score is None and out.abstained and out.tier is None
    assert out.error == (
        "abstain: no tier was confident enough (cheap: confidence 0.55 < 0.9; "
        "strong: confidence 0.55 < 0.95)"
    )
    # a tier with no certified threshold keeps nothing; a failing tier passes the item on
    broken = MockModel("broken", outputs=[ConnectionError("down")] * 5)
    failing = jurist.LLMJudge(broken, name="broken")
    out = CascadeJudge([failing, judges[1]], thresholds=[0.5, None]).judge_one_sync(
        {"prompt": "q0?", "response": "ans-0"}
    )
    # a tier that fails is not an abstention: its error category is kept (issue 31)
    assert not out.abstained and (out.error or "").startswith("error: tier 'broken' failed; ")
    assert "strong: no certified threshold, not asked" in (out.error or "")
    assert [s.name for s in out.steps] == ["broken"] and isinstance(out.judgments[1], NotAsked)


def test_a_failed_tier_keeps_its_error_category_apart_from_abstain(tmp_path: Path) -> None:
    """Issue 31, defect 14: the strong tier is a model on a loopback server that answers
    the first item passed on with HTTP 500, hangs past the client's timeout on the second
    and answers the third with a verdict but no confidence. Only the third is an
    abstention (for people); the others keep their tier's error category in the run's
    errors, the review file, the cascade summary and the report."""
    _, _, judges = tiers()  # the cheap tier passes on items 3, 7 and 11 of 12
    with FaultServer([status(500), hang(5.0), ok("Correct")]) as server:
        model = jurist.get_model(
            "openai:strong", base_url=server.url, api_key="x", timeout=0.5, max_retries=0
        )
        strong = jurist.LLMJudge(model, template="true_false", name="strong")
        cascade = CascadeJudge([judges[0], strong], thresholds=[0.9, 0.9])
        run = jurist.evaluate(items(12), cascade, run_dir=tmp_path / "run", concurrency=1)
        assert server.requests == 3
    summary = run.summary()
    assert summary.errors == {"api": 1, "timeout": 1, "abstain": 1}
    assert summary.failed == 3 and summary.scored == 9
    records = list(run.records())
    assert records[3]["judge_error"].startswith("api: tier 'strong' failed; no tier decided (")
    assert records[7]["judge_error"].startswith("timeout: tier 'strong' failed; ")
    assert records[11]["judge_error"] == (
        "abstain: no tier was confident enough (cheap: confidence 0.55 < 0.9; "
        "strong: no confidence)"
    )
    assert [r["judge_abstained"] for r in records if r["judge_score"] is None] == [
        False,
        False,
        True,
    ]
    review = (tmp_path / "run" / "review.jsonl").read_text().splitlines()
    assert [json.loads(x)["response"] for x in review] == ["ans-11"]
    tiers_summary = cascade_summary(run.records(), tier_names=cascade.tier_names)
    assert (tiers_summary.abstained, tiers_summary.failed) == (1, 2)
    html = run.report().read_text(encoding="utf-8")
    assert "abstain: 1, api: 1, timeout: 1" in html
    assert "(failed: a tier could not judge)" in html


def test_models_with_models_describe_and_an_unfitted_cascade() -> None:
    cheap, strong, judges = tiers()
    cascade = CascadeJudge(judges)
    assert cascade.models() == (cheap, strong)
    seen: list[str] = []

    def note(model: Any) -> Any:
        seen.append(model.spec)
        return model

    copy = cascade.with_models(note)
    assert seen == ["mock:cheap", "mock:strong"] and copy is not cascade
    desc = cascade.with_thresholds([0.9, None]).describe()
    assert desc["kind"] == "cascade" and desc["thresholds"] == [0.9, None]
    assert [t["name"] for t in desc["tiers"]] == ["cheap", "strong"]
    with pytest.raises(ConfigError, match="has no thresholds: fit it"):
        cascade.judge_one_sync({"prompt": "q", "response": "ans-0"})
    with pytest.raises(ConfigError, match="1 thresholds for 2 cascade tiers"):
        CascadeJudge(judges, thresholds=[0.5])


def test_fit_sets_thresholds_and_calls_each_tier_only_where_it_is_reached() -> None:
    cheap, strong, judges = tiers()
    data = items()
    fitted = CascadeJudge(judges).fit_sync(
        data, [d["human"] for d in data], target=0.85, delta=0.1, agree=agree, min_selected=20
    )
    assert fitted.thresholds == (pytest.approx(0.97), pytest.approx(0.99))
    assert (cheap.calls, strong.calls) == (N, N // 4)
    fit = fitted.fitted
    assert fit is not None and [t.reached for t in fit.tiers] == [N, N // 4]
    assert fit.coverage == pytest.approx(175 / 200) and fit.agreement == 1.0
    assert all(t.delta == 0.05 for t in fit.tiers)  # delta split over the two tiers
    with pytest.raises(DataError, match="3 labels for 200 items"):
        CascadeJudge(judges).fit_sync(data, [1, 0, 1], target=0.85, delta=0.1)


def test_a_cascade_runs_through_evaluate_with_its_review_file_and_tier_figures(
    tmp_path: Path,
) -> None:
    cheap, strong, judges = tiers()
    cascade = CascadeJudge(judges, thresholds=[0.97, 0.99])
    prices = {
        "mock:cheap": {"prompt": 1.0, "completion": 1.0},
        "mock:strong": {"prompt": 10.0, "completion": 10.0},
    }
    run = jurist.evaluate(items(), cascade, run_dir=tmp_path / "run", prices=prices)
    records = list(run.records())
    assert [r["judge_tier"] for r in records] == [
        0 if i % 4 != 3 else (None if i % 8 == 7 else 1) for i in range(N)
    ]
    abstained = [r for r in records if r["judge_abstained"]]
    assert len(abstained) == 25 and all(r["judge_score"] is None for r in abstained)
    assert abstained[0]["judge_error"].startswith("abstain: ")
    # priced tier by tier: an item decided by the strong tier paid both tiers' calls
    assert records[0]["judge_cost"] == pytest.approx(101 / 1e6)
    assert records[3]["judge_cost"] == pytest.approx(101 / 1e6 + 1010 / 1e6)

    # the run wrote its review file; write_review writes the same anywhere
    kept = (tmp_path / "run" / "review.jsonl").read_text()
    n = write_review(run.records(), tmp_path / "review.jsonl")
    assert (tmp_path / "review.jsonl").read_text() == kept
    lines = [json.loads(x) for x in kept.splitlines()]
    assert n == 25 and [x["response"] for x in lines[:2]] == ["ans-7", "ans-15"]
    assert lines[0]["reason"].startswith("abstain: ")
    assert [t["name"] for t in lines[0]["tiers"]] == ["cheap", "strong"]

    summary = cascade_summary(
        run.records(),
        tier_names=cascade.tier_names,
        labels="human",
        agree=agree,
        prices=[(1.0, 1.0), (10.0, 10.0)],
    )
    assert [(t.reached, t.decided, t.calls) for t in summary.tiers] == [
        (200, 150, 200),
        (50, 25, 50),
    ]
    assert [t.agreement for t in summary.tiers] == [1.0, 1.0]
    assert summary.coverage == pytest.approx(175 / 200) and summary.abstained == 25
    assert summary.tiers[1].cost == pytest.approx(50 * 101 * 10 / 1e6)

    # resumed without retrying failures, nothing is judged again
    calls = (cheap.calls, strong.calls)
    jurist.evaluate(items(), cascade, run_dir=tmp_path / "run", prices=prices, retry_failed=False)
    assert (cheap.calls, strong.calls) == calls


def test_offline_fit_and_replay_use_no_model() -> None:
    rng = np.random.default_rng(2)
    conf = [rng.uniform(0.5, 1, 500), rng.uniform(0.5, 1, 500)]
    ok = [rng.uniform(size=500) < c for c in conf]
    fit = fit_cascade(conf, ok, target=0.85, delta=0.1, names=["a", "b"], delta_split="per_tier")
    assert [t.delta for t in fit.tiers] == [0.1, 0.1]
    out = replay_cascade(conf, fit.thresholds, correct=ok, cost_per_call=[1.0, 20.0])
    assert out.tiers[0].reached == 500 and out.tiers[1].reached == 500 - out.tiers[0].decided
    # tier a's 30 surest items hold 3 errors here: it is certified nothing, so never asked
    assert fit.thresholds[0] is None and [t.calls for t in out.tiers] == [0, 500]
    assert out.cost == pytest.approx(20 * 500)
    assert out.abstained == sum(1 for t in out.decided_by if t is None)
    assert out.coverage == pytest.approx(fit.coverage) and out.agreement == fit.agreement
    with pytest.raises(DataError, match="1 thresholds for 2 tiers"):
        replay_cascade(conf, [0.9])
    with pytest.raises(DataError, match="same items"):
        fit_cascade([conf[0], conf[1][:10]], ok, target=0.85, delta=0.1)


def test_the_report_shows_each_tier(tmp_path: Path) -> None:
    _, _, judges = tiers()
    run = jurist.evaluate(
        items(40), CascadeJudge(judges, thresholds=[0.97, 0.99]), run_dir=tmp_path
    )
    html = run.report(labels="human").read_text(encoding="utf-8")
    section = html[
        html.index('<h2 id="cascade">') : html.index("</table>", html.index('id="cascade"'))
    ]
    rows = section.split("<tr>")[2:]
    cells = [[c.split(">", 1)[1].split("<")[0] for c in r.split("<td")[1:]] for r in rows]
    # tier, threshold, reached, decided, coverage, agreement (verdict vs label), tokens
    assert cells[0][:6] == ["cheap", "0.9700", "40", "30", "0.7500", "1.0000"]
    assert cells[1][:6] == ["strong", "0.9900", "10", "5", "0.1250", "1.0000"]
    assert cells[2][0] == "(abstained: for people)" and cells[2][3] == "5"


def test_fit_and_replay_from_a_panel_run_of_the_tiers_call_no_model(tmp_path: Path) -> None:
    """Every tier judges the labelled items once (a panel run); the cascade is then fitted
    from the stored outcomes with the live fit's thresholds, and replayed, with no call."""
    cheap, strong, judges = tiers()
    data = items()
    run = jurist.evaluate(data, jurist.Panel(judges), run_dir=tmp_path)
    calls = (cheap.calls, strong.calls)
    recorded = [[row["outcome"]["judgments"][t] for row in run.rows()] for t in range(2)]
    labels = [d["human"] for d in data]
    cascade = fit_recorded(
        CascadeJudge(judges), recorded, labels, target=0.85, delta=0.1, agree=agree, min_selected=20
    )
    live = CascadeJudge(tiers()[2]).fit_sync(
        data, labels, target=0.85, delta=0.1, agree=agree, min_selected=20
    )
    assert cascade.thresholds == live.thresholds == (pytest.approx(0.97), pytest.approx(0.99))
    out = replay_recorded(cascade, recorded, labels, agree=agree, cost_per_call=[1.0, 10.0])
    assert [t.decided for t in out.tiers] == [150, 25] and out.abstained == 25
    assert out.cost == 200 * 1.0 + 50 * 10.0
    assert (cheap.calls, strong.calls) == calls  # no model was called


def test_the_catalog_stores_and_rebuilds_a_cascade(tmp_path: Path) -> None:
    judges = [
        jurist.LLMJudge("mock:cheap", name="cheap"),
        jurist.LLMJudge("mock:strong", name="strong"),
    ]
    jurist.catalog.add(CascadeJudge(judges, thresholds=[0.97, None]), "judges.tiers", root=tmp_path)
    text = (tmp_path / "judges" / "tiers.yaml").read_text()
    assert "kind: cascade" in text and "description: cascade of 2 tiers" in text
    again = jurist.catalog.get("judges.tiers", root=tmp_path)
    assert isinstance(again, CascadeJudge) and again.thresholds == (0.97, None)
    assert [t.name for t in again.tiers] == ["cheap", "strong"]
    assert again.describe() == CascadeJudge(judges, thresholds=[0.97, None]).describe()
    custom = CascadeJudge(judges, thresholds=[0.9, 0.9], confidence=lambda o: 1.0)
    with pytest.raises(ConfigError, match="its confidence function is code"):
        jurist.catalog.add(custom, "judges.custom", root=tmp_path)


def test_records_hold_the_input_then_the_cascade_columns() -> None:
    _, _, judges = tiers()
    out = CascadeJudge(judges, thresholds=[0.9, 0.95]).judge_sync(items(8))
    rows = out.to_records()
    assert rows[0]["response"] == "ans-0" and list(rows[0])[: len(items(1)[0])] == list(items(1)[0])
    assert [r["cascade_tier"] for r in rows] == [out[i].tier_name for i in range(8)]
    assert [r["cascade_abstained"] for r in rows] == [i % 8 == 7 for i in range(8)]
    assert [r["cascade_tiers_asked"] for r in rows] == [1 if i % 4 != 3 else 2 for i in range(8)]
    assert rows[3]["cascade_confidence"] == pytest.approx(0.99) and rows[7]["cascade_score"] is None
