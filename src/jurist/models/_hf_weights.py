"""The life of a local model's weights, shared by the ``hf:`` and ``hf-reward:`` backends.

The weights load once, on the first call or at :meth:`LocalWeights.prepare` (a missing model
then stops a batch before it starts), on a worker thread of the model's own, the one its
batches run on, so loading and computing never block the event loop. :meth:`aclose` frees
them (and CUDA's cache); a later call loads them again, and the fingerprint of the files is
taken again with them. What a load does (which transformers class, what is checked after)
is each backend's :meth:`LocalWeights._load_weights`, most often :meth:`_load_files` with
the class of transformers to load.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, ClassVar

from jurist._sync import run_sync
from jurist.errors import ConfigError
from jurist.models._hf_loading import (
    DTYPES,
    LoadedModel,
    ModelSource,
    default_dtype,
    load_model,
    on_cuda,
    resolve_source,
)
from jurist.models._hf_memory import BatchLimits
from jurist.models._once import Once

__all__ = ["LocalWeights"]


class LocalWeights:
    """Loading on a thread of the model's own, and freeing, for a local-weights backend.

    A subclass sets ``thread_name`` and implements :meth:`_load_weights`, and calls
    :meth:`_init_weights` in its ``__init__`` with the settings every local backend takes.
    """

    thread_name: ClassVar[str]
    source: ModelSource
    device: str
    dtype: str
    revision: str | None
    trust_remote_code: bool
    attn_implementation: str | None

    name: str
    limits: BatchLimits
    _loaded: LoadedModel | None
    _load_lock: threading.Lock
    _executor: concurrent.futures.ThreadPoolExecutor | None
    _fingerprint: Once[dict[str, Any] | None]

    def _init_weights(
        self,
        backend: str,
        name: str,
        *,
        device: str,
        dtype: str | None,
        max_batch_size: int | None,
        max_batch_tokens: int | None,
        memory_fraction: float,
        revision: str | None,
        trust_remote_code: bool,
        attn_implementation: str | None,
    ) -> None:
        """The settings every local backend takes, checked and kept (errors name
        ``backend``): the weights' source (and the model's ``name``), device, dtype (the
        device's default when ``None``), and the batch limits (rows per pass: 256 on CUDA,
        32 elsewhere, unless given); then nothing loaded yet."""
        if dtype is None:
            dtype = default_dtype(device)
        if dtype not in DTYPES:
            raise ConfigError(
                f"{backend} backend: unknown dtype {dtype!r}; use one of {sorted(DTYPES)}"
            )
        rows = max_batch_size if max_batch_size is not None else (256 if on_cuda(device) else 32)
        self.limits = BatchLimits(
            max_rows=rows, max_tokens=max_batch_tokens, memory_fraction=memory_fraction
        )
        self.source = resolve_source(name)
        self.name = self.source.display
        self.device = device
        self.dtype = dtype
        self.revision = revision
        self.trust_remote_code = trust_remote_code
        self.attn_implementation = attn_implementation
        self._loaded = None
        self._load_lock = threading.Lock()
        self._executor = None
        self._fingerprint = Once()

    def _load_weights(self) -> LoadedModel:
        """Load the tokenizer and weights (blocking; called once per load, under the lock)."""
        raise NotImplementedError

    def _load_files(self, **how: Any) -> LoadedModel:
        """:func:`~jurist.models._hf_loading.load_model` of this model's source on its
        device, dtype, revision, remote-code and attention settings (``how``: the rest,
        such as ``auto_class``)."""
        return load_model(
            self.source,
            device=self.device,
            dtype=self.dtype,
            revision=self.revision,
            trust_remote_code=self.trust_remote_code,
            attn_implementation=self.attn_implementation,
            **how,
        )

    def _get_executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=self.thread_name
            )
        return self._executor

    def _ensure_loaded(self) -> LoadedModel:
        """Load on first use (blocking: runs on the worker thread)."""
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load_weights()
            return self._loaded

    @property
    def loaded(self) -> bool:
        """Whether the weights are in memory now."""
        return self._loaded is not None

    async def load(self) -> None:
        """Load the tokenizer and weights now; raises :class:`~jurist.errors.ModelLoadError`."""
        if self._loaded is None:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._get_executor(), self._ensure_loaded)

    def load_sync(self) -> None:
        """:meth:`load` for sync code (also inside a running event loop)."""
        run_sync(self.load())

    async def prepare(self) -> None:
        """Load the weights before a batch starts, so a missing model stops it early."""
        await self.load()

    async def aclose(self) -> None:
        """Free the weights; a later call loads them again."""
        executor, self._executor = self._executor, None
        if executor is not None:
            await asyncio.get_running_loop().run_in_executor(None, executor.shutdown)
        with self._load_lock:
            loaded, self._loaded = self._loaded, None
            self._fingerprint.reset()
        if loaded is not None and loaded.device.type == "cuda":
            del loaded
            import torch

            torch.cuda.empty_cache()
