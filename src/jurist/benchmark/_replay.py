"""Replay judges: a judge whose outputs come from the data, so published judges' figures
are reproduced with no model call.

Two columns of a bench row hold them:

- ``recorded``: judge name -> its raw outputs. Pairwise: ``[output with A first, output
  with B first]`` (either may be ``null``: that call gave nothing); pointwise: the output
  (a string, or a one-element list). :class:`RecordedJudge` reads the output of the order
  asked with the setup's template, exactly as a live judge's text is read, so the
  template's parser (its verdict form, its refusal of conflicting verdicts) decides.
- ``scores``: reward model name -> its scalar rewards. Pairwise: ``[score of A, score of
  B]`` (a reward model scores each response alone, so the same pair serves both orders),
  or ``[[score of A, score of B], [score of B, score of A]]`` when the swapped order was
  scored too (the second pair in the order shown: B first); pointwise: the score.
  :class:`ScoresJudge` turns the margin ``m`` (first shown minus second shown) into the
  preference for the first shown, ``sigmoid(m / temperature)``, with confidence
  ``max(p, 1 - p)`` (a cascade reads it); a pointwise reward ``r`` becomes
  ``sigmoid(r / temperature)``, its raw value kept as the verdict.

A replay judge calls no model: its outcomes cost nothing and take no time, which the
bench reports as such (0 tokens), never as a made-up price.

>>> judge = ScoresJudge("rm")
>>> item = {"scores": {"rm": [2.0, 1.0]}, "order": "ab"}
>>> out = judge.judge_one_sync(item)
>>> out.verdict, round(out.score, 3)
('A', 0.731)
>>> judge.judge_one_sync({**item, "order": "ba"}).verdict
'B'
>>> rec = RecordedJudge("gpt", template="mt_bench_pair")
>>> rec.judge_one_sync({"recorded": {"gpt": ["[[A]]", "[[B]]"]}, "order": "ba"}).verdict
'B'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from jurist._sync import run_sync
from jurist.errors import ConfigError, DataError
from jurist.models import Model
from jurist.templates import Template, get_template
from jurist.types import Judgment

__all__ = ["RecordedJudge", "ScoresJudge", "replay_value"]


def _order(item: Mapping[str, Any]) -> int | None:
    """0 for a pair shown as given, 1 swapped, None for a pointwise item."""
    order = item.get("order")
    if order is None:
        return None
    if order not in ("ab", "ba"):
        raise DataError(f"item {item.get('id')!r}: order {order!r} is not 'ab' or 'ba'")
    return 0 if order == "ab" else 1


def replay_value(item: Mapping[str, Any], column: str, name: str) -> Any:
    """``item[column][name]``, or a :class:`~jurist.errors.DataError` naming the item."""
    held = item.get(column)
    if not isinstance(held, Mapping):
        raise DataError(f"item {item.get('id')!r}: no {column!r} object (judge {name!r})")
    if name not in held:
        raise DataError(
            f"item {item.get('id')!r}: {column!r} has no {name!r} (it has {sorted(held)})"
        )
    return held[name]


class _Replay:
    """What the two replay kinds share: no model, an outcome per item, never a raise."""

    name: str
    column: str

    @property
    def required_fields(self) -> tuple[str, ...]:
        return (self.column,)

    def models(self) -> tuple[Model, ...]:
        """None: a replay judge calls no model."""
        return ()

    def with_models(self, fn: Any) -> Any:
        """Itself (it has no model to replace)."""
        return self

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> Judgment:
        """The outcome the data records for ``item`` (a missing one: ``score=None`` with a
        ``data:`` error; the bench checks every row before it starts)."""
        try:
            return self._outcome(item)
        except DataError as e:
            return Judgment(score=None, error=f"data: {e}")

    def _outcome(self, item: Mapping[str, Any]) -> Judgment:
        raise NotImplementedError

    def judge_one_sync(self, item: Mapping[str, Any]) -> Judgment:
        """:meth:`judge`, from sync code."""
        return run_sync(self.judge(item))

    def check(self, item: Mapping[str, Any]) -> None:
        """Raise a :class:`~jurist.errors.DataError` if ``item`` lacks this judge's data."""
        self._outcome(item)


