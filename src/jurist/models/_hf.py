"""The ``hf`` backend: a transformers model run in process, with dynamic batching.

``get_model("hf:Qwen/Qwen2.5-0.5B-Instruct")`` or ``get_model("hf:/path/to/model")``.
The model loads on the first call, or at once with :meth:`HFModel.load` (the CLI does so to
fail fast). Concurrent calls are gathered into batches (up to ``max_batch_size``, waiting at
most ``batch_wait_ms`` for more) and run as one left-padded ``generate`` (or forward) call
on a single worker thread, so torch never blocks the event loop; requests whose sampling
parameters differ go into different batches. Greedy results do not depend on batching.

Sampling: ``temperature`` None or 0 is greedy; above 0 samples with ``top_p``. A ``seed``
makes sampling reproducible: such a request runs in a batch of its own under its own torch
random state. ``stop`` strings cut the text after generation (the rows run to their end).

Thinking: ``Request.reasoning`` sets the chat template's ``enable_thinking`` and bounds the
thinking on generation (:mod:`jurist.models._thinking`). ``capabilities.thinking`` is True
when the model's chat template reads ``enable_thinking`` (read from its files before the
load, from the tokenizer after it); a request with ``reasoning`` on a model without that
switch fails with :class:`~jurist.errors.CapabilityError` before anything is generated.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Hashable, Sequence
from typing import Any

from jurist.errors import ConfigError, JuristError, ModelError, ModelLoadError
from jurist.models import _hf_compute as compute
from jurist.models._fingerprint import source_fingerprint
from jurist.models._hf_loading import (
    DTYPES,
    LoadedModel,
    default_dtype,
    on_cuda,
    wrap_loaded,
)
from jurist.models._hf_queue import GenerateQueue
from jurist.models._hf_scoring import score_batch
from jurist.models._hf_thinking import files_template_thinks, loaded_template_thinks
from jurist.models._hf_weights import LocalWeights
from jurist.models._model import Capabilities, Model, refuse_images
from jurist.models._thinking import refuse_reasoning
from jurist.types import CandidateScores, Completion, Request

__all__ = ["HFModel", "build_hf"]

_SCORE_KEY = "candidate_scores"
_BATCH_OPTIONS = frozenset(
    {"max_batch_size", "batch_wait_ms", "max_tokens", "max_batch_tokens", "memory_fraction"}
)


class HFModel(LocalWeights, Model):
    """A local transformers causal LM.

    ``name``: a hub id or a local folder. ``device``: ``"cpu"`` (default), ``"cuda"``,
    ``"cuda:N"``, ``"mps"`` or ``"auto"``. ``dtype``: ``"auto"`` (the checkpoint's),
    ``"float32"``, ``"bfloat16"``, ``"float16"``; by default float32 on CPU, bfloat16 on a
    CUDA GPU (float16 where it has no bfloat16) and ``"auto"`` elsewhere. ``max_tokens``: the
    default generation length when a request sets none.

    Batches: ``max_batch_size`` requests at most per batch and rows per forward pass (32 on
    the CPU, 256 on a GPU by default); ``max_batch_tokens`` padded tokens at most per pass
    (default: no limit on the CPU; on a GPU, as many as its free memory holds, up to 16384);
    ``memory_fraction`` (0.9) the share of the GPU's memory that may be in use.
    ``attn_implementation``: transformers' attention kernels (default on a GPU:
    ``"flash_attention_2"`` when ``flash_attn`` is installed, else ``"sdpa"``).
    """

    provider = "hf"
    thread_name = "jurist-hf"

    def __init__(
        self,
        name: str,
        *,
        device: str = "cpu",
        dtype: str | None = None,
        max_batch_size: int | None = None,
        batch_wait_ms: float = 2.0,
        max_tokens: int = 256,
        trust_remote_code: bool = False,
        revision: str | None = None,
        max_batch_tokens: int | None = None,
        memory_fraction: float = 0.9,
        attn_implementation: str | None = None,
    ) -> None:
        self._init_weights(
            "hf",
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
        if max_tokens < 1:
            raise ConfigError(f"hf backend: max_tokens must be >= 1, not {max_tokens}")
        max_batch_size = self.max_batch_size = self.limits.max_rows
        self.batch_wait_ms = batch_wait_ms
        self.max_tokens = max_tokens
        self._in_memory = False
        self._memory_token = ""
        self._solo = itertools.count(1)
        wait_s = batch_wait_ms / 1000
        self._generate: GenerateQueue[Request, Completion] = GenerateQueue(
            self._run_generate, self._get_executor, max_batch=max_batch_size, wait_s=wait_s
        )
        self._score: GenerateQueue[tuple[Request, tuple[str, ...]], CandidateScores] = (
            GenerateQueue(
                self._run_score, self._get_executor, max_batch=max_batch_size, wait_s=wait_s
            )
        )

    @classmethod
    def from_objects(cls, model: Any, tokenizer: Any, *, name: str, **options: Any) -> HFModel:
        """Wrap a transformers causal LM and tokenizer already in memory.

        For a model built, trained or loaded by the caller (a training loop's policy, a
        model made from a config): nothing is read from disk or the hub. ``name`` labels it
        (its ``identity()``). Its weights cannot be fingerprinted from files, so its cache
        key carries a token drawn for this wrapping: answers are cached for this object only,
        and weights changed in place (a training step) need a new wrapping. ``options`` are
        the constructor's batching options; device and dtype are the model's own. The model
        is put in eval mode and its ``generation_config`` reduced to the special tokens, as
        when loading.
        """
        unknown = sorted(set(options) - _BATCH_OPTIONS)
        if unknown:
            raise ConfigError(f"HFModel.from_objects: unknown options {unknown}")
        dev = model.device
        dtype = str(model.dtype).removeprefix("torch.")
        self = cls(name, device=str(dev), dtype=dtype if dtype in DTYPES else "auto", **options)
        self._in_memory = True
        self._memory_token = uuid.uuid4().hex
        self._loaded = wrap_loaded(model, tokenizer, dev)
        return self

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            logprobs=True,
            top_logprobs=compute.MAX_TOP_LOGPROBS,
            candidate_scores=True,
            max_batch=self.limits.max_rows,
            remote=False,
            thinking=self._thinks(),
        )

    def _thinks(self) -> bool:
        """Whether the chat template has a thinking switch (see the module docs)."""
        loaded = self._loaded
        if loaded is not None:
            return loaded_template_thinks(loaded)
        return files_template_thinks(self.source, self.revision)

    async def _check_reasoning(self, request: Request) -> None:
        """Refuse ``reasoning`` on a model whose template cannot think (loading it first,
        so the tokenizer's own template decides)."""
        if request.reasoning is not None:
            await self.load()
            refuse_reasoning(self.spec, request, self._thinks())

    def rebuild_options(self) -> dict[str, Any]:
        """The options given that differ from the defaults (a model wrapped with
        :meth:`from_objects` lives in this process only: it cannot be rebuilt)."""
        if self._in_memory:
            raise ConfigError(
                f"{self.spec} wraps a model object of this process (HFModel.from_objects): "
                "it cannot be rebuilt in another process; load it by name or folder"
            )
        defaults: dict[str, Any] = {
            "device": "cpu",
            "dtype": default_dtype(self.device),
            "max_batch_size": 256 if on_cuda(self.device) else 32,
            "batch_wait_ms": 2.0,
            "max_tokens": 256,
            "trust_remote_code": False,
            "revision": None,
            "max_batch_tokens": None,
            "memory_fraction": 0.9,
            "attn_implementation": None,
        }
        given = {
            "device": self.device,
            "dtype": self.dtype,
            "max_batch_size": self.max_batch_size,
            "batch_wait_ms": self.batch_wait_ms,
            "max_tokens": self.max_tokens,
            "trust_remote_code": self.trust_remote_code,
            "revision": self.revision,
            "max_batch_tokens": self.limits.max_tokens,
            "memory_fraction": self.limits.memory_fraction,
            "attn_implementation": self.attn_implementation,
        }
        return {k: v for k, v in given.items() if v != defaults[k]}

    def identity(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "name": self.name,
            "revision": self.revision,
            "dtype": self.dtype,
            "default_max_tokens": self.max_tokens,
        }

    async def fingerprint(self) -> dict[str, Any] | None:
        """The fingerprint of the files this model loads (:mod:`jurist.models._fingerprint`):
        its folder's (read without loading), or its hub snapshot's (after the load, which may
        fetch a newer snapshot). Taken once per load of the weights (again after
        :meth:`aclose`)."""
        return await self._fingerprint.get(self._take_fingerprint)

    async def _take_fingerprint(self) -> dict[str, Any] | None:
        if self._in_memory:
            return {"in_memory": self._memory_token}
        name, revision = self.source.display, self.revision
        if not self.source.is_local:
            await self.load()
        found = await asyncio.to_thread(source_fingerprint, name, revision=revision)
        if found is None:
            raise ModelLoadError(
                f"hf model {name!r} was loaded but its snapshot is not in the Hugging Face "
                "cache, so its weights cannot be fingerprinted for the jurist cache; pass "
                "the model's folder (hf:/path/to/model) or turn the cache off (--no-cache)",
                model=self.spec,
            )
        return found

    # -- loading (the rest is LocalWeights') ------------------------------------------

    def _load_weights(self) -> LoadedModel:
        if self._in_memory:
            raise ModelLoadError(
                f"hf model {self.name!r} was given in memory (HFModel.from_objects) and "
                "has been closed: wrap the model again to use it",
                model=self.spec,
            )
        return self._load_files()

    # -- generation ------------------------------------------------------------------

    def _key(self, request: Request) -> compute.GenParams:
        return compute.gen_params(
            request, default_max_tokens=self.max_tokens, solo=next(self._solo)
        )

    async def complete(self, request: Request) -> Completion:
        refuse_images(self.spec, request)
        await self._check_reasoning(request)
        start = time.perf_counter()
        result = await self._generate.submit(self._key(request), request)
        return result.model_copy(update={"latency": time.perf_counter() - start})

    async def complete_many(self, requests: Sequence[Request]) -> list[Completion]:
        """Queue all requests at once and run them without waiting for more."""
        start = time.perf_counter()
        for r in requests:
            refuse_images(self.spec, r)
            await self._check_reasoning(r)
        keyed: list[tuple[Hashable, Request]] = [(self._key(r), r) for r in requests]
        results = await self._generate.submit_many(keyed)
        latency = time.perf_counter() - start
        return [r.model_copy(update={"latency": latency}) for r in results]

    def _run_generate(self, key: Hashable, requests: list[Request]) -> list[Completion]:
        assert isinstance(key, compute.GenParams)
        lm = self._ensure_loaded()
        try:
            return compute.generate_batch(lm, key, requests, self.name, self.limits)
        except JuristError:
            raise
        except Exception as exc:
            raise ModelError(f"hf generate failed: {exc}", model=self.spec) from exc

    # -- candidate scoring -----------------------------------------------------------

    async def candidate_scores(
        self, request: Request, candidates: Sequence[str]
    ) -> CandidateScores:
        """Logprob of each candidate as the start of the answer, in one batched forward."""
        refuse_images(self.spec, request)
        await self._check_reasoning(request)
        unique = tuple(dict.fromkeys(candidates))
        if not unique:
            raise ConfigError("candidate_scores needs at least one candidate")
        if any(not c for c in unique):
            raise ConfigError("candidate_scores got an empty candidate string")
        return await self._score.submit(_SCORE_KEY, (request, unique))

    def _run_score(
        self, key: Hashable, items: list[tuple[Request, tuple[str, ...]]]
    ) -> list[CandidateScores]:
        lm = self._ensure_loaded()
        try:
            return score_batch(lm, items, self.limits)
        except JuristError:
            raise
        except Exception as exc:
            raise ModelError(f"hf candidate scoring failed: {exc}", model=self.spec) from exc


def build_hf(name: str, **options: Any) -> HFModel:
    """Factory used by the registry: ``get_model("hf:NAME", device=..., dtype=...)``."""
    known = {
        "device",
        "dtype",
        "max_batch_size",
        "batch_wait_ms",
        "max_tokens",
        "trust_remote_code",
        "revision",
        "max_batch_tokens",
        "memory_fraction",
        "attn_implementation",
    }
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"hf backend: unknown options {unknown}; it accepts {sorted(known)}")
    return HFModel(name, **options)
