"""Every judge kind runs through the engine: LLMJudge, Panel, PairwiseJudge, a rubric grader."""

from __future__ import annotations

from pathlib import Path

import pytest

import jurist
from jurist.engines import evaluate
from jurist.metrics import criteria_info, rubric_metrics
from tests._fault_server import FaultServer, status

ITEMS = [{"prompt": f"q{i}", "response": f"a{i}", "other": f"b{i}"} for i in range(6)]


def test_panel_through_the_engine_is_priced_per_judge(tmp_path: Path) -> None:
    # the third judge's server answers every call with an error: the panel records it
    with FaultServer([status(503)] * 2 * len(ITEMS)) as server:
        panel = jurist.Panel(
            [
                jurist.LLMJudge(jurist.get_model("mock:one", outputs=["Correct"], cycle=True)),
                jurist.LLMJudge(jurist.get_model("mock:two", outputs=["Incorrect"], cycle=True)),
                jurist.LLMJudge(
                    jurist.get_model("openai:mine", api_key="x", base_url=server.url, max_retries=0)
                ),
            ],
            aggregation="mean",
        )
        run = evaluate(
            ITEMS, panel, run_dir=tmp_path, prices={"openai:mine": {"prompt": 1, "completion": 1}}
        )
    rows = list(run.rows())
    assert len(rows) == 6
    assert all(r["outcome"]["n_counted"] == 2 and r["outcome"]["n_failed"] == 1 for r in rows)
    assert all(r["score"] == 0.5 for r in rows)
    assert run.manifest.judge["kind"] == "panel"
    summary = run.summary()
    assert summary.cost == 0.0 and summary.cost_unknown_items == 0  # priced judge by judge
    html = run.report().read_text()
    assert 'id="per-judge"' in html


def test_a_model_that_cannot_serve_stops_the_run_before_its_first_item(tmp_path: Path) -> None:
    """evaluate prepares the judge's models before any folder is made (the local engine
    reaches each server), as the command line does: an unreachable server stops the run
    with the error that names it, not one failure per item."""
    judge = jurist.LLMJudge(
        jurist.get_model("openai:nope", api_key="x", base_url="http://127.0.0.1:9/v1")
    )
    with pytest.raises(jurist.errors.APIConnectionError, match="cannot reach"):
        evaluate(ITEMS, judge, run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_pairwise_through_the_engine(tmp_path: Path) -> None:
    model = jurist.get_model("mock:pair", outputs=["[[A]]", "[[B]]", "[[A]]", "[[A]]"], cycle=True)
    judge = jurist.PairwiseJudge(model, "mt_bench_pair", swap=True)
    run = evaluate(
        ITEMS,
        judge,
        run_dir=tmp_path,
        fields={"response_a": "response", "response_b": "other"},
        concurrency=1,
    )
    winners = [r["outcome"]["winner"] for r in run.rows()]
    assert winners == ["A", "tie"] * 3
    assert run.summary().verdicts == {"A": 3, "tie": 3}
    assert run.summary().calls == 12


def test_rubric_grader_through_the_engine(tmp_path: Path) -> None:
    rubric = jurist.Rubric.from_dict(
        [
            {"name": "polite", "requirement": "Is polite"},
            {"name": "short", "requirement": "Is short"},
        ]
    )
    answers = [
        '{"c1": {"verdict": "MET"}, "c2": {"verdict": "MET"}}',
        '{"c1": {"verdict": "UNMET"}, "c2": {"verdict": "MET"}}',
    ]
    models = [
        jurist.get_model("mock:g1", outputs=answers, cycle=True),
        jurist.get_model("mock:g2", outputs=[answers[0]], cycle=True),
    ]
    grader = jurist.CriterionGrader(judges=models, seed=3)
    judge = grader.for_rubric(rubric)
    data = [
        {"prompt": "hi", "response": "Hello, nice to meet you.", "truth": ["MET", "MET"]},
        {"prompt": "hi", "response": "Go away.", "truth": ["UNMET", "MET"]},
    ]
    run = evaluate(data, judge, run_dir=tmp_path, concurrency=1)
    rows = list(run.rows())
    assert len(rows) == 2 and all(r["score"] is not None for r in rows)
    assert run.manifest.judge["kind"] == "rubric_grader" and "rubric" in run.manifest.judge
    m = rubric_metrics(
        criteria_info(rubric), [r["item"]["truth"] for r in rows], [r["outcome"] for r in rows]
    )
    assert [c.name for c in m.criteria] == ["polite", "short"]
    assert m.criteria[1].accuracy == 1.0
    assert set(m.judges) == {"mock:g1", "mock:g2"}
    html = run.report().read_text()
    assert 'id="per-criterion"' in html and "polite" in html
    # a changed rubric on resume is refused
    changed = jurist.Rubric.from_dict([{"name": "polite", "requirement": "Is very polite"}])
    with pytest.raises(jurist.JuristError, match="cannot resume"):
        evaluate(data, grader.for_rubric(changed), run_dir=tmp_path)


def test_cost_cached_tokens_and_cache_hits(tmp_path: Path) -> None:
    from jurist.models import CachedModel
    from jurist.types import Completion, Usage

    def answer(request: object) -> Completion:
        return Completion(
            text="Correct",
            usage=Usage(prompt_tokens=1000, completion_tokens=100, cached_tokens=400, calls=1),
        )

    prices = {"mock:priced": {"prompt": 2.0, "cached": 0.5, "completion": 10.0}}
    cache = tmp_path / "cache.sqlite"
    judge = jurist.LLMJudge(CachedModel(jurist.get_model("mock:priced", outputs=answer), cache))
    first = evaluate(ITEMS[:4], judge, run_dir=tmp_path / "a", prices=prices)
    per_item = (600 * 2.0 + 400 * 0.5 + 100 * 10.0) / 1_000_000
    s = first.summary()
    assert s.cost == pytest.approx(4 * per_item)
    assert (s.prompt_tokens, s.cached_tokens, s.completion_tokens, s.calls) == (4000, 1600, 400, 4)
    again = evaluate(ITEMS[:4], judge, run_dir=tmp_path / "b", prices=prices).summary()
    assert again.cache_hits == 4 and again.calls == 0 and again.cost == 0.0
    with FaultServer([status(503)] * 2) as server:
        unknown = evaluate(
            ITEMS[:2],
            jurist.LLMJudge(
                jurist.get_model("openai:nope", api_key="x", base_url=server.url, max_retries=0)
            ),
            run_dir=tmp_path / "c",
        )
    # a server on this machine (loopback) costs nothing, its failed calls too (issue 21)
    assert unknown.summary().cost == 0.0 and unknown.summary().cost_unknown_items == 0
    # an unpriced remote model's failed calls: what they cost is unknown, never a made-up $0
    from jurist.engines._item_path import Coster, ErrorOutcome
    from jurist.runs import PriceTable

    remote = jurist.get_model("openai:nope", api_key="x", base_url="https://api.example.com/v1")
    coster = Coster(jurist.LLMJudge(remote), PriceTable.default())
    assert coster.cost(ErrorOutcome(error="api: down", usage=Usage(attempts=1))) == (None, False)


def test_unpriced_models_have_unknown_cost_not_zero(tmp_path: Path) -> None:
    judge = jurist.LLMJudge(jurist.get_model("mock:free", outputs=["Correct"], cycle=True))
    s = evaluate(ITEMS[:3], judge, run_dir=tmp_path, prices=jurist.PriceTable()).summary()
    assert s.cost is None and s.cost_unknown_items == 3 and s.prompt_tokens > 0