class RecordedJudge(_Replay):
    """Replays the raw outputs in the ``recorded`` column under ``name``, read with
    ``template`` (a template name or object; pairwise data needs a pairwise template)."""

    column = "recorded"

    def __init__(self, name: str, *, template: str | Template = "mt_bench_pair") -> None:
        if not name:
            raise ConfigError("a recorded judge needs the name it has in the 'recorded' column")
        self.recorded_name = name
        self.template = get_template(template) if isinstance(template, str) else template
        self.name = f"recorded:{name}@{self.template.name}"

    def describe(self) -> dict[str, Any]:
        return {"kind": "recorded", "name": self.name, "template": self.template.name}

    def _outcome(self, item: Mapping[str, Any]) -> Judgment:
        held = replay_value(item, self.column, self.recorded_name)
        order = _order(item)
        if order is None:
            text = held[0] if isinstance(held, Sequence) and not isinstance(held, str) else held
        else:
            if isinstance(held, str) or not isinstance(held, Sequence) or len(held) != 2:
                raise DataError(
                    f"item {item.get('id')!r}: recorded {self.recorded_name!r} must be "
                    "[output with A first, output with B first]"
                )
            text = held[order]
        if text is None:
            return Judgment(score=None, error="api: the recorded judge gave no output")
        if not isinstance(text, str):
            raise DataError(
                f"item {item.get('id')!r}: recorded {self.recorded_name!r} output is a "
                f"{type(text).__name__}, not text"
            )
        verdict = self.template.parse(text)
        if verdict.score is None:
            return Judgment(score=None, error=verdict.error or "parse: no verdict", response=text)
        return Judgment(score=verdict.score, verdict=verdict.value, response=text)


def _number(value: Any, item: Mapping[str, Any], name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataError(f"item {item.get('id')!r}: score {value!r} of {name!r} is not a number")
    return float(value)


def _pair(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


class ScoresJudge(_Replay):
    """Replays the rewards in the ``scores`` column under ``name`` (see the module doc);
    ``temperature`` scales the margin (or reward) before the sigmoid."""

    column = "scores"

    def __init__(self, name: str, *, temperature: float = 1.0) -> None:
        if not name:
            raise ConfigError("a scores judge needs the name it has in the 'scores' column")
        if not temperature > 0:
            raise ConfigError(f"scores judge {name!r}: temperature must be > 0")
        self.scores_name = name
        self.temperature = float(temperature)
        self.name = f"scores:{name}"

    def describe(self) -> dict[str, Any]:
        return {"kind": "scores", "name": self.name, "temperature": self.temperature}

    def _outcome(self, item: Mapping[str, Any]) -> Judgment:
        held = replay_value(item, self.column, self.scores_name)
        order = _order(item)
        if order is None:
            reward = _number(held, item, self.scores_name)
            return Judgment(score=_sigmoid(reward / self.temperature), verdict=reward)
        shape = isinstance(held, Sequence) and not isinstance(held, str) and len(held) > 0
        pairs = held if shape and isinstance(held[0], Sequence) else [held]
        if not shape or not 1 <= len(pairs) <= 2 or any(not _pair(p) for p in pairs):
            raise DataError(
                f"item {item.get('id')!r}: scores {self.scores_name!r} must be [score of A, "
                "score of B] or [[A, B], [B, A]] (the swapped order's pair, B first)"
            )
        a, b = (_number(v, item, self.scores_name) for v in pairs[0])
        if order == 0:
            margin = a - b
        elif len(pairs) == 2:
            first, second = (_number(v, item, self.scores_name) for v in pairs[1])
            margin = first - second
        else:
            margin = b - a
        p = _sigmoid(margin / self.temperature)
        verdict = "A" if margin > 0 else "B" if margin < 0 else "tie"
        return Judgment(score=p, verdict=verdict, confidence=max(p, 1.0 - p))
