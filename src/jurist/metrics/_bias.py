"""Judge bias diagnostics: position consistency and length bias.

*Position consistency*: a pairwise judge asked twice, with the two responses in both
orders, should name the same response. ``first`` holds the winners with A shown first,
``swapped`` the winners with B shown first. ``by`` says how the winners are named:
``"side"`` (the default) by the original response, ``"A"`` / ``"B"`` whatever the order
(what :class:`~jurist.PairwiseJudge` reports); ``"position"`` by where the winner was
shown, ``"first"`` / ``"second"``, or a judge's raw ``"A"`` / ``"B"`` meaning the first /
second shown.

*Length bias*: does the judge reward longer answers? For single scores, the Spearman
correlation between response length and score; for pairs, how often the longer response
wins among decided pairs, with a two-sided exact binomial test against 0.5.

>>> position_consistency(["A", "B", "tie", "A"], ["A", "A", "tie", "B"], by="side")
0.5
>>> lb = length_bias_pairwise(["A", "A", "B", "tie"], [10, 20, 5, 7], [5, 30, 9, 7])
>>> lb.n, round(lb.longer_wins, 4)
(3, 0.6667)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from jurist.errors import DataError
from jurist.metrics._agreement import Estimate, bootstrap_ci
from jurist.metrics._measures import is_missing, spearman
from jurist.metrics._stats import binom_test

__all__ = [
    "LengthBias",
    "length_bias",
    "length_bias_pairwise",
    "position_consistency",
]

_FLIP = {
    "first": "second", "second": "first", "A": "B", "B": "A", "tie": "tie", "C": "C",
    "A>>B": "B>>A", "B>>A": "A>>B", "A>B": "B>A", "B>A": "A>B", "A=B": "A=B",
}  # fmt: skip
_POSITIONS = ("first", "second")


def position_consistency(
    first: Sequence[str | None],
    swapped: Sequence[str | None],
    *,
    by: Literal["side", "position"] = "side",
) -> float:
    """The share of pairs whose two orders name the same response (missing ones left out).

    ``by="side"`` (the default): both lists name the original response (``"A"`` is the
    same response in both orders), so the two verdicts of a consistent judge are equal.

    >>> round(position_consistency(["A", "B", "tie"], ["A", "A", "tie"]), 4)
    0.6667

    ``by="position"``: both lists name where the winner was shown, so a consistent judge's
    second verdict is the flip of its first (``"first"`` then ``"second"``). Raw pairwise
    verdicts are positional too: ``"A"`` is the response shown first.

    >>> position_consistency(["first", "second"], ["second", "first"], by="position")
    1.0
    >>> position_consistency(["A", "A"], ["A", "A"], by="position")  # always picks the first
    0.0

    ``"first"`` / ``"second"`` name positions, so they are an error under ``by="side"``
    (comparing them as sides would read a perfectly consistent judge as 0.0).
    """
    if by not in ("side", "position"):
        raise DataError(f"by must be 'side' or 'position', got {by!r}")
    if len(first) != len(swapped):
        raise DataError(f"the two orders differ in length: {len(first)} != {len(swapped)}")
    agree = n = 0
    for i, (a, b) in enumerate(zip(first, swapped, strict=True)):
        if is_missing(a) or is_missing(b):
            continue
        n += 1
        if by == "side":
            for v in (a, b):
                if v in _POSITIONS:
                    raise DataError(
                        f"pair {i}: {v!r} names a position, not a side; pass by='position' "
                        "when the verdicts say where the winner was shown"
                    )
            agree += int(b == a)
            continue
        expected = _FLIP.get(str(a))
        if expected is None or str(b) not in _FLIP:
            bad = a if expected is None else b
            raise DataError(
                f"pair {i}: {bad!r} is not a positional verdict (known: {', '.join(_FLIP)})"
            )
        agree += int(str(b) == expected)
    return agree / n if n else float("nan")


class LengthBias(BaseModel):
    """How much length sways a judge.

    Single scores: ``correlation`` (Spearman, length vs score, with a bootstrap interval).
    Pairs: ``longer_wins`` (share of decided pairs of unequal length won by the longer
    response) and ``p_value`` of the binomial test against 0.5.
    """

    model_config = ConfigDict(frozen=True)

    n: int
    correlation: Estimate | None = None
    longer_wins: float | None = None
    p_value: float | None = None


def _length(value: Any) -> int:
    return value if isinstance(value, int) else len(str(value))


def length_bias(
    scores: Sequence[float | None], responses: Sequence[Any], *, seed: int = 0
) -> LengthBias:
    """Spearman correlation between response length (characters, or given ints) and score."""
    lengths = [_length(r) for r in responses]
    pairs = [(s, n) for s, n in zip(scores, lengths, strict=True) if not is_missing(s)]
    est = bootstrap_ci(spearman, [n for _, n in pairs], [s for s, _ in pairs], seed=seed)
    return LengthBias(n=len(pairs), correlation=est)


def length_bias_pairwise(
    winners: Sequence[str | None], response_a: Sequence[Any], response_b: Sequence[Any]
) -> LengthBias:
    """How often the longer response wins (``winners``: ``"A"``, ``"B"``, ``"tie"``)."""
    longer = n = 0
    for w, a, b in zip(winners, response_a, response_b, strict=True):
        la, lb = _length(a), _length(b)
        if w not in ("A", "B") or la == lb:
            continue
        n += 1
        longer += int((w == "A") == (la > lb))
    if not n:
        return LengthBias(n=0)
    p = binom_test(longer, n, 0.5)
    return LengthBias(n=n, longer_wins=longer / n, p_value=p)
