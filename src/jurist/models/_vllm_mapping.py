"""Pure mappings of the ``vllm`` backend: jurist types to and from vLLM's, without vLLM.

Nothing here imports vLLM or torch, so every mapping is tested on any machine; the
backend (:mod:`jurist.models._vllm`) feeds the dicts built here to vLLM's classes and
hands vLLM's outputs back here. Checked against vLLM 0.33 (``vllm/sampling_params.py``,
``vllm/outputs.py``, ``vllm/logprobs.py``).

Sampling (:func:`sampling_kwargs`): ``temperature`` None or 0 is greedy (as in the ``hf``
backend, not vLLM's default of 1.0); above 0 samples with ``top_p``; ``seed``, ``stop``
and ``max_tokens`` pass through; ``logprobs=True`` asks vLLM for ``top_logprobs``
alternatives per token (0: the chosen token only).

``Request.extra`` keys (:data:`SAMPLING_EXTRA` and :data:`STRUCTURED_EXTRA`):

- sampling: ``top_k``, ``min_p``, ``repetition_penalty``, ``presence_penalty``,
  ``frequency_penalty``, ``min_tokens``, passed to ``SamplingParams`` as they are;
- structured outputs: ``{"choice": ["Yes", "No"]}`` (the answer is one of the labels),
  ``{"regex": "[1-5]"}`` (the answer matches the pattern), or ``{"grammar": "..."}`` (an
  EBNF / GBNF grammar). ``guided_choice``, ``guided_regex`` and ``guided_grammar``, the
  names a vLLM server took in ``extra_body`` before 0.12, are read the same way, so a
  judge's ``extra_body`` moves from ``openai:`` + a vLLM server to ``vllm:`` unchanged.
  ``Request.json_schema`` becomes vLLM's ``json`` constraint. At most one constraint per
  request: vLLM's ``StructuredOutputsParams`` refuses two. (Compact JSON is an engine
  option in vLLM 0.33, ``structured_outputs_config``: the request-level
  ``disable_any_whitespace`` field exists but no backend reads it, so it is not set here.)

>>> from jurist.types import Message, Request
>>> ask = Request(messages=(Message(role="user", content="2+2?"),), max_tokens=4,
...               extra={"choice": ["4", "5"]})
>>> sampling_kwargs(ask, default_max_tokens=256, max_logprobs=20)
{'max_tokens': 4, 'temperature': 0.0, 'top_p': 1.0, 'structured_outputs': {'choice': ['4', '5']}}
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jurist.errors import CapabilityError, ConfigError, ModelError, ModelLoadError
from jurist.types import CandidateScores, Completion, Request, TokenLogprob, TopLogprob, Usage

__all__ = [
    "IDENTITY_ENGINE_KEYS",
    "MAX_LOGPROB_TOKEN_IDS",
    "SAMPLING_EXTRA",
    "STRUCTURED_EXTRA",
    "ScorePlan",
    "candidate_scores_from",
    "completion_from_output",
    "identity_value",
    "merge_legs",
    "plan_scoring",
    "resolve_model_name",
    "sampling_kwargs",
]

SAMPLING_EXTRA = frozenset(
    {
        "top_k",
        "min_p",
        "repetition_penalty",
        "presence_penalty",
        "frequency_penalty",
        "min_tokens",
    }
)
# request.extra key -> StructuredOutputsParams field (vllm/sampling_params.py, 0.33)
STRUCTURED_EXTRA: dict[str, str] = {
    "choice": "choice",
    "regex": "regex",
    "grammar": "grammar",
    "guided_choice": "choice",
    "guided_regex": "regex",
    "guided_grammar": "grammar",
}
# Engine arguments that change what the model outputs: part of identity() (cache keys).
IDENTITY_ENGINE_KEYS = (
    "revision",
    "tokenizer",
    "tokenizer_revision",
    "dtype",
    "max_model_len",
    "quantization",
    "kv_cache_dtype",
    "hf_overrides",
    "logprobs_mode",
    "seed",
    "structured_outputs_config",
)
MAX_LOGPROB_TOKEN_IDS = 128
"""The most token ids one vLLM request scores (``MAX_LOGPROB_TOKEN_IDS`` in vLLM 0.33)."""


def resolve_model_name(name: str) -> str:
    """A local folder becomes its absolute path (and must exist); a hub id stays as it is.

    >>> resolve_model_name("Qwen/Qwen2.5-7B-Instruct")
    'Qwen/Qwen2.5-7B-Instruct'
    >>> resolve_model_name("./no/such/jurist/model")
    Traceback (most recent call last):
    ...
    jurist.errors.ModelLoadError: vllm model folder './no/such/jurist/model' does not exist ...
    """
    if not name:
        raise ConfigError("vllm backend: the model name is empty; write vllm:MODEL_OR_PATH")
    path = Path(name).expanduser()
    looks_local = name.startswith(("/", "./", "../", "~")) or os.path.isabs(name)
    if not looks_local and not path.is_dir():
        return name
    full = path.resolve()
    if not full.is_dir():
        raise ModelLoadError(
            f"vllm model folder {name!r} does not exist or is not a folder (resolved to "
            f"{str(full)!r}); pass the folder that holds config.json and the tokenizer files",
            model=f"vllm:{name}",
        )
    return str(full)


def identity_value(value: Any) -> Any:
    """An engine option as plain JSON for :meth:`~jurist.models.Model.identity`.

    Config objects (vLLM's ``StructuredOutputsConfig`` is a dataclass) become dicts of
    their fields; anything else JSON cannot hold becomes its ``repr``.

    >>> @dataclasses.dataclass
    ... class Config:
    ...     backend: str = "xgrammar"
    >>> identity_value(Config()), identity_value({"rope_theta": 1e6}), identity_value({1, 2})
    ({'backend': 'xgrammar'}, {'rope_theta': 1000000.0}, '{1, 2}')
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return identity_value(dataclasses.asdict(value))
    try:
        json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)
    return value


