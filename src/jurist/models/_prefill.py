"""Verdicts read after an assistant prefix on an OpenAI-compatible server: ``prefill=``.

A chat endpoint starts a new answer; to weigh a judge's verdicts right where its template
puts them (after ``Score:``, after a thinking trace, at the start of an answer that named
none), the server must continue an answer the client has begun. Servers do that in one of
two ways, and the ``openai`` backend takes the one its server offers as an option::

    get_model("openai:smol", base_url="http://127.0.0.1:8080/v1",
              prefill="completions", chat_template="/models/smol.gguf")
    jurist judge data.jsonl --model openai:smol --base-url http://127.0.0.1:8080/v1 \\
        --model-option prefill=completions --model-option chat_template=chatml \\
        --scoring logprobs

- ``prefill="completions"``: raw ``POST /v1/completions`` with the prompt written on the
  client from the model's chat template (``chat_template``: ``"chatml"``, Jinja text, or a
  ``.jinja`` / ``.gguf`` file; see :mod:`jurist.models._prefill_wire`), the assistant
  prefix at its end. llama.cpp's ``llama-server``, llama-cpp-python's server, vLLM and
  SGLang serve raw completions.
- ``prefill="chat"``: ``POST /v1/chat/completions`` with the prefix as the final assistant
  message and ``continue_final_message: true, add_generation_prompt: false`` (vLLM, SGLang),
  the server rendering its own template.

Either way one request with ``max_tokens=1`` and ``top_logprobs`` reads the verdicts'
first tokens (``top_logprobs_max`` of them, 20 by default). The model then declares
``capabilities.candidate_scores``, so a judge on it weighs verdicts by the candidates route
(:mod:`jurist.judges._scoring`): a template whose answer is the verdict alone is scored in
that one request, with no text generated; a judge that explains or thinks first is weighed
after its answer, even when the answer named no verdict
(:mod:`jurist.judges._after_thought`). A request with ``reasoning`` sends the template the
``enable_thinking`` switch (``completions``) or ``chat_template_kwargs`` (``chat``).
Without ``prefill`` the backend is the plain :class:`~jurist.models.OpenAIModel`, which
cannot score candidates: a strict logprob judge whose answer names no verdict then fails
that item, as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Literal

import aiohttp
import orjson

from jurist.errors import APITimeoutError, ConfigError, ModelError
from jurist.models._deadline import deadline
from jurist.models._model import Capabilities
from jurist.models._openai import OpenAIModel, build_openai
from jurist.models._openai_errors import status_error_for
from jurist.models._openai_wire import read_capped, snippet
from jurist.models._prefill_wire import (
    first_alternatives,
    load_chat_template,
    render_chat,
    scores_from_alternatives,
)
from jurist.models._thinking import template_options
from jurist.types import CandidateScores, Request

__all__ = ["PREFILL_MODES", "PrefillOpenAIModel", "build_server"]

PrefillMode = Literal["completions", "chat"]
PREFILL_MODES: tuple[str, ...] = ("completions", "chat")


class PrefillOpenAIModel(OpenAIModel):
    """An :class:`~jurist.models.OpenAIModel` whose server continues an assistant prefix,
    so it scores candidate verdicts there (see the module docs)."""

    def __init__(
        self,
        name: str,
        *,
        prefill: PrefillMode,
        chat_template: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(name, **options)
        if prefill not in PREFILL_MODES:
            raise ConfigError(
                f"openai prefill {prefill!r} must be 'completions' (raw /v1/completions, "
                "the prompt written from chat_template) or 'chat' (continue_final_message)"
            )
        if prefill == "completions" and not chat_template:
            raise ConfigError(
                "openai prefill='completions' writes the prompt on the client: give the "
                "model's chat_template ('chatml', Jinja text, or a .jinja or .gguf file)"
            )
        if prefill == "chat" and chat_template:
            raise ConfigError("openai prefill='chat' uses the server's own chat template")
        if not self._top_max:
            raise ConfigError(f"openai prefill needs logprobs; {self.spec} has logprobs=False")
        self.prefill: PrefillMode = prefill
        self._template_given = chat_template
        self._template = load_chat_template(chat_template) if chat_template else None
        digest = hashlib.sha256((self._template or "").encode()).hexdigest()[:16]
        self._template_id = digest if self._template else None

    @property
    def capabilities(self) -> Capabilities:
        return super().capabilities.model_copy(update={"candidate_scores": True})

    def identity(self) -> dict[str, Any]:
        out = {**super().identity(), "prefill": self.prefill}
        if self._template_id is not None:
            out["chat_template"] = self._template_id
        return out

    def rebuild_options(self) -> dict[str, Any]:
        out = {**super().rebuild_options(), "prefill": self.prefill}
        if self._template_given is not None:
            out["chat_template"] = self._template_given
        return out

    async def candidate_scores(
        self, request: Request, candidates: Sequence[str]
    ) -> CandidateScores:
        """Each candidate's score at the answer's next token, after the request's messages
        (a final assistant message is continued), from one one-token request."""
        unique = list(dict.fromkeys(candidates))
        if not unique or any(not c for c in unique):
            raise ConfigError("candidate_scores needs non-empty candidate strings")
        url, body = self._prefill_body(request)
        payload = await self._post(url, body, request)
        try:
            alternatives = first_alternatives(payload)
        except ModelError as exc:
            raise ModelError(f"{self.spec}: {url}: {exc}", model=self.spec) from exc
        usage = payload.get("usage") or {}
        return scores_from_alternatives(
            alternatives, unique, prompt_tokens=int(usage.get("prompt_tokens") or 0)
        )

    def _prefill_body(self, request: Request) -> tuple[str, dict[str, Any]]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        common: dict[str, Any] = {"model": self.name, "max_tokens": 1, "temperature": 0.0}
        if self.prefill == "completions":
            assert self._template is not None
            prompt = render_chat(self._template, messages, **template_options(request.reasoning))
            body = {**common, "prompt": prompt, "logprobs": self._top_max}
            return f"{self.base_url}/completions", body
        body = {
            **common,
            "messages": messages,
            "logprobs": True,
            "top_logprobs": self._top_max,
        }
        if messages and messages[-1]["role"] == "assistant":
            body.update(continue_final_message=True, add_generation_prompt=False)
        options = template_options(request.reasoning)
        if options:
            body["chat_template_kwargs"] = options
        return f"{self.base_url}/chat/completions", body

    async def _post(self, url: str, body: dict[str, Any], request: Request) -> dict[str, Any]:
        data = orjson.dumps(body)
        session = self._pools.current() or await self._pools.get()
        seconds = self.timeout if request.timeout is None else request.timeout
        try:
            with deadline(seconds):
                async with session.post(url, data=data) as resp:
                    raw = await read_capped(resp, self.max_response_bytes, self._too_large)
                    if not 200 <= resp.status < 300:
                        raise status_error_for(
                            self.spec, url, resp.status, raw, resp.headers, has_key=self._has_key
                        )
        except TimeoutError:
            raise APITimeoutError(
                f"{self.spec}: no answer from {url} within {seconds:g} s", model=self.spec
            ) from None
        except aiohttp.ClientError as exc:
            raise self._connection_error(exc, url) from exc
        try:
            payload = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ModelError(
                f"{self.spec}: {url} answered with a body that is not JSON: {snippet(raw)}",
                model=self.spec,
            ) from exc
        if not isinstance(payload, dict):
            raise ModelError(f"{self.spec}: {url} answered {snippet(raw)}", model=self.spec)
        return payload


def build_server(name: str, **options: Any) -> OpenAIModel:
    """The ``openai`` provider's factory: :class:`PrefillOpenAIModel` when ``prefill`` is
    given, else :func:`~jurist.models._openai.build_openai`'s plain model."""
    prefill = options.pop("prefill", None)
    template = options.pop("chat_template", None)
    plain = build_openai(name, **options)
    if prefill is None:
        if template is not None:
            raise ConfigError("openai chat_template is an option of prefill='completions'")
        return plain
    given = {k: v for k, v in options.items() if v is not None}
    opts = {**plain.rebuild_options(), **plain.secrets(), **given}
    return PrefillOpenAIModel(name, prefill=prefill, chat_template=template, **opts)
