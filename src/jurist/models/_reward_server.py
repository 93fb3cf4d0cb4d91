"""The ``reward-server`` backend: a scalar reward model served by vLLM or SGLang.

``get_model("reward-server:Skywork/Skywork-Reward-V2-Llama-3.1-8B",
base_url="http://127.0.0.1:8000")``. Each request (a conversation, its last message the
response under judgment) is sent to one of the servers' reward routes, chosen by ``api``:

- ``"classify"`` (the default; vLLM's Classification API, ``vllm serve MODEL`` for a
  ``*ForSequenceClassification`` reward model): ``POST {base_url}/classify`` with
  ``{"model", "messages", "use_activation": false}``; the server applies the model's chat
  template, and the reward is ``data[0].probs[label]`` (raw: no sigmoid, no softmax);
- ``"pooling"`` (vLLM's Pooling API, ``vllm serve MODEL --runner pooling``):
  ``POST {base_url}/pooling`` with ``{"model", "messages"}``; the reward is the last value
  of ``data[0].data`` (a reward model pooled over every token gives one value per token:
  the last token's is the sequence's reward);
- ``"sglang"`` (SGLang's reward route, ``python -m sglang.launch_server --model-path MODEL
  --is-embedding``): ``POST {base_url}/classify`` with ``{"model", "text": [...]}``, the
  conversation rendered here with the model's chat template (``tokenizer=``, default the
  model's name: a hub id in the local cache or a folder, read with transformers); the
  reward is ``[0].embedding[label]``.

``base_url`` is the server's root (a trailing ``/v1``, as given for its OpenAI routes, is
dropped). Usage counts the prompt tokens the server reports. Failures are the errors of
the OpenAI-compatible backend (a status error per HTTP status, retried by the model
stack when transient), and an answer without a reward a :class:`~jurist.errors.ModelError`
that quotes it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any, Literal

import aiohttp
import orjson

from jurist._secrets import remember_secrets_in
from jurist.errors import APITimeoutError, ConfigError, ModelError, ResponseTooLargeError
from jurist.models._deadline import deadline
from jurist.models._loop_sessions import LoopSessions
from jurist.models._model import Capabilities, Model, refuse_images
from jurist.models._openai_errors import connection_error_for, status_error_for
from jurist.models._openai_wire import read_capped, snippet
from jurist.types import Completion, Request, Usage

__all__ = ["RewardAPI", "RewardServerModel", "build_reward_server"]

RewardAPI = Literal["classify", "pooling", "sglang"]
_ROUTES: dict[str, str] = {"classify": "/classify", "pooling": "/pooling", "sglang": "/classify"}
_MAX_BYTES = 8 * 1024 * 1024


class RewardServerModel(Model):
    """A reward model behind a vLLM or SGLang server (see the module docs)."""

    provider = "reward-server"

    def __init__(
        self,
        name: str,
        *,
        base_url: str = "http://127.0.0.1:8000",
        api: RewardAPI = "classify",
        api_key: str | None = None,
        timeout: float = 60.0,
        label: int = 0,
        tokenizer: str | None = None,
        headers: Mapping[str, str] | None = None,
        max_connections: int = 256,
    ) -> None:
        if api not in _ROUTES:
            raise ConfigError(
                f"reward-server api {api!r} must be one of {sorted(_ROUTES)} (vLLM's "
                "/classify or /pooling, SGLang's /classify)"
            )
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"reward-server base_url {base_url!r} must start with http(s)://")
        if timeout <= 0 or label < 0 or max_connections < 0:
            raise ConfigError("reward-server timeout must be > 0, label and max_connections >= 0")
        root = base_url.rstrip("/")
        root = root[: -len("/v1")] if root.endswith("/v1") else root
        self.name = name
        self.base_url = root
        self.api: RewardAPI = api
        self.timeout = float(timeout)
        self.label = label
        self.tokenizer_name = tokenizer
        self._url = root + _ROUTES[api]
        self._headers = {"Content-Type": "application/json", **dict(headers or {})}
        self._secrets: dict[str, Any] = {}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
            self._secrets["api_key"] = api_key
        if headers:
            self._secrets["headers"] = dict(headers)
        remember_secrets_in({"api_key": api_key, "headers": dict(headers or {})})
        self._has_key = bool(api_key)
        self._max_connections = max_connections
        self._tokenizer: Any = None
        self._pools = LoopSessions(self._new_session)
        self._pools.close_when_collected(self)

    def _new_session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0),
            headers=self._headers,
        )

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_pools", "_tokenizer")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._tokenizer = None
        self._pools = LoopSessions(self._new_session)
        self._pools.close_when_collected(self)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(scalar=True, remote=True)

    def identity(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "provider": self.provider,
            "name": self.name,
            "base_url": self.base_url,
        }
        out.update(api=self.api, label=self.label)
        if self.tokenizer_name:
            out["tokenizer"] = self.tokenizer_name
        return out

    def secrets(self) -> dict[str, Any]:
        return dict(self._secrets)

    def rebuild_options(self) -> dict[str, Any]:
        given = {
            "base_url": self.base_url,
            "api": self.api,
            "timeout": self.timeout,
            "label": self.label,
            "tokenizer": self.tokenizer_name,
        }
        defaults = {"api": "classify", "timeout": 60.0, "label": 0, "tokenizer": None}
        return {k: v for k, v in given.items() if k not in defaults or v != defaults[k]}

    # -- one call --------------------------------------------------------------------

    def body(self, request: Request) -> dict[str, Any]:
        """The JSON body sent for ``request`` on this model's route."""
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        if self.api == "classify":
            return {"model": self.name, "messages": messages, "use_activation": False}
        if self.api == "pooling":
            return {"model": self.name, "messages": messages}
        return {"model": self.name, "text": [self._render(request)]}

    def _render(self, request: Request) -> str:
        from jurist.models._hf_reward import render_conversation

        if self._tokenizer is None:
            import transformers

            self._tokenizer = transformers.AutoTokenizer.from_pretrained(
                self.tokenizer_name or self.name
            )
        return render_conversation(self._tokenizer, request.messages)

    async def complete(self, request: Request) -> Completion:
        """The reward of ``request``'s conversation, in :attr:`Completion.score`."""
        refuse_images(self.spec, request)
        data = orjson.dumps(self.body(request))
        session = self._pools.current() or await self._pools.get()
        seconds = self.timeout if request.timeout is None else request.timeout
        start = time.perf_counter()
        try:
            with deadline(seconds):
                async with session.post(self._url, data=data) as resp:
                    raw = await read_capped(resp, _MAX_BYTES, self._too_large)
                    if not 200 <= resp.status < 300:
                        raise status_error_for(
                            self.spec,
                            self._url,
                            resp.status,
                            raw,
                            resp.headers,
                            has_key=self._has_key,
                        )
        except TimeoutError:
            raise APITimeoutError(
                f"{self.spec}: no answer from {self._url} within {seconds:g} s", model=self.spec
            ) from None
        except aiohttp.ClientError as exc:
            raise connection_error_for(self.spec, exc, self._url) from exc
        score, prompt_tokens = self.read(raw)
        return Completion(
            text="",
            score=score,
            usage=Usage(prompt_tokens=prompt_tokens, calls=1, attempts=1),
            finish_reason="score",
            latency=time.perf_counter() - start,
            model=self.name,
        )

    def read(self, raw: bytes) -> tuple[float, int]:
        """The reward and the prompt tokens in a server's answer ``raw``.

        >>> m = RewardServerModel("rm")
        >>> m.read(b'{"data": [{"index": 0, "probs": [2.5], "num_classes": 1}],'
        ...        b' "usage": {"prompt_tokens": 7}}')
        (2.5, 7)
        >>> RewardServerModel("rm", api="sglang").read(
        ...     b'[{"embedding": [-1.5], "meta_info": {"prompt_tokens": 4}}]')
        (-1.5, 4)
        """
        try:
            body = orjson.loads(raw)
            if self.api == "sglang":
                first = body[0]
                value = first["embedding"]
                tokens = (first.get("meta_info") or {}).get("prompt_tokens", 0)
            else:
                first = body["data"][0]
                value = first["probs"] if self.api == "classify" else first["data"]
                tokens = (body.get("usage") or {}).get("prompt_tokens", 0)
            score = _pick(value, None if self.api == "pooling" else self.label)
        except (orjson.JSONDecodeError, LookupError, TypeError, ValueError) as exc:
            raise ModelError(
                f"{self.spec}: {self._url} answered without a reward where {self.api!r} "
                f"puts one ({type(exc).__name__}: {exc}): {snippet(raw)}",
                model=self.spec,
            ) from None
        return score, int(tokens or 0)

    def _too_large(self, what: str) -> ResponseTooLargeError:
        return ResponseTooLargeError(
            f"{self.spec}: {self._url} {what}; a reward answer is capped at {_MAX_BYTES} bytes",
            model=self.spec,
        )

    async def aclose(self) -> None:
        await self._pools.aclose()


def _pick(value: Any, index: int | None) -> float:
    """``value[index]``, or with ``index=None`` the last value of ``value`` however nested
    (a pooled reward: one value, or one per token), as a finite float."""
    if index is None:
        while isinstance(value, list):
            value = value[-1]
    else:
        value = value[index]
    score = float(value)
    if not math.isfinite(score):
        raise ValueError(f"the reward {score!r} is not a finite number")
    return score


def build_reward_server(name: str, **options: Any) -> RewardServerModel:
    """Factory used by the registry: ``get_model("reward-server:NAME", base_url=...)``."""
    try:
        return RewardServerModel(name, **options)
    except TypeError as exc:
        raise ConfigError(f"reward-server model {name!r}: {exc}") from None
