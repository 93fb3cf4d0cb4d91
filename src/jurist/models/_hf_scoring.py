"""Candidate scoring for the ``hf`` backend: log-probabilities of candidate answers.

Each candidate is scored as the start of the model's answer: the sum of its tokens'
log-probabilities after the chat-templated prompt, by teacher forcing. All items of a batch
(concurrent callers) and all their candidates go through left-padded forward passes, rows of
like length together, as many rows per pass as the batch limits and the GPU's free memory
allow (:mod:`jurist.models._hf_memory`). The passes are queued back to back and read once at
the end. Runs on the backend's worker thread.

A candidate's probability is that of its tokens as a prefix of the answer, with no end
token after it, as in G-Eval: ``"1"`` and ``"10"`` overlap (``"10"`` is ``"1"`` then
``"0"``), so ``coverage`` may count some mass twice and is capped at 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from jurist.errors import ConfigError
from jurist.models._hf_compute import encode, encode_prompts, left_pad, render_prompt, to_device
from jurist.models._hf_loading import LoadedModel
from jurist.models._hf_memory import BatchLimits, run_split
from jurist.types import CandidateScores, Request, Usage

__all__ = ["candidate_ids", "score_batch"]


def candidate_ids(lm: LoadedModel, prompt: str, candidates: Sequence[str]) -> list[list[int]]:
    """The tokens of each candidate as the tokenizer splits it right after ``prompt``.

    A candidate is tokenized in context (``prompt + candidate``, then the prompt's tokens
    dropped), so it gets no leading space after the template's final newline and
    SentencePiece tokenizers do not add a word-start marker. When the prompt's own tokens
    change at the seam (a merge across it), the candidate is tokenized alone instead.

    Tokenizers split added tokens (``<|im_start|>``) out before anything else, so only the
    prompt's text from its last added token on can change the result: that tail is what
    gets tokenized, and the answer is memoised per tail and candidate list.
    """
    cut = max((prompt.rfind(t) for t in lm.added_tokens if t), default=-1)
    tail = prompt[cut:] if cut >= 0 else prompt
    key = (tail, tuple(candidates))
    found = lm.seam_cache.get(key)
    if found is not None:
        return found
    special = not lm.has_chat_template
    tail_ids, *encoded = encode(lm, [tail, *(tail + c for c in candidates)], special=special)
    n = len(tail_ids)
    out: list[list[int]] = []
    for cand, full in zip(candidates, encoded, strict=True):
        if len(full) > n and full[:n] == tail_ids:
            out.append(full[n:])
        else:
            out.append(encode(lm, [cand], special=False)[0])
    if len(lm.seam_cache) >= 4096:
        lm.seam_cache.clear()
    lm.seam_cache[key] = out
    return out


@dataclass
class _Plan:
    candidates: list[tuple[str, int, list[int]]]  # candidate, row index, token ids


def score_batch(
    lm: LoadedModel, items: Sequence[tuple[Request, tuple[str, ...]]], limits: BatchLimits
) -> list[CandidateScores]:
    """Score each item's candidates as continuations of its prompt, in batched forwards.

    A candidate's logprob is the sum over its tokens (teacher forcing). Rows are the
    prompt plus each multi-token candidate's tokens but the last; all single-token
    candidates share the prompt's own row and read its last position. Rows are bucketed by
    length into passes within ``limits`` (:mod:`jurist.models._hf_memory`).
    """
    rows: list[tuple[int, ...]] = []
    index: dict[tuple[int, ...], int] = {}
    plans: list[_Plan] = []
    texts = [render_prompt(lm, request.messages, request.reasoning) for request, _ in items]
    prompts = encode_prompts(lm, texts)
    for (_, candidates), text, prompt in zip(items, texts, prompts, strict=True):
        plan = _Plan([])
        tokenized = candidate_ids(lm, text, candidates)
        for cand, ids in zip(candidates, tokenized, strict=True):
            if not ids:
                raise ConfigError(f"candidate {cand!r} has no tokens in this tokenizer")
            row = tuple(prompt + ids[:-1])
            if row not in index:
                index[row] = len(rows)
                rows.append(row)
            plan.candidates.append((cand, index[row], ids))
        plans.append(plan)
    # row -> the token sequences read from its last positions (teacher forced)
    wanted: dict[int, set[tuple[int, ...]]] = {}
    for plan in plans:
        for _, r, ids in plan.candidates:
            wanted.setdefault(r, set()).add(tuple(ids))
    widths = [len(row) for row in rows]
    pending: list[tuple[list[tuple[int, tuple[int, ...]]], Any]] = []
    for chunk in limits.plan(widths, lm.model, lm.device):
        for _, part in run_split(
            chunk,
            lambda c: _forward(lm, rows, wanted, c),
            widths=widths,
            limits=limits,
            device=lm.device,
            what="candidate scoring",
        ):
            pending.append(part)
    # one device sync at the end: the passes are queued back to back
    sums: dict[tuple[int, tuple[int, ...]], float] = {}
    for owners, values in pending:
        for owner, value in zip(owners, values.tolist(), strict=True):
            sums[owner] = sums.get(owner, 0.0) + float(value)
    return [
        _scores({c: sums[(r, tuple(ids))] for c, r, ids in p.candidates}, len(prompt))
        for p, prompt in zip(plans, prompts, strict=True)
    ]


def _forward(
    lm: LoadedModel,
    rows: Sequence[tuple[int, ...]],
    wanted: dict[int, set[tuple[int, ...]]],
    chunk: list[int],
) -> tuple[list[tuple[int, tuple[int, ...]]], Any]:
    """One forward pass over ``chunk``'s rows: the candidate tokens' logprobs (on device)."""
    ids, mask, positions = left_pad(lm, [rows[r] for r in chunk])
    keep = max(len(c) for r in chunk for c in wanted[r])
    b_idx: list[int] = []
    p_idx: list[int] = []
    t_idx: list[int] = []
    owners: list[tuple[int, tuple[int, ...]]] = []
    for b, r in enumerate(chunk):
        for cand_ids in sorted(wanted[r]):
            for t, tok in enumerate(cand_ids):
                b_idx.append(b)
                p_idx.append(keep - len(cand_ids) + t)
                t_idx.append(tok)
                owners.append((r, cand_ids))
    with torch.inference_mode():
        logits = lm.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=False,
            logits_to_keep=keep,
        ).logits
        logprobs = torch.log_softmax(logits[:, -keep:, :].float(), dim=-1)
        index = to_device(torch.tensor([b_idx, p_idx, t_idx], dtype=torch.long), lm.device)
        values = logprobs[index[0], index[1], index[2]]
    return owners, values


def _scores(logprobs: dict[str, float], prompt_tokens: int) -> CandidateScores:
    top = max(logprobs.values())
    log_total = top + math.log(sum(math.exp(v - top) for v in logprobs.values()))
    probs = {c: math.exp(v - log_total) for c, v in logprobs.items()}
    return CandidateScores(
        logprobs=logprobs,
        probs=probs,
        coverage=min(1.0, math.exp(log_total)),
        usage=Usage(prompt_tokens=prompt_tokens, calls=1),
    )
