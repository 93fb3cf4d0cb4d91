"""Batch shapes for the ``hf`` backend: length bucketing, memory budgets, out-of-memory splits.

A batch the :class:`~jurist.models._hf_queue.GenerateQueue` hands over (up to
``max_batch_size`` requests) runs as one or more forward passes (*chunks*). Rows are sorted
longest first and cut into chunks whose padded size, rows x widest row, stays within a
token budget, so rows of like length share a pass and little is spent on padding:

>>> plan_chunks([500, 120, 480, 130, 510], max_rows=8, max_tokens=1100)
[[4, 0], [2, 3], [1]]
>>> plan_chunks([5, 7, 6], max_rows=2, max_tokens=None)
[[1, 2], [0]]

The token budget is ``max_batch_tokens`` when the caller sets one. On CUDA it is otherwise
read from the GPU before each batch: the memory the process may still use (free memory, plus
what torch holds cached and unused, less the share of the card kept free by
``memory_fraction``), over an estimate of the activation bytes one token needs
(:meth:`ModelShape.forward_bytes`, plus the KV cache when generating), capped at
:data:`DEFAULT_MAX_BATCH_TOKENS` (past that the matrix products are no faster).

A chunk that still runs out of memory is split in two and each half retried; the budget
learnt that way is kept for later batches, and a warning names the setting that avoids it.
A single row that does not fit fails with a :class:`~jurist.errors.ModelError` that says
how to fix it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from jurist.errors import ConfigError, ModelError

__all__ = [
    "DEFAULT_MAX_BATCH_TOKENS",
    "BatchLimits",
    "ModelShape",
    "plan_chunks",
    "run_split",
]

log = logging.getLogger("jurist.models.hf")

DEFAULT_MAX_BATCH_TOKENS = 16384
_GIB = 2**30
T = TypeVar("T")


def plan_chunks(
    lengths: Sequence[int], *, max_rows: int, max_tokens: int | None
) -> list[list[int]]:
    """Row indices cut into forward passes, longest rows first (stable among equals).

    A chunk holds at most ``max_rows`` rows and, with ``max_tokens``, at most that many
    padded tokens (rows x its widest row); a row wider than ``max_tokens`` runs alone.
    """
    if max_rows < 1:
        raise ConfigError(f"max_rows must be at least 1, not {max_rows}")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    chunks: list[list[int]] = []
    current: list[int] = []
    width = 0
    for i in order:
        full = len(current) >= max_rows or (
            max_tokens is not None and (len(current) + 1) * width > max_tokens
        )
        if current and full:
            chunks.append(current)
            current = []
        if not current:
            width = max(1, lengths[i])
        current.append(i)
    if current:
        chunks.append(current)
    return chunks


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder that set its memory per token."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    dtype_bytes: int

    @classmethod
    def from_config(cls, config: Any, dtype_bytes: int) -> ModelShape:
        """Read a transformers config (``config.get_text_config()`` for multimodal ones)."""
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        hidden = int(text.hidden_size)
        heads = int(getattr(text, "num_attention_heads", 1) or 1)
        return cls(
            hidden=hidden,
            intermediate=int(getattr(text, "intermediate_size", 4 * hidden) or 4 * hidden),
            layers=int(getattr(text, "num_hidden_layers", 1) or 1),
            heads=heads,
            kv_heads=int(getattr(text, "num_key_value_heads", heads) or heads),
            head_dim=int(getattr(text, "head_dim", None) or hidden // heads),
            vocab=int(text.vocab_size),
            dtype_bytes=dtype_bytes,
        )

    def forward_bytes(self) -> int:
        """Peak activation bytes per token of a forward pass without a cache (an estimate).

        Layers run one after another and inference keeps no activations for a backward
        pass, so this is one layer's worth: the residual stream and its normalised copy (in
        float32, as RMSNorm computes), the query, key, value and attention outputs, and the
        MLP's gate, up, activation and product, doubled for the allocator's slack.
        """
        d = self.dtype_bytes
        attention = (2 * self.heads + 2 * self.kv_heads) * self.head_dim * d
        per_layer = self.hidden * (2 * d + 2 * 4) + attention + 4 * self.intermediate * d
        return 2 * per_layer

    def kv_bytes(self) -> int:
        """Bytes of KV cache per token, all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes

    def logits_bytes(self, positions: int) -> int:
        """Logits kept for ``positions`` positions: the model's dtype, float32, log-softmax."""
        return positions * self.vocab * (self.dtype_bytes + 8)


