"""The torch work of the ``hf`` backend: prompts, padding and batched ``generate``.

Everything here is blocking and runs on the backend's worker thread, one batch at a time.

Prompts: the tokenizer's chat template with ``add_generation_prompt=True`` (when the last
message is from the assistant, the template continues it instead: a prefilled answer such
as ``"Score: "``). A tokenizer without a chat template gets the messages joined plainly,
``"System: ...\\n\\nUser: ...\\n\\nAssistant:\\n"``, so a base model can still be used.
A request with ``reasoning`` renders with the template's ``enable_thinking`` switch, and its
prefilled answer is appended as it is to the generation prompt (which may open a
``<think>`` block), so a prefill after a thinking trace continues exactly the text the model
generated; its thinking budget is enforced on generation (:mod:`jurist.models._thinking`).

Batches are left-padded, with position ids counted from each row's first real token, so a
row's result does not depend on what else is in its batch. The hub's
``generation_config.json`` sampling defaults (top-k, repetition penalty, ...) are never
applied: greedy means argmax and sampling means plain temperature/top-p sampling, unless the
request's ``extra`` asks for more (keys in :data:`GENERATE_EXTRA`).

Logprobs are those of the model's distribution at each step, before temperature, top-k and
top-p (as vLLM reports them); extra processors asked through ``extra`` (a repetition
penalty) do apply.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import transformers

from jurist.errors import CapabilityError, ConfigError
from jurist.models._hf_loading import LoadedModel
from jurist.models._hf_memory import BatchLimits, model_shape, run_split
from jurist.models._hf_thinking import budget_processor
from jurist.models._thinking import template_options, thinking_budget
from jurist.types import (
    Completion,
    Message,
    Reasoning,
    Request,
    TokenLogprob,
    TopLogprob,
    Usage,
)

__all__ = [
    "GENERATE_EXTRA",
    "MAX_TOP_LOGPROBS",
    "GenParams",
    "encode",
    "encode_prompts",
    "gen_params",
    "generate_batch",
    "left_pad",
    "render_prompt",
    "to_device",
]

MAX_TOP_LOGPROBS = 20
GENERATE_EXTRA = frozenset(
    {"top_k", "min_p", "typical_p", "repetition_penalty", "no_repeat_ngram_size", "min_new_tokens"}
)


@dataclass(frozen=True)
class GenParams:
    """The sampling parameters a batch shares (its group key)."""

    max_new_tokens: int
    do_sample: bool
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    extra: tuple[tuple[str, Hashable], ...] = ()
    solo: int = 0  # non-zero: run alone (seeded sampling is reproducible only alone)
    think_budget: int | None = None  # the most thinking tokens (None: not bounded here)

    def config(self, lm: LoadedModel) -> Any:
        options: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "do_sample": self.do_sample,
            "eos_token_id": list(lm.eos_ids) or None,
            "pad_token_id": lm.pad_id,
            "repetition_penalty": 1.0,
        }
        if self.do_sample:
            options.update(temperature=self.temperature, top_p=self.top_p, top_k=0)
        options.update(dict(self.extra))
        return transformers.GenerationConfig(**options)  # type: ignore[no-untyped-call]


def gen_params(request: Request, *, default_max_tokens: int, solo: int) -> GenParams:
    """Check a request and derive its group key; ``solo`` is a fresh id for seeded sampling."""
    if request.json_schema is not None:
        raise CapabilityError("the hf backend cannot constrain output to a JSON schema")
    if request.logprobs and (request.top_logprobs or 0) > MAX_TOP_LOGPROBS:
        raise CapabilityError(
            f"the hf backend returns at most {MAX_TOP_LOGPROBS} top_logprobs, "
            f"not {request.top_logprobs}"
        )
    unknown = sorted(set(request.extra) - GENERATE_EXTRA)
    if unknown:
        raise ConfigError(
            f"the hf backend does not understand request.extra keys {unknown}; "
            f"it accepts {sorted(GENERATE_EXTRA)}"
        )
    max_new = default_max_tokens if request.max_tokens is None else request.max_tokens
    if max_new < 1:
        raise ConfigError(f"max_tokens must be at least 1, not {request.max_tokens}")
    temp = request.temperature or 0.0
    if temp < 0:
        raise ConfigError(f"temperature must be >= 0, not {request.temperature}")
    extra = tuple(sorted((k, v) for k, v in request.extra.items()))
    budget = thinking_budget(request.reasoning)
    if temp == 0:
        return GenParams(max_new_tokens=max_new, do_sample=False, extra=extra, think_budget=budget)
    top_p = 1.0 if request.top_p is None else request.top_p
    return GenParams(
        max_new_tokens=max_new,
        do_sample=True,
        temperature=temp,
        top_p=top_p,
        seed=request.seed,
        extra=extra,
        solo=solo if request.seed is not None else 0,
        think_budget=budget,
    )


def render_prompt(
    lm: LoadedModel, messages: Sequence[Message], reasoning: Reasoning | None = None
) -> str:
    """The prompt text the model sees for ``messages``, ending where its answer starts
    (``reasoning``: the template's thinking switch, see the module docs)."""
    prefill = bool(messages) and messages[-1].role == "assistant"
    if lm.has_chat_template:
        options = template_options(reasoning)
        if options and prefill:  # the generation prompt, then the answer so far as it is
            head = render_prompt(lm, messages[:-1], reasoning)
            return head + messages[-1].content
        text = lm.tokenizer.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in messages],
            tokenize=False,
            add_generation_prompt=not prefill,
            continue_final_message=prefill,
            **options,
        )
        return str(text)
    parts = [f"{m.role.capitalize()}: {m.content}" for m in messages]
    if prefill:
        return "\n\n".join(parts)
    return "\n\n".join([*parts, "Assistant:\n"])


