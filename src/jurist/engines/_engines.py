"""Engines as strategies: how the items of a run travel.

:func:`jurist.evaluate` takes one engine object, and the engine owns what differs between
engines:

- :meth:`Engine.check` refuses a judge or a setting the engine cannot run, before any
  run folder is made or any model is loaded (Ray not installed, a judge that does not
  rebuild on the actors, a batch-API run of a model with no batch API);
- :meth:`Engine.prepare` readies the judge's models for the run (the local engine loads
  weights and reaches servers here, so the run stops before its first item when it
  cannot; on Ray each actor builds its own models, and through a batch API requests go to
  files, so neither loads anything in this process);
- :meth:`Engine.run` is one session's loop over :meth:`EngineContext.todo`, ending in
  :meth:`EngineContext.record`; it may return the status the run stops in.

:class:`LocalEngine` (asyncio workers in this process, the default), :class:`RayEngine`
(Ray Data actors, :class:`~jurist.engines.RayOptions`) and :class:`BatchAPIEngine` (the
provider's batch API, :class:`~jurist.engines.BatchAPIOptions`) are thin strategies over
the engines' loops.

>>> RayEngine(actors=4).options.actors
4
>>> RayEngine(actors=4) == RayEngine(RayOptions(actors=4))
True
>>> LocalEngine().name, BatchAPIEngine().name
('local', 'batch_api')
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from jurist.batching import BatchAPIOptions
from jurist.engines._ray_options import RayOptions
from jurist.engines._run_options import RunOptions
from jurist.engines._session import EngineContext, judge_locally
from jurist.errors import ConfigError
from jurist.judges._protocol import ItemJudge, models_of
from jurist.models import Model

__all__ = [
    "Announce",
    "BatchAPIEngine",
    "Engine",
    "LocalEngine",
    "RayEngine",
    "choose_engine",
]

Announce = Callable[[Model], AbstractContextManager[Any]]
"""What :meth:`Engine.prepare` wraps each model's preparation in (a spinner)."""


@runtime_checkable
class Engine(Protocol):
    """How the items of a run travel (see the module docs)."""

    @property
    def name(self) -> str:
        """The engine's name, recorded in the run's manifest (``settings.engine``)."""
        ...

    def check(self, judge: ItemJudge, options: RunOptions) -> None:
        """Refuse what this engine cannot run, before any folder or model load."""
        ...

    async def prepare(self, models: Sequence[Model], announce: Announce | None = None) -> None:
        """Ready ``models`` for a run of this engine in this process."""
        ...

    async def run(self, ctx: EngineContext) -> str | None:
        """One session's loop over ``ctx.todo()``; the status the run stops in, or
        ``None`` for the usual one (``complete`` / ``incomplete``)."""
        ...


class LocalEngine:
    """Judge in this process: asyncio workers, ``RunOptions.concurrency`` at once."""

    name = "local"

    def __repr__(self) -> str:
        return "LocalEngine()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LocalEngine)

    def __hash__(self) -> int:
        return hash(LocalEngine)

    def check(self, judge: ItemJudge, options: RunOptions) -> None:
        """Nothing beyond what every engine checks (a judge, its fields, the options)."""

    async def prepare(self, models: Sequence[Model], announce: Announce | None = None) -> None:
        """Each model's :meth:`~jurist.models.Model.prepare` (load weights, reach the
        server), so a model that cannot serve stops the run before its first item."""
        for model in models:
            with announce(model) if announce is not None else contextlib.nullcontext():
                await model.prepare()

    async def run(self, ctx: EngineContext) -> str | None:
        await judge_locally(ctx)
        return None


class _OptionsEngine:
    """An engine configured by one frozen pydantic options object."""

    name: str
    options: Any

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.options!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.options == self.options

    def __hash__(self) -> int:
        return hash((type(self), self.options))

    async def prepare(self, models: Sequence[Model], announce: Announce | None = None) -> None:
        """Nothing in this process (see the engine's docs)."""


