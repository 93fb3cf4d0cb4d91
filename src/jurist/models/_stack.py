"""One model stack: the transport settings as one typed config, and the one builder.

:class:`Transport` holds every setting of how calls travel (timeout, retries and their
backoff, calls and tokens per minute, concurrency, cache, JSON mode); :func:`build_stack`
wraps a backend in them, always in this order, outermost first::

    CachedModel( RetryModel( limits( backend ) ) )

- The **cache** is outermost: a hit returns before any retry or limit, so it takes no
  concurrency slot, no pacing and no attempt.
- **Retry** sits over the limits: every attempt, each retry of a 429 included, waits its
  turn at the limiter like a first call (``--rpm`` holds for retries too), and a backoff
  sleep holds no concurrency slot.
- The **limits** sit right over the backend: they pace what reaches the server. Locally
  they are a :class:`~jurist.models.LimitedModel`; on a Ray cluster the cluster's pacer
  takes their place (``build_stack(backend, transport, limits=...)``).

:func:`with_limits` adds limits to a model that is already a stack (a judge's
``max_calls_per_min``, the Ray pacer over a rebuilt judge's models) at the same place:
under its cache and retry layers. Every caller builds its models here (the CLI, the
reward judges, ``LLMJudge(max_calls_per_min=)``, the uqlm layer, :func:`~jurist.get_model`
and the Ray actors), so a setting means the same everywhere.

>>> from jurist.models import MockModel
>>> build_stack(MockModel("a"), Transport(max_retries=2, rpm=600, cache=True, cache_path="c"))
... # doctest: +NORMALIZE_WHITESPACE
CachedModel(RetryModel(LimitedModel(MockModel('mock:a'), max_calls_per_min=600.0),
            max_retries=2), 'c')
"""

from __future__ import annotations

from collections.abc import Callable

from jurist.models._cache import CachedModel
from jurist.models._limits import LimitedModel
from jurist.models._model import Model, WrapperModel
from jurist.models._retry import RetryModel
from jurist.models._transport import DEFAULT_MAX_RETRIES, Transport

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "Layer",
    "Transport",
    "build_stack",
    "limits_layer",
    "transport_limits",
    "with_backend",
    "with_limits",
]

Layer = Callable[[Model], Model]
"""A wrapper taking the model it wraps (the limits' layer: ``LimitedModel``'s or Ray's)."""


def transport_limits(transport: Transport) -> Layer | None:
    """The local limits' layer of ``transport`` (a :class:`LimitedModel`), ``None`` when
    it sets none."""
    if transport.rpm is None and transport.tpm is None and transport.max_concurrency is None:
        return None
    return limits_layer(
        rpm=transport.rpm, tpm=transport.tpm, max_concurrency=transport.max_concurrency
    )


def limits_layer(
    *, rpm: float | None = None, tpm: float | None = None, max_concurrency: int | None = None
) -> Layer:
    """The local limits' layer: a :class:`LimitedModel` with these limits."""

    def layer(model: Model) -> Model:
        return LimitedModel(
            model,
            max_concurrency=max_concurrency,
            max_calls_per_min=rpm,
            max_tokens_per_min=tpm,
        )

    return layer


def build_stack(
    backend: Model, transport: Transport | None = None, *, limits: Layer | None = None
) -> Model:
    """``backend`` wrapped as cache(retry(limits(backend))) by ``transport``'s settings.

    ``limits`` replaces the transport's own limits layer (the Ray engine passes its
    cluster pacer); the layers a setting leaves off are left out. The backend's own
    options (``timeout``, ``json_mode``) are :meth:`Transport.backend_options`, given
    when the backend is built.
    """
    transport = transport or Transport()
    model = backend
    layer = limits if limits is not None else transport_limits(transport)
    if layer is not None:
        model = layer(model)
    retries = transport.max_retries
    if retries is None:
        retries = DEFAULT_MAX_RETRIES if backend.capabilities.remote else 0
    if retries > 0:
        model = RetryModel(
            model,
            max_retries=retries,
            backoff_base=transport.backoff_base,
            backoff_max=transport.backoff_max,
            retry_after_max=transport.retry_after_max,
        )
    if transport.cache:
        model = CachedModel(model, transport.cache_path)
    return model


def with_limits(model: Model, limits: Layer) -> Model:
    """``model`` with ``limits`` at the limits' place of its stack: under its cache and
    retry layers (copies of them; ``model`` is unchanged), so its retries are paced and
    its cache hits are not.

    >>> from jurist.models import MockModel
    >>> with_limits(RetryModel(MockModel("a")), lambda m: LimitedModel(m, max_calls_per_min=60))
    RetryModel(LimitedModel(MockModel('mock:a'), max_calls_per_min=60), max_retries=2)
    """
    if isinstance(model, CachedModel | RetryModel):
        return model.around(with_limits(model.wrapped, limits))
    return limits(model)


def with_backend(model: Model, backend: Model) -> Model:
    """``model``'s wrappers (copies) around ``backend`` instead of its own backend."""
    if isinstance(model, WrapperModel):
        return model.around(with_backend(model.wrapped, backend))
    return backend