def _structured(request: Request) -> dict[str, Any] | None:
    found: dict[str, tuple[str, Any]] = {}
    for key, target in STRUCTURED_EXTRA.items():
        if key in request.extra:
            found[key] = (target, request.extra[key])
    if request.json_schema is not None:
        found["json_schema"] = ("json", request.json_schema)
    if len(found) > 1:
        raise ConfigError(
            f"vllm backend: one structured-output constraint per request, got {sorted(found)} "
            "(request.json_schema and request.extra keys choice / regex / grammar)"
        )
    if not found:
        return None
    (key, (target, value)) = next(iter(found.items()))
    if target == "choice":
        if (
            isinstance(value, str)
            or not isinstance(value, Sequence)
            or not value
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise ConfigError(
                f"vllm backend: request.extra[{key!r}] must be a non-empty list of non-empty "
                f"strings (the labels), got {value!r}"
            )
        return {"choice": list(value)}
    if target in ("regex", "grammar") and (not isinstance(value, str) or not value):
        raise ConfigError(
            f"vllm backend: request.extra[{key!r}] must be a non-empty string, got {value!r}"
        )
    return {target: value}


def sampling_kwargs(
    request: Request, *, default_max_tokens: int, max_logprobs: int
) -> dict[str, Any]:
    """The ``SamplingParams`` keyword arguments for ``request``.

    ``structured_outputs`` (when present) holds the ``StructuredOutputsParams`` keyword
    arguments; the backend builds that object. ``max_logprobs`` is the engine's cap on
    ``top_logprobs`` (-1: no cap).
    """
    unknown = sorted(set(request.extra) - SAMPLING_EXTRA - set(STRUCTURED_EXTRA))
    if unknown:
        raise ConfigError(
            f"vllm backend: unknown request.extra keys {unknown}; it accepts "
            f"{sorted(SAMPLING_EXTRA | set(STRUCTURED_EXTRA))}"
        )
    max_tokens = default_max_tokens if request.max_tokens is None else request.max_tokens
    if max_tokens < 1:
        raise ConfigError(f"max_tokens must be at least 1, not {request.max_tokens}")
    temperature = request.temperature or 0.0
    if temperature < 0:
        raise ConfigError(f"temperature must be >= 0, not {request.temperature}")
    out: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
    out["top_p"] = 1.0 if temperature == 0 or request.top_p is None else request.top_p
    if request.seed is not None:
        out["seed"] = request.seed
    if request.stop:
        out["stop"] = list(request.stop)
    if request.logprobs:
        top = request.top_logprobs or 0
        if top < 0:
            raise ConfigError(f"top_logprobs must be >= 0, not {top}")
        if 0 <= max_logprobs < top:
            raise CapabilityError(
                f"this vllm engine returns at most {max_logprobs} top_logprobs, not {top}; "
                f"start it with a larger max_logprobs (get_model('vllm:...', max_logprobs={top}))"
            )
        out["logprobs"] = top
    for key in sorted(SAMPLING_EXTRA & set(request.extra)):
        out[key] = request.extra[key]
    structured = _structured(request)
    if structured is not None:
        out["structured_outputs"] = structured
    return out


def _top(position: Mapping[int, Any], k: int) -> tuple[TopLogprob, ...]:
    if k <= 0:
        return ()
    ranked = sorted(position.values(), key=lambda lp: -float(lp.logprob))[:k]
    return tuple(TopLogprob(token=_decoded(lp), logprob=float(lp.logprob)) for lp in ranked)


def _decoded(logprob: Any) -> str:
    token = getattr(logprob, "decoded_token", None)
    if token is None:
        raise ModelError("vllm returned a logprob without its decoded token (detokenize off)")
    return str(token)


def completion_from_output(
    output: Any, request: Request, *, model_name: str, latency: float = 0.0
) -> Completion:
    """A :class:`Completion` from a finished vLLM ``RequestOutput`` (``n=1``).

    Reads ``prompt_token_ids``, ``num_cached_tokens`` (prefix-cache hits) and
    ``outputs[0]``: ``text``, ``token_ids``, ``finish_reason`` and ``logprobs`` (one
    ``{token_id: Logprob(logprob, rank, decoded_token)}`` per generated token, the chosen
    token always among them). A request aborted or failed inside the engine raises
    :class:`~jurist.errors.ModelError`.
    """
    if not output.outputs:
        raise ModelError(f"vllm returned no output for request {output.request_id!r}")
    out = output.outputs[0]
    finish = None if out.finish_reason is None else str(out.finish_reason)
    if finish in ("abort", "error"):
        raise ModelError(
            f"vllm request {output.request_id!r} ended with finish_reason={finish!r}",
            model=f"vllm:{model_name}",
        )
    token_ids = list(out.token_ids)
    logprobs: tuple[TokenLogprob, ...] | None = None
    if request.logprobs:
        if out.logprobs is None or len(out.logprobs) != len(token_ids):
            got = None if out.logprobs is None else len(out.logprobs)
            raise ModelError(
                f"vllm returned logprobs for {got} positions, not for the "
                f"{len(token_ids)} generated tokens",
                model=f"vllm:{model_name}",
            )
        k = request.top_logprobs or 0
        logprobs = tuple(
            TokenLogprob(
                token=_decoded(position[token]),
                logprob=float(position[token].logprob),
                top=_top(position, k),
            )
            for token, position in zip(token_ids, out.logprobs, strict=True)
        )
    usage = Usage(
        prompt_tokens=len(output.prompt_token_ids or ()),
        completion_tokens=len(token_ids),
        cached_tokens=int(output.num_cached_tokens or 0),
        calls=1,
    )
    return Completion(
        text=str(out.text),
        logprobs=logprobs,
        usage=usage,
        finish_reason=finish,
        latency=latency,
        model=model_name,
    )


def merge_legs(
    parts: Sequence[Completion],
    *,
    prompt_tokens: int,
    forced_tokens: int = 0,
    cached_tokens: int = 0,
) -> Completion:
    """One completion from the legs of a thinking-budget generation (and the closing tags
    forced between them, given as completions of their own with no usage, ``forced_tokens``
    tokens in all): the texts and logprobs joined, the prompt counted once, every token
    after it counted, the last leg's finish reason.

    >>> legs = [Completion(text="a b", usage=Usage(completion_tokens=2, calls=1)),
    ...         Completion(text="</think>"),
    ...         Completion(text="Score: 4", usage=Usage(completion_tokens=3, calls=1),
    ...                    finish_reason="stop")]
    >>> done = merge_legs(legs, prompt_tokens=10, forced_tokens=1)
    >>> done.text, done.usage.prompt_tokens, done.usage.completion_tokens, done.finish_reason
    ('a b</think>Score: 4', 10, 6, 'stop')
    """
    asked = all(p.logprobs is not None for p in parts)
    generated = sum(p.usage.completion_tokens for p in parts)
    legs = [p for p in parts if p.usage.calls]
    return Completion(
        text="".join(p.text for p in parts),
        logprobs=tuple(t for p in parts for t in (p.logprobs or ())) if asked else None,
        usage=Usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=generated + forced_tokens,
            cached_tokens=cached_tokens,
            calls=1,
        ),
        finish_reason=legs[-1].finish_reason if legs else None,
        model=legs[-1].model if legs else None,
    )


