"""The litellm backend's translations: LiteLLM's answer to a :class:`Completion`, and its
exceptions to jurist's error classes.

Kept apart from the call in :mod:`jurist.models._litellm`; the modules of ``litellm``,
``openai`` and ``httpx`` are looked up here only once a call has failed, and they are
installed whenever ``litellm`` is (it depends on both).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

import aiohttp

from jurist._secrets import scrub
from jurist.errors import (
    APIConnectionError,
    APITimeoutError,
    CapabilityError,
    ModelError,
    status_error,
)
from jurist.models._openai_wire import parse_logprobs, retry_after_seconds
from jurist.types import Completion, Usage

__all__ = ["completion_of", "translate_error"]


def _field(obj: Any, key: str) -> Any:
    """``obj[key]`` of a mapping, ``obj.key`` of an object, None when absent."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _plain(obj: Any) -> Any:
    """A pydantic object (LiteLLM's ``ChoiceLogprobs``) as the dict it stands for."""
    dump = getattr(obj, "model_dump", None)
    return dump() if callable(dump) else obj


def completion_of(response: Any, spec: str, name: str, latency: float) -> Completion:
    """The :class:`Completion` of LiteLLM's ``ModelResponse`` (or its dict form).

    >>> answer = {"model": "tiny", "choices": [{"message": {"content": "Yes"},
    ...     "finish_reason": "stop"}], "usage": {"prompt_tokens": 9, "completion_tokens": 1,
    ...     "prompt_tokens_details": {"cached_tokens": 8}}}
    >>> c = completion_of(answer, "litellm:openai/tiny", "openai/tiny", 0.5)
    >>> c.text, c.finish_reason, c.usage.prompt_tokens, c.usage.cached_tokens
    ('Yes', 'stop', 9, 8)
    >>> completion_of({"choices": []}, "litellm:x/y", "x/y", 0.1)
    Traceback (most recent call last):
    ...
    jurist.errors.ModelError: litellm:x/y: LiteLLM returned no choices[0].message: ...
    """
    what = "no choices[0].message"
    try:
        choice = _field(response, "choices")[0]
        message = _field(choice, "message")
        if message is None:
            raise LookupError("message")
        what = "an answer of unexpected shape"
        text = _field(message, "content") or ""
        if not isinstance(text, str):
            raise TypeError(f"message content is a {type(text).__name__}")
        reasoning = _field(message, "reasoning_content") or _field(message, "reasoning")
        usage = _field(response, "usage") or {}
        details = _field(usage, "prompt_tokens_details")
        cached = (_field(details, "cached_tokens") if details is not None else None) or 0
        out_details = _field(usage, "completion_tokens_details")
        thought = (_field(out_details, "reasoning_tokens") if out_details is not None else 0) or 0
        model = _field(response, "model")
        return Completion(
            text=text,
            reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
            logprobs=parse_logprobs(_plain(_field(choice, "logprobs"))),
            usage=Usage(
                prompt_tokens=int(_field(usage, "prompt_tokens") or 0),
                completion_tokens=int(_field(usage, "completion_tokens") or 0),
                cached_tokens=int(cached),
                reasoning_tokens=int(thought),
                calls=1,
            ),
            finish_reason=_field(choice, "finish_reason"),
            latency=latency,
            model=model if isinstance(model, str) and model else name,
        )
    except (LookupError, TypeError, AttributeError, ValueError) as exc:
        # ValueError covers pydantic's ValidationError
        shown = scrub(repr(response))
        shown = shown[:200] + ("..." if len(shown) > 200 else "")
        raise ModelError(f"{spec}: LiteLLM returned {what}: {shown}", model=spec) from exc


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _headers(chain: list[BaseException]) -> dict[str, str]:
    """The error answer's headers: its HTTP response's, and those LiteLLM kept aside, from
    the error and the errors it was raised from (the first one to name a header wins)."""
    out: dict[str, str] = {}
    for exc in chain:
        sources = (
            getattr(getattr(exc, "response", None), "headers", None),
            getattr(exc, "litellm_response_headers", None),
            getattr(exc, "headers", None),
        )
        for source in sources:
            if isinstance(source, Mapping):
                for key, value in source.items():
                    out.setdefault(str(key).lower(), str(value))
    return out


