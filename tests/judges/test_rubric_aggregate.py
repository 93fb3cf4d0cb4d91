"""Every aggregation and tie rule of rubric grading, table-driven from the issue's text.

Binary: majority, weighted, unanimous, any. Ordinal: mean, median, weighted_mean (snapped,
the continuous value kept), mode, min, max. Nominal: mode, weighted_mode, unanimous (NA on
disagreement; no NA option: mode and a note). Ties go to the score-minimising option by
weight sign, lowest index on a value tie, independent of judge order. Abstentions and
failed calls are set aside.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jurist.judges.rubric._aggregate import aggregate, agreement
from jurist.judges.rubric._criteria import Criterion, CriterionVerdict, Option
from jurist.judges.rubric._report import Vote

MET, UNMET, CA = CriterionVerdict.MET, CriterionVerdict.UNMET, CriterionVerdict.CANNOT_ASSESS


def bvote(verdict: CriterionVerdict | str, weight: float = 1.0, n: int = 0) -> Vote:
    if verdict == "error":
        return Vote(judge_id=f"j{n}", verdict=CA, na=True, weight=weight, error="api: HTTP 500")
    assert isinstance(verdict, CriterionVerdict)
    value = None if verdict is CA else float(verdict is MET)
    return Vote(judge_id=f"j{n}", verdict=verdict, value=value, na=verdict is CA, weight=weight)


def binary(weight: float = 10.0) -> Criterion:
    return Criterion(requirement="r", weight=weight)


# (strategy, criterion weight, votes as (verdict, judge weight), expected verdict)
BINARY_TABLE = [
    ("majority", 10, [(MET, 1), (MET, 1), (UNMET, 1)], MET),
    ("majority", 10, [(MET, 1), (UNMET, 1), (UNMET, 1)], UNMET),
    ("majority", 10, [(MET, 1), (UNMET, 1)], UNMET),  # tie, weight >= 0: UNMET
    ("majority", 0, [(MET, 1), (UNMET, 1)], UNMET),  # weight 0 counts as >= 0
    ("majority", -5, [(MET, 1), (UNMET, 1)], MET),  # tie, weight < 0: MET
    ("majority", 10, [(MET, 5), (UNMET, 1), (UNMET, 1)], UNMET),  # head count ignores weights
    ("majority", 10, [(MET, 1), (UNMET, 1), (CA, 1)], UNMET),  # CANNOT_ASSESS set aside
    ("majority", 10, [(MET, 1), ("error", 1), ("error", 1)], MET),  # failed calls abstain
    ("majority", 10, [(CA, 1), (CA, 1)], CA),  # all abstain
    ("majority", 10, [("error", 1), (CA, 1)], CA),
    ("weighted", 10, [(MET, 3), (UNMET, 1), (UNMET, 1)], MET),
    ("weighted", 10, [(MET, 1), (UNMET, 2)], UNMET),
    ("weighted", 10, [(MET, 2), (UNMET, 1), (UNMET, 1)], UNMET),  # weight tie, weight >= 0
    ("weighted", -1, [(MET, 2), (UNMET, 1), (UNMET, 1)], MET),  # weight tie, weight < 0
    ("unanimous", 10, [(MET, 1), (MET, 1), (CA, 1)], MET),
    ("unanimous", 10, [(MET, 1), (MET, 1), (UNMET, 1)], UNMET),
    ("unanimous", -3, [(MET, 1), (UNMET, 1)], UNMET),  # a threshold, not a tie
    ("any", 10, [(UNMET, 1), (UNMET, 1), (MET, 1)], MET),
    ("any", 10, [(UNMET, 1), (CA, 1)], UNMET),
    ("any", 10, [(UNMET, 1), ("error", 1)], UNMET),
]


@pytest.mark.parametrize(("strategy", "weight", "votes", "expected"), BINARY_TABLE)
def test_binary_aggregations(
    strategy: str, weight: float, votes: list[tuple[object, float]], expected: CriterionVerdict
) -> None:
    vs = [bvote(v, w, n) for n, (v, w) in enumerate(votes)]  # type: ignore[arg-type]
    result = aggregate(binary(weight), vs, strategy)
    assert result.final.verdict is expected
    assert result.final.na is (expected is CA)
    assert result.n_counted == sum(1 for v in vs if not v.na)
    if expected is not CA:
        assert result.final.value == float(expected is MET)


OPTS = (
    Option(label="Poor", value=0.0),
    Option(label="OK", value=0.5),
    Option(label="Good", value=1.0),
    Option(label="Cannot assess", na=True),
)


def ordinal(weight: float = 10.0, options: tuple[Option, ...] = OPTS) -> Criterion:
    return Criterion(requirement="r", weight=weight, options=options)


def mvote(c: Criterion, index: int | str | None, weight: float = 1.0, n: int = 0) -> Vote:
    if index == "error":
        na = c.na_index
        return Vote(
            judge_id=f"j{n}", selected_index=na, na=True, weight=weight, error="timeout: slow"
        )
    assert isinstance(index, int)
    option = (c.options or ())[index]
    return Vote(
        judge_id=f"j{n}",
        selected_index=index,
        selected_label=option.label,
        value=None if option.na else option.value,
        na=option.na,
        weight=weight,
    )


# (strategy, criterion weight, votes as (option index, judge weight), expected index,
#  expected aggregated_value)
ORDINAL_TABLE = [
    ("mean", 10, [(0, 1), (1, 1), (2, 1)], 1, 0.5),
    ("mean", 10, [(0, 1), (2, 1)], 1, 0.5),
    ("mean", 10, [(1, 1), (2, 1)], 1, 0.75),  # snap tie OK/Good, weight >= 0: lower value
    ("mean", -2, [(1, 1), (2, 1)], 2, 0.75),  # snap tie, weight < 0: higher value
    ("mean", 10, [(0, 1), (0, 1), (2, 1)], 1, 1 / 3),  # 0.333 snaps to OK (0.5)
    ("mean", 10, [(2, 1), (3, 1), ("error", 1)], 2, 1.0),  # NA and failed votes abstain
    ("median", 10, [(0, 1), (0, 1), (2, 1)], 0, 0.0),
    ("median", 10, [(0, 1), (2, 1)], 1, 0.5),  # even count: mean of the middle two
    ("median", 10, [(1, 1), (2, 1)], 1, 0.75),
    ("weighted_mean", 10, [(0, 3), (2, 1)], 0, 0.25),  # tie Poor/OK: lower value
    ("weighted_mean", 10, [(0, 1), (2, 3)], 1, 0.75),  # tie OK/Good: lower value
    ("weighted_mean", -1, [(0, 1), (2, 3)], 2, 0.75),
    ("weighted_mean", 10, [(0, 1), (2, 4)], 2, 0.8),
    ("mode", 10, [(2, 1), (2, 1), (0, 1)], 2, 1.0),
    ("mode", 10, [(2, 1), (0, 1)], 0, 0.0),  # count tie: lowest value
    ("mode", -1, [(2, 1), (0, 1)], 2, 1.0),  # count tie, weight < 0: highest value
    ("mode", 10, [(2, 5), (0, 1), (0, 1)], 0, 0.0),  # mode counts judges, not weights
    ("min", 10, [(1, 1), (2, 1), (2, 1)], 1, 0.5),
    ("max", 10, [(0, 1), (1, 1), (0, 1)], 1, 0.5),
    ("min", -1, [(1, 1), (2, 1)], 1, 0.5),  # min/max are thresholds, weight sign irrelevant
    ("max", 10, [(0, 1), (3, 1), ("error", 1)], 0, 0.0),
]


@pytest.mark.parametrize(("strategy", "weight", "votes", "index", "aggregated"), ORDINAL_TABLE)
def test_ordinal_aggregations(
    strategy: str,
    weight: float,
    votes: list[tuple[int | str, float]],
    index: int,
    aggregated: float,
) -> None:
    c = ordinal(weight)
    result = aggregate(c, [mvote(c, i, w, n) for n, (i, w) in enumerate(votes)], strategy)
    assert result.final.selected_index == index
    assert result.final.selected_label == OPTS[index].label
    assert result.final.value == OPTS[index].value
    assert result.final.aggregated_value == pytest.approx(aggregated)
    assert not result.final.na


def test_ordinal_snap_never_lands_on_na_and_all_na_abstains() -> None:
    c = ordinal()
    result = aggregate(c, [mvote(c, 3, n=0), mvote(c, "error", n=1)], "mean")
    assert result.final.na and result.final.selected_index == 3 and result.final.value is None
    assert result.n_counted == 0


def test_value_tie_goes_to_lowest_index() -> None:
    opts = (Option(label="X", value=0.5), Option(label="Y", value=0.5), Option(label="Z", value=1))
    for weight in (1.0, -1.0):
        c = Criterion(requirement="r", weight=weight, options=opts, scale_type="nominal")
        for order in ([1, 0], [0, 1]):
            votes = [mvote(c, i, n=n) for n, i in enumerate(order)]
            assert aggregate(c, votes, "mode").final.selected_index == 0


NOMINAL = (
    Option(label="A", value=0.2),
    Option(label="B", value=0.8),
    Option(label="C", value=0.5),
)
NOMINAL_NA = (*NOMINAL, Option(label="N/A", na=True))

# (strategy, weight, options, votes as (index, judge weight), expected index, note expected)
NOMINAL_TABLE = [
    ("mode", 10, NOMINAL, [(0, 1), (0, 1), (1, 1)], 0, False),
    ("mode", 10, NOMINAL, [(0, 1), (1, 1)], 0, False),  # tie: lowest value (A 0.2)
    ("mode", -1, NOMINAL, [(0, 1), (1, 1)], 1, False),  # tie, weight < 0: highest (B 0.8)
    ("mode", 10, NOMINAL, [(1, 1), (2, 1)], 2, False),  # tie B/C: C (0.5) is lower
    ("weighted_mode", 10, NOMINAL, [(0, 1), (1, 2)], 1, False),
    ("weighted_mode", 10, NOMINAL, [(0, 2), (1, 1), (1, 1)], 0, False),  # weight tie: lowest
    ("weighted_mode", -1, NOMINAL, [(0, 2), (1, 1), (1, 1)], 1, False),
    ("unanimous", 10, NOMINAL_NA, [(1, 1), (1, 1)], 1, False),
    ("unanimous", 10, NOMINAL_NA, [(0, 1), (1, 1)], 3, False),  # disagreement: the NA option
    ("unanimous", 10, NOMINAL, [(0, 1), (1, 1), (1, 1)], 1, True),  # no NA option: mode + note
    ("unanimous", 10, NOMINAL, [(0, 1), (1, 1)], 0, True),  # ... with mode's tie rule
]


@pytest.mark.parametrize(("strategy", "weight", "options", "votes", "index", "note"), NOMINAL_TABLE)
def test_nominal_aggregations(
    strategy: str,
    weight: float,
    options: tuple[Option, ...],
    votes: list[tuple[int, float]],
    index: int,
    note: bool,
) -> None:
    c = Criterion(requirement="r", weight=weight, options=options, scale_type="nominal")
    result = aggregate(c, [mvote(c, i, w, n) for n, (i, w) in enumerate(votes)], strategy)
    assert result.final.selected_index == index
    assert result.final.na is bool(options[index].na)
    assert (result.note is not None) is note
    if note:
        assert "fell back to mode" in (result.note or "")


def test_forced_choice_failed_calls_abstain_with_no_option() -> None:
    c = Criterion(requirement="r", options=NOMINAL, scale_type="nominal")
    votes = [mvote(c, "error", n=0), mvote(c, "error", n=1)]
    assert all(v.selected_index is None and v.is_error for v in votes)
    result = aggregate(c, votes, "mode")
    assert result.final.na and result.final.selected_index is None and result.final.value is None


def test_per_criterion_override_is_used() -> None:
    from jurist.judges.rubric._aggregate import strategy_for

    c = Criterion(requirement="r", options=OPTS, aggregation="max")
    assert strategy_for(c, "majority", "mean", "mode") == "max"
    assert strategy_for(binary(), "any", "mean", "mode") == "any"
    with pytest.raises(ValueError, match="not one for a nominal"):
        Criterion(requirement="r", options=NOMINAL, scale_type="nominal", aggregation="mean")


# (final, votes) -> agreement over genuine votes
def test_agreement_leaves_failed_calls_out() -> None:
    votes = [bvote(MET, n=0), bvote(MET, n=1), bvote(UNMET, n=2), bvote("error", n=3)]
    final = aggregate(binary(), votes, "majority").final
    assert agreement(final, votes) == pytest.approx(2 / 3)
    assert agreement(final, [bvote("error")]) is None
    c = ordinal()
    mv = [mvote(c, 2, n=0), mvote(c, 2, n=1), mvote(c, 0, n=2)]
    assert agreement(aggregate(c, mv, "mode").final, mv) == pytest.approx(2 / 3)


BINARY_STRATEGIES = ["majority", "weighted", "unanimous", "any"]
ORDINAL_STRATEGIES = ["mean", "median", "weighted_mean", "mode", "min", "max"]
NOMINAL_STRATEGIES = ["mode", "weighted_mode", "unanimous"]


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    kind=st.sampled_from(["binary", "ordinal", "nominal"]),
    weight=st.sampled_from([10.0, 0.0, -4.0]),
)
def test_no_rule_depends_on_judge_order(data: st.DataObject, kind: str, weight: float) -> None:
    n = data.draw(st.integers(min_value=1, max_value=6))
    weights = data.draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=n, max_size=n))
    if kind == "binary":
        c = binary(weight)
        picks = data.draw(
            st.lists(st.sampled_from([MET, UNMET, CA, "error"]), min_size=n, max_size=n)
        )
        votes = [bvote(p, w, i) for i, (p, w) in enumerate(zip(picks, weights, strict=True))]
        strategy = data.draw(st.sampled_from(BINARY_STRATEGIES))
    else:
        options = OPTS if kind == "ordinal" else NOMINAL_NA
        c = Criterion(requirement="r", weight=weight, options=options, scale_type=kind)  # type: ignore[arg-type]
        choices: list[int | str] = [*range(len(options)), "error"]
        picks = data.draw(st.lists(st.sampled_from(choices), min_size=n, max_size=n))
        votes = [mvote(c, p, w, i) for i, (p, w) in enumerate(zip(picks, weights, strict=True))]
        strategy = data.draw(
            st.sampled_from(ORDINAL_STRATEGIES if kind == "ordinal" else NOMINAL_STRATEGIES)
        )
    shuffled = data.draw(st.permutations(votes))
    a, b = aggregate(c, votes, strategy), aggregate(c, shuffled, strategy)
    assert a.final.selected_index == b.final.selected_index
    assert a.final.verdict == b.final.verdict
    assert a.final.na == b.final.na
    if a.final.aggregated_value is not None:
        assert a.final.aggregated_value == pytest.approx(b.final.aggregated_value)
    # the final verdict is always a real outcome of the criterion
    if c.options is not None and a.final.selected_index is not None:
        assert a.final.selected_label == c.options[a.final.selected_index].label
