"""The ``hf-reward`` backend: a scalar reward model (a sequence classifier) run in process.

``get_model("hf-reward:Skywork/Skywork-Reward-V2-Qwen3-0.6B")`` or
``get_model("hf-reward:/path/to/model")``. The weights load with transformers'
``AutoModelForSequenceClassification`` (one output: the reward); each request is a
conversation, its last message the response under judgment, rendered with the model's own
chat template as it was trained (the whole conversation, no generation prompt) and read in
one forward pass. Its :class:`~jurist.types.Completion` carries the reward in ``score``
and no text: the model's :attr:`~jurist.models.Capabilities.scalar` says so, and
:class:`~jurist.judges.RewardModelJudge` turns rewards into judgments.

It is the ``hf`` backend's machinery, composed, not copied: concurrent calls are gathered by
its :class:`~jurist.models._hf_queue.GenerateQueue` into batches run on one worker thread,
cut into length-bucketed forward passes within its :class:`~jurist.models._hf_memory.
BatchLimits` (rows per pass, padded tokens per pass, the GPU's free memory), an
out-of-memory pass split in two (:func:`~jurist.models._hf_memory.run_split`), and loaded
by :func:`~jurist.models._hf_loading.load_model` (hub ids offline, folders, fingerprints).
float32 on the CPU, bfloat16 on a CUDA GPU by default. A row's reward is what a bare
``model(**tokenizer(text))`` gives for it alone: left padding with position ids leaves it
unchanged (``tests/models/test_hf_reward.py`` checks it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable, Sequence
from typing import Any

import torch

from jurist.errors import ConfigError, JuristError, ModelError
from jurist.models._fingerprint import source_fingerprint
from jurist.models._hf_compute import encode, left_pad
from jurist.models._hf_loading import (
    LoadedModel,
    default_dtype,
)
from jurist.models._hf_memory import run_split
from jurist.models._hf_queue import GenerateQueue
from jurist.models._hf_weights import LocalWeights
from jurist.models._model import Capabilities, Model, refuse_images
from jurist.types import Completion, Message, Request, Usage

__all__ = ["HFRewardModel", "build_hf_reward", "render_conversation"]

_KEY = "reward"
_DEFAULTS: dict[str, Any] = {
    "device": "cpu",
    "max_batch_size": None,
    "batch_wait_ms": 2.0,
    "trust_remote_code": False,
    "revision": None,
    "max_batch_tokens": None,
    "memory_fraction": 0.9,
    "attn_implementation": None,
}


def render_conversation(tokenizer: Any, messages: Sequence[Message]) -> str:
    """The text a reward model reads for ``messages``: its chat template over the whole
    conversation, with no generation prompt (the response is complete, closed as in
    training); without a template, ``Role: content`` blocks."""
    if getattr(tokenizer, "chat_template", None):
        rows = [{"role": m.role, "content": m.content} for m in messages]
        return str(tokenizer.apply_chat_template(rows, tokenize=False))
    return "\n\n".join(f"{m.role.capitalize()}: {m.content}" for m in messages)


class HFRewardModel(LocalWeights, Model):
    """A local transformers sequence-classification reward model (one label: the reward).

    ``name``: a hub id or a local folder. ``device``, ``dtype``, ``max_batch_size``,
    ``batch_wait_ms``, ``max_batch_tokens``, ``memory_fraction``, ``attn_implementation``,
    ``trust_remote_code`` and ``revision`` mean what they mean for ``hf:``
    (:class:`~jurist.models._hf.HFModel`). ``label``: which output to read when the head
    has several (default 0).
    """

    provider = "hf-reward"
    thread_name = "jurist-hf-reward"

    def __init__(
        self,
        name: str,
        *,
        device: str = "cpu",
        dtype: str | None = None,
        max_batch_size: int | None = None,
        batch_wait_ms: float = 2.0,
        trust_remote_code: bool = False,
        revision: str | None = None,
        max_batch_tokens: int | None = None,
        memory_fraction: float = 0.9,
        attn_implementation: str | None = None,
        label: int = 0,
    ) -> None:
        self._init_weights(
            "hf-reward",
            name,
            device=device,
            dtype=dtype,
            max_batch_size=max_batch_size,
            max_batch_tokens=max_batch_tokens,
            memory_fraction=memory_fraction,
            revision=revision,
            trust_remote_code=trust_remote_code,
            attn_implementation=attn_implementation,
        )
        if label < 0:
            raise ConfigError(f"hf-reward backend: label must be >= 0, not {label}")
        self.label = label
        rows = self.limits.max_rows
        self._given: dict[str, Any] = {
            "device": device,
            "max_batch_size": max_batch_size,
            "batch_wait_ms": batch_wait_ms,
            "trust_remote_code": trust_remote_code,
            "revision": revision,
            "max_batch_tokens": max_batch_tokens,
            "memory_fraction": memory_fraction,
            "attn_implementation": attn_implementation,
        }
        self._queue: GenerateQueue[Request, Completion] = GenerateQueue(
            self._run_batch, self._get_executor, max_batch=rows, wait_s=batch_wait_ms / 1000
        )

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(scalar=True, max_batch=self.limits.max_rows, remote=False)

    def identity(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "name": self.name,
            "revision": self.revision,
            "dtype": self.dtype,
            "label": self.label,
        }

    def rebuild_options(self) -> dict[str, Any]:
        given = {k: v for k, v in self._given.items() if v != _DEFAULTS[k]}
        if self.dtype != default_dtype(self.device):
            given["dtype"] = self.dtype
        if self.label:
            given["label"] = self.label
        return given

    async def fingerprint(self) -> dict[str, Any] | None:
        """The fingerprint of the files the weights load from (as ``hf:``'s)."""
        return await self._fingerprint.get(self._take_fingerprint)

    async def _take_fingerprint(self) -> dict[str, Any] | None:
        if not self.source.is_local:
            await self.load()
        return await asyncio.to_thread(source_fingerprint, self.name, revision=self.revision)

    # -- loading (the rest is LocalWeights') ------------------------------------------

    def _load_weights(self) -> LoadedModel:
        loaded = self._load_files(auto_class="AutoModelForSequenceClassification")
        labels = int(getattr(loaded.model.config, "num_labels", 1) or 1)
        if self.label >= labels:
            raise ConfigError(
                f"{self.spec}: label {self.label} asked for, but the model's head has "
                f"{labels} output(s)"
            )
        if getattr(loaded.model.config, "pad_token_id", None) is None:
            # transformers pools each row at its last token that is not padding, and
            # refuses batches when no pad id is known: rows are left-padded, so the
            # tokenizer's pad id is the one to skip
            loaded.model.config.pad_token_id = loaded.pad_id
        return loaded

    # -- scoring ---------------------------------------------------------------------

    async def complete(self, request: Request) -> Completion:
        """The reward of ``request``'s conversation, in :attr:`Completion.score`."""
        refuse_images(self.spec, request)
        start = time.perf_counter()
        result = await self._queue.submit(_KEY, request)
        return result.model_copy(update={"latency": time.perf_counter() - start})

    async def complete_many(self, requests: Sequence[Request]) -> list[Completion]:
        """Queue every request at once and run them without waiting for more."""
        for r in requests:
            refuse_images(self.spec, r)
        start = time.perf_counter()
        keyed: list[tuple[Hashable, Request]] = [(_KEY, r) for r in requests]
        done = await self._queue.submit_many(keyed)
        latency = time.perf_counter() - start
        return [c.model_copy(update={"latency": latency}) for c in done]

    def _run_batch(self, key: Hashable, requests: list[Request]) -> list[Completion]:
        lm = self._ensure_loaded()
        try:
            return self.score_rows(lm, requests)
        except JuristError:
            raise
        except Exception as exc:
            raise ModelError(f"hf-reward forward pass failed: {exc}", model=self.spec) from exc

    def score_rows(self, lm: LoadedModel, requests: Sequence[Request]) -> list[Completion]:
        """The rewards of ``requests``, in length-bucketed forward passes (worker thread)."""
        texts = [render_conversation(lm.tokenizer, r.messages) for r in requests]
        rows = encode(lm, texts, special=not lm.has_chat_template)
        widths = [len(r) for r in rows]
        scores: list[float] = [0.0] * len(rows)
        for chunk in self.limits.plan(widths, lm.model, lm.device):
            for done_rows, values in run_split(
                chunk,
                lambda c: self._forward(lm, [rows[i] for i in c]),
                widths=widths,
                limits=self.limits,
                device=lm.device,
                what="reward forward",
            ):
                for i, value in zip(done_rows, values, strict=True):
                    scores[i] = value
        return [
            Completion(
                text="",
                score=scores[i],
                usage=Usage(prompt_tokens=widths[i], calls=1, attempts=1),
                finish_reason="score",
                model=self.name,
            )
            for i in range(len(rows))
        ]

    def _forward(self, lm: LoadedModel, rows: list[list[int]]) -> list[float]:
        ids, mask, positions = left_pad(lm, rows)
        with torch.inference_mode():
            out = lm.model(input_ids=ids, attention_mask=mask, position_ids=positions)
        return [float(v) for v in out.logits[:, self.label].float().cpu().tolist()]


def build_hf_reward(name: str, **options: Any) -> HFRewardModel:
    """Factory used by the registry: ``get_model("hf-reward:NAME", device=...)``."""
    known = {*_DEFAULTS, "dtype", "label"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(
            f"hf-reward backend: unknown options {unknown}; it accepts {sorted(known)}"
        )
    return HFRewardModel(name, **options)
