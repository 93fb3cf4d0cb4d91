"""The ``openai`` backend: OpenAI's chat-completions wire format against any base URL.

OpenAI itself, vLLM's and llama.cpp's servers, llama-cpp-python, Ollama, TGI and most
proxies speak it, so one backend serves them all::

    model = get_model("openai:gpt-4o-mini")                  # key from $OPENAI_API_KEY
    model = get_model("openai:tiny", base_url="http://127.0.0.1:8000/v1",
                      json_mode="json_object")               # llama-cpp-python's server

The transport is a plain :class:`aiohttp.ClientSession` posting JSON: the request body is
built straight from the :class:`~jurist.types.Request`, serialised once, and the answer
parsed into one :class:`~jurist.types.Completion`, so the client costs a fraction of a
millisecond per call. There are no retries here; wrap the model for that.

Options (``get_model("openai:NAME", **options)``):

- ``base_url``: default ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.
- ``api_key``: default ``$OPENAI_API_KEY``; sent as ``Authorization: Bearer``, never part of
  :meth:`OpenAIModel.identity`. Credentials in the base URL (``http://user:pw@host/v1``)
  are taken out of it and sent as Basic auth instead (then no key is read from the
  environment, and an ``api_key`` given too is refused).
- ``timeout``: seconds per attempt (default 60); ``Request.timeout`` overrides it. It is one
  deadline for the whole attempt: connecting, sending, and reading the answer to its end, so
  a server that trickles bytes cannot hold a call past it.
- ``max_response_bytes``: the largest answer body read (default 32 MiB, counted after
  decompression). A longer answer (a ``Content-Length`` past it, or a stream that keeps
  going) stops the read at the cap and fails the attempt with
  :class:`~jurist.errors.ResponseTooLargeError`, a connection error the retry wrapper
  treats as transient; memory per call stays near the cap.
- ``max_connections``: the connection pool size per event loop (default 1000; 0: no limit).
- ``headers``: extra HTTP headers sent on every call.
- ``json_mode``: how ``Request.json_schema`` is sent first. ``"json_schema"`` (default):
  OpenAI's ``response_format={"type": "json_schema", "json_schema": {"name", "schema",
  "strict"}}``, which OpenAI, vLLM and llama.cpp's ``llama-server`` accept.
  ``"json_object"``: ``{"type": "json_object", "schema": ...}``, the form
  llama-cpp-python's server takes. A server that refuses the form (llama-cpp-python
  answers ``json_schema`` with an HTTP 500 naming it) gets the next one, then none, once
  per model object, logged and noted on each completion
  (:mod:`jurist.models._json_form`). ``None``: the server cannot constrain output.
- ``logprobs`` (default True) and ``top_logprobs_max`` (default 20): what the server returns.
- ``max_tokens_param``: ``"max_tokens"`` (default) or ``"max_completion_tokens"`` (OpenAI's
  reasoning models accept only the latter).
- ``reasoning_form``: how ``Request.reasoning`` is sent: ``"effort"`` (``reasoning_effort``),
  ``"template"`` (``chat_template_kwargs.enable_thinking``: vLLM, SGLang, llama.cpp),
  ``None`` (cannot think: refused); ``"auto"`` (default): ``"effort"`` for OpenAI's and
  Gemini's APIs, else ``"template"`` (:mod:`jurist.models._reasoning`).
- ``images`` (default True): the model takes image input; a message's images are sent as
  OpenAI ``image_url`` parts after its text. ``False`` for a text-only model behind the
  URL: a request with images then fails with a :class:`~jurist.errors.CapabilityError`.

The cache tells servers apart by :meth:`OpenAIModel.identity` and by
:meth:`OpenAIModel.fingerprint`: what ``GET {base_url}/models`` reports of the weights
behind the model name (see :mod:`jurist.models._server_identity`), asked once per model
object before its first cache lookup. Where the server reports nothing of them, one warning
says that the key covers only the provider, the name and the base URL.

>>> m = OpenAIModel("tiny", base_url="http://127.0.0.1:8000/v1/", api_key="sk-secret")
>>> m.identity()
{'provider': 'openai', 'name': 'tiny', 'base_url': 'http://127.0.0.1:8000/v1'}
>>> m.capabilities.top_logprobs, m.capabilities.remote
(20, True)
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import aiohttp
import orjson
from yarl import URL

from jurist._secrets import (
    get_logger,
    is_placeholder_key,
    remember_secrets_in,
    scrub,
    shown_name,
    split_url_credentials,
)
from jurist.errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    CapabilityError,
    ConfigError,
    ModelError,
    ResponseTooLargeError,
)
from jurist.models._deadline import deadline
from jurist.models._decisions import Decider
from jurist.models._json_form import JsonForm, JsonFormDecision, response_format
from jurist.models._loop_sessions import LoopSessions
from jurist.models._model import Capabilities, Model, refuse_images
from jurist.models._once import Once
from jurist.models._openai_errors import connection_error_for, status_error_for
from jurist.models._openai_wire import (
    parse_logprobs,
    read_capped,
    retry_after_seconds,
    snippet,
    whole_body_fits,
)
from jurist.models._reasoning import (
    ReasoningForm,
    openai_fields,
    openai_form,
    refuse_reasoning,
    samples,
    with_extra,
)
from jurist.models._server_identity import served_identity
from jurist.types import Completion, Request, Usage, assembled

if TYPE_CHECKING:
    from jurist.models._openai_batch import OpenAIBatchHooks
    from jurist.models._openai_batch_client import BatchClient

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "JsonMode",
    "OpenAIModel",
    "build_openai",
    "retry_after_seconds",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
JsonMode = Literal["json_schema", "json_object"]
_CHECK_TIMEOUT = 5.0
_NO_USAGE: Mapping[str, Any] = {}  # an answer without a usage block (never written to)
logger = get_logger("jurist.models")  # its filter scrubs keys from every record


class OpenAIModel(Model):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    One connection pool per event loop, opened on first use in that loop; it is closed
    when the loop shuts down (``asyncio.run`` closes it) or by :meth:`aclose`.
    """

    provider = "openai"

    def __init__(
        self,
        name: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_connections: int = 1000,
        headers: Mapping[str, str] | None = None,
        json_mode: JsonMode | None = "json_schema",
        logprobs: bool = True,
        top_logprobs_max: int = 20,
        max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        images: bool = True,
        reasoning_form: ReasoningForm | Literal["auto"] | None = "auto",
    ) -> None:
        if reasoning_form not in ("auto", "effort", "template", None):
            raise ConfigError(
                f"openai reasoning_form {reasoning_form!r}: auto, effort, template, None"
            )
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"openai base_url {base_url!r} must start with http:// or https://")
        if json_mode not in ("json_schema", "json_object", None):
            raise ConfigError(
                f"openai json_mode {json_mode!r} must be 'json_schema', 'json_object' or None"
            )
        if timeout <= 0 or max_connections < 0 or top_logprobs_max < 0:
            raise ConfigError(
                "openai timeout must be > 0, max_connections and top_logprobs_max >= 0"
            )
        if max_response_bytes < 1:
            raise ConfigError(f"openai max_response_bytes must be >= 1, got {max_response_bytes}")
        # user:password@ in the URL: sent as Basic auth, never part of the URL kept
        base_url, basic_auth = split_url_credentials(base_url)
        if basic_auth is not None and api_key and not is_placeholder_key(api_key):
            raise ConfigError(
                f"openai base_url {scrub(base_url)!r} carries user:password@ (sent as Basic "
                "auth) and an api_key is given too (sent as Bearer): both would be the "
                "Authorization header; give one"
            )
        self.name = name
        self.max_response_bytes = int(max_response_bytes)
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self.json_mode: JsonMode | None = json_mode
        # the form a JSON schema is sent in now, decided by the server's answers
        self.json_form = JsonFormDecision(self.spec, json_mode) if json_mode else None
        self._has_key = bool(api_key)
        # what rebuild_options() gives back: the options that differ from the defaults
        self._given: dict[str, Any] = {
            k: v
            for k, v, default in (
                ("timeout", self.timeout, 60.0),
                ("max_connections", max_connections, 1000),
                ("json_mode", json_mode, "json_schema"),
                ("logprobs", logprobs, True),
                ("top_logprobs_max", top_logprobs_max, 20),
                ("max_tokens_param", max_tokens_param, "max_tokens"),
                ("max_response_bytes", self.max_response_bytes, DEFAULT_MAX_RESPONSE_BYTES),
                ("images", images, True),
                ("reasoning_form", reasoning_form, "auto"),
            )
            if v != default
        }
        # what secrets() gives back, for a rebuild elsewhere (a Ray actor); never shown
        self._secrets: dict[str, Any] = {}
        if api_key:
            self._secrets["api_key"] = api_key
        given_headers = dict(headers or {})
        if basic_auth is not None:  # the URL's user:password@, kept out of base_url
            given_headers = {"Authorization": basic_auth, **given_headers}
        if given_headers:
            self._secrets["headers"] = given_headers
        if scrub(self.base_url) != self.base_url:  # a key in the URL (?api-key=...)
            self._secrets["base_url"] = self.base_url
        remember_secrets_in({"api_key": api_key, "headers": dict(headers or {})})
        self._logprobs = logprobs
        self._images = bool(images)
        self.reasoning_form: ReasoningForm | None = (
            openai_form(self.base_url) if reasoning_form == "auto" else reasoning_form
        )
        self._top_max = top_logprobs_max if logprobs else 0
        self._max_tokens_param = max_tokens_param
        self._max_connections = max_connections
        self._url = f"{self.base_url}/chat/completions"
        self._parsed_url = URL(self._url)  # parsed once: aiohttp would parse a str per call
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if basic_auth is not None:
            self._headers["Authorization"] = basic_auth
            self._has_key = True
        elif api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._headers.update(headers or {})
        # No aiohttp deadline of its own: each attempt runs under one deadline (see _send
        # and jurist.models._deadline), which covers connecting, sending and the whole
        # read; a timer per call in aiohttp (a TimerContext around every read) costs CPU.
        self._client_timeout = aiohttp.ClientTimeout(total=None, sock_connect=None)
        self._served: Once[dict[str, Any] | None] = Once()  # see fingerprint()
        self._pools = self._new_pools()  # one session per event loop

    def _new_pools(self) -> LoopSessions:
        pools = LoopSessions(self._new_session)
        pools.close_when_collected(self)
        return pools

    def _new_session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0),
            headers=self._headers,
            timeout=self._client_timeout,
        )

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_pools"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """An unpickled (or copied) model opens connection pools of its own."""
        self.__dict__.update(state)
        self._pools = self._new_pools()

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            logprobs=self._logprobs,
            top_logprobs=self._top_max,
            json_schema=self.json_mode is not None,
            remote=True,
            images=self._images,
            batch_api=True,
            batch_files=True,
            thinking=self.reasoning_form is not None,
        )

    def secrets(self) -> dict[str, Any]:
        """``api_key`` and ``headers``: the key this model uses (given, or read from
        ``$OPENAI_API_KEY`` where it was built) and the headers it sends, which may carry
        credentials (a ``user:password@`` of the URL as Basic auth); ``{}`` without any."""
        return {k: (dict(v) if isinstance(v, dict) else v) for k, v in self._secrets.items()}

    def rebuild_options(self) -> dict[str, Any]:
        """``base_url`` (where it was built it may come from ``$OPENAI_BASE_URL``) and the
        options given that differ from the defaults; never a key or a header."""
        where = {} if "base_url" in self._secrets else {"base_url": self.base_url}
        return {**where, **self._given}

    def identity(self) -> dict[str, Any]:
        # a key in the URL (user:password@, ?api-key=) is not part of what the model is
        return {"provider": self.provider, "name": self.name, "base_url": scrub(self.base_url)}

    async def fingerprint(self) -> dict[str, Any] | None:
        """What ``GET {base_url}/models`` reports of the weights behind this model name
        (vLLM's ``root``, llama.cpp's ``meta``...), asked once per model object and kept.

        ``None`` when the server reports nothing of them, answers an error or cannot be
        reached: one warning then says that the cache key covers only the provider, the
        name and the base URL. Never raises (but for cancellation): a run goes on.
        """
        return await self._served.get(self._ask_served)

    async def _ask_served(self) -> dict[str, Any] | None:
        url = f"{self.base_url}/models"
        timeout = min(_CHECK_TIMEOUT, self.timeout)
        try:
            session = await self._pools.get()
            async with (
                asyncio.timeout(timeout),
                session.get(url, timeout=aiohttp.ClientTimeout(total=timeout)) as resp,
            ):
                raw, status = await self._read_body(resp), resp.status
        except Exception as exc:  # the identity is an extra: it never fails a call
            found, why = None, f"could not be asked ({type(exc).__name__}: {exc})"
        else:
            found, why = served_identity(raw, status, self.name, now=time.time())
        if found is None:
            logger.warning(
                "jurist cache: %s: GET %s %s, so the cache key of this model covers only "
                "the provider, the model name and the base URL; a server restarted on other "
                "weights under the same name would be answered with cached verdicts of the "
                "old ones: serve each model under a name of its own, or turn the cache off "
                "(--no-cache)",
                self.spec,
                scrub(url),
                why,
            )
        return found

    def deciders(self) -> dict[str, Decider]:
        """The JSON form its server's answers decided (none when ``json_mode=None``)."""
        return {"json_form": self.json_form} if self.json_form is not None else {}

    # -- the hot path -------------------------------------------------------------------

    def complete(self, request: Request) -> Coroutine[Any, Any, Completion]:
        # the coroutine of the send itself: no frame of its own on the hot path
        if request.json_schema is None or self.json_form is None:
            return self._send(request, None, probe=False)
        return self.json_form.send(lambda form, probe: self._send(request, form, probe=probe))

    async def _send(self, request: Request, form: JsonForm | None, *, probe: bool) -> Completion:
        """Send ``request`` with its schema in ``form``; ``probe``: an error answer that
        refuses the form raises :class:`~jurist.errors.UnsupportedRequestError`."""
        data = orjson.dumps(self._body(request, form))
        session = self._pools.current() or await self._pools.get()
        seconds = self.timeout if request.timeout is None else request.timeout
        start = time.perf_counter()
        try:
            # One deadline for the attempt: connecting, sending, and reading the body to its
            # end (the gaps between reads included).
            with deadline(seconds):
                async with session.post(self._parsed_url, data=data) as resp:
                    if whole_body_fits(resp, self.max_response_bytes, self._too_large):
                        raw = await resp.read()  # read_capped's fast path, no coroutine
                    else:
                        raw = await self._read_body(resp)
                    status = resp.status
                    if not 200 <= status < 300:
                        raise self._status_error(
                            status, raw, resp.headers, refused=form if probe else None
                        )
        except TimeoutError:
            raise APITimeoutError(
                f"{self.spec}: no answer from {self._url} within {seconds:g} s", model=self.spec
            ) from None
        except aiohttp.ClientError as exc:
            raise self._connection_error(exc, self._url) from exc
        return self._completion(raw, status, time.perf_counter() - start)

    async def _read_body(self, resp: aiohttp.ClientResponse) -> bytes:
        """The answer's body, at most ``max_response_bytes`` of it (:func:`read_capped`)."""
        return await read_capped(resp, self.max_response_bytes, self._too_large)

    def _too_large(self, what: str) -> ResponseTooLargeError:
        return ResponseTooLargeError(
            f"{self.spec}: {self._url} {what}; the answer is capped at "
            f"max_response_bytes={self.max_response_bytes}",
            model=self.spec,
        )

    def _body(self, request: Request, form: JsonForm | None = None) -> dict[str, Any]:
        if not self._images:
            refuse_images(self.spec, request)
        body: dict[str, Any] = {
            "model": self.name,
            "messages": [
                {"role": m.role, "content": m.openai_content() if m.images else m.content}
                for m in request.messages
            ],
        }
        if request.max_tokens is not None:
            body[self._max_tokens_param] = request.max_tokens
        if self.reasoning_form == "template" or samples(request.reasoning):
            if request.temperature is not None:  # OpenAI's reasoning models take only 1
                body["temperature"] = request.temperature
            if request.top_p is not None:
                body["top_p"] = request.top_p
        if request.seed is not None:
            body["seed"] = request.seed
        if request.stop:
            body["stop"] = list(request.stop)
        if request.logprobs or request.top_logprobs:
            if not self._logprobs:
                raise CapabilityError(
                    f"{self.spec} is configured without logprobs (logprobs=False)",
                    model=self.spec,
                )
            body["logprobs"] = True
            if request.top_logprobs:
                if request.top_logprobs > self._top_max:
                    raise CapabilityError(
                        f"{self.spec} returns at most {self._top_max} top logprobs, "
                        f"{request.top_logprobs} were asked (see top_logprobs_max)",
                        model=self.spec,
                    )
                body["top_logprobs"] = request.top_logprobs
        if request.json_schema is not None:
            if self.json_form is None:
                raise CapabilityError(
                    f"{self.spec} cannot constrain output to a JSON schema (json_mode=None)",
                    model=self.spec,
                )
            fmt = response_format(form or self.json_form.form, request.json_schema)
            if fmt is not None:
                body["response_format"] = fmt
        if request.reasoning is not None:
            refuse_reasoning(self.spec, self.reasoning_form is not None, request.reasoning)
            body.update(openai_fields(request.reasoning, self.reasoning_form or "effort"))
        if request.extra:
            with_extra(body, request.extra)
        return body

    def _completion(self, raw: bytes, status: int, latency: float) -> Completion:
        what = "a body that is not JSON"
        try:
            payload = orjson.loads(raw)
            what = "no choices[0].message"
            choice = payload["choices"][0]
            message = choice["message"]
            what = "an answer of unexpected shape"
            usage = payload.get("usage") or _NO_USAGE
            details = usage.get("prompt_tokens_details")
            out_details = usage.get("completion_tokens_details")
            text = message.get("content") or ""
            reasoning = message.get("reasoning_content") or message.get("reasoning")
            finish = choice.get("finish_reason")
            if not (
                isinstance(text, str)
                and (reasoning is None or isinstance(reasoning, str))
                and (finish is None or isinstance(finish, str))
            ):
                raise TypeError(
                    f"content, reasoning, finish_reason of types {type(text).__name__}, "
                    f"{type(reasoning).__name__}, {type(finish).__name__}"
                )
            logprobs = choice.get("logprobs")
            counts = {  # one request sent: the usage is already the billed one
                "prompt_tokens": int(usage.get("prompt_tokens") or 0),
                "completion_tokens": int(usage.get("completion_tokens") or 0),
                "cached_tokens": int(details.get("cached_tokens") or 0) if details else 0,
                "calls": 1,
                "attempts": 1,
                "reasoning_tokens": (
                    int(out_details.get("reasoning_tokens") or 0) if out_details else 0
                ),
            }
            # every value is checked or made above: assembled, not validated (the hot path)
            return assembled(
                Completion,
                {
                    "text": text,
                    "logprobs": parse_logprobs(logprobs) if logprobs else None,
                    "usage": assembled(Usage, counts),
                    "finish_reason": finish,
                    "latency": latency,
                    "model": shown_name(str(payload.get("model") or self.name)),
                    "reasoning": reasoning,
                },
            )
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            # ValueError covers bad JSON and pydantic's ValidationError.
            raise ModelError(
                f"{self.spec}: {self._url} answered HTTP {status} with {what}: {snippet(raw)}",
                model=self.spec,
            ) from exc

    # -- batch API ----------------------------------------------------------------------

    def batch_hooks(self) -> OpenAIBatchHooks:
        """This model's hooks for the Batch API (see :mod:`jurist.models._batch_hooks`)."""
        from jurist.models._openai_batch import OpenAIBatchHooks

        return OpenAIBatchHooks(self)

    def request_body(self, request: Request) -> dict[str, Any]:
        """The JSON body :meth:`complete` sends for ``request`` (a batch request line's
        ``body``): with its JSON schema in the form the model sends now, unprobed.

        >>> from jurist.types import Message
        >>> m = OpenAIModel("tiny", base_url="http://127.0.0.1:8000/v1")
        >>> m.request_body(Request(messages=(Message(role="user", content="q"),), seed=1))
        {'model': 'tiny', 'messages': [{'role': 'user', 'content': 'q'}], 'seed': 1}
        """
        return self._body(request)

    def batch_completion(self, raw: bytes, request_schema: bool) -> Completion:
        """The completion a live call returns for the 200 answer ``raw`` read from a batch
        result, billed at the batch rates (``usage.batch_calls``) and noted as a live one
        is when its JSON schema went in a fallback form (``request_schema``: the request
        carried one)."""
        done = self._completion(raw, 200, 0.0)
        usage = done.usage.model_copy(update={"batch_calls": 1})
        note = None
        if request_schema and self.json_form is not None:
            note = self.json_form.note_for(self.json_form.form)
        update: dict[str, Any] = {"usage": usage}
        if note is not None:
            update["format_note"] = note
        return done.model_copy(update=update)

    def error_for_status(
        self, status: int, body: bytes, headers: Mapping[str, str] | None = None
    ) -> APIStatusError:
        """The error live mode raises when the server answers ``status`` with ``body``
        (429: :class:`~jurist.errors.RateLimitError`, ...), for a failed batch line.

        >>> m = OpenAIModel("tiny", base_url="http://127.0.0.1:8000/v1")
        >>> e = m.error_for_status(429, b'{"error": {"message": "slow down"}}')
        >>> type(e).__name__, str(e)
        ('RateLimitError', 'openai:tiny: http://127.0.0.1:8000/v1/chat/completions answered HTTP 429: slow down')
        """  # noqa: E501
        return self._status_error(status, body, headers or {})

    def batch_client(self) -> BatchClient:
        """A Batch API client (files and batches endpoints) for this model's server, with
        its base URL, key, headers and timeout; the key stays inside the client."""
        from jurist.models._openai_batch_client import BatchClient

        # the JSON content type and accept headers are the chat call's; the rest carry over
        own = ("content-type", "accept")
        headers = {k: v for k, v in self._headers.items() if k.lower() not in own}
        return BatchClient(self.base_url, headers=headers, timeout=self.timeout, owner=self.spec)

    # -- errors -------------------------------------------------------------------------

    def _status_error(
        self,
        status: int,
        raw: bytes,
        headers: Mapping[str, str],
        *,
        refused: JsonForm | None = None,
    ) -> APIStatusError:
        return status_error_for(
            self.spec, self._url, status, raw, headers, has_key=self._has_key, refused=refused
        )

    def _connection_error(self, exc: aiohttp.ClientError, url: str) -> APIConnectionError:
        return connection_error_for(self.spec, exc, url)

    # -- sessions -----------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the connection pools of every event loop this model was used from."""
        await self._pools.aclose()

    async def prepare(self) -> None:
        """Check the server can be reached before a batch starts (see :meth:`check`)."""
        await self.check()

    async def check(self) -> None:
        """Check the server answers ``GET {base_url}/models``; raise if it cannot be reached.

        Raises :class:`~jurist.errors.APIConnectionError` naming the URL when there is no
        connection, and the status error when the server refuses the credentials (401, 403).
        """
        url = f"{self.base_url}/models"
        session = await self._pools.get()
        timeout = min(_CHECK_TIMEOUT, self.timeout)
        try:
            async with (
                asyncio.timeout(timeout),
                session.get(url, timeout=aiohttp.ClientTimeout(total=timeout)) as resp,
            ):
                raw = await self._read_body(resp)
                if resp.status in (401, 403):
                    raise self._status_error(resp.status, raw, resp.headers)
        except TimeoutError:
            raise APITimeoutError(
                f"{self.spec}: cannot reach {url}: no answer within {timeout:g} s",
                model=self.spec,
            ) from None
        except aiohttp.ClientError as exc:
            raise self._connection_error(exc, url) from exc


def build_openai(name: str, **options: Any) -> OpenAIModel:
    """Factory used by the registry; reads ``$OPENAI_API_KEY`` and ``$OPENAI_BASE_URL``.

    >>> build_openai("gpt-4o-mini", api_key="k").spec
    'openai:gpt-4o-mini'
    """
    if options.get("base_url") is None:
        options["base_url"] = os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    has_userinfo = "@" in urlsplit(str(options["base_url"])).netloc
    if options.get("api_key") is None and not has_userinfo:  # the URL's credentials win
        options["api_key"] = os.environ.get("OPENAI_API_KEY") or None
    try:
        return OpenAIModel(name, **options)
    except TypeError as exc:
        raise ConfigError(f"openai model {name!r}: {exc}") from None
