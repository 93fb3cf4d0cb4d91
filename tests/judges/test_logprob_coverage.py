"""Logprob scores need probability on the verdicts: ``min_coverage`` and ``low_coverage``.

A model that puts 0.3% of its mass on the verdicts used to get a confident score (the
distribution is renormalised over the verdicts). Below ``min_coverage`` a strict judgment
fails with its reason, an ``auto`` one keeps the parsed verdict, ``low_coverage="flag"``
keeps the score flagged; the run summary, the CLI and the report show the coverage.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.cli import EXIT_FAILED_ITEMS, EXIT_OK, EXIT_USAGE, main
from jurist.errors import ConfigError
from jurist.models import MockModel
from jurist.types import Completion, Request, TokenLogprob, TopLogprob
from tests._llama_fixtures import llama_server, tiny_gguf  # noqa: F401

ITEM = {"prompt": "What is 2+2?", "response": "4"}
LOW = "logprobs: verdict probability mass 0.0028 below min_coverage 0.5"


def answer(four: float, five: float, other: float | None = None) -> Completion:
    """``Score: 4`` with ``four`` / ``five`` on the verdicts at the verdict's position."""
    alts = [(" 4", four), (" 5", five), (" The", other if other is not None else 1 - four - five)]
    top = tuple(TopLogprob(token=t, logprob=math.log(p)) for t, p in alts if p > 0)
    tokens = (
        TokenLogprob(token="Score", logprob=0.0),
        TokenLogprob(token=":", logprob=0.0),
        TokenLogprob(token=" 4", logprob=math.log(four), top=top),
    )
    return Completion(text="Score: 4", logprobs=tokens)


def top_judge(completion: Completion, **options: Any) -> jurist.LLMJudge:
    model = MockModel("j", outputs=[completion], cycle=True, top_logprobs=5)
    return jurist.LLMJudge(model, template="likert", **options)


# -- the top-logprobs route ------------------------------------------------------------------


def test_strict_judgment_below_min_coverage_fails_with_its_reason() -> None:
    # before: score 0.82 from 0.28% of the mass, no error
    j = top_judge(answer(0.002, 0.0008), scoring="logprobs").judge_one_sync(ITEM)
    assert j.score is None and j.error == LOW
    assert j.scoring == "logprobs" and j.low_coverage and j.confidence is None
    assert j.coverage == pytest.approx(0.0028)
    assert j.distribution == pytest.approx({"4": 0.002 / 0.0028, "5": 0.0008 / 0.0028})
    assert j.verdict == 4.0 and j.response == "Score: 4"


def test_flag_keeps_the_weighed_score_and_marks_it() -> None:
    judge = top_judge(answer(0.002, 0.0008), scoring="logprobs", low_coverage="flag")
    j = judge.judge_one_sync(ITEM)
    expected = (0.002 * 0.75 + 0.0008 * 1.0) / 0.0028
    assert j.error is None and j.score == pytest.approx(expected)
    assert j.low_coverage and j.coverage == pytest.approx(0.0028)
    assert j.confidence == pytest.approx(0.002 / 0.0028)


def test_auto_falls_back_to_the_parsed_verdict_and_says_why() -> None:
    j = top_judge(answer(0.002, 0.0008), scoring="auto").judge_one_sync(ITEM)
    assert (j.score, j.scoring, j.error) == (0.75, "parse", None)
    assert j.scoring_note == "parsed, not weighed: " + LOW.removeprefix("logprobs: ")
    assert j.low_coverage and j.coverage == pytest.approx(0.0028)


def test_enough_coverage_is_scored_and_the_threshold_is_configurable() -> None:
    j = top_judge(answer(0.5, 0.2), scoring="logprobs").judge_one_sync(ITEM)
    assert j.error is None and not j.low_coverage
    assert j.score == pytest.approx((0.5 * 0.75 + 0.2) / 0.7)
    strict = top_judge(answer(0.5, 0.2), scoring="logprobs", min_coverage=0.8)
    assert strict.judge_one_sync(ITEM).error == (
        "logprobs: verdict probability mass 0.7 below min_coverage 0.8"
    )
    off = top_judge(answer(0.002, 0.0008), scoring="logprobs", min_coverage=0.0)
    assert off.judge_one_sync(ITEM).score == pytest.approx((0.002 * 0.75 + 0.0008) / 0.0028)


