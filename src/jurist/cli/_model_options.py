"""Building the model stack the CLI judges with: backend, retry, limits, cache."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jurist.models import (
    DEFAULT_MODEL,
    CachedModel,
    LimitedModel,
    Model,
    RetryModel,
    get_model,
)

__all__ = ["build_model", "resolve_model_spec"]


def resolve_model_spec(model: str | None, base_url: str | None) -> str:
    """``--model``, else ``$JURIST_MODEL``, else the embedded default.

    A bare name with ``--base-url`` means an OpenAI-compatible server: ``openai:<name>``.
    """
    spec = model or os.environ.get("JURIST_MODEL") or DEFAULT_MODEL
    if base_url and ":" not in spec:
        spec = f"openai:{spec}"
    return spec


def build_model(
    spec: str,
    *,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    max_retries: int,
    rpm: int | None = None,
    tpm: int | None = None,
    cache: bool = True,
    cache_path: Path | None = None,
    json_mode: str | None = "json_schema",
) -> Model:
    """The backend wrapped as cache(retry(limits(backend))).

    Limits sit innermost so every attempt, retries included, is paced; retry sits outside
    so a backoff sleep never holds a concurrency slot; the cache sits outermost so a hit
    costs no slot and no attempt.
    """
    options: dict[str, Any] = {}
    provider = spec.partition(":")[0]
    if provider == "openai":
        options["timeout"] = timeout
        options["json_mode"] = None if json_mode in (None, "none") else json_mode
        if base_url:
            options["base_url"] = base_url
        if api_key:
            options["api_key"] = api_key
        elif base_url and not os.environ.get("OPENAI_API_KEY"):
            options["api_key"] = "not-needed"
    elif base_url:
        from jurist.errors import ConfigError

        raise ConfigError(f"--base-url only applies to openai: models, not {spec!r}")
    model: Model = get_model(spec, **options)
    if rpm or tpm:
        model = LimitedModel(model, max_calls_per_min=rpm, max_tokens_per_min=tpm)
    if max_retries > 0 and model.capabilities.remote:
        model = RetryModel(model, max_retries=max_retries)
    if cache:
        model = CachedModel(model, cache_path)
    return model
