"""The ``text_similarity`` metrics, implemented here (no extra package), each matching a
named reference implementation (checked against it in the tests):

- ``fuzzy_match``: rapidfuzz's ``fuzz.ratio`` / 100 (the normalised Indel similarity of
  the two strings, ``2 * LCS / (len(a) + len(b))``), the guide naming rapidfuzz;
- ``bleu``: sacrebleu's ``sentence_bleu`` / 100 (13a tokenisation, ``exp`` smoothing,
  effective n-gram order, up to 4-grams);
- ``gleu``: NLTK's ``sentence_gleu`` (Google BLEU, 1- to 4-grams) over whitespace tokens;
- ``meteor``: NLTK's ``meteor_score`` (alpha 0.9, beta 3, gamma 0.5, lower-cased
  whitespace tokens) with its exact-match stage only: the stemming and WordNet synonym
  stages need corpora that are not shipped here;
- ``rouge_1`` ... ``rouge_5``, ``rouge_l``: the F-measure of Google's ``rouge-score``
  (``RougeScorer`` without stemming: lower-cased alphanumeric tokens);
- ``cosine``: the cosine similarity of the two texts' embeddings, from an embedding
  function the caller gives (OpenAI used ``text-embedding-3-large``).

>>> round(similarity("fuzzy wuzzy was a bear", "fuzzy wuzzy had no hair", "fuzzy_match"), 4)
0.7556
>>> round(similarity("the cat sat on the mat", "the cat sat on the mat", "bleu"), 4)
1.0
>>> round(similarity("the cat sat", "the cat sat on the mat", "rouge_1"), 4)
0.6667
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Literal

from jurist.errors import DataError

__all__ = ["METRICS", "Metric", "cosine", "lcs_length", "similarity"]

Metric = Literal[
    "fuzzy_match",
    "bleu",
    "gleu",
    "meteor",
    "cosine",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
]
METRICS: tuple[str, ...] = Metric.__args__  # type: ignore[attr-defined]
MAX_CHARS = 200_000
"""The longest text a metric takes (each of input and reference)."""


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """The length of the longest common subsequence (bit-parallel, Hyyrö 2004).

    >>> lcs_length("abcde", "ace")
    3
    """
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    masks: dict[Hashable, int] = {}
    for i, x in enumerate(b):
        masks[x] = masks.get(x, 0) | (1 << i)
    full = (1 << len(b)) - 1
    v = full
    for x in a:
        u = v & masks.get(x, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - bin(v).count("1")


def _fuzzy(a: str, b: str) -> float:
    if not a and not b:
        return 1.0
    return 2 * lcs_length(a, b) / (len(a) + len(b))


# -- BLEU (sacrebleu's sentence_bleu) ------------------------------------------------------

_13A = (
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
)


def _tok13a(line: str) -> list[str]:
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        for a, b in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
            line = line.replace(a, b)
    line = f" {line} "
    for pattern, repl in _13A:
        line = pattern.sub(repl, line)
    return line.split()


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def _bleu(hyp: str, ref: str) -> float:
    h, r = _tok13a(hyp), _tok13a(ref)
    if not h:
        return 0.0
    counts = [
        (max(len(h) - n + 1, 0), sum((_ngrams(h, n) & _ngrams(r, n)).values())) for n in range(1, 5)
    ]
    if not any(correct for _, correct in counts):
        return 0.0
    precisions: list[float] = []
    smooth = 1.0
    for total, correct in counts:
        if total == 0:
            break  # the effective order: no n-grams this long
        if correct == 0:
            smooth *= 2
            precisions.append(100.0 / (smooth * total))
        else:
            precisions.append(100.0 * correct / total)
    bp = 1.0 if len(h) >= len(r) else math.exp(1 - len(r) / len(h))
    logs = [math.log(p) if p > 0 else -9999999999 for p in precisions]
    return bp * math.exp(sum(logs) / len(precisions)) / 100.0


def _gleu(hyp: str, ref: str) -> float:
    h, r = hyp.split(), ref.split()
    tp = tpfp = tpfn = 0
    for n in range(1, 5):
        hn, rn = _ngrams(h, n), _ngrams(r, n)
        tp += sum((hn & rn).values())
        tpfp += sum(hn.values())
        tpfn += sum(rn.values())
    denom = max(tpfp, tpfn)
    return tp / denom if denom else 0.0


def _meteor(hyp: str, ref: str, alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5) -> float:
    h = list(enumerate(w.lower() for w in hyp.split()))
    r = list(enumerate(w.lower() for w in ref.split()))
    n_hyp, n_ref = len(h), len(r)
    matches: list[tuple[int, int]] = []
    for i in range(len(h))[::-1]:  # NLTK's exact stage: from the end, last reference first
        for j in range(len(r))[::-1]:
            if h[i][1] == r[j][1]:
                matches.append((h[i][0], r[j][0]))
                h.pop(i)
                r.pop(j)
                break
    matches.sort()
    if not matches or not n_hyp or not n_ref:
        return 0.0
    precision, recall = len(matches) / n_hyp, len(matches) / n_ref
    fmean = precision * recall / (alpha * precision + (1 - alpha) * recall)
    chunks = 1 + sum(
        1
        for k in range(len(matches) - 1)
        if not (matches[k + 1][0] == matches[k][0] + 1 and matches[k + 1][1] == matches[k][1] + 1)
    )
    penalty: float = gamma * (chunks / len(matches)) ** beta
    return (1 - penalty) * fmean


# -- ROUGE (rouge-score) -------------------------------------------------------------------


def _rouge_tokens(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).split()


def _f(overlap: int, n_pred: int, n_target: int) -> float:
    precision = overlap / n_pred if n_pred else 0.0
    recall = overlap / n_target if n_target else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _rouge(hyp: str, ref: str, order: str) -> float:
    pred, target = _rouge_tokens(hyp), _rouge_tokens(ref)
    if order == "l":
        return _f(lcs_length(target, pred), len(pred), len(target))
    n = int(order)
    p, t = _ngrams(pred, n), _ngrams(target, n)
    return _f(sum((p & t).values()), sum(p.values()), sum(t.values()))


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine similarity of two vectors (0 when either is all zeros).

    >>> round(cosine([1.0, 0.0], [1.0, 1.0]), 4)
    0.7071
    """
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]


def similarity(text: str, reference: str, metric: str, *, embed: Embed | None = None) -> float:
    """``metric`` (one of :data:`METRICS`) of ``text`` against ``reference``, in [0, 1]."""
    for what, value in (("input", text), ("reference", reference)):
        if len(value) > MAX_CHARS:
            raise DataError(
                f"text_similarity: the {what} is {len(value)} characters (at most {MAX_CHARS})"
            )
    if metric == "fuzzy_match":
        return _fuzzy(text, reference)
    if metric == "bleu":
        return _bleu(text, reference)
    if metric == "gleu":
        return _gleu(text, reference)
    if metric == "meteor":
        return _meteor(text, reference)
    if metric.startswith("rouge_") and metric[6:] in ("1", "2", "3", "4", "5", "l"):
        return _rouge(text, reference, metric[6:])
    if metric == "cosine":
        if embed is None:
            raise DataError("text_similarity cosine needs an embedding function (embed=)")
        u, v = embed([text, reference])
        return cosine(u, v)
    raise DataError(f"text_similarity: unknown evaluation_metric {metric!r}")