class RayEngine(_OptionsEngine):
    """Judge on a Ray cluster with Ray Data (see :class:`~jurist.engines.RayOptions`):
    ``RayEngine(RayOptions(actors=4))`` or ``RayEngine(actors=4)``.

    Its models are not prepared in this process: each actor builds and loads its own, and
    a local model loaded here too would hold memory (or a GPU) the actors need.
    """

    name = "ray"
    options: RayOptions

    def __init__(self, options: RayOptions | None = None, **settings: Any) -> None:
        if options is not None and settings:
            raise ConfigError("RayEngine takes a RayOptions or its fields as keywords, not both")
        try:
            self.options = options if options is not None else RayOptions(**settings)
        except ValueError as e:  # pydantic's ValidationError
            raise ConfigError(f"RayEngine: {e}") from None

    def check(self, judge: ItemJudge, options: RunOptions) -> None:
        """Ray (with Ray Data) is installed, and the judge rebuilds on the actors as the
        same judge (its catalog entry and each model's spec)."""
        from jurist.engines._ray import _checked_entry, import_ray

        import_ray()
        _checked_entry(judge)

    async def run(self, ctx: EngineContext) -> str | None:
        from jurist.engines._ray import judge_on_ray

        await judge_on_ray(ctx, self.options)
        return None


class BatchAPIEngine(_OptionsEngine):
    """Send the requests through the provider's batch API (see
    :class:`~jurist.engines.BatchAPIOptions`): about half the price, results within its
    window. ``BatchAPIEngine(BatchAPIOptions(poll_interval=60))`` or
    ``BatchAPIEngine(poll_interval=60)``.

    Its models are not prepared in this process: requests go to the files and batches
    endpoints (the first upload names a server that cannot be reached), or to a file.
    """

    name = "batch_api"
    options: BatchAPIOptions

    def __init__(self, options: BatchAPIOptions | None = None, **settings: Any) -> None:
        if options is not None and settings:
            raise ConfigError(
                "BatchAPIEngine takes a BatchAPIOptions or its fields as keywords, not both"
            )
        try:
            self.options = options if options is not None else BatchAPIOptions(**settings)
        except ValueError as e:  # pydantic's ValidationError
            raise ConfigError(f"BatchAPIEngine: {e}") from None

    def check(self, judge: ItemJudge, options: RunOptions) -> None:
        """The judge has a model whose provider has a batch API (its capabilities say
        ``batch_api``: OpenAI or an OpenAI-compatible server with its base URL,
        Anthropic's Message Batches)."""
        from jurist.engines._batch_api import _carried, batch_providers

        models = models_of(judge)
        if models and not any(_carried(m) for m in models):
            specs = ", ".join(dict.fromkeys(m.spec for m in models))
            raise ConfigError(
                "the batch-API engine sends the requests of models whose provider has a "
                f"batch API ({batch_providers()}); this judge calls {specs}, which would "
                "all run live: use the local engine"
            )

    async def run(self, ctx: EngineContext) -> str | None:
        from jurist.engines._batch_api import judge_through_batches

        return await judge_through_batches(ctx, self.options)


def choose_engine(engine: Engine | None) -> Engine:
    """The engine of a call to :func:`jurist.evaluate`: ``engine``, else
    :class:`LocalEngine`; anything else is a :class:`ConfigError`.

    >>> choose_engine(None)
    LocalEngine()
    >>> choose_engine(RayOptions())
    Traceback (most recent call last):
    ...
    jurist.errors.ConfigError: engine= takes an engine (LocalEngine(), ...), not RayOptions
    """
    if engine is None:
        return LocalEngine()
    if not isinstance(engine, Engine):
        raise ConfigError(
            f"engine= takes an engine (LocalEngine(), RayEngine(...), "
            f"BatchAPIEngine(...)), not {type(engine).__name__}"
        )
    return engine
