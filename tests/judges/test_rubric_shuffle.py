"""Option shuffling: a permutation per (seed, item, criterion, judge), answers mapped back."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jurist.judges.rubric._shuffle import item_key, option_order, original_index

KEY = item_key("What is 2 + 2?", "4")


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**31),
    criterion=st.integers(min_value=0, max_value=30),
    judge=st.text(min_size=1, max_size=12),
    n=st.integers(min_value=2, max_value=12),
)
def test_a_pinned_permutation_that_maps_back(seed: int, criterion: int, judge: str, n: int) -> None:
    order = option_order(seed, KEY, criterion, judge, n)
    assert sorted(order) == list(range(n))
    assert order == option_order(seed, KEY, criterion, judge, n)  # same seed, same order
    # the judge answers the shown number of each option; it maps back to that option
    for shown_number, original in enumerate(order, start=1):
        assert original_index(order, shown_number) == original


def test_every_part_of_the_key_changes_the_order() -> None:
    base = option_order(42, KEY, 0, "a", 8)
    assert option_order(43, KEY, 0, "a", 8) != base  # seed
    assert option_order(42, item_key("What is 2 + 2?", "four"), 0, "a", 8) != base  # item
    assert option_order(42, item_key("What is 3 + 1?", "4"), 0, "a", 8) != base  # its query
    assert option_order(42, KEY, 1, "a", 8) != base  # criterion
    assert option_order(42, KEY, 0, "b", 8) != base  # judge


def test_no_seed_is_the_identity_and_numbers_are_checked() -> None:
    assert option_order(None, KEY, 3, "a", 5) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="between 1 and 3"):
        original_index([2, 0, 1], 4)
    with pytest.raises(ValueError, match="between 1 and 3"):
        original_index([2, 0, 1], 0)


def test_orders_spread_over_positions() -> None:
    # over many items, the first option is shown first about 1/n of the time (no position bias)
    n, trials = 4, 2000
    first = sum(option_order(7, item_key(None, f"s{i}"), 0, "j", n)[0] == 0 for i in range(trials))
    assert abs(first / trials - 1 / n) < 0.05
