"""The contract every judge kind meets, so the batch engine can run any of them.

A judge kind (:class:`~jurist.judges.LLMJudge`, a panel, a pairwise judge, a rubric grader
bound to its rubric) is an :class:`ItemJudge`: it names the item fields it needs, describes
its configuration as plain JSON (for run manifests: a resumed run must match it), and judges
one item at a time, returning an :class:`ItemOutcome`, a pydantic model with at least
``score`` (normalised to [0, 1], or ``None``), ``error`` (``"category: message"`` when
``score`` is ``None``) and ``usage``. An outcome never raises for a failed call: the failure
is in ``error``.

Every judge kind of jurist also names the models it calls (:class:`ModelJudge`):
``models()`` gives them in a fixed order, and ``with_models(fn)`` gives a copy of the judge
(the judge is never changed) in which each model is replaced by ``fn(model)``, ``fn`` being
called on the models in the order ``models()`` gives them. The engines see a judge's models
only this way: to price them, to pace them on a cluster, to hand them their keys.
:func:`models_of` and :func:`with_models_of` also take a custom :class:`ItemJudge` without
these two methods: it calls no jurist model, so it names none and is kept as it is.

>>> from jurist.judges import LLMJudge
>>> judge = LLMJudge("mock:j", template="likert")
>>> isinstance(judge, ItemJudge)
True
>>> judge.required_fields
('prompt', 'response')
>>> judge.models()
(MockModel('mock:j'),)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

from jurist.errors import ConfigError
from jurist.models import Model
from jurist.types import Usage

__all__ = [
    "ItemJudge",
    "ItemOutcome",
    "ModelFn",
    "ModelJudge",
    "fields_of",
    "judges_given",
    "models_of",
    "with_models_of",
]

ModelFn = Callable[[Model], Model]
"""What :meth:`ModelJudge.with_models` applies to each model."""

J = TypeVar("J")


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


@runtime_checkable
class ModelJudge(Protocol):
    """A judge that names the models it calls (every judge kind of jurist)."""

    def models(self) -> tuple[Model, ...]:
        """The models this judge calls, in a fixed order (repeats kept)."""
        ...

    def with_models(self, fn: ModelFn) -> Any:
        """A copy of this judge with each model replaced by ``fn(model)`` (called in the
        order of :meth:`models`); the judge itself is unchanged."""
        ...


def models_of(judge: Any) -> tuple[Model, ...]:
    """``judge.models()``; ``()`` for a custom judge that does not name its models.

    >>> from jurist.judges import LLMJudge, Panel
    >>> [m.spec for m in models_of(Panel([LLMJudge("mock:a"), LLMJudge("mock:b")]))]
    ['mock:a', 'mock:b']
    """
    return tuple(judge.models()) if isinstance(judge, ModelJudge) else ()


def with_models_of(judge: J, fn: ModelFn) -> J:
    """``judge.with_models(fn)``; a custom judge that names no models as it is."""
    if isinstance(judge, ModelJudge):
        out: J = judge.with_models(fn)
        return out
    return judge


def judges_given(judges: Iterable[Any], *, whole: str, each: str, hint: str) -> list[ItemJudge]:
    """``judges`` as a list, checked: at least one, each an :class:`ItemJudge` (a panel's
    members, a cascade's tiers). ``whole`` and ``each`` name them in the errors, ``hint``
    says what to pass instead.

    >>> judges_given(["mock:x"], whole="a Panel", each="panel judge", hint="pass LLMJudges")
    Traceback (most recent call last):
    jurist.errors.ConfigError: panel judge 0 is a str, not a judge; pass LLMJudges
    """
    given = list(judges)
    if not given:
        raise ConfigError(f"{whole} needs at least one {each.split()[-1]}")
    for i, judge in enumerate(given):
        if not isinstance(judge, ItemJudge):
            raise ConfigError(f"{each} {i} is a {type(judge).__name__}, not a judge; {hint}")
    return given


def fields_of(judges: Iterable[ItemJudge]) -> tuple[str, ...]:
    """Every field any of ``judges`` needs, in first-seen order (a panel's, a cascade's).

    >>> from jurist.judges import LLMJudge
    >>> fields_of([LLMJudge("mock:a"), LLMJudge("mock:b", template="mt_bench_reference")])
    ('prompt', 'response', 'reference')
    """
    return tuple(dict.fromkeys(f for judge in judges for f in judge.required_fields))
