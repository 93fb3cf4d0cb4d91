"""A loopback server speaking vLLM's reward routes (and SGLang's), backed by a real model.

``RewardRoutes(model_dir)`` serves a transformers sequence-classification model on
127.0.0.1 as ``vllm serve`` serves one: ``POST /classify`` takes ``{"model", "messages",
"use_activation"}`` (the chat template applied server side) and answers
``{"data": [{"index", "label", "probs", "num_classes"}], "usage": {...}}``, ``probs`` raw
when ``use_activation`` is false (a sigmoid otherwise, as vLLM applies to one label);
``POST /pooling`` takes ``{"model", "messages"}`` and answers ``{"data": [{"index",
"object": "pooling", "data": [reward]}]}``. With ``sglang=True``, ``POST /classify`` is
SGLang's reward route instead: ``{"model", "text": [rendered conversation, ...]}`` ->
``[{"embedding": [reward], "meta_info": {"prompt_tokens"}}]``. Every body received is
kept in ``bodies``. Each reward is one bare forward pass over one conversation.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Self

from aiohttp import web

from tests._loopback import Loopback


class RewardRoutes:
    """The server (a context manager); ``base_url`` is its root, ``http://127.0.0.1:PORT``."""

    def __init__(self, model_dir: Path, *, name: str = "rm", sglang: bool = False) -> None:
        import transformers

        self.name = name
        self.sglang = sglang
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
        self.model = transformers.AutoModelForSequenceClassification.from_pretrained(
            model_dir
        ).eval()
        self.bodies: list[dict[str, Any]] = []
        self.answer: dict[str, Any] | None = None  # a scripted answer instead of the model's
        self._server = Loopback(self._handle, path="/{route}")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    def reward_of(self, text: str) -> tuple[float, int]:
        """One bare forward pass over ``text`` (already rendered): the reward and tokens."""
        import torch

        enc = self.tokenizer(text, return_tensors="pt", add_special_tokens=False)
        with torch.no_grad():
            logits = self.model(**enc).logits
        return float(logits[0, 0]), int(enc["input_ids"].shape[1])

    def _rendered(self, messages: list[dict[str, str]]) -> str:
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False))

    async def _handle(self, request: web.Request) -> web.Response:
        route = request.match_info["route"]
        body = await request.json()
        self.bodies.append(body)
        if self.answer is not None:
            return web.json_response(self.answer)
        if body.get("model") != self.name:
            return web.json_response(
                {"error": {"message": f"model {body.get('model')!r} does not exist"}}, status=404
            )
        if self.sglang:
            if route != "classify":
                return web.json_response({"error": {"message": "no route"}}, status=404)
            out = []
            for text in body["text"]:
                reward, tokens = self.reward_of(text)
                out.append({"embedding": [reward], "meta_info": {"prompt_tokens": tokens}})
            return web.json_response(out)
        reward, tokens = self.reward_of(self._rendered(body["messages"]))
        usage = {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0}
        if route == "classify":
            value = reward
            if body.get("use_activation", True):
                value = 1.0 / (1.0 + math.exp(-reward))
            data = {"index": 0, "label": "LABEL_0", "probs": [value], "num_classes": 1}
            return web.json_response({"object": "list", "data": [data], "usage": usage})
        if route == "pooling":
            data = {"index": 0, "object": "pooling", "data": [reward]}
            return web.json_response({"object": "list", "data": [data], "usage": usage})
        return web.json_response({"error": {"message": f"no route /{route}"}}, status=404)

    def __enter__(self) -> Self:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()
