"""What each backend declares before a model is built: :class:`BackendInfo`.

The layers above ``models/`` never name a provider. What they need to know about one
before its model exists (the command line checking its flags, an engine checking that a
batch API can carry a judge's requests, the catalog keeping an entry, the price table)
they ask the backend's declaration, looked up by the provider part of a spec
(:func:`backend_info`); what a built model can do they ask the model
(:attr:`~jurist.models.Model.capabilities`). A third-party backend declares itself with
:func:`~jurist.models.register_provider` (``info=``); one that declares nothing takes no
shared connection setting and has no batch API.

>>> backend_info("openai").takes >= {"base_url", "api_key", "timeout"}
True
>>> backend_info("hf").takes, backend_info("hf").runs_here
(frozenset(), True)
>>> server_spec("tiny")
'openai:tiny'
>>> [b.provider for b in backends() if b.batch_api]
['openai', 'anthropic']
>>> providers_shown(providers_taking("base_url"))
'openai:, reward-server: and litellm:'
>>> [b.provider for b in backends() if b.scalar]
['hf-reward', 'reward-server']
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CONNECTION_SETTINGS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MODEL",
    "BackendInfo",
    "backend_info",
    "backend_of",
    "backends",
    "declare_backend",
    "providers_shown",
    "providers_taking",
    "scripted_spec",
    "server_spec",
]

DEFAULT_MAX_RETRIES = 2
"""Retries of a transient failure (429, 408, 409, 5xx, a timeout) for a remote backend:
the one default, for the library and every command."""

DEFAULT_MODEL = "hf:Qwen/Qwen2.5-0.5B-Instruct"
"""The embedded default judge model (``get_model()`` with no spec and no
``$JURIST_MODEL``)."""

CONNECTION_SETTINGS = ("base_url", "api_key", "timeout", "json_mode")
"""The shared connection settings a backend may take as constructor options (the
command line's ``--base-url``, ``--api-key``, ``--timeout``, ``--json-mode``)."""


@dataclass(frozen=True)
class BackendInfo:
    """What one backend takes and can do, known before any of its models is built.

    ``takes``: the :data:`CONNECTION_SETTINGS` it takes as constructor options (a setting
    it does not take is refused when given for it: ``--base-url`` on a local model);
    ``key_env``: the environment variables its factory reads its API key from;
    ``any_server``: it speaks a protocol that many servers serve (OpenAI-compatible:
    vLLM, llama.cpp, Ollama...), so a bare model name with a server URL means this
    backend (:func:`server_spec`), and a server given by URL needs no key;
    ``batch_api``: the name of its provider's batch API (``None``: none), through which
    its requests can travel in files; ``batch_files``: its requests can be written as
    Batch API lines for an offline engine (``vllm run-batch``); ``runs_here``: its models
    run in this process (they cost nothing per token); ``from_spec``: its models are
    built from ``provider:name`` (``False``: it wraps an object of this process, which no
    catalog entry can rebuild); ``scripted``: its models answer from a script given in
    the process (tests, docs, the declarations' examples: :func:`scripted_spec`);
    ``identity_options``: identity key -> constructor option,
    for the identity values a catalog entry keeps to build the same model again;
    ``list_prices``: published prices (USD per million tokens: ``prompt``, ``cached``,
    ``cache_write``, ``completion``) of its widely used models, by name; ``prompt_cache``:
    its models take a ``prompt_cache`` option (they ask the provider to cache the static
    prompt, ``--no-prompt-cache`` turns it off); ``aliases``: other names users
    give the provider (``transformers`` for ``hf``); ``option_examples``: backend options
    of its own worth showing (``KEY=VALUE``, the command line's ``--model-option``);
    ``scalar``: its models are scalar reward models (their completion is a score, not
    text: :attr:`~jurist.models.Capabilities.scalar`), judged by a reward-model judge.
    """

    provider: str
    takes: frozenset[str] = frozenset()
    key_env: tuple[str, ...] = ()
    any_server: bool = False
    batch_api: str | None = None
    batch_files: bool = False
    runs_here: bool = False
    from_spec: bool = True
    scripted: bool = False
    identity_options: Mapping[str, str] = field(default_factory=dict)
    list_prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    prompt_cache: bool = False
    aliases: tuple[str, ...] = ()
    option_examples: tuple[str, ...] = ()
    scalar: bool = False

    def connection_options(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        json_mode: str | None = None,
        given: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The constructor options the shared connection settings give this backend: those
        it :attr:`takes` (``json_mode="none"``: no JSON output). ``given``: options already
        set for the model (in its spec's brackets), which win over these. A server given by
        URL (``base_url``) to an :attr:`any_server` backend with no key anywhere gets a
        placeholder key: local servers take none.

        >>> backend_info("hf").connection_options(timeout=30)
        {}
        >>> backend_info("litellm").connection_options(timeout=30, json_mode="none")
        {'timeout': 30}
        """
        given = given or {}
        out: dict[str, Any] = {}
        if timeout is not None and "timeout" in self.takes:
            out["timeout"] = timeout
        if "json_mode" in self.takes and json_mode is not None:
            out["json_mode"] = None if json_mode == "none" else json_mode
        if base_url and "base_url" in self.takes:
            out["base_url"] = base_url
        if api_key and "api_key" in self.takes:
            out["api_key"] = api_key
        elif (
            base_url
            and self.any_server
            and "api_key" not in given
            and not any(os.environ.get(name) for name in self.key_env)
        ):
            out["api_key"] = "not-needed"
        return {k: v for k, v in out.items() if k not in given}


_OPENAI_PRICES: dict[str, dict[str, float]] = {
    "gpt-4o": {"prompt": 2.5, "cached": 1.25, "completion": 10.0},
    "gpt-4o-mini": {"prompt": 0.15, "cached": 0.075, "completion": 0.6},
    "gpt-4.1": {"prompt": 2.0, "cached": 0.5, "completion": 8.0},
    "gpt-4.1-mini": {"prompt": 0.4, "cached": 0.1, "completion": 1.6},
    "gpt-4.1-nano": {"prompt": 0.1, "cached": 0.025, "completion": 0.4},
    "gpt-4-turbo": {"prompt": 10.0, "completion": 30.0},
    "gpt-3.5-turbo": {"prompt": 0.5, "completion": 1.5},
}

# Anthropic bills cache reads at a tenth of the input price and 5-minute cache writes at 1.25x
_ANTHROPIC_PRICES: dict[str, dict[str, float]] = {
    name: {"prompt": p, "cached": p / 10, "cache_write": p * 1.25, "completion": c}
    for name, p, c in (
        ("claude-opus-4-5", 5.0, 25.0),
        ("claude-opus-4-1", 15.0, 75.0),
        ("claude-sonnet-4-5", 3.0, 15.0),
        ("claude-sonnet-4", 3.0, 15.0),
        ("claude-haiku-4-5", 1.0, 5.0),
        ("claude-3-5-haiku", 0.8, 4.0),
    )
}

_INFOS: dict[str, BackendInfo] = {}


def declare_backend(info: BackendInfo) -> BackendInfo:
    """Record ``info`` as its provider's declaration (replacing an earlier one)."""
    _INFOS[info.provider] = info
    return info


for _info in (
    BackendInfo("mock", runs_here=True, scripted=True),
    BackendInfo(
        "openai",
        takes=frozenset(CONNECTION_SETTINGS),
        key_env=("OPENAI_API_KEY",),
        any_server=True,
        batch_api="Batch API",
        batch_files=True,
        identity_options={"base_url": "base_url"},
        list_prices=_OPENAI_PRICES,
    ),
    BackendInfo(
        "anthropic",
        takes=frozenset({"timeout"}),
        key_env=("ANTHROPIC_API_KEY",),
        batch_api="Message Batches",
        list_prices=_ANTHROPIC_PRICES,
        prompt_cache=True,
        option_examples=("prompt_cache=false",),
    ),
    BackendInfo(
        "hf",
        runs_here=True,
        identity_options={"revision": "revision", "dtype": "dtype"},
        aliases=("transformers", "huggingface"),
        option_examples=("dtype=bfloat16",),
    ),
    BackendInfo(
        "hf-reward",
        runs_here=True,
        identity_options={"revision": "revision", "dtype": "dtype"},
        option_examples=("dtype=bfloat16", "max_batch_tokens=16384"),
        scalar=True,
    ),
    BackendInfo(
        "reward-server",
        takes=frozenset({"base_url", "api_key", "timeout"}),
        identity_options={"base_url": "base_url", "api": "api"},
        option_examples=("api=classify", "api=pooling", "api=sglang"),
        scalar=True,
    ),
    BackendInfo(
        "vllm",
        runs_here=True,
        option_examples=("max_model_len=8192", "gpu_memory_utilization=0.8"),
    ),
    BackendInfo(
        "litellm",
        takes=frozenset({"base_url", "api_key", "timeout"}),
        identity_options={"api_base": "api_base"},
        option_examples=("drop_params=true",),
    ),
    BackendInfo("langchain", from_spec=False),
):
    declare_backend(_info)


def backend_info(provider: str) -> BackendInfo:
    """The declaration of ``provider``'s backend (an alias names it too); a provider
    that declared nothing takes no shared setting and has no batch API."""
    for info in _INFOS.values():
        if provider == info.provider or provider in info.aliases:
            return info
    return BackendInfo(provider)


def backend_of(spec: str) -> BackendInfo:
    """The declaration of the backend a ``provider:name`` spec names."""
    return backend_info(spec.partition(":")[0])


def backends() -> list[BackendInfo]:
    """Every declared backend, built-in first."""
    return list(_INFOS.values())


def server_spec(name: str) -> str:
    """The spec of model ``name`` served by a server given by its URL: the backend
    that speaks the protocol any server serves (OpenAI-compatible)."""
    return f"{_server().provider}:{name}"


def scripted_spec(name: str) -> str:
    """The spec of a model named ``name`` whose answers a script gives (the mock backend):
    what a judge kind's declaration uses as an example model.

    >>> scripted_spec("a")
    'mock:a'
    """
    return f"{next(i for i in _INFOS.values() if i.scripted).provider}:{name}"


def _server() -> BackendInfo:
    return next(info for info in _INFOS.values() if info.any_server)


def providers_taking(setting: str) -> list[str]:
    """The providers whose backends take the connection setting ``setting``."""
    return [info.provider for info in _INFOS.values() if setting in info.takes]


def providers_shown(providers: list[str]) -> str:
    """``a:, b: and c:`` for messages."""
    shown = [f"{p}:" for p in providers]
    return " and ".join(shown) if len(shown) < 3 else ", ".join(shown[:-1]) + " and " + shown[-1]
