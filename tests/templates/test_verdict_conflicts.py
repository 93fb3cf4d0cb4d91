"""Verdict conflicts, configurable (issue 13.5), and the YAML regex parser's line mode (14.10)."""

from __future__ import annotations

from typing import Any

import pytest

from jurist.errors import ConfigError
from jurist.templates import Template, get_template, list_templates
from jurist.templates._yaml import template_from_dict

COT = (
    "Output [[A]] is better in tone, since it greets the user.\n"
    "However, B is correct where A is not. Therefore, output B is better.\n[[B]]"
)


def test_fail_is_the_default_and_reports_both() -> None:
    t = get_template("mt_bench_pair")
    assert t.conflict == "fail"
    assert t.parse(COT).error == "parse: conflicting verdicts in the '[[...]]' verdict: A, B"


@pytest.mark.parametrize(("rule", "value"), [("first", "A"), ("last", "B")])
def test_first_and_last_pick_by_order_of_the_text(rule: Any, value: str) -> None:
    t = get_template("mt_bench_pair").with_conflict(rule)
    assert t.parse(COT).value == value
    assert t.parse("[[A]] ... [[A]]").value == "A"  # agreeing verdicts: the same either way


def _two_verdicts(t: Template) -> tuple[tuple[str, float], tuple[str, float]]:
    """Two verdicts with different scores, as the judge would write them."""
    candidates = t.candidates()
    if candidates is None:  # a continuous scale: a quarter and three quarters of the range
        lo, hi = t.scale.low, t.scale.high  # type: ignore[union-attr]
        x, y = lo + (hi - lo) / 4, lo + 3 * (hi - lo) / 4
        return (f"{x:g}", 0.25), (f"{y:g}", 0.75)
    first = next(iter(candidates.items()))
    second = next((k, v) for k, v in candidates.items() if v != first[1])
    return first, second


@pytest.mark.parametrize("name", sorted(list_templates()))
def test_every_builtin_template_takes_the_rule(name: str) -> None:
    t = get_template(name)
    first, last = t.with_conflict("first"), t.with_conflict("last")
    assert (first.conflict, last.conflict, t.conflict) == ("first", "last", "fail")
    (a, score_a), (b, score_b) = _two_verdicts(t)
    form = t.verdict_form
    text = f"{form.open}{a}{form.close}\nthen, on reflection,\n{form.open}{b}{form.close}"
    if t.claims is not None:  # claim by claim: two verdicts for one claim conflict
        (a, score_a), (b, score_b) = [(lb.name, lb.score) for lb in t.claims.labels.labels[:2]]
        key, claim = t.claims.verdict_key, t.claims.claim_key
        text = f"{claim}: x\n{key}: {a}\nthen, on reflection,\n{key}: {b}"
    assert "conflicting verdicts" in str(t.parse(text).error), text
    assert first.parse(text).score == pytest.approx(score_a), text
    assert last.parse(text).score == pytest.approx(score_b), text


def test_numbers_with_first_and_last() -> None:
    likert = get_template("likert")
    assert likert.with_conflict("last").parse("Score: 2\nScore: 4").value == 4.0
    assert likert.with_conflict("first").parse("Score: 2\nScore: 4").value == 2.0
    # the chosen verdict must itself be readable; the others are not read for it
    assert likert.with_conflict("last").parse("Score: 9\nScore: 4").value == 4.0
    err = likert.with_conflict("last").parse("Score: 4\nScore: 9").error
    assert err == "parse: 9 is outside the scale (a whole number from 1 to 5)"


def test_unknown_rule_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="conflict must be one of fail, first, last"):
        get_template("likert").with_conflict("middle")  # type: ignore[arg-type]


def _yaml(**extra: Any) -> Template:
    data: dict[str, Any] = {
        "name": "pick",
        "messages": [{"role": "user", "content": "<a>{response_a}</a><b>{response_b}</b>"}],
        "fields": ["response_a", "response_b"],
        "kind": "pairwise",
        "scale": {"labels": {"A": 1.0, "B": 0.0}},
        "parser": {"type": "form", "open": "Winner: "},
    }
    data.update(extra)
    return template_from_dict(data, source="pick.yaml", lines={"conflict": 9})


@pytest.mark.parametrize(("rule", "value"), [("first", "A"), ("last", "B"), ("fail", None)])
def test_yaml_conflict_key(rule: str, value: str | None) -> None:
    t = _yaml(conflict=rule)
    assert t.parse("Winner: A\nOn reflection...\nWinner: B").value == value


def test_yaml_regex_parser_takes_the_rule_too() -> None:
    t = _yaml(conflict="last", parser={"type": "regex", "pattern": r"^Winner: (\w+)$"})
    assert t.parse("Winner: A\nWinner: B").value == "B"


def test_yaml_bad_conflict_names_file_line_and_key() -> None:
    with pytest.raises(ConfigError, match=r"pick\.yaml:9: conflict: must be one of"):
        _yaml(conflict="sometimes")


# -- the regex parser's flags (issue 14.10) ----------------------------------------------------


def _regex(pattern: str) -> Template:
    return _yaml(parser={"type": "regex", "pattern": pattern})


def test_regex_anchors_match_at_every_line() -> None:
    t = _regex(r"^Winner: (\w+)$")
    assert t.parse("Some thoughts.\nWinner: A\nThanks.").value == "A"
    assert t.parse("I think the Winner: A is right").error is not None  # not at a line start


def test_regex_dot_stops_at_newlines_and_case_matters() -> None:
    assert _regex(r"Winner:.(\w+)").parse("Winner:\nA").error is not None
    assert _regex(r"(?s)Winner:.(\w+)").parse("Winner:\nA").value == "A"
    assert _regex(r"winner: (\w+)").parse("Winner: A").error is not None
    assert _regex(r"(?i)winner: (\w+)").parse("Winner: A").value == "A"


def test_regex_whole_output_anchors() -> None:
    t = _regex(r"\AWinner: (\w+)")
    assert t.parse("Winner: B\nWinner: A").value == "B"  # only the start of the output


def test_regex_optional_group_that_took_no_part_is_skipped() -> None:
    t = _regex(r"Winner: (\w+)?")
    assert t.parse("Winner: \nWinner: A").value == "A"


def test_the_rule_round_trips_and_the_default_dumps_as_before() -> None:
    t = get_template("mt_bench_pair")
    assert "conflict" not in t.model_dump(mode="json")  # manifests made before still match
    last = t.with_conflict("last")
    dumped = last.model_dump(mode="json")
    assert dumped["conflict"] == "last"
    assert Template.model_validate(dumped) == last