@dataclass
class ScorePlan:
    """The engine requests that score some candidates as continuations of one prompt.

    Each row is a token sequence (the prompt plus a candidate's first tokens) and the token
    ids whose log-probability is read at its next position; a candidate's logprob is the
    sum over its tokens, each read on the row that ends just before it (teacher forcing,
    as the ``hf`` backend does in one forward). Single-token candidates all share the
    prompt's own row.
    """

    prompt_tokens: int
    rows: list[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    # candidate -> its (row index, token id) reads
    reads: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


def plan_scoring(prompt: Sequence[int], candidates: Mapping[str, Sequence[int]]) -> ScorePlan:
    """Group every candidate token's read by the row it is read on.

    >>> plan = plan_scoring([1, 2], {"Yes": [7], "No": [8], "10": [5, 9]})
    >>> plan.rows
    [((1, 2), (7, 8, 5)), ((1, 2, 5), (9,))]
    >>> plan.reads["10"]
    [(0, 5), (1, 9)]
    """
    wanted: dict[tuple[int, ...], list[int]] = {}
    reads: dict[str, list[tuple[tuple[int, ...], int]]] = {}
    base = tuple(prompt)
    for cand, ids in candidates.items():
        if not ids:
            raise ConfigError(f"candidate {cand!r} has no tokens in this tokenizer")
        reads[cand] = []
        for j, token in enumerate(ids):
            row = base + tuple(ids[:j])
            tokens = wanted.setdefault(row, [])
            if token not in tokens:
                tokens.append(token)
            reads[cand].append((row, token))
    plan = ScorePlan(prompt_tokens=len(base))
    index: dict[tuple[tuple[int, ...], int], int] = {}
    for row, tokens in wanted.items():
        for start in range(0, len(tokens), MAX_LOGPROB_TOKEN_IDS):
            chunk = tuple(tokens[start : start + MAX_LOGPROB_TOKEN_IDS])
            for token in chunk:
                index[(row, token)] = len(plan.rows)
            plan.rows.append((row, chunk))
    plan.reads = {c: [(index[(r, t)], t) for r, t in rs] for c, rs in reads.items()}
    return plan


def candidate_scores_from(
    plan: ScorePlan, row_logprobs: Sequence[Mapping[int, float]], *, cached_tokens: int = 0
) -> CandidateScores:
    """Sum each candidate's token logprobs read on the plan's rows and normalise them.

    ``row_logprobs[i]`` maps the token ids of row ``i`` to their log-probabilities at the
    row's next position. ``usage`` counts the prompt once with ``calls=1``, as the ``hf``
    backend does; ``cached_tokens`` is the prefix-cache hit of the prompt's own row.

    >>> plan = plan_scoring([1, 2], {"Yes": [7], "No": [8]})
    >>> s = candidate_scores_from(plan, [{7: math.log(0.6), 8: math.log(0.2)}])
    >>> round(s.probs["Yes"], 6), round(s.coverage, 6), s.usage.prompt_tokens
    (0.75, 0.8, 2)
    """
    if len(row_logprobs) != len(plan.rows):
        raise ModelError(f"vllm scored {len(row_logprobs)} rows, not {len(plan.rows)}")
    logprobs: dict[str, float] = {}
    for cand, reads in plan.reads.items():
        total = 0.0
        for row, token in reads:
            value = row_logprobs[row].get(token)
            if value is None:
                raise ModelError(
                    f"vllm returned no logprob for token {token} of candidate {cand!r}"
                )
            total += float(value)
        logprobs[cand] = total
    top = max(logprobs.values())
    if top == -math.inf:
        raise ModelError("vllm gave every candidate a probability of 0")
    log_total = top + math.log(sum(math.exp(v - top) for v in logprobs.values()))
    return CandidateScores(
        logprobs=logprobs,
        probs={c: math.exp(v - log_total) for c, v in logprobs.items()},
        coverage=min(1.0, math.exp(log_total)),
        usage=Usage(prompt_tokens=plan.prompt_tokens, cached_tokens=cached_tokens, calls=1),
    )
