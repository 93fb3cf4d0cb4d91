"""Reading pairwise battles for :func:`jurist.metrics.bradley_terry` (columns checked by name).

A battle is ``(model_a, model_b, winner)``: ``winner`` is ``"model_a"``, ``"model_b"``,
``"tie"`` or ``"tie (bothbad)"`` (Chatbot Arena's and Arena-Hard-Auto's spellings), or a
number in ``[0, 1]``, the probability that ``model_a`` won (a soft verdict). An optional
``weight`` counts a battle several times (Arena-Hard-Auto counts a strong verdict, ``A>>B``,
three times). Battles come as a pandas DataFrame with those columns, a sequence of dicts,
or a sequence of ``(model_a, model_b, winner)`` tuples.

>>> b = read_battles([("x", "y", "model_a"), {"model_a": "y", "model_b": "x", "winner": "tie"}])
>>> b.models, b.a.tolist(), b.b.tolist(), b.outcome.tolist()
(['x', 'y'], [0, 1], [1, 0], [1.0, 0.5])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from jurist.errors import DataError

__all__ = ["Battles", "read_battles"]

_OUTCOMES = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}
_COLUMNS = ("model_a", "model_b", "winner")


@dataclass(frozen=True)
class Battles:
    """Battles as arrays: model indices into ``models`` (sorted), ``outcome`` = P(a won)."""

    models: list[str]
    a: npt.NDArray[np.int64]
    b: npt.NDArray[np.int64]
    outcome: npt.NDArray[np.float64]
    weight: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.a.size)


def _outcome(value: Any, i: int) -> float:
    if isinstance(value, str):
        if value in _OUTCOMES:
            return _OUTCOMES[value]
        raise DataError(
            f"battle {i}: winner is {value!r}; expected one of {sorted(_OUTCOMES)} "
            "or a number in [0, 1] (the probability that model_a won)"
        )
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise DataError(f"battle {i}: winner is {value!r}, not a verdict")
    x = float(value)
    if not 0.0 <= x <= 1.0:
        raise DataError(f"battle {i}: winner is {x!r}; a numeric winner lies in [0, 1]")
    return x


def _rows(battles: Any) -> tuple[list[Any], list[Any], list[Any], list[Any] | None]:
    if hasattr(battles, "columns") and hasattr(battles, "__getitem__"):  # a pandas DataFrame
        missing = [c for c in _COLUMNS if c not in battles.columns]
        if missing:
            raise DataError(
                f"battles has no column {missing[0]!r}; it needs {list(_COLUMNS)} "
                f"(got {list(battles.columns)})"
            )
        weight = battles["weight"].tolist() if "weight" in battles.columns else None
        return (
            battles["model_a"].tolist(),
            battles["model_b"].tolist(),
            battles["winner"].tolist(),
            weight,
        )
    if isinstance(battles, str | bytes) or not isinstance(battles, Sequence):
        raise DataError(
            "battles must be a pandas DataFrame, a list of dicts or a list of "
            f"(model_a, model_b, winner) tuples, got {type(battles).__name__}"
        )
    a: list[Any] = []
    b: list[Any] = []
    w: list[Any] = []
    wt: list[Any] = []
    for i, row in enumerate(battles):
        if isinstance(row, Mapping):
            for c in _COLUMNS:
                if c not in row:
                    raise DataError(f"battle {i} has no {c!r} (it has {sorted(row)})")
            a.append(row["model_a"])
            b.append(row["model_b"])
            w.append(row["winner"])
            wt.append(row.get("weight", 1.0))
        elif isinstance(row, Sequence) and not isinstance(row, str) and len(row) == 3:
            a.append(row[0])
            b.append(row[1])
            w.append(row[2])
            wt.append(1.0)
        else:
            raise DataError(
                f"battle {i} is {row!r}: expected a dict with {list(_COLUMNS)} "
                "or a (model_a, model_b, winner) tuple"
            )
    return a, b, w, wt


def read_battles(battles: Any) -> Battles:
    """Check and index ``battles`` (see the module docstring); errors name the battle."""
    col_a, col_b, col_w, col_wt = _rows(battles)
    if not col_a:
        raise DataError("battles is empty: Bradley-Terry scores need at least one battle")
    for i, (x, y) in enumerate(zip(col_a, col_b, strict=True)):
        for col, name in (("model_a", x), ("model_b", y)):
            if not isinstance(name, str) or not name:
                raise DataError(f"battle {i}: {col} is {name!r}, not a model name")
        if x == y:
            raise DataError(f"battle {i}: model_a and model_b are both {x!r}")
    models = sorted(set(col_a) | set(col_b))
    index = {m: k for k, m in enumerate(models)}
    outcome = np.array([_outcome(v, i) for i, v in enumerate(col_w)], dtype=float)
    if col_wt is None:
        weight = np.ones(len(col_a))
    else:
        weight = np.empty(len(col_a))
        for i, v in enumerate(col_wt):
            try:
                weight[i] = float(v)
            except (TypeError, ValueError):
                raise DataError(f"battle {i}: weight is {v!r}, not a number") from None
            if not (np.isfinite(weight[i]) and weight[i] >= 0):
                raise DataError(f"battle {i}: weight is {v!r}; a weight is a number >= 0")
    return Battles(
        models=models,
        a=np.array([index[m] for m in col_a], dtype=np.int64),
        b=np.array([index[m] for m in col_b], dtype=np.int64),
        outcome=outcome,
        weight=weight,
    )