def _body(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    try:
        text = getattr(response, "text", None)
    except Exception:  # an httpx.Response without content read raises
        return None
    return text if isinstance(text, str) and text else None


def _root_kind(
    chain: list[BaseException], openai: Any, httpx: Any
) -> tuple[str | None, BaseException]:
    """What the deepest telling cause says: ``"timeout"`` (a deadline passed),
    ``"connection"`` (refused, dropped), ``"status"`` (the server answered an error) or
    ``"unsent"`` (the provider SDK refused to send: no credentials), and that cause; None
    and the error itself when none tells."""
    for cause in reversed(chain):
        if type(cause) is openai.OpenAIError:  # the SDK's own refusal: nothing was sent
            return "unsent", cause
        if isinstance(cause, openai.APITimeoutError | httpx.TimeoutException | TimeoutError):
            return "timeout", cause
        if isinstance(cause, openai.APIStatusError | httpx.HTTPStatusError):
            return "status", cause
        if isinstance(
            cause,
            openai.APIConnectionError
            | httpx.TransportError
            | aiohttp.ClientConnectionError
            | ConnectionError,
        ):
            return "connection", cause
    return None, chain[0]


def translate_error(
    exc: BaseException, spec: str, where: str, seconds: float, *, has_key: bool = True
) -> ModelError | None:
    """jurist's error for what ``litellm.acompletion`` raised; None when ``exc`` is not a
    LiteLLM / OpenAI SDK error (a bug to let through as is).

    The deepest cause that tells decides, not the class or status on top (LiteLLM reports
    a dropped connection as HTTP 500, and a server's 408 as its ``Timeout``): a deadline
    that passed is :class:`APITimeoutError`, a connection that failed or dropped is
    :class:`APIConnectionError`, a call the provider SDK refused to send (no credentials)
    a plain :class:`ModelError`, a parameter the route does not take is
    :class:`CapabilityError`; the rest is the status error of its HTTP status, with
    ``retry_after`` from its headers.
    """
    openai = importlib.import_module("openai")
    httpx = importlib.import_module("httpx")
    lx = importlib.import_module("litellm.exceptions")
    if not isinstance(exc, openai.OpenAIError):
        return None
    detail = str(getattr(exc, "message", None) or exc or type(exc).__name__)
    chain = list(_chain(exc))
    kind, cause = _root_kind(chain, openai, httpx)
    if kind == "timeout":
        return APITimeoutError(
            f"{spec}: no answer from {where} within {seconds:g} s ({detail})", model=spec
        )
    if kind == "connection":
        return APIConnectionError(
            f"{spec}: cannot reach {where}, or the connection dropped: {detail}", model=spec
        )
    if kind == "unsent":
        # LiteLLM calls it HTTP 500, but no request left: not a server error, not transient
        return ModelError(
            f"{spec}: LiteLLM did not send the request to {where}: {cause}", model=spec
        )
    if isinstance(exc, lx.UnsupportedParamsError):
        return CapabilityError(
            f"{spec}: the route does not take a parameter that was sent (pass "
            f"drop_params=True to let LiteLLM drop it): {detail.strip().splitlines()[0]}",
            model=spec,
        )
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 400:
        if status == 401 and not has_key:
            detail += " (no api_key was given; LiteLLM reads the provider's key variable)"
        headers = _headers(chain)
        return status_error(
            status,
            f"{spec}: {where} answered HTTP {status}: {detail}",
            model=spec,
            body=_body(exc),
            retry_after=retry_after_seconds(headers),
            request_id=headers.get("x-request-id")
            or headers.get("request-id")
            or getattr(exc, "request_id", None),
        )
    return ModelError(f"{spec}: the call to {where} failed: {detail}", model=spec)