def test_options_are_checked_and_described() -> None:
    with pytest.raises(ConfigError, match=r"min_coverage must be between 0 and 1, got 1\.5"):
        top_judge(answer(0.5, 0.5), scoring="logprobs", min_coverage=1.5)
    with pytest.raises(ConfigError, match="low_coverage must be 'fail' or 'flag', got 'warn'"):
        top_judge(answer(0.5, 0.5), scoring="logprobs", low_coverage="warn")
    judge = top_judge(answer(0.5, 0.5), scoring="auto", min_coverage=0.3, low_coverage="flag")
    described = judge.describe()
    assert (described["min_coverage"], described["low_coverage"]) == (0.3, "flag")
    assert judge.with_options(explanations=True).min_coverage == 0.3
    assert "min_coverage" not in jurist.LLMJudge(MockModel("j"), template="likert").describe()


def test_catalog_entries_keep_the_threshold(tmp_path: Path) -> None:
    from jurist import catalog

    model = jurist.get_model("mock:j", candidate_probs={"4": 0.5, "5": 0.5})
    judge = jurist.LLMJudge(
        model, template="likert", scoring="logprobs", min_coverage=0.8, low_coverage="flag"
    )
    catalog.add(judge, "judges.strict_mass", root=tmp_path)
    back = catalog.get("judges.strict_mass", root=tmp_path, model=model)
    assert (back.min_coverage, back.low_coverage) == (0.8, "flag")
    assert back.describe() == judge.describe()


# -- the one-pass candidate route ------------------------------------------------------------


@pytest.mark.parametrize("scoring", ["logprobs", "auto"])
def test_one_pass_below_min_coverage_fails(scoring: str) -> None:
    model = MockModel("j", outputs=[], candidate_probs={"4": 0.002, "5": 0.0008})
    j = jurist.LLMJudge(model, template="likert", scoring=scoring).judge_one_sync(ITEM)  # type: ignore[arg-type]
    assert j.score is None and j.error == LOW and j.low_coverage
    flagged = jurist.LLMJudge(
        model,
        template="likert",
        scoring=scoring,  # type: ignore[arg-type]
        low_coverage="flag",
    ).judge_one_sync(ITEM)
    assert flagged.score == pytest.approx((0.002 * 0.75 + 0.0008) / 0.0028)
    assert flagged.low_coverage and flagged.error is None


def test_a_panel_counts_only_the_judges_with_coverage() -> None:
    low = top_judge(answer(0.002, 0.0008), scoring="logprobs", name="low")
    good = top_judge(answer(0.6, 0.3), scoring="logprobs", name="good")
    out = jurist.Panel([low, good]).judge_one_sync(ITEM)
    assert out.judgments[0].error == LOW
    assert out.score == pytest.approx(out.judgments[1].score)


@pytest.mark.slow
def test_tiny_random_hf_model_puts_little_mass_on_the_verdicts(tiny_model_dir: Path) -> None:
    """A random model spreads its mass over the whole vocabulary: today's main scored it."""
    pytest.importorskip("torch")
    model = jurist.get_model(f"hf:{tiny_model_dir}")
    j = jurist.LLMJudge(model, template="likert", scoring="logprobs").judge_one_sync(ITEM)
    assert j.score is None and j.low_coverage and j.coverage is not None
    assert j.coverage < 0.5
    assert j.error == f"logprobs: verdict probability mass {j.coverage:.4g} below min_coverage 0.5"
    flagged = jurist.LLMJudge(
        model, template="likert", scoring="logprobs", low_coverage="flag"
    ).judge_one_sync(ITEM)
    assert flagged.score is not None and flagged.low_coverage
    assert flagged.coverage == pytest.approx(j.coverage)


