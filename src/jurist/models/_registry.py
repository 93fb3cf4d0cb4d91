"""``get_model("provider:name", **options)`` and the provider registry.

Built-in providers are registered here with factories that import their backend module
only when called, so optional packages (torch, transformers, langchain) load lazily.
Third-party backends register through the ``jurist.models`` entry-point group: each entry
point is named after its provider and loads a factory ``(name, **options) -> Model``.

A model built from a spec string retries transient API errors (429, 408, 409, 5xx, timeouts,
dropped connections) by default when its calls leave the process: ``get_model`` wraps a
remote backend in :class:`~jurist.models.RetryModel` with ``DEFAULT_MAX_RETRIES`` retries
(like the OpenAI SDK's default). ``max_retries=0`` turns that off; local backends (``hf``,
``mock``) are not wrapped unless ``max_retries`` asks for it.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib.metadata import entry_points
from typing import Any

from jurist._secrets import remember_secret, scrub, shown_name
from jurist.errors import ConfigError
from jurist.models._backends import DEFAULT_MODEL, BackendInfo, declare_backend
from jurist.models._model import Model
from jurist.models._spec import merge_options, split_spec_options
from jurist.models._stack import DEFAULT_MAX_RETRIES, Transport, build_stack

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MODEL",
    "ModelFactory",
    "ParsedSpec",
    "build_backend",
    "get_model",
    "known_providers",
    "parse_spec",
    "register_provider",
]

ENTRY_POINT_GROUP = "jurist.models"

ModelFactory = Callable[..., Model]
_PROVIDERS: dict[str, ModelFactory] = {}


def register_provider(
    name: str, factory: ModelFactory | None = None, *, info: BackendInfo | None = None
) -> Callable[[ModelFactory], ModelFactory] | ModelFactory:
    """Register a backend factory under a provider name (usable as a decorator);
    ``info``: what the backend takes and can do (:class:`~jurist.models.BackendInfo`)."""

    def deco(fn: ModelFactory) -> ModelFactory:
        _PROVIDERS[name] = fn
        if info is not None:
            declare_backend(info if info.provider == name else replace(info, provider=name))
        return fn

    return deco(factory) if factory is not None else deco


def _builtin(module: str, attr: str) -> ModelFactory:
    def factory(name: str, **options: Any) -> Model:
        import importlib

        mod = importlib.import_module(module)
        fn: ModelFactory = getattr(mod, attr)
        return fn(name, **options)

    factory.__name__ = f"{module}.{attr}"
    return factory


for _name, _mod, _attr in [
    ("mock", "jurist.models._mock", "build_mock"),
    ("openai", "jurist.models._prefill", "build_server"),  # build_openai, or with prefill=
    ("anthropic", "jurist.models._anthropic", "build_anthropic"),
    ("hf", "jurist.models._hf", "build_hf"),
    ("hf-reward", "jurist.models._hf_reward", "build_hf_reward"),
    ("reward-server", "jurist.models._reward_server", "build_reward_server"),
    ("vllm", "jurist.models._vllm", "build_vllm"),
    ("litellm", "jurist.models._litellm", "build_litellm"),
]:
    _PROVIDERS[_name] = _builtin(_mod, _attr)


def _entry_point_factories() -> dict[str, Callable[[], ModelFactory]]:
    found: dict[str, Callable[[], ModelFactory]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found[ep.name] = ep.load
    return found


def known_providers() -> list[str]:
    """Every provider name ``get_model`` accepts, built-in and from entry points."""
    return sorted(set(_PROVIDERS) | set(_entry_point_factories()))


def _factory(provider: str) -> ModelFactory:
    if provider in _PROVIDERS:
        return _PROVIDERS[provider]
    eps = _entry_point_factories()
    if provider in eps:
        factory = eps[provider]()
        _PROVIDERS[provider] = factory
        return factory
    known = known_providers()
    hint = difflib.get_close_matches(provider, known, n=1)
    did_you_mean = f" Did you mean {hint[0]!r}?" if hint else ""
    raise ConfigError(
        f"unknown model provider {provider!r}; known providers: {', '.join(known)}.{did_you_mean}"
    )


def get_model(
    model: str | Model | Any | None = None, /, *, max_retries: int | None = None, **options: Any
) -> Model:
    """Build a model from ``"provider:name"``, or adapt a model object.

    With no argument: ``$JURIST_MODEL``, else the embedded default
    ``hf:Qwen/Qwen2.5-0.5B-Instruct`` (offline, without it on disk and with SmolLM2's GGUF
    installed: that demonstration-grade model, with a warning; see
    :mod:`jurist.models._default`). A :class:`Model` is returned as is; a LangChain
    chat model is wrapped. Options go to the provider's backend (``base_url``,
    ``api_key``, ``outputs`` for ``mock``, ...); the spec may carry them too,
    ``"openai:gpt-4o-mini[api_key=...,timeout=30]"`` (see :mod:`jurist.models._spec`: they
    never become part of the model's name).

    ``max_retries``: retries of transient API errors (429, 5xx, timeouts) through
    :class:`~jurist.models.RetryModel`. ``None`` (the default) means
    ``DEFAULT_MAX_RETRIES`` (2) for a remote backend built from a spec string and none
    for a local one or a LangChain object (which retries on its own); ``0`` turns
    retrying off.

    >>> get_model("mock:judge", outputs=["Correct"]).spec
    'mock:judge'
    >>> get_model("openai:gpt-4o-mini", api_key="k")
    RetryModel(OpenAIModel('openai:gpt-4o-mini'), max_retries=2)
    >>> get_model("openai:gpt-4o-mini", api_key="k", max_retries=0)
    OpenAIModel('openai:gpt-4o-mini')
    >>> get_model("nope:x")
    Traceback (most recent call last):
    ...
    jurist.errors.ConfigError: unknown model provider 'nope'; known providers: ...
    """
    if max_retries is not None and (
        isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0
    ):
        raise ConfigError(f"max_retries must be a whole number >= 0, got {max_retries!r}")
    if isinstance(model, Model):
        given = sorted([*options, *(["max_retries"] if max_retries is not None else [])])
        if given:
            raise ConfigError(f"options {given} cannot be applied to an existing model object")
        return model
    if model is None:
        model = os.environ.get("JURIST_MODEL") or _default_spec()
    if not isinstance(model, str):
        from jurist.models._langchain import is_langchain_model, wrap_langchain

        if is_langchain_model(model):
            return _with_retries(wrap_langchain(model, **options), max_retries or 0)
        raise ConfigError(
            f"cannot use {type(model).__name__} as a model: pass 'provider:name', a "
            "jurist Model or a LangChain chat model"
        )
    parsed = parse_spec(model)
    built = build_backend(parsed, **options)
    if max_retries is None:
        max_retries = DEFAULT_MAX_RETRIES if built.capabilities.remote else 0
    return _with_retries(built, max_retries)


@dataclass(frozen=True)
class ParsedSpec:
    """A ``provider:name[key=value,...]`` spec read once: its provider, its model name
    and the backend options written in its brackets (:mod:`jurist.models._spec`)."""

    provider: str
    name: str
    options: dict[str, Any] = field(repr=False)  # may hold a key
    text: str = field(repr=False)
    """The spec as given (for messages; scrub it before showing it)."""


def parse_spec(spec: str) -> ParsedSpec:
    """Read ``spec`` once (the provider is checked when the backend is built).

    >>> parsed = parse_spec("openai:j[timeout=30]")
    >>> parsed, parsed.options
    (ParsedSpec(provider='openai', name='j'), {'timeout': 30})
    """
    provider, sep, name = spec.partition(":")
    if not sep or not provider or not name:
        raise ConfigError(
            f"model spec {scrub(spec)!r} must be 'provider:name' (known providers: "
            f"{', '.join(known_providers())}), e.g. 'openai:gpt-4o-mini' or "
            "'hf:/path/to/model'"
        )
    name, spec_options = split_spec_options(name, spec=spec)
    if shown_name(name) != name:  # a key where the name goes: hidden wherever it is written
        remember_secret(name)
    return ParsedSpec(provider=provider, name=name, options=spec_options, text=spec)


def build_backend(parsed: ParsedSpec, **options: Any) -> Model:
    """The backend ``parsed`` names, alone (no retry, limits or cache layer: the stack
    builder adds those), given ``options`` beside the spec's own (one given both ways is
    refused)."""
    if parsed.options:
        options = merge_options(parsed.options, options, spec=parsed.text)
    return _factory(parsed.provider)(parsed.name, **options)


def _default_spec() -> str:
    """The default model's spec; the demonstration model's comes with a logged warning."""
    from jurist.models._default import choose_default_model

    choice = choose_default_model()
    if choice.note is not None:
        logging.getLogger("jurist.models").warning("%s", choice.note)
    return choice.spec


def _with_retries(model: Model, max_retries: int) -> Model:
    return build_stack(model, Transport(max_retries=max_retries))
