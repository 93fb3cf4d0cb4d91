"""Pairwise verdicts and their batch results: win rate with ties as half, consistency.

>>> from jurist.types import Judgment
>>> def pair(winner, consistent=True):
...     return PairJudgment(score=None if winner is None else 0.5, winner=winner,
...                         consistent=consistent, forward=Judgment(score=None))
>>> r = PairwiseResults([pair("A"), pair("A"), pair("tie"), pair("B"), pair("tie", False)])
>>> s = r.summary()
>>> s.win_rate, s.n_counted, s.consistency_rate
(0.6, 5, 0.8)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from jurist.judges._many import OutcomeResults
from jurist.types import Judgment, Usage

__all__ = ["PairJudgment", "PairwiseResults", "PairwiseSummary", "Winner", "side"]

Winner = Literal["A", "B", "tie", "inconsistent"]
_EPS = 1e-9


def side(preference: float) -> Literal["A", "B", "tie"]:
    """The winner a preference for A names: above 0.5 A, below B, 0.5 a tie.

    >>> side(0.75), side(0.5), side(0.0)
    ('A', 'tie', 'B')
    """
    if preference > 0.5 + _EPS:
        return "A"
    if preference < 0.5 - _EPS:
        return "B"
    return "tie"


class PairJudgment(BaseModel):
    """A pairwise verdict on one item.

    ``score`` is the preference for response A in [0, 1] (``None`` on failure);
    ``forward`` is the judgment with A shown first, ``swapped`` the one with B shown first
    (its own ``score`` is for the response shown first there, i.e. B);
    ``preferences`` are each order's preference for the original A.
    """

    model_config = ConfigDict(frozen=True)

    score: float | None
    winner: Winner | None = None
    consistent: bool | None = None
    error: str | None = None
    preferences: tuple[float | None, ...] = ()
    forward: Judgment
    swapped: Judgment | None = None
    usage: Usage = Usage()

    @property
    def ok(self) -> bool:
        return self.score is not None


class PairwiseSummary(BaseModel):
    """The figures of a pairwise batch.

    ``win_rate`` is A's: ``(n_a + n_tie / 2) / n_counted`` over the pairs with a winner of
    A, B or tie (``n_counted``); inconsistent pairs (under ``consistency="inconsistent"``)
    and failed pairs are left out and counted apart. ``consistency_rate`` is the share of
    pairs judged in both orders whose two orders named the same winner.
    ``first_position_rate`` is, over every single-order judgment that named a winner, the
    share where the response shown first won (0.5 means no position bias).
    """

    model_config = ConfigDict(frozen=True)

    n: int
    n_failed: int
    n_a: int
    n_b: int
    n_tie: int
    n_inconsistent: int
    n_counted: int
    win_rate: float | None
    n_both_orders: int
    n_consistent: int
    consistency_rate: float | None
    first_position_rate: float | None


class PairwiseResults(OutcomeResults[PairJudgment]):
    """The pairwise judgments of a batch, in input order, with win rate and consistency."""

    def __init__(
        self, judgments: Sequence[PairJudgment], items: Sequence[dict[str, Any]] | None = None
    ) -> None:
        super().__init__(judgments, items)

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"PairwiseResults(n={s.n}, failed={s.n_failed}, win_rate={s.win_rate}, "
            f"consistency_rate={s.consistency_rate})"
        )

    @property
    def winners(self) -> list[Winner | None]:
        return [p.winner for p in self]

    @property
    def consistent(self) -> list[bool | None]:
        return [p.consistent for p in self]

    def win_rate(self) -> float | None:
        """A's win rate with ties as half (see :class:`PairwiseSummary`)."""
        return self.summary().win_rate

    def consistency_rate(self) -> float | None:
        """The share of pairs whose two orders named the same winner."""
        return self.summary().consistency_rate

    def summary(self) -> PairwiseSummary:
        winners = self.winners
        n_a, n_b, n_tie = winners.count("A"), winners.count("B"), winners.count("tie")
        counted = n_a + n_b + n_tie
        both = [p.consistent for p in self if p.consistent is not None]
        firsts = [
            _side_of(j) == "A"
            for p in self
            for j in (p.forward, p.swapped)
            if j is not None and _side_of(j) in ("A", "B")
        ]
        return PairwiseSummary(
            n=len(self),
            n_failed=self.n_failed,
            n_a=n_a,
            n_b=n_b,
            n_tie=n_tie,
            n_inconsistent=winners.count("inconsistent"),
            n_counted=counted,
            win_rate=(n_a + 0.5 * n_tie) / counted if counted else None,
            n_both_orders=len(both),
            n_consistent=sum(both),
            consistency_rate=sum(both) / len(both) if both else None,
            first_position_rate=sum(firsts) / len(firsts) if firsts else None,
        )

    def _columns(self, outcome: PairJudgment) -> dict[str, Any]:
        """``pair_*``, ``forward_*`` and ``swapped_*`` columns (the verdict, response text
        and error of each order)."""
        p = outcome
        prefs = list(p.preferences) + [None] * (2 - len(p.preferences))
        row: dict[str, Any] = {
            "pair_score": p.score,
            "pair_winner": p.winner,
            "pair_consistent": p.consistent,
            "pair_error": p.error,
            "pair_preference_forward": prefs[0],
            "pair_preference_swapped": prefs[1],
            "pair_prompt_tokens": p.usage.prompt_tokens,
            "pair_completion_tokens": p.usage.completion_tokens,
        }
        for order, j in (("forward", p.forward), ("swapped", p.swapped)):
            row[f"{order}_verdict"] = j.verdict if j is not None else None
            row[f"{order}_response"] = j.response if j is not None else None
            row[f"{order}_error"] = j.error if j is not None else None
        return row


def _side_of(j: Judgment) -> str | None:
    return None if j.score is None else side(j.score)
