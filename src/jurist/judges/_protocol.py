"""The contract every judge kind meets, so the batch engine can run any of them.

A judge kind (:class:`~jurist.judges.LLMJudge`, a panel, a pairwise judge, a rubric grader
bound to its rubric) is an :class:`ItemJudge`: it names the item fields it needs, describes
its configuration as plain JSON (for run manifests: a resumed run must match it), and judges
one item at a time, returning an :class:`ItemOutcome`, a pydantic model with at least
``score`` (normalised to [0, 1], or ``None``), ``error`` (``"category: message"`` when
``score`` is ``None``) and ``usage``. An outcome never raises for a failed call: the failure
is in ``error``.

>>> from jurist.judges import LLMJudge
>>> judge = LLMJudge("mock:j", template="likert")
>>> isinstance(judge, ItemJudge)
True
>>> judge.required_fields
('prompt', 'response')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from jurist.types import Usage

__all__ = ["ItemJudge", "ItemOutcome"]


@runtime_checkable
class ItemOutcome(Protocol):
    """What judging one item returns (a pydantic model: ``model_dump`` gives its record)."""

    @property
    def score(self) -> float | None: ...

    @property
    def error(self) -> str | None: ...

    @property
    def usage(self) -> Usage: ...

    def model_dump(self, **kwargs: Any) -> dict[str, Any]: ...


@runtime_checkable
class ItemJudge(Protocol):
    """A judge that takes one item (a mapping of field -> value) at a time."""

    @property
    def name(self) -> str: ...

    @property
    def required_fields(self) -> tuple[str, ...]:
        """The item fields every item must have (checked before any call)."""
        ...

    def describe(self) -> dict[str, Any]:
        """The judge's whole configuration as JSON-able data (models, templates, settings)."""
        ...

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> Any:
        """Judge one item; returns an :class:`ItemOutcome` and never raises for a failed call."""
        ...
