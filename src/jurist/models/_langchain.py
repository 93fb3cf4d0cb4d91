"""The LangChain adapter: any ``langchain_core`` chat model used as a jurist :class:`Model`.

uqlm's users hold ``ChatOpenAI(...)`` and similar objects; ``jurist.get_model(llm)`` wraps
them. A :class:`~langchain_core.runnables.RunnableBinding` around a chat model
(``llm.bind(logprobs=True)``) is accepted too.

Sampling parameters: a LangChain model carries its own ``temperature``, ``max_tokens`` and so
on. The adapter forwards a request's parameter only when the request sets it *and* the model
declares a field of that name (``ChatOpenAI`` declares ``temperature``, ``max_tokens``,
``top_p``, ``seed``, ``logprobs``, ``top_logprobs``); anything else keeps the model's own
setting. ``stop`` goes through LangChain's standard ``stop`` argument. ``request.extra`` is
passed as keyword arguments as is (provider-specific fields). ``forward_params=False`` turns
all of this off and calls the model exactly as configured.

:func:`is_langchain_model` never imports LangChain for an object whose class does not come
from it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from jurist._secrets import is_secret_key
from jurist.errors import (
    APIConnectionError,
    APITimeoutError,
    CapabilityError,
    ConfigError,
    JuristError,
    MissingDependencyError,
    ModelError,
    status_error,
)
from jurist.models._model import Capabilities, Model, refuse_images
from jurist.models._reasoning import refuse_reasoning
from jurist.types import Completion, Request, TokenLogprob, TopLogprob, Usage

__all__ = ["LangChainModel", "is_langchain_model", "wrap_langchain"]

_FORWARDED = ("max_tokens", "temperature", "top_p", "seed")
_STOP_REASONS = {"stop": "stop", "end_turn": "stop", "stop_sequence": "stop", "eos": "stop"}
_LENGTH_REASONS = {"length", "max_tokens", "max_output_tokens"}


def _from_langchain(obj: object) -> bool:
    return any(
        (getattr(cls, "__module__", "") or "").startswith(("langchain_core.", "langchain."))
        for cls in type(obj).__mro__
    )


def _chat_model(obj: object) -> Any | None:
    """The ``BaseChatModel`` inside ``obj`` (itself, or a binding's bound model), or None."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.runnables import RunnableBinding

    while isinstance(obj, RunnableBinding):
        obj = obj.bound
    return obj if isinstance(obj, BaseChatModel) else None


def is_langchain_model(obj: object) -> bool:
    """Whether ``obj`` is a LangChain chat model (or a binding around one).

    >>> is_langchain_model("openai:gpt-4o-mini"), is_langchain_model(object())
    (False, False)
    """
    if not _from_langchain(obj):
        return False
    try:
        return _chat_model(obj) is not None
    except ImportError:  # pragma: no cover - a langchain class without langchain_core
        return False


def _fields(llm: Any) -> set[str]:
    fields = getattr(type(llm), "model_fields", None)
    return set(fields) if isinstance(fields, dict) else set()


def _model_name(llm: Any) -> str:
    for attr in ("model_name", "model", "model_id", "deployment_name"):
        value = getattr(llm, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(llm).__name__


def _public_url(url: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class LangChainModel(Model):
    """A LangChain chat model behind jurist's :class:`Model` interface."""

    provider = "langchain"

    def __init__(self, llm: Any, *, name: str | None = None, forward_params: bool = True) -> None:
        chat = _chat_model(llm) if _from_langchain(llm) else None
        if chat is None:
            raise ConfigError(f"{type(llm).__name__} is not a LangChain chat model (BaseChatModel)")
        self.llm = llm
        self.chat_model = chat
        self.name = name or _model_name(chat)
        self.forward_params = forward_params
        self._fields = _fields(chat)

    @property
    def capabilities(self) -> Capabilities:
        logprobs = self.forward_params and "logprobs" in self._fields
        return Capabilities(
            logprobs=logprobs,
            top_logprobs=20 if logprobs and "top_logprobs" in self._fields else 0,
            remote=True,
        )

    def rebuild_options(self) -> dict[str, Any]:
        """A LangChain object lives in this process: it cannot be rebuilt in another."""
        raise ConfigError(
            f"{self.spec} is a LangChain object of this process: it cannot be rebuilt in "
            "another process (a Ray actor); use a provider:name model"
        )

    def identity(self) -> dict[str, Any]:
        cls = type(self.chat_model)
        ident: dict[str, Any] = {
            "provider": self.provider,
            "name": self.name,
            "class": f"{cls.__module__}.{cls.__qualname__}",
        }
        for attr in ("openai_api_base", "base_url", "anthropic_api_url", "endpoint_url"):
            value = getattr(self.chat_model, attr, None)
            if isinstance(value, str) and value:
                ident["base_url"] = _public_url(value)
                break
        for attr in ("temperature", "max_tokens", "top_p", "seed"):
            value = getattr(self.chat_model, attr, None)
            if isinstance(value, (int, float, str)) and not isinstance(value, bool):
                ident.setdefault("defaults", {})[attr] = value
        bound = getattr(self.llm, "kwargs", None)
        if self.llm is not self.chat_model and isinstance(bound, dict):
            ident["bound"] = {
                k: v
                for k, v in sorted(bound.items())
                if isinstance(v, (str, int, float, bool)) and not is_secret_key(k)
            }
        return ident

    def _kwargs(self, request: Request) -> dict[str, Any]:
        if not self.forward_params:
            return {}
        kwargs: dict[str, Any] = {}
        for param in _FORWARDED:
            value = getattr(request, param)
            if value is not None and param in self._fields:
                kwargs[param] = value
        if request.logprobs and "logprobs" in self._fields:
            kwargs["logprobs"] = True
            if request.top_logprobs and "top_logprobs" in self._fields:
                kwargs["top_logprobs"] = request.top_logprobs
        if request.stop:
            kwargs["stop"] = list(request.stop)
        kwargs.update(request.extra)
        return kwargs

    async def complete(self, request: Request) -> Completion:
        refuse_images(self.spec, request)
        refuse_reasoning(self.spec, False, request.reasoning)  # a chat model's own setting
        if request.json_schema is not None:
            raise CapabilityError(
                f"{self.spec}: the LangChain adapter does not constrain output to a JSON "
                "schema; use the model's with_structured_output() outside jurist",
                model=self.spec,
            )
        messages = _to_langchain(request)
        kwargs = self._kwargs(request)
        start = time.perf_counter()
        try:
            call = self.llm.ainvoke(messages, **kwargs)
            if request.timeout is not None:
                reply = await asyncio.wait_for(call, request.timeout)
            else:
                reply = await call
        except JuristError:
            raise
        except Exception as exc:
            raise self._error(exc) from exc
        latency = time.perf_counter() - start
        text, reasoning = _content(reply)
        meta = getattr(reply, "response_metadata", None) or {}
        return Completion(
            text=text,
            reasoning=reasoning,
            logprobs=_logprobs(meta) if request.logprobs else None,
            usage=_usage(getattr(reply, "usage_metadata", None)),
            finish_reason=_finish_reason(meta),
            latency=latency,
            model=str(meta.get("model_name") or meta.get("model") or self.name),
        )

    def _error(self, exc: Exception) -> ModelError:
        kind = type(exc).__name__
        message = f"{self.spec}: {kind}: {exc}"
        if isinstance(exc, TimeoutError) or "Timeout" in kind:
            return APITimeoutError(message, model=self.spec)
        status = getattr(exc, "status_code", None)
        if isinstance(status, int):
            from jurist.models._openai import retry_after_seconds

            headers = getattr(getattr(exc, "response", None), "headers", None)
            retry_after = retry_after_seconds(headers) if isinstance(headers, Mapping) else None
            return status_error(status, message, model=self.spec, retry_after=retry_after)
        if "Connection" in kind or isinstance(exc, ConnectionError):
            return APIConnectionError(message, model=self.spec)
        return ModelError(message, model=self.spec)


def _to_langchain(request: Request) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return [kinds[m.role](content=m.content) for m in request.messages]


def _content(reply: Any) -> tuple[str, str | None]:
    content = getattr(reply, "content", reply)
    thoughts: list[str] = []
    if isinstance(content, str):
        text = content
    else:
        parts: list[str] = []
        for block in content or []:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                kind = block.get("type")
                if kind == "text" and isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif kind in ("reasoning", "thinking"):
                    value = block.get(kind)
                    if isinstance(value, str):
                        thoughts.append(value)
        text = "".join(parts)
    extra = getattr(reply, "additional_kwargs", None) or {}
    if isinstance(extra.get("reasoning_content"), str):
        thoughts.append(extra["reasoning_content"])
    return text, ("\n".join(thoughts) if thoughts else None)


def _usage(meta: Any) -> Usage:
    if not isinstance(meta, dict):
        return Usage(calls=1)
    details = meta.get("input_token_details") or {}
    return Usage(
        prompt_tokens=int(meta.get("input_tokens") or 0),
        completion_tokens=int(meta.get("output_tokens") or 0),
        cached_tokens=int(details.get("cache_read") or 0),
        calls=1,
    )


def _finish_reason(meta: dict[str, Any]) -> str | None:
    raw = meta.get("finish_reason") or meta.get("stop_reason") or meta.get("done_reason")
    if not isinstance(raw, str):
        return None
    low = raw.lower()
    if low in _LENGTH_REASONS:
        return "length"
    return _STOP_REASONS.get(low, low)


def _logprobs(meta: dict[str, Any]) -> tuple[TokenLogprob, ...] | None:
    raw = meta.get("logprobs")
    content = raw.get("content") if isinstance(raw, dict) else None
    if not isinstance(content, list):
        return None
    return tuple(
        TokenLogprob(
            token=str(item.get("token", "")),
            logprob=float(item.get("logprob", 0.0)),
            top=tuple(
                TopLogprob(token=str(alt.get("token", "")), logprob=float(alt.get("logprob")))
                for alt in item.get("top_logprobs") or []
            ),
        )
        for item in content
    )


def wrap_langchain(obj: Any, **options: Any) -> Model:
    """Wrap a LangChain chat model; options: ``name``, ``forward_params``."""
    unknown = sorted(set(options) - {"name", "forward_params"})
    if unknown:
        raise ConfigError(
            f"options {unknown} do not apply to a LangChain model; it accepts "
            "'name' and 'forward_params' (configure the LangChain object itself)"
        )
    try:
        import langchain_core  # noqa: F401
    except ImportError as exc:  # pragma: no cover - the object came from langchain_core
        raise MissingDependencyError(
            "langchain-core", "langchain", "The LangChain adapter"
        ) from exc
    return LangChainModel(obj, **options)
