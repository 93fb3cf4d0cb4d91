""":class:`JudgeResults`: the judgments of a batch, in input order, with totals.

>>> from jurist.types import Judgment
>>> r = JudgeResults([Judgment(score=1.0), Judgment(score=None, error="parse: no verdict")])
>>> r.scores, r.n_failed, r.mean()
([1.0, None], 1, 1.0)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

from jurist.types import Judgment, Usage

__all__ = ["JudgeResults"]


class JudgeResults(Sequence[Judgment]):
    """An immutable sequence of :class:`~jurist.types.Judgment`, one per input item."""

    def __init__(
        self, judgments: Sequence[Judgment], items: Sequence[dict[str, Any]] | None = None
    ) -> None:
        self._judgments = tuple(judgments)
        self._items = tuple(items) if items is not None else None

    @overload
    def __getitem__(self, i: int) -> Judgment: ...
    @overload
    def __getitem__(self, i: slice) -> JudgeResults: ...
    def __getitem__(self, i: int | slice) -> Judgment | JudgeResults:
        if isinstance(i, slice):
            items = self._items[i] if self._items is not None else None
            return JudgeResults(self._judgments[i], items)
        return self._judgments[i]

    def __len__(self) -> int:
        return len(self._judgments)

    def __iter__(self) -> Iterator[Judgment]:
        return iter(self._judgments)

    def __repr__(self) -> str:
        return f"JudgeResults(n={len(self)}, failed={self.n_failed}, mean={self.mean()})"

    @property
    def scores(self) -> list[float | None]:
        return [j.score for j in self._judgments]

    @property
    def explanations(self) -> list[str | None]:
        return [j.explanation for j in self._judgments]

    @property
    def n_failed(self) -> int:
        return sum(1 for j in self._judgments if j.score is None)

    @property
    def failures(self) -> list[tuple[int, Judgment]]:
        """``(index, judgment)`` for each item that got no score."""
        return [(i, j) for i, j in enumerate(self._judgments) if j.score is None]

    @property
    def usage(self) -> Usage:
        total = Usage()
        for j in self._judgments:
            total = total + j.usage
        return total

    def mean(self) -> float | None:
        """Mean over scored items (failures are skipped, not counted as 0)."""
        scored = [j.score for j in self._judgments if j.score is not None]
        return sum(scored) / len(scored) if scored else None

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per item: its input fields, then the judgment's fields.

        The judgment's fields are prefixed ``judge_`` (``judge_score``, ``judge_error``...)
        so they never overwrite an input field such as a human ``score``.
        """
        rows = []
        for i, j in enumerate(self._judgments):
            row: dict[str, Any] = dict(self._items[i]) if self._items is not None else {}
            for key, value in j.model_dump(mode="json", exclude={"usage"}).items():
                row[key if key.startswith("judge_") else f"judge_{key}"] = value
            row["judge_prompt_tokens"] = j.usage.prompt_tokens
            row["judge_completion_tokens"] = j.usage.completion_tokens
            row["judge_reasoning_tokens"] = j.usage.reasoning_tokens
            rows.append(row)
        return rows

    def to_pandas(self) -> Any:
        """A pandas DataFrame of :meth:`to_records` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            from jurist.errors import MissingDependencyError

            raise MissingDependencyError("pandas", "dev", "JudgeResults.to_pandas()") from e
        return pd.DataFrame(self.to_records())
