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
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from jurist.errors import ConfigError
from jurist.models._cache import CachedModel
from jurist.models._limits import LimitedModel
from jurist.models._model import Model, WrapperModel
from jurist.models._retry import RetryModel

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "Layer",
    "Transport",
    "build_stack",
    "limits_layer",
    "with_backend",
    "with_limits",
]

DEFAULT_MAX_RETRIES = 2
"""Retries of transient errors a remote backend gets when a transport does not say."""

Layer = Callable[[Model], Model]
"""A wrapper taking the model it wraps (the limits' layer: ``LimitedModel``'s or Ray's)."""

JsonMode = Literal["json_schema", "json_object", "none"]


class Transport(BaseModel):
    """How a model's calls travel: one typed config for every caller.

    ``timeout``: seconds per call, for backends that take one (``openai:``, ``litellm:``);
    ``None`` leaves the backend's default. ``max_retries``: retries of transient errors
    (429, 408, 409, 5xx, timeouts); ``None`` means :data:`DEFAULT_MAX_RETRIES` for a remote
    backend and none for a local one. ``backoff_base`` / ``backoff_max`` /
    ``retry_after_max``: the retry waits (see :class:`~jurist.models.RetryModel`).
    ``rpm`` / ``tpm``: calls and tokens per minute, paced smoothly; ``max_concurrency``:
    calls in flight at once. ``cache``: cache deterministic calls in SQLite at
    ``cache_path`` (default :func:`~jurist.models.default_cache_path`). ``json_mode``: how
    an ``openai:`` server takes a JSON schema (``"none"``: no JSON output); ``None`` leaves
    the backend's default.

    >>> Transport(rpm=0)
    Traceback (most recent call last):
    ...
    jurist.errors.ConfigError: transport setting rpm: Input should be greater than 0, got 0
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **settings: Any) -> None:
        try:
            super().__init__(**settings)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "settings"
            raise ConfigError(
                f"transport setting {where}: {first['msg']}, got {first.get('input')!r}"
            ) from None

    timeout: float | None = Field(None, gt=0)
    max_retries: StrictInt | None = Field(None, ge=0)
    backoff_base: float = Field(0.5, ge=0)
    backoff_max: float = Field(8.0, ge=0)
    retry_after_max: float = Field(60.0, ge=0)
    rpm: float | None = Field(None, gt=0)
    tpm: float | None = Field(None, gt=0)
    max_concurrency: StrictInt | None = Field(None, ge=1)
    cache: bool = False
    cache_path: Path | None = None
    json_mode: JsonMode | None = None

    def backend_options(self, provider: str) -> dict[str, Any]:
        """The settings a backend of ``provider`` takes as constructor options.

        >>> Transport(timeout=5, json_mode="none").backend_options("openai")
        {'timeout': 5.0, 'json_mode': None}
        >>> Transport(timeout=5).backend_options("hf")
        {}
        """
        options: dict[str, Any] = {}
        if provider in ("openai", "litellm", "anthropic") and self.timeout is not None:
            options["timeout"] = self.timeout
        if provider == "openai" and self.json_mode is not None:
            options["json_mode"] = None if self.json_mode == "none" else self.json_mode
        return options

    def limits(self) -> Layer | None:
        """The local limits' layer (a :class:`LimitedModel`), ``None`` when none is set."""
        if self.rpm is None and self.tpm is None and self.max_concurrency is None:
            return None
        return limits_layer(rpm=self.rpm, tpm=self.tpm, max_concurrency=self.max_concurrency)


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
    layer = limits if limits is not None else transport.limits()
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