@dataclass
class BatchLimits:
    """How large one forward pass may be; shared by the scoring and generation paths.

    ``max_rows``: rows per pass. ``max_tokens``: padded tokens per pass, or ``None`` for a
    budget read from the GPU's free memory (no token limit on the CPU). ``memory_fraction``:
    the share of the GPU's memory that may be in use, by every process, while jurist runs.
    """

    max_rows: int
    max_tokens: int | None = None
    memory_fraction: float = 0.9
    learnt: int | None = None  # a budget lowered by an out-of-memory split

    def __post_init__(self) -> None:
        if self.max_rows < 1:
            raise ConfigError(f"hf backend: max_batch_size must be >= 1, not {self.max_rows}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(f"hf backend: max_batch_tokens must be >= 1, not {self.max_tokens}")
        if not 0.0 < self.memory_fraction <= 1.0:
            raise ConfigError(
                f"hf backend: memory_fraction must be in (0, 1], not {self.memory_fraction}"
            )

    def token_budget(self, lm_model: Any, device: Any, *, extra_per_token: int = 0) -> int | None:
        """Padded tokens one pass may hold now (``None``: no limit, on the CPU)."""
        budget = self.max_tokens
        if budget is None and getattr(device, "type", "cpu") == "cuda":
            shape = model_shape(lm_model)
            usable = usable_cuda_bytes(device, self.memory_fraction)
            usable -= shape.logits_bytes(self.max_rows)
            per_token = shape.forward_bytes() + extra_per_token
            budget = max(1, min(DEFAULT_MAX_BATCH_TOKENS, usable // per_token))
        if self.learnt is not None:
            budget = self.learnt if budget is None else min(budget, self.learnt)
        return budget

    def plan(
        self,
        lengths: Sequence[int],
        lm_model: Any,
        device: Any,
        *,
        extra_tokens: int = 0,
        extra_per_token: int = 0,
    ) -> list[list[int]]:
        """Chunks for rows of ``lengths`` (each grows by ``extra_tokens`` when generating)."""
        budget = self.token_budget(lm_model, device, extra_per_token=extra_per_token)
        if budget is not None and extra_tokens:
            # rows x (width + extra) <= budget  <=>  plan on widths + extra
            lengths = [n + extra_tokens for n in lengths]
        return plan_chunks(lengths, max_rows=self.max_rows, max_tokens=budget)


def model_shape(lm_model: Any) -> ModelShape:
    dtype = getattr(lm_model, "dtype", None)
    size = int(getattr(dtype, "itemsize", 4) or 4)
    return ModelShape.from_config(lm_model.config, size)


def usable_cuda_bytes(device: Any, memory_fraction: float) -> int:
    """Bytes this process may still allocate on ``device`` within ``memory_fraction``."""
    import torch

    free, total = torch.cuda.mem_get_info(device)
    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return int(free + cached - (1.0 - memory_fraction) * total)


def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` is torch's out-of-memory error (CUDA or another accelerator)."""
    import torch

    oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    return isinstance(exc, oom)


def _memory_note(device: Any) -> str:
    if getattr(device, "type", "cpu") != "cuda":
        return ""
    import torch

    free, total = torch.cuda.mem_get_info(device)
    mine = torch.cuda.memory_allocated(device)
    others = total - free - torch.cuda.memory_reserved(device)
    return (
        f" ({free / _GIB:.1f} GiB free of {total / _GIB:.1f} GiB; this process holds "
        f"{mine / _GIB:.1f} GiB, others {others / _GIB:.1f})"
    )


def run_split(
    chunk: list[int],
    run: Callable[[list[int]], T],
    *,
    widths: Sequence[int],
    limits: BatchLimits,
    device: Any,
    what: str,
) -> list[tuple[list[int], T]]:
    """``run(chunk)``; on out-of-memory, split the chunk in two and run each half.

    Returns ``(rows, result)`` pairs covering ``chunk`` in order. ``widths`` are the rows'
    token counts (to report and learn the budget that fits).
    """
    try:
        return [(chunk, run(chunk))]
    except Exception as exc:
        if not is_oom(exc):
            raise
        _free_cache(device)
        tokens = len(chunk) * max(widths[r] for r in chunk)
        if len(chunk) == 1:
            raise ModelError(
                f"hf {what}: out of GPU memory on a single prompt of {tokens} tokens"
                f"{_memory_note(device)}. It cannot be split further: use shorter prompts, a "
                "smaller model or dtype='bfloat16', or free the GPU memory other processes hold"
            ) from exc
        half = max(1, tokens // 2)
        limits.learnt = half if limits.learnt is None else min(limits.learnt, half)
        log.warning(
            "hf %s: out of GPU memory on %d rows x %d tokens%s; splitting the pass in two. "
            "Set max_batch_tokens=%d (or a smaller max_batch_size) to avoid the retry",
            what,
            len(chunk),
            max(widths[r] for r in chunk),
            _memory_note(device),
            half,
        )
    mid = math.ceil(len(chunk) / 2)
    return run_split(
        chunk[:mid], run, widths=widths, limits=limits, device=device, what=what
    ) + run_split(chunk[mid:], run, widths=widths, limits=limits, device=device, what=what)


def _free_cache(device: Any) -> None:
    if getattr(device, "type", "cpu") == "cuda":
        import torch

        torch.cuda.empty_cache()
