"""Groupwise rewards: the completions of one prompt ranked against each other.

GRPO-style trainers sample G completions per prompt and only care how each compares to
its siblings. :class:`GroupReward` judges pairs of completions of one group with a
pairwise judge (:class:`~jurist.judges.PairwiseJudge`, template ``mt_bench_pair`` by
default) and gives each completion its **win rate** over the pairs it took part in: a
win counts 1, a tie 0.5, a loss 0 (with a graded template, the preference itself).

- **Position bias is controlled**: every pair is judged in both orders (A first, then B
  first); when the two orders disagree the judge was swayed by position and the pair is a
  tie (``consistency="tie"``, as MT-bench does). ``inconsistent_pairs`` counts them per
  completion, so a judge that mostly follows position shows up in the logs.
- **The cost is bounded**: ``max_pairs`` pairs per group at most (each costing two judge
  calls). All ``G (G - 1) / 2`` pairs are judged when they fit; otherwise whole rounds of a
  round-robin schedule (each round pairs every completion once) are taken in a seeded
  order, so every completion is compared about equally often.
- **Failures are flagged**: a failed pair (an API error, an unreadable verdict in either
  order) is left out of the win rates and counted in ``failed_pairs``; a completion with no
  judged pair gets ``failure_value`` with ``error`` saying why.

A record has ``reward``, ``raw_score`` (the win rate, ``None`` when none), ``judge_output``
(``None``), ``clamped`` (False), ``parse_failed``, ``error``, ``pairs`` (pairs judged),
``failed_pairs`` and ``inconsistent_pairs``.

>>> import asyncio
>>> from jurist.judges import PairwiseJudge
>>> from jurist.models import MockModel
>>> judge = PairwiseJudge(MockModel("j", outputs=["[[A]]"], cycle=True))  # always "A"
>>> group = GroupReward(judge)
>>> [r["reward"] for r in group.score_group_sync(["x", "y", "z"], prompt="?")]
[0.5, 0.5, 0.5]
>>> group.score_group_sync(["x", "y"], prompt="?")[0]["inconsistent_pairs"]
1
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from jurist.errors import ConfigError, DataError
from jurist.judges._many import run_items
from jurist.judges._pairwise import PairJudgment, PairwiseJudge
from jurist.rewards._reward_judge import run_in_background

__all__ = ["GroupReward", "pair_schedule"]


def pair_schedule(g: int, max_pairs: int | None = None, seed: int = 0) -> list[tuple[int, int]]:
    """The pairs of a group of ``g`` to judge: all, or whole round-robin rounds up to
    ``max_pairs`` (each round pairs every completion once; rounds in a seeded order).

    >>> pair_schedule(3)
    [(0, 1), (0, 2), (1, 2)]
    >>> pairs = pair_schedule(8, max_pairs=8)
    >>> len(pairs), sorted(sum(1 for p in pairs if i in p) for i in range(8))
    (8, [2, 2, 2, 2, 2, 2, 2, 2])
    """
    if g < 0 or (max_pairs is not None and max_pairs < 1):
        raise ConfigError(f"pair schedule: need g >= 0 and max_pairs >= 1, got {g}, {max_pairs}")
    total = g * (g - 1) // 2
    if max_pairs is None or max_pairs >= total:
        return [(i, j) for i in range(g) for j in range(i + 1, g)]
    players: list[int | None] = [*range(g), *([None] if g % 2 else [])]
    n = len(players)
    rounds: list[list[tuple[int, int]]] = []
    for _ in range(n - 1):
        pairs = [(players[k], players[n - 1 - k]) for k in range(n // 2)]
        rounds.append([(min(a, b), max(a, b)) for a, b in pairs if a is not None and b is not None])
        players = [players[0], players[-1], *players[1:-1]]
    random.Random(seed).shuffle(rounds)
    return [p for r in rounds for p in r][:max_pairs]


class GroupReward:
    """Per-completion rewards from pairwise comparisons within a group (module doc)."""

    def __init__(
        self,
        judge: PairwiseJudge,
        *,
        max_pairs: int | None = None,
        seed: int = 0,
        failure_value: float | None = 0.0,
        retries: int = 0,
        concurrency: int | None = None,
    ) -> None:
        if not isinstance(judge, PairwiseJudge):
            raise ConfigError(f"a group reward needs a PairwiseJudge, got {type(judge).__name__}")
        if not judge.swap:
            raise ConfigError(
                "a group reward judges every pair in both orders (position-bias control): "
                "give a PairwiseJudge with swap=True"
            )
        if max_pairs is not None and max_pairs < 1:
            raise ConfigError(f"max_pairs must be >= 1 (pairs per group), got {max_pairs}")
        self.judge = judge
        self.max_pairs = max_pairs
        self.seed = seed
        self.failure_value = failure_value
        self.retries = retries
        self.concurrency = concurrency or judge.concurrency

    def __repr__(self) -> str:
        return f"GroupReward({self.judge!r}, max_pairs={self.max_pairs!r})"

    async def score_group(
        self,
        completions: Sequence[str],
        prompt: str | None = None,
        reference: str | None = None,
    ) -> list[dict[str, Any]]:
        """One record per completion, in order (see the module doc)."""
        for i, c in enumerate(completions):
            if not isinstance(c, str):
                raise DataError(f"group reward: completion {i} is a {type(c).__name__}")
        pairs = pair_schedule(len(completions), self.max_pairs, self.seed)
        base: dict[str, Any] = {"prompt": prompt or ""}
        if reference is not None and "reference" in self.judge.template.optional_fields:
            base["reference"] = str(reference)

        async def one(k: int) -> PairJudgment:
            i, j = pairs[k]
            item = {**base, "response_a": completions[i], "response_b": completions[j]}
            return await self.judge.judge(item, retries=self.retries)

        outcomes = await run_items(one, len(pairs), concurrency=self.concurrency)
        return self._records(len(completions), pairs, outcomes)

    def score_group_sync(
        self,
        completions: Sequence[str],
        prompt: str | None = None,
        reference: str | None = None,
    ) -> list[dict[str, Any]]:
        """Sync twin of :meth:`score_group`, on the shared background event loop."""
        return run_in_background(self.score_group(completions, prompt, reference))

    def _records(
        self, g: int, pairs: list[tuple[int, int]], outcomes: list[PairJudgment]
    ) -> list[dict[str, Any]]:
        prefs: list[list[float]] = [[] for _ in range(g)]
        failed = [0] * g
        inconsistent = [0] * g
        errors: list[list[str]] = [[] for _ in range(g)]
        for (i, j), out in zip(pairs, outcomes, strict=True):
            if out.score is None:
                for k in (i, j):
                    failed[k] += 1
                    errors[k].append(out.error or "error: no verdict")
                continue
            prefs[i].append(out.score)
            prefs[j].append(1.0 - out.score)
            if out.consistent is False:
                inconsistent[i] += 1
                inconsistent[j] += 1
        records = []
        for k in range(g):
            rate = sum(prefs[k]) / len(prefs[k]) if prefs[k] else None
            error = None
            if rate is None:
                why = errors[k][0] if errors[k] else "no pair (a group of one)"
                error = why if errors[k] else f"group: {why}"
            records.append(
                {
                    "reward": self.failure_value if rate is None else rate,
                    "raw_score": rate,
                    "judge_output": None,
                    "clamped": False,
                    "parse_failed": bool(error and error.startswith("parse:")),
                    "error": error,
                    "pairs": len(prefs[k]),
                    "failed_pairs": failed[k],
                    "inconsistent_pairs": inconsistent[k],
                }
            )
        return records
