"""The ``anthropic`` backend: Anthropic's Messages API (``POST {base_url}/messages``).

::

    model = get_model("anthropic:claude-sonnet-4-5")          # key from $ANTHROPIC_API_KEY
    model = get_model("anthropic:claude-haiku-4-5", max_tokens=512)

Options: ``base_url`` (default ``$ANTHROPIC_BASE_URL``, else
``https://api.anthropic.com/v1``), ``api_key`` (default ``$ANTHROPIC_API_KEY``; sent as
``x-api-key``, never part of :meth:`AnthropicModel.identity`), ``timeout`` (seconds per
call, default 60), ``max_tokens`` (the Messages API requires one: used when a request
sets none, default 1024), ``version`` (the ``anthropic-version`` header, default
``2023-06-01``), ``headers`` (extra headers on every call), ``prompt_cache`` (default
True: see below).

Prompt caching: a judge's static text comes first (the system message with the
template's instructions, then any few-shot turns) and the item last. With
``prompt_cache`` the last block before the final message (the system text when there are
no few-shot turns) carries a ``cache_control`` breakpoint, so Anthropic caches that
prefix: reads bill at a tenth of the input price, writes at 1.25x. The breakpoint is set
only where the prefix may reach the model's documented minimum (1,024 tokens; 2,048 for
Sonnet 4.6 and the Haiku 3 family; 4,096 for Opus 4.5 and 4.6 and Haiku 4.5), reckoned
generously at 3 characters a token (a breakpoint on a shorter prefix is only ignored).
The answer's ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are read
into :attr:`Usage.cached_tokens <jurist.types.Usage>` and ``cache_write_tokens``; both are
part of ``prompt_tokens`` (Anthropic leaves them out of ``input_tokens``).

System messages go in the body's ``system``; the reply's text blocks are joined into the
completion's text, its thinking blocks into the completion's ``reasoning``.
``Request.reasoning`` is sent as extended thinking (``thinking: {"type": "enabled",
"budget_tokens": N}``, :func:`~jurist.models._reasoning.anthropic_thinking`) with
``max_tokens`` kept above the budget and no ``temperature`` or ``top_p`` (the API takes
neither with thinking); the thinking's share of ``output_tokens`` (which bills it) is
counted in ``usage.reasoning_tokens``, by its share of the characters written. The API returns no logprobs and takes no JSON schema here
(``json_schema=False``: a judge asks for its template's text format). No retries here;
wrap the model for that. Its requests can go through Anthropic's Message Batches API
(:meth:`AnthropicModel.batch_hooks`, :mod:`jurist.models._anthropic_batch`).

>>> m = AnthropicModel("claude-haiku-4-5", base_url="http://127.0.0.1:9/v1", api_key="sk-ant-x")
>>> m.identity()
{'provider': 'anthropic', 'name': 'claude-haiku-4-5', 'base_url': 'http://127.0.0.1:9/v1'}
>>> from jurist.types import Message
>>> m.request_body(Request(messages=(Message(role="system", content="Be brief."),
...                                  Message(role="user", content="q")), temperature=0))
{'model': 'claude-haiku-4-5', 'max_tokens': 1024, 'messages': [{'role': 'user', 'content': 'q'}], 'system': 'Be brief.', 'temperature': 0.0}
"""  # noqa: E501

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

from jurist._secrets import scrub, shown_name
from jurist.errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    CapabilityError,
    ConfigError,
    ModelError,
    status_error,
)
from jurist.models._anthropic_batch import error_text
from jurist.models._loop_sessions import LoopSessions
from jurist.models._model import Capabilities, Model, refuse_images
from jurist.models._openai_wire import retry_after_seconds, snippet
from jurist.models._reasoning import anthropic_thinking, thinking_share
from jurist.types import Completion, Request, Usage

if TYPE_CHECKING:
    from jurist.models._anthropic_batch import AnthropicBatchClient, AnthropicBatchHooks

__all__ = ["DEFAULT_BASE_URL", "AnthropicModel", "build_anthropic"]

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
API_VERSION = "2023-06-01"
_CACHE_MINIMUMS = (
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
CHARS_PER_TOKEN = 3
"""How many characters a token is reckoned (generously) when deciding on a breakpoint."""
CACHE_CONTROL = {"type": "ephemeral"}


def cache_minimum(name: str) -> int:
    """The fewest prompt tokens Anthropic caches for model ``name``.

    >>> cache_minimum("claude-sonnet-4-5"), cache_minimum("claude-haiku-4-5-20251001")
    (1024, 4096)
    """
    return next((n for prefix, n in _CACHE_MINIMUMS if name.startswith(prefix)), 1024)


def mark_cache(body: dict[str, Any], minimum: int) -> bool:
    """Put a ``cache_control`` breakpoint on the end of ``body``'s static prefix (all but
    the last message) when it may be ``minimum`` tokens long; whether it did.

    >>> body = {"system": "x" * 4000, "messages": [{"role": "user", "content": "item"}]}
    >>> mark_cache(body, 1024), body["system"][0]["cache_control"]
    (True, {'type': 'ephemeral'})
    """
    messages = body["messages"]
    system = body.get("system")
    prefix = messages[:-1]
    chars = len(system or "") + sum(len(_text_of(m["content"])) for m in prefix)
    if chars < minimum * CHARS_PER_TOKEN or not (prefix or system):
        return False
    if prefix:
        last = prefix[-1]
        last["content"] = [
            {
                "type": "text",
                "text": _text_of(last["content"]),
                "cache_control": dict(CACHE_CONTROL),
            }
        ]
    else:
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(CACHE_CONTROL)}]
    return True


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))


