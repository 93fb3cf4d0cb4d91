"""The judge backend a reward function receives as ``llm_backend``, built from ``llm_config``.

``llm_config`` keys:

- ``backend_type``: a jurist provider (``"hf"``, ``"openai"``, ``"mock"``, ``"vllm"``,
  ``"litellm"``, or any registered one); ``"transformers"`` is read as ``"hf"``.
- ``model_name``: the model; ``None`` (or absent) for ``$LLM_JUDGE_MODEL``, else
  ``Qwen/Qwen2.5-0.5B-Instruct``. The environment is read when the backend is built
  (on the first call), not at import.
- ``max_tokens`` (default 10), ``temperature`` (default 0.1): sampling of the judge.
- ``template``: the judge template (default ``"reward"``).
- anything else (``base_url``, ``api_key``, ``outputs`` for ``mock``, ...) goes to
  :func:`jurist.get_model` as a backend option.

>>> backend = build_backend({"backend_type": "mock", "model_name": "judge",
...                          "outputs": ["Score: 0.9"]})
>>> backend.model.spec, backend.max_tokens, backend.temperature
('mock:judge', 10, 0.1)
>>> backend.generate("Is Paris the capital of France?")
'Score: 0.9'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from jurist._sync import run_sync
from jurist.errors import ConfigError
from jurist.judges import LLMJudge
from jurist.models import DEFAULT_MODEL, Model, backend_info, get_model
from jurist.templates import Template
from jurist.types import Message, Request

__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_LLM_CONFIG",
    "RewardBackend",
    "build_backend",
    "resolve_model_name",
]

_DEFAULT_PROVIDER = DEFAULT_MODEL.partition(":")[0]
DEFAULT_JUDGE_MODEL = DEFAULT_MODEL.partition(":")[2]
"""The reward judge's model when neither ``model_name`` nor ``$LLM_JUDGE_MODEL`` names one
(jurist's default model's name, :data:`~jurist.models.DEFAULT_MODEL`)."""
DEFAULT_LLM_CONFIG: dict[str, Any] = {
    "backend_type": _DEFAULT_PROVIDER,
    "model_name": None,  # $LLM_JUDGE_MODEL, else DEFAULT_JUDGE_MODEL
    "max_tokens": 10,
    "temperature": 0.1,
}
"""What an ``llm_config`` leaves out: these keys' values (:func:`build_backend` merges)."""
_KNOWN_KEYS = ("backend_type", "model_name", "max_tokens", "temperature", "template")


class RewardBackend:
    """A judge model with its sampling settings; what ``llm_backend`` is.

    ``judge`` is the :class:`~jurist.judges.LLMJudge` rewards score with (the ``reward``
    template by default). ``generate(prompt)`` sends one plain user message and returns the
    text, for reward functions that write their own prompt.

    ``model`` is a jurist model, a LangChain chat model or a ``"provider:name"`` spec; with
    a spec, ``base_url``, ``api_key``, ``max_retries`` and other backend options
    (``timeout``, ...) build it through :func:`jurist.get_model` (the one model stack), so
    ``RewardBackend("openai:judge", base_url="http://127.0.0.1:8000/v1")`` reaches a local
    OpenAI-compatible server, as the spec's bracket form does. Options given with a model
    object are refused (they could not apply).

    >>> backend = RewardBackend("openai:judge", base_url="http://127.0.0.1:8000/v1", api_key="x")
    >>> backend.model.identity()
    {'provider': 'openai', 'name': 'judge', 'base_url': 'http://127.0.0.1:8000/v1'}
    """

    def __init__(
        self,
        model: Model | str | Any,
        *,
        max_tokens: int = 10,
        temperature: float | None = 0.1,
        template: str | Template = "reward",
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int | None = None,
        **model_options: Any,
    ) -> None:
        if base_url is not None:
            model_options["base_url"] = base_url
        if api_key is not None:
            model_options["api_key"] = api_key
        self.model: Model = get_model(model, max_retries=max_retries, **model_options)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.judge = LLMJudge(
            self.model, template=template, max_tokens=max_tokens, temperature=temperature
        )

    def __repr__(self) -> str:
        return (
            f"RewardBackend({self.model.spec!r}, max_tokens={self.max_tokens}, "
            f"temperature={self.temperature})"
        )

    async def agenerate(self, prompt: str) -> str:
        """The model's reply to ``prompt`` (one user message)."""
        request = Request(
            messages=(Message(role="user", content=prompt),),
            max_tokens=self.max_tokens,
            temperature=self.temperature,
        )
        return (await self.model.complete(request)).text

    def generate(self, prompt: str) -> str:
        """Sync twin of :meth:`agenerate`."""
        return run_sync(self.agenerate(prompt))


def resolve_model_name(name: str | None) -> str:
    """``name``, else ``$LLM_JUDGE_MODEL``, else the default judge model."""
    return name or os.environ.get("LLM_JUDGE_MODEL") or DEFAULT_JUDGE_MODEL


def build_backend(llm_config: Mapping[str, Any]) -> RewardBackend:
    """Build the backend ``llm_config`` describes (see the module doc)."""
    config = {**DEFAULT_LLM_CONFIG, **dict(llm_config)}
    backend_type = config.get("backend_type")
    if not isinstance(backend_type, str) or not backend_type:
        raise ConfigError(f"llm_config: backend_type must be a provider name, got {backend_type!r}")
    provider = backend_info(backend_type.lower()).provider  # an alias names it too
    max_tokens = config.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ConfigError(f"llm_config: max_tokens must be a positive integer, got {max_tokens!r}")
    temperature = config.get("temperature")
    if temperature is not None and not isinstance(temperature, int | float):
        raise ConfigError(f"llm_config: temperature must be a number, got {temperature!r}")
    options = {k: v for k, v in config.items() if k not in _KNOWN_KEYS}
    name = resolve_model_name(config.get("model_name"))
    model = get_model(f"{provider}:{name}", **options)
    return RewardBackend(
        model,
        max_tokens=max_tokens,
        temperature=None if temperature is None else float(temperature),
        template=config.get("template") or "reward",
    )