def encode(lm: LoadedModel, texts: list[str], *, special: bool) -> list[list[int]]:
    encoded = lm.tokenizer(texts, add_special_tokens=special)["input_ids"]
    return [[int(i) for i in ids] for ids in encoded]


def encode_prompts(lm: LoadedModel, texts: list[str]) -> list[list[int]]:
    # A chat template writes its own BOS; plain prompts get the tokenizer's special tokens.
    return encode(lm, texts, special=not lm.has_chat_template)


def left_pad(lm: LoadedModel, rows: Sequence[Sequence[int]]) -> tuple[Any, Any, Any]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), lm.pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row) :] = torch.tensor(list(row), dtype=torch.long)
            mask[i, width - len(row) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    dev = lm.device
    return to_device(ids, dev), to_device(mask, dev), to_device(positions, dev)


def to_device(tensor: Any, device: Any) -> Any:
    """Copy to ``device``; to a GPU through pinned memory, so the host does not wait for the
    work already queued there (a plain copy would synchronize the stream)."""
    if getattr(device, "type", "cpu") == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


class _LogprobRecorder(transformers.LogitsProcessor):
    """Records each step's chosen-token logprob and top alternatives, one step behind."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.previous: Any = None
        self.chosen: list[Any] = []
        self.top_values: list[Any] = []
        self.top_ids: list[Any] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        self._take(input_ids[:, -1])
        logprobs = torch.log_softmax(scores.float(), dim=-1)
        if self.top:
            values, ids = logprobs.topk(self.top, dim=-1)
            self.top_values.append(values.cpu())
            self.top_ids.append(ids.cpu())
        self.previous = logprobs
        return scores

    def _take(self, tokens: Any) -> None:
        if self.previous is not None:
            self.chosen.append(self.previous.gather(1, tokens[:, None])[:, 0].cpu())
            self.previous = None

    def finish(self, last_tokens: Any) -> None:
        self._take(last_tokens)


@contextlib.contextmanager
def _seeded(seed: int | None, device: Any) -> Iterator[None]:
    if seed is None:
        yield
        return
    devices = []
    if device.type == "cuda":
        devices = [device.index if device.index is not None else torch.cuda.current_device()]
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def _token_text(lm: LoadedModel, token: int, memo: dict[int, str]) -> str:
    if token not in memo:
        memo[token] = str(lm.tokenizer.decode([token], skip_special_tokens=False))
    return memo[token]


def _decode(lm: LoadedModel, tokens: Sequence[int]) -> str:
    return str(lm.tokenizer.decode(list(tokens), skip_special_tokens=True))


def _apply_stop(
    lm: LoadedModel, tokens: list[int], text: str, stops: Sequence[str]
) -> tuple[str, int] | None:
    """Cut ``text`` at the first stop string; return it and how many tokens made it."""
    hits = [(text.find(s), s) for s in stops if s and s in text]
    if not hits:
        return None
    pos, stop = min(hits)
    for n in range(1, len(tokens) + 1):
        if stop in _decode(lm, tokens[:n]):
            return text[:pos], n
    return text[:pos], len(tokens)  # pragma: no cover - the full decode holds the stop


def generate_batch(
    lm: LoadedModel,
    params: GenParams,
    requests: Sequence[Request],
    model_name: str,
    limits: BatchLimits | None = None,
) -> list[Completion]:
    """Run ``requests`` (which share ``params``) through ``generate``.

    With ``limits``, the prompts are bucketed by length into ``generate`` calls whose
    padded size (rows x (widest prompt + ``max_new_tokens``)) fits the batch limits and the
    GPU's free memory, KV cache included (:mod:`jurist.models._hf_memory`).
    """
    texts = [render_prompt(lm, r.messages, r.reasoning) for r in requests]
    prompts = encode_prompts(lm, texts)
    if limits is None:
        return _generate_rows(lm, params, requests, prompts, model_name, texts)
    widths = [len(p) for p in prompts]
    kv = model_shape(lm.model).kv_bytes()
    out: list[Completion | None] = [None] * len(requests)
    for chunk in limits.plan(
        widths, lm.model, lm.device, extra_tokens=params.max_new_tokens, extra_per_token=kv
    ):
        for rows, done in run_split(
            chunk,
            lambda c: _generate_rows(
                lm,
                params,
                [requests[i] for i in c],
                [prompts[i] for i in c],
                model_name,
                [texts[i] for i in c],
            ),
            widths=[w + params.max_new_tokens for w in widths],
            limits=limits,
            device=lm.device,
            what="generate",
        ):
            for i, completion in zip(rows, done, strict=True):
                out[i] = completion
    done_all = [c for c in out if c is not None]
    assert len(done_all) == len(requests), "a generate chunk left a request unanswered"
    return done_all


def _generate_rows(
    lm: LoadedModel,
    params: GenParams,
    requests: Sequence[Request],
    prompts: list[list[int]],
    model_name: str,
    texts: Sequence[str],
) -> list[Completion]:
    """One ``generate`` call over ``requests`` with their encoded ``prompts`` (rendered
    from ``texts``)."""
    ids, mask, _ = left_pad(lm, prompts)
    want = [r.logprobs for r in requests]
    top = max([(r.top_logprobs or 0) for r in requests if r.logprobs] or [0])
    recorder = _LogprobRecorder(top) if any(want) else None
    processors: list[Any] = [recorder] if recorder is not None else []
    if params.think_budget is not None:  # after the recorder: it records the model's own
        processors.append(budget_processor(lm, params.think_budget, texts))
    kwargs: dict[str, Any] = {}
    if processors:
        kwargs["logits_processor"] = transformers.LogitsProcessorList(processors)
    with torch.inference_mode(), _seeded(params.seed, lm.device):
        sequences = lm.model.generate(
            input_ids=ids,
            attention_mask=mask,
            generation_config=params.config(lm),
            **kwargs,
        )
    new = sequences[:, ids.shape[1] :]
    if recorder is not None and new.shape[1]:
        recorder.finish(new[:, -1])
    eos = set(lm.eos_ids)
    memo: dict[int, str] = {}
    out: list[Completion] = []
    for row, request in enumerate(requests):
        generated = [int(t) for t in new[row].tolist()]
        end = next((i for i, t in enumerate(generated) if t in eos), None)
        tokens = generated if end is None else generated[:end]
        used = len(generated) if end is None else end + 1
        finish = "length" if end is None else "stop"
        text = _decode(lm, tokens)
        cut = _apply_stop(lm, tokens, text, request.stop or ())
        if cut is not None:
            text, used = cut
            tokens = tokens[:used]
            finish = "stop"
        logprobs: tuple[TokenLogprob, ...] | None = None
        if recorder is not None and request.logprobs:
            k = request.top_logprobs or 0
            items: list[TokenLogprob] = []
            for step, token in enumerate(tokens):
                alternatives: tuple[TopLogprob, ...] = ()
                if k:
                    values = recorder.top_values[step][row, :k].tolist()
                    alt_ids = recorder.top_ids[step][row, :k].tolist()
                    alternatives = tuple(
                        TopLogprob(token=_token_text(lm, int(t), memo), logprob=float(v))
                        for t, v in zip(alt_ids, values, strict=True)
                    )
                items.append(
                    TokenLogprob(
                        token=_token_text(lm, token, memo),
                        logprob=float(recorder.chosen[step][row]),
                        top=alternatives,
                    )
                )
            logprobs = tuple(items)
        usage = Usage(prompt_tokens=len(prompts[row]), completion_tokens=used, calls=1)
        out.append(
            Completion(
                text=text,
                logprobs=logprobs,
                usage=usage,
                finish_reason=finish,
                model=model_name,
            )
        )
    return out