class AnthropicModel(Model):
    """A model behind Anthropic's Messages API."""

    provider = "anthropic"

    def __init__(
        self,
        name: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_tokens: int = 1024,
        version: str = API_VERSION,
        headers: Mapping[str, str] | None = None,
        prompt_cache: bool = True,
    ) -> None:
        if not name:
            raise ConfigError("anthropic: a model name is required (anthropic:NAME)")
        if max_tokens < 1:
            raise ConfigError(f"anthropic:{name}: max_tokens must be >= 1, got {max_tokens}")
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self.max_tokens = max_tokens
        self.version = version
        self.prompt_cache = bool(prompt_cache)
        self._api_key = api_key
        self._extra_headers = dict(headers or {})
        self._given: dict[str, Any] = {
            k: v
            for k, v, default in (
                ("base_url", self.base_url, DEFAULT_BASE_URL),
                ("timeout", self.timeout, 60.0),
                ("max_tokens", max_tokens, 1024),
                ("version", version, API_VERSION),
                ("prompt_cache", self.prompt_cache, True),
            )
            if v != default
        }
        self._headers = {
            "anthropic-version": version,
            "content-type": "application/json",
            **(headers or {}),
        }
        if api_key:
            self._headers["x-api-key"] = api_key
        self._url = f"{self.base_url}/messages"
        self._pools = self._new_pools()  # one session per event loop

    def _new_pools(self) -> LoopSessions:
        pools = LoopSessions(lambda: aiohttp.ClientSession(headers=self._headers))
        pools.close_when_collected(self)
        return pools

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_pools"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """An unpickled (or copied) model opens connection pools of its own."""
        self.__dict__.update(state)
        self._pools = self._new_pools()

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(remote=True, batch_api=True, thinking=True)

    def identity(self) -> dict[str, Any]:
        return {"provider": self.provider, "name": self.name, "base_url": scrub(self.base_url)}

    def secrets(self) -> dict[str, Any]:
        """``api_key`` and ``headers``: the key this model uses (given, or read from
        ``$ANTHROPIC_API_KEY`` where it was built) and the extra headers it sends (they may
        carry credentials); ``{}`` without any. Options of the constructor, held in memory
        by whoever rebuilds the model (a Ray actor), never written anywhere."""
        found: dict[str, Any] = {}
        if self._api_key:
            found["api_key"] = self._api_key
        if self._extra_headers:
            found["headers"] = dict(self._extra_headers)
        return found

    def rebuild_options(self) -> dict[str, Any]:
        """The options given that differ from the defaults (``base_url``, ``timeout``,
        ``max_tokens``, ``version``, ``prompt_cache``); never a key or a header."""
        return dict(self._given)

    def __repr__(self) -> str:
        return f"AnthropicModel({self.spec!r})"

    # -- the call -----------------------------------------------------------------------

    async def complete(self, request: Request) -> Completion:
        data = orjson.dumps(self.request_body(request))
        seconds = request.timeout if request.timeout is not None else self.timeout
        session = await self._pools.get()
        start = time.perf_counter()
        try:
            async with (
                asyncio.timeout(seconds),
                session.post(
                    self._url, data=data, timeout=aiohttp.ClientTimeout(total=seconds)
                ) as resp,
            ):
                raw = await resp.read()
                if not 200 <= resp.status < 300:
                    raise self.error_for_status(resp.status, raw, resp.headers)
        except TimeoutError:
            raise APITimeoutError(
                f"{self.spec}: no answer from {self._url} within {seconds:g} s", model=self.spec
            ) from None
        except aiohttp.ClientError as exc:
            raise APIConnectionError(
                f"{self.spec}: {scrub(self._url)}: {type(exc).__name__}: {exc}", model=self.spec
            ) from exc
        return self.completion_of(raw, time.perf_counter() - start)

    def request_body(self, request: Request) -> dict[str, Any]:
        """The Messages API body for ``request`` (a batch request's ``params``)."""
        refuse_images(self.spec, request)
        if request.logprobs or request.top_logprobs:
            raise CapabilityError(f"{self.spec}: the Messages API returns no logprobs")
        if request.json_schema is not None:
            raise CapabilityError(
                f"{self.spec} takes no JSON schema here (json_schema=False): ask for text"
            )
        system = [m.content for m in request.messages if m.role == "system"]
        thinking = anthropic_thinking(request.reasoning, self.spec)
        max_tokens = request.max_tokens or self.max_tokens
        if thinking is not None and max_tokens <= thinking["budget_tokens"]:
            max_tokens += thinking["budget_tokens"]  # the verdict's room above the thinking
        body: dict[str, Any] = {
            "model": self.name,
            "max_tokens": max_tokens,
            "messages": [
                {"role": m.role, "content": m.content}
                for m in request.messages
                if m.role != "system"
            ],
        }
        if system:
            body["system"] = "\n\n".join(system)
        if thinking is not None:  # the API takes no temperature or top_p with thinking
            body["thinking"] = thinking
        else:
            if request.temperature is not None:
                body["temperature"] = request.temperature
            if request.top_p is not None:
                body["top_p"] = request.top_p
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if self.prompt_cache:
            mark_cache(body, cache_minimum(self.name))
        if request.extra:
            body.update(request.extra)
        return body

    def completion_of(self, raw: bytes, latency: float = 0.0) -> Completion:
        """The completion of a Messages API answer (a ``message`` object)."""
        try:
            payload = orjson.loads(raw)
            blocks = payload["content"]
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            thought = "".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking")
            usage = payload.get("usage") or {}
            cached = int(usage.get("cache_read_input_tokens") or 0)
            written = int(usage.get("cache_creation_input_tokens") or 0)
            output = int(usage.get("output_tokens") or 0)
            return Completion(
                text=text,
                reasoning=thought or None,
                usage=Usage(
                    prompt_tokens=int(usage.get("input_tokens") or 0) + cached + written,
                    completion_tokens=output,
                    reasoning_tokens=thinking_share(output, thought, text),
                    cached_tokens=cached,
                    cache_write_tokens=written,
                    calls=1,
                    attempts=1,
                ),
                finish_reason=payload.get("stop_reason"),
                latency=latency,
                model=shown_name(str(payload.get("model") or self.name)),
            )
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise ModelError(
                f"{self.spec}: {self._url} answered with an unexpected body: {snippet(raw)}",
                model=self.spec,
            ) from exc

    def error_for_status(
        self, status: int, body: bytes, headers: Mapping[str, str] | None = None
    ) -> APIStatusError:
        """The error a call raises when the API answers ``status`` with ``body``
        (``{"type": "error", "error": {"type", "message"}}``).

        >>> m = AnthropicModel("c", base_url="http://127.0.0.1:9/v1")
        >>> e = m.error_for_status(529, b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}')
        >>> type(e).__name__, str(e)
        ('InternalServerError', 'anthropic:c: http://127.0.0.1:9/v1/messages answered HTTP 529: overloaded_error: Overloaded')
        """  # noqa: E501
        detail = error_text(body)
        return status_error(
            status,
            f"{self.spec}: {scrub(self._url)} answered HTTP {status}: {detail}",
            model=self.spec,
            body=body.decode("utf-8", "replace")[:2000],
            retry_after=retry_after_seconds(headers or {}),
            request_id=(headers or {}).get("request-id"),
        )

    # -- batches --------------------------------------------------------------------------

    def batch_hooks(self) -> AnthropicBatchHooks:
        """This model's hooks for the Message Batches API."""
        from jurist.models._anthropic_batch import AnthropicBatchHooks

        return AnthropicBatchHooks(self)

    def batch_client(self) -> AnthropicBatchClient:
        """A Message Batches client for this model's server, with its key and headers."""
        from jurist.models._anthropic_batch import AnthropicBatchClient

        headers = {k: v for k, v in self._headers.items() if k.lower() != "content-type"}
        return AnthropicBatchClient(
            self.base_url, headers=headers, timeout=self.timeout, owner=self.spec
        )

    async def aclose(self) -> None:
        """Close the connection pools of every event loop this model was used from."""
        await self._pools.aclose()


def build_anthropic(name: str, **options: Any) -> AnthropicModel:
    """Factory used by the registry; reads ``$ANTHROPIC_API_KEY`` and ``$ANTHROPIC_BASE_URL``.

    >>> build_anthropic("claude-haiku-4-5", api_key="k").spec
    'anthropic:claude-haiku-4-5'
    """
    if options.get("base_url") is None:
        options["base_url"] = os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
    if options.get("api_key") is None:
        options["api_key"] = os.environ.get("ANTHROPIC_API_KEY") or None
    try:
        return AnthropicModel(name, **options)
    except TypeError as exc:
        raise ConfigError(f"anthropic model {name!r}: {exc}") from None