@pytest.mark.slow
async def test_real_server_top_logprobs_below_min_coverage(llama_server: str) -> None:  # noqa: F811
    model = jurist.get_model("openai:tiny", base_url=llama_server, api_key="x")
    grammar = {"grammar": 'root ::= [1-5] "\\n"'}
    options: dict[str, Any] = {
        "template": "likert",
        "scoring": "logprobs",
        "top_logprobs": 10,
        "extra_body": grammar,
        "output": "text",
    }
    try:
        j = await jurist.LLMJudge(model, **options).judge(ITEM)
        kept = await jurist.LLMJudge(model, min_coverage=0.0, **options).judge(ITEM)
    finally:
        await model.aclose()
    # the grammar makes the random model write a digit, but its top logprobs (read before
    # the grammar) put a fraction of a percent on the five verdicts: once a 1.0-confident score
    assert kept.error is None and kept.score is not None and kept.coverage is not None
    assert kept.coverage < 0.05 and not kept.low_coverage
    assert j.score is None and j.low_coverage and j.coverage == pytest.approx(kept.coverage)
    assert j.error == (
        f"logprobs: verdict probability mass {kept.coverage:.4g} below min_coverage 0.5"
    )


# -- the run: summary, CLI and report --------------------------------------------------------

MASS = [0.0028, 0.3, 0.8, 0.9, 0.95, 1.0]


def by_item(request: Request) -> Completion:
    i = int(re.search(r"ITEM-(\d+)-END", request.messages[-1].content).group(1))  # type: ignore[union-attr]
    m = MASS[i]
    return answer(m * 0.6, m * 0.4, 1.0 - m)


def test_run_summary_and_report_show_the_coverage(tmp_path: Path) -> None:
    items = [{"prompt": f"ITEM-{i}-END", "response": "r"} for i in range(len(MASS))]
    judge = jurist.LLMJudge(
        MockModel("j", outputs=by_item, top_logprobs=5), template="likert", scoring="logprobs"
    )
    run = jurist.evaluate(items, judge, run_dir=tmp_path / "run")
    s = run.summary()
    assert (s.failed, s.errors) == (2, {"logprobs": 2})
    assert s.coverage is not None
    assert (s.coverage.n, s.coverage.below, s.coverage.min_coverage) == (6, 2, 0.5)
    assert s.coverage.min == pytest.approx(0.0028) and s.coverage.max == pytest.approx(1.0)
    assert s.coverage.median == pytest.approx(0.85)
    assert s.coverage.q1 == pytest.approx(0.425) and s.coverage.q3 == pytest.approx(0.9375)
    html = run.report().read_text()
    assert 'id="coverage-chart"' in html and "2 of 6 below min_coverage 0.5" in html
    parse_run = jurist.evaluate(
        items,
        jurist.LLMJudge(MockModel("p", outputs=["4"], cycle=True), template="likert"),
        run_dir=tmp_path / "parsed",
    )
    assert parse_run.summary().coverage is None
    assert 'id="coverage-chart"' not in parse_run.report().read_text()


def test_cli_min_coverage_and_the_printed_coverage(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"q{i}"}) + "\n" for i in range(3)))
    args = ["judge", str(data), "--model", f"hf:{tiny_model_dir}", "--template", "likert"]
    args += ["--response-field", "prompt", "--scoring", "logprobs", "--no-progress"]
    code = main([*args, "--out", str(tmp_path / "strict")])
    out = " ".join(capsys.readouterr().out.split())
    assert code == EXIT_FAILED_ITEMS
    assert "verdict coverage" in out and re.search(r"below min_coverage 0\.5\W+3 of 3\W", out)
    assert "below min_coverage 0.5" in out.split("got no score", 1)[1]
    code = main([*args, "--low-coverage", "flag", "--out", str(tmp_path / "flag")])
    out = " ".join(capsys.readouterr().out.split())
    assert code == EXIT_OK and re.search(r"below min_coverage 0\.5\W+3 of 3\W", out)
    rows = [json.loads(x) for x in (tmp_path / "flag" / "results.jsonl").read_text().splitlines()]
    assert all(r["judge_low_coverage"] and r["judge_score"] is not None for r in rows)
    code = main([*args, "--min-coverage", "0", "--out", str(tmp_path / "off")])
    out = " ".join(capsys.readouterr().out.split())
    assert code == EXIT_OK and re.search(r"below min_coverage 0\W+0 of 3\W", out)
    assert main([*args, "--min-coverage", "2", "--out", str(tmp_path / "bad")]) == EXIT_USAGE
    assert main([*args, "--low-coverage", "warn", "--out", str(tmp_path / "bad2")]) == EXIT_USAGE
    err = " ".join(capsys.readouterr().err.split())
    assert "low_coverage must be 'fail' or 'flag'" in err
