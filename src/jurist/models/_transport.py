"""The transport settings and the rebuild record: data only, imported by every layer.

:class:`Transport` is the one typed config of how a model's calls travel (timeout, retries,
limits, cache, JSON mode); :class:`ModelSpec` is what rebuilds a model stack in another
process. Neither knows a model class, so the model base class, the stack builder and the
rebuild can all depend on this module without a cycle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from jurist.errors import ConfigError
from jurist.models._backends import DEFAULT_MAX_RETRIES

__all__ = ["DEFAULT_MAX_RETRIES", "ModelSpec", "Transport"]

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
        """The settings a backend of ``provider`` takes as constructor options (those its
        declaration, :class:`~jurist.models.BackendInfo`, says it takes).

        >>> Transport(timeout=5, json_mode="none").backend_options("openai")
        {'timeout': 5.0, 'json_mode': None}
        >>> Transport(timeout=5).backend_options("hf")
        {}
        """
        from jurist.models._backends import backend_info  # declarations, no model class

        return backend_info(provider).connection_options(
            timeout=self.timeout, json_mode=self.json_mode
        )


class ModelSpec(BaseModel):
    """What rebuilds a model stack elsewhere: never a secret (see :meth:`Model.secrets`).

    ``options``: the backend's constructor options (JSON values); ``transport``: the
    settings of the layers around it (``max_retries=0``: none).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    name: str
    options: dict[str, Any] = {}
    transport: Transport = Transport(max_retries=0)
