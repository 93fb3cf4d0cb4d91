"""The ``litellm`` backend: any LiteLLM route through ``litellm.acompletion``.

A route is what LiteLLM calls a model, ``provider/model``::

    model = get_model("litellm:anthropic/claude-sonnet-4")      # key from $ANTHROPIC_API_KEY
    model = get_model("litellm:bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0")
    model = get_model("litellm:openai/tiny", api_base="http://127.0.0.1:8000/v1", api_key="x")

LiteLLM is an optional extra (``pip install 'jurist[litellm]'``); it is imported when the
first ``litellm:`` model is built, never by ``import jurist``. Each call is one
``litellm.acompletion`` with ``num_retries=0`` and ``max_retries=0``: retrying is the job
of :class:`~jurist.models.RetryModel`, which :func:`~jurist.models.get_model` puts around
this remote backend, so a failure is never retried twice over.

Options (``get_model("litellm:ROUTE", **options)``):

- ``api_base`` (or its alias ``base_url``): the endpoint, for OpenAI-compatible servers,
  proxies and self-hosted routes; part of :meth:`LiteLLMModel.identity` (scrubbed).
- ``api_key``: passed to LiteLLM as is; without it LiteLLM reads the provider's own
  environment variable (``ANTHROPIC_API_KEY``, ...). Never part of the identity, a repr
  or an error message.
- ``timeout``: seconds per attempt (default 60); ``Request.timeout`` overrides it. It is a
  hard deadline on the whole call, whatever the route's HTTP client does.
- ``drop_params`` (default False): what the request asks that the route cannot take
  fails with :class:`~jurist.errors.CapabilityError` naming the field. ``True`` lets
  LiteLLM drop it silently instead (its own ``drop_params``).
- ``logprobs``, ``json_schema`` (default None: decided per route, see below) force a
  capability on or off; ``top_logprobs_max`` (default 20) is the most alternatives asked.
- ``api_version``, ``headers`` (sent as ``extra_headers``) and ``litellm_params`` (any
  other ``acompletion`` keyword: ``aws_region_name``, ``vertex_project``, ...).

Capabilities are decided per route from LiteLLM's own tables:
``litellm.get_supported_openai_params(route)`` lists the OpenAI parameters the route
takes, so ``logprobs`` needs ``logprobs`` there, ``top_logprobs`` needs ``top_logprobs``
(then up to ``top_logprobs_max``), and ``json_schema`` needs ``response_format`` plus
either ``litellm.supports_response_schema(route)`` or an OpenAI-compatible provider
(``openai``, ``hosted_vllm``) that forwards ``response_format`` to the server unchanged.
A route LiteLLM has no table for declares none of them.

Errors are the openai backend's classes, so the retry and limit wrappers behave the same:
429 is :class:`~jurist.errors.RateLimitError` with ``retry_after`` read from the answer's
``Retry-After`` / ``retry-after-ms`` headers, 408, 409 and 5xx are transient status errors,
no answer in time is :class:`~jurist.errors.APITimeoutError`, a failed or dropped
connection :class:`~jurist.errors.APIConnectionError`, and 400, 401, 403, 404 fail at once.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import time
from collections.abc import Mapping
from typing import Any

from jurist._secrets import remember_secret, remember_secrets_in, scrub
from jurist.errors import (
    APITimeoutError,
    CapabilityError,
    ConfigError,
    MissingDependencyError,
    ModelError,
)
from jurist.models._litellm_wire import completion_of, translate_error
from jurist.models._model import Capabilities, Model, refuse_images
from jurist.models._reasoning import litellm_fields, samples
from jurist.types import Completion, Request

__all__ = ["LiteLLMModel", "build_litellm", "import_litellm"]

# Providers whose route sends ``response_format`` to an OpenAI-compatible server as given.
_FORWARDS_RESPONSE_FORMAT = frozenset({"openai", "hosted_vllm"})
_SCHEMA_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Request fields checked against the route's supported parameters: field -> LiteLLM param.
_SAMPLING = (("temperature", "temperature"), ("top_p", "top_p"), ("seed", "seed"), ("stop", "stop"))


def import_litellm() -> Any:
    """The ``litellm`` module (its stdout banner off), or
    :class:`~jurist.errors.MissingDependencyError` naming the extra to install."""
    try:
        litellm: Any = importlib.import_module("litellm")
    except ImportError as exc:
        raise MissingDependencyError("litellm", "litellm", "The litellm: backend") from exc
    # LiteLLM prints a "Give Feedback / Get Help" banner to stdout on every failed call
    # (its own Router turns it off too); jurist's errors say what failed.
    litellm.suppress_debug_info = True
    return litellm


class LiteLLMModel(Model):
    """A model behind one LiteLLM route, called through ``litellm.acompletion``.

    ``name`` is the route (``"anthropic/claude-sonnet-4"``); see the module for options.
    """

    provider = "litellm"

    def __init__(
        self,
        name: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        drop_params: bool = False,
        logprobs: bool | None = None,
        top_logprobs_max: int = 20,
        json_schema: bool | None = None,
        api_version: str | None = None,
        headers: Mapping[str, str] | None = None,
        litellm_params: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigError(f"litellm model {name!r}: timeout must be > 0, got {timeout!r}")
        if top_logprobs_max < 0:
            raise ConfigError(
                f"litellm model {name!r}: top_logprobs_max must be >= 0, got {top_logprobs_max}"
            )
        if api_base is not None and not api_base.startswith(("http://", "https://")):
            raise ConfigError(
                f"litellm model {name!r}: api_base {api_base!r} must start with http:// or https://"
            )
        params = dict(litellm_params or {})
        self._params = dict(params)
        clash = sorted(set(params) & _RESERVED)
        if clash:
            raise ConfigError(
                f"litellm model {name!r}: litellm_params may not set {clash}; "
                "use the backend's own options (api_base, api_key, timeout, ...)"
            )
        remember_secret(api_key)
        remember_secrets_in({"headers": dict(headers or {}), "litellm_params": params})
        # what rebuild_options() gives back: the options given, never a key, headers or
        # litellm_params (either may carry credentials)
        self._given: dict[str, Any] = {
            k: v
            for k, v, default in (
                ("api_base", api_base, None),
                ("timeout", timeout, 60.0),
                ("drop_params", drop_params, False),
                ("logprobs", logprobs, None),
                ("top_logprobs_max", top_logprobs_max, 20),
                ("json_schema", json_schema, None),
                ("api_version", api_version, None),
            )
            if v != default
        }
        self.name = name
        self.api_base = api_base.rstrip("/") if api_base else None
        self.timeout = float(timeout)
        self.drop_params = bool(drop_params)
        self._litellm = import_litellm()
        self.route_provider, self.supported_params = self._route(name)
        supported = self.supported_params
        if logprobs is None:
            logprobs = supported is not None and "logprobs" in supported
        top_ok = logprobs and (supported is None or "top_logprobs" in supported)
        self._top_max = top_logprobs_max if top_ok else 0
        self._logprobs = bool(logprobs)
        if json_schema is None:
            json_schema = (
                supported is not None
                and "response_format" in supported
                and (
                    self.route_provider in _FORWARDS_RESPONSE_FORMAT
                    or bool(self._litellm.supports_response_schema(model=name))
                )
            )
        self._json_schema = bool(json_schema)
        # What every call sends besides the request's own fields.
        self._fixed: dict[str, Any] = {
            **params,
            "model": name,
            "num_retries": 0,  # RetryModel retries; never twice over
            "max_retries": 0,  # nor the provider SDK underneath
            "drop_params": self.drop_params,
        }
        if self.api_base:
            self._fixed["api_base"] = self.api_base
        if api_key:
            self._fixed["api_key"] = api_key
        if api_version:
            self._fixed["api_version"] = api_version
        if headers:
            self._fixed["extra_headers"] = dict(headers)

    def rebuild_options(self) -> dict[str, Any]:
        """The options that build this model again (a catalog entry, a Ray actor): those
        given, except ``api_key``, ``headers`` and ``litellm_params``, which may carry
        credentials: they are :meth:`secrets`.
        """
        return dict(self._given)

    def secrets(self) -> dict[str, Any]:
        """``api_key``, ``headers`` and ``litellm_params`` as given. Without an
        ``api_key``, the route's key as LiteLLM reads it here, ``$<PROVIDER>_API_KEY``
        (``ANTHROPIC_API_KEY`` for ``anthropic/...``) when set, so a copy rebuilt in
        another process (a Ray actor) passes it to LiteLLM with each call instead of
        reading an environment it does not have."""
        out: dict[str, Any] = {}
        key = self._fixed.get("api_key")
        if key is None:
            key = os.environ.get(f"{self.route_provider.upper()}_API_KEY") or None
        if key is not None:
            out["api_key"] = key
        if "extra_headers" in self._fixed:
            out["headers"] = dict(self._fixed["extra_headers"])
        if self._params:
            out["litellm_params"] = dict(self._params)
        return out

    def _route(self, name: str) -> tuple[str, frozenset[str] | None]:
        """The route's provider and the OpenAI parameters it takes (None: not known)."""
        try:
            _, provider, _, _ = self._litellm.get_llm_provider(model=name, api_base=self.api_base)
        except Exception as exc:  # LiteLLM raises its BadRequestError for an unknown route
            raise ConfigError(
                f"litellm route {name!r} names no provider LiteLLM knows; write it as "
                "'provider/model', e.g. 'openai/gpt-4o-mini' or 'anthropic/claude-sonnet-4' "
                f"({scrub(str(exc)).strip().splitlines()[0][:300]})"
            ) from None
        params = self._litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
        return str(provider), (frozenset(params) if params is not None else None)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            logprobs=self._logprobs,
            top_logprobs=self._top_max,
            json_schema=self._json_schema,
            remote=True,
            thinking=self.supported_params is None
            or bool({"reasoning_effort", "thinking"} & self.supported_params),
        )

    def identity(self) -> dict[str, Any]:
        # never the key; a key inside the URL (user:pw@, ?api-key=) is scrubbed
        return {"provider": self.provider, "name": self.name, "api_base": scrub(self.api_base)}

    # -- the call -----------------------------------------------------------------------

    async def complete(self, request: Request) -> Completion:
        kwargs = self._kwargs(request)
        seconds = self.timeout if request.timeout is None else float(request.timeout)
        kwargs["timeout"] = seconds
        start = time.perf_counter()
        try:
            async with asyncio.timeout(seconds):
                response = await self._litellm.acompletion(**kwargs)
        except TimeoutError:
            raise APITimeoutError(
                f"{self.spec}: no answer from {self._where} within {seconds:g} s",
                model=self.spec,
            ) from None
        except ModelError:
            raise
        except Exception as exc:
            error = translate_error(
                exc, self.spec, self._where, seconds, has_key="api_key" in self._fixed
            )
            if error is None:
                raise
            raise error from exc
        return completion_of(response, self.spec, self.name, time.perf_counter() - start)

    @property
    def _where(self) -> str:
        return scrub(self.api_base) if self.api_base else f"the {self.route_provider} API"

    def _kwargs(self, request: Request) -> dict[str, Any]:
        refuse_images(self.spec, request)
        kwargs = dict(self._fixed)
        kwargs["messages"] = [{"role": m.role, "content": m.content} for m in request.messages]
        if request.max_tokens is not None:
            kwargs[self._max_tokens_param()] = request.max_tokens
        for field, param in _SAMPLING:
            value = getattr(request, field)
            if value is None or (field == "stop" and not value):
                continue
            if field in ("temperature", "top_p") and not samples(request.reasoning):
                continue  # a thinking model takes only its default sampling
            self._check_param(param, field)
            kwargs[param] = list(value) if field == "stop" else value
        if request.logprobs or request.top_logprobs:
            if not self._logprobs:
                raise CapabilityError(
                    f"{self.spec}: the route returns no logprobs ({self._params_note()})",
                    model=self.spec,
                )
            kwargs["logprobs"] = True
            if request.top_logprobs:
                if request.top_logprobs > self._top_max:
                    raise CapabilityError(
                        f"{self.spec}: the route returns at most {self._top_max} top "
                        f"logprobs, {request.top_logprobs} were asked ({self._params_note()})",
                        model=self.spec,
                    )
                kwargs["top_logprobs"] = request.top_logprobs
        if request.json_schema is not None:
            if not self._json_schema:
                raise CapabilityError(
                    f"{self.spec}: the route cannot constrain output to a JSON schema "
                    f"({self._params_note()}; json_schema=True forces it on)",
                    model=self.spec,
                )
            kwargs["response_format"] = _response_format(request.json_schema)
        if request.reasoning is not None:  # LiteLLM's reasoning_effort, or thinking for a budget
            supported = self.supported_params
            budgets = supported is None or "thinking" in supported
            fields = litellm_fields(request.reasoning, budgets)
            for param in fields:
                self._check_param(param, "reasoning")
            kwargs.update(fields)
        if request.extra:
            kwargs.update(request.extra)
        return kwargs

    def _max_tokens_param(self) -> str:
        supported = self.supported_params
        if supported is not None and "max_tokens" not in supported:
            if "max_completion_tokens" in supported:
                return "max_completion_tokens"
            self._check_param("max_tokens", "max_tokens")
        return "max_tokens"

    def _check_param(self, param: str, field: str) -> None:
        supported = self.supported_params
        if self.drop_params or supported is None or param in supported:
            return
        raise CapabilityError(
            f"{self.spec}: the route does not take {param!r} (Request.{field}); leave it "
            f"unset, or pass drop_params=True to let LiteLLM drop it ({self._params_note()})",
            model=self.spec,
        )

    def _params_note(self) -> str:
        supported = self.supported_params
        if supported is None:
            return f"LiteLLM lists no supported parameters for provider {self.route_provider!r}"
        return f"LiteLLM's supported parameters for it: {', '.join(sorted(supported))}"


_RESERVED = frozenset(
    {
        "model",
        "messages",
        "api_base",
        "base_url",
        "api_key",
        "timeout",
        "num_retries",
        "max_retries",
        "drop_params",
        "stream",
    }
)


def _response_format(schema: dict[str, Any]) -> dict[str, Any]:
    title = schema.get("title")
    name = title if isinstance(title, str) and _SCHEMA_NAME.fullmatch(title) else "output"
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def build_litellm(name: str, **options: Any) -> LiteLLMModel:
    """Factory used by the registry (``get_model("litellm:ROUTE", **options)``).

    ``base_url`` is taken as ``api_base`` (the name the other backends use).
    """
    if "base_url" in options:
        base_url = options.pop("base_url")
        if options.get("api_base") not in (None, base_url):
            raise ConfigError(
                f"litellm model {name!r}: base_url and api_base are the same option; "
                "give one of them"
            )
        options["api_base"] = base_url
    try:
        return LiteLLMModel(name, **options)
    except TypeError as exc:
        raise ConfigError(f"litellm model {name!r}: {exc}") from None
