"""Logprob-weighted verdicts: from token probabilities to an expected score (G-Eval style).

A judge that can see the probability of each verdict does not need to trust the one token
it sampled: the expected score ``sum(p(v) * score(v))`` over the scale's verdicts is finer
grained and steadier. Two sources give those probabilities:

- **top logprobs** of a generated answer (OpenAI-compatible servers, ``hf`` generation):
  the alternatives at the position where the verdict starts, read from the tokens the
  model returned. A verdict of several tokens (``"10"`` as ``"1"`` + ``"0"``,
  ``"Incorrect"`` as ``"Inc"`` + ``"orrect"``) is followed down the generated path: the
  first token's mass is split by the next position's alternatives. An alternative that
  starts several verdicts and lies off the generated path cannot be split; its mass goes
  to the verdict it spells exactly, else it is left out (and ``coverage`` shows it).
- **candidate scores** (``hf``): every verdict's whole token sequence is scored by teacher
  forcing in one forward pass, after the answer's text up to the verdict. Exact for
  verdicts of any length.

Tokens are matched to verdicts after stripping leading whitespace (``" 4"`` is ``"4"``),
case-insensitively unless two verdicts differ only in case (``"m"`` / ``"M"``), in which
case exactly. ``match="exact"`` matches the raw token strings only (as alpaca_eval's
logprob parser does).

>>> from jurist.types import TokenLogprob, TopLogprob
>>> import math
>>> tok = TokenLogprob(token="4", logprob=math.log(0.6), top=(
...     TopLogprob(token="4", logprob=math.log(0.6)), TopLogprob(token=" 5", logprob=math.log(0.3)),
...     TopLogprob(token="The", logprob=math.log(0.1))))
>>> d = distribution_from_tokens([tok], 0, {"1": 0.0, "4": 0.75, "5": 1.0})
>>> round(d.expected, 4), round(d.coverage, 4), {k: round(v, 4) for k, v in d.probs.items()}
(0.8333, 0.9, {'4': 0.6667, '5': 0.3333})
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from jurist.types import CandidateScores, TokenLogprob, TopLogprob

__all__ = [
    "VerdictDistribution",
    "distribution_from_candidates",
    "distribution_from_tokens",
    "token_at",
]

Match = Literal["normalized", "exact"]


@dataclass(frozen=True, slots=True)
class VerdictDistribution:
    """Probabilities of the verdicts, renormalised over the scale, and what they imply.

    ``probs``: verdict -> probability (sums to 1); ``coverage``: the probability the model
    put on the scale's verdicts before renormalising; ``expected``: the expected normalised
    score; ``confidence``: the probability of the most likely verdict; ``top``: that verdict.
    """

    probs: dict[str, float]
    coverage: float
    expected: float
    confidence: float
    top: str


def _finish(mass: Mapping[str, float], scores: Mapping[str, float]) -> VerdictDistribution | None:
    total = sum(mass.values())
    if not total > 0.0 or not math.isfinite(total):
        return None
    probs = {v: m / total for v, m in mass.items() if m > 0.0}
    expected = sum(p * scores[v] for v, p in probs.items())
    top = max(probs, key=lambda v: (probs[v], -list(scores).index(v)))
    return VerdictDistribution(
        probs=probs,
        coverage=min(1.0, total),
        expected=min(1.0, max(0.0, expected)),
        confidence=probs[top],
        top=top,
    )


def distribution_from_candidates(
    scored: CandidateScores,
    candidates: Mapping[str, float],
    groups: Mapping[str, str] | None = None,
) -> VerdictDistribution | None:
    """The verdict distribution from a backend's candidate scores.

    ``scored`` is keyed by the strings that were scored, ``candidates`` maps those strings
    to their normalised score, and ``groups`` (optional) maps each string to the verdict it
    spells (aliases of one label, say) so their mass is added up.

    >>> cs = CandidateScores(logprobs={"Yes": math.log(0.3), "No": math.log(0.1)},
    ...                      probs={"Yes": 0.75, "No": 0.25}, coverage=0.4)
    >>> d = distribution_from_candidates(cs, {"Yes": 1.0, "No": 0.0})
    >>> round(d.expected, 6), d.top, round(d.coverage, 6)
    (0.75, 'Yes', 0.4)
    """
    mass: dict[str, float] = {}
    scores: dict[str, float] = {}
    for cand, score in candidates.items():
        verdict = groups.get(cand, cand) if groups else cand
        lp = scored.logprobs.get(cand, -math.inf)
        mass[verdict] = mass.get(verdict, 0.0) + (math.exp(lp) if lp > -math.inf else 0.0)
        scores[verdict] = score
    return _finish(mass, scores)


def token_at(tokens: Sequence[TokenLogprob], offset: int) -> tuple[int, str] | None:
    """The index of the token that covers character ``offset`` of the joined text, and the
    part of that token before the offset (``("[[", ...)`` when ``"[[7"`` is one token).

    >>> toks = [TokenLogprob(token="Rating", logprob=0.0), TokenLogprob(token=": [[7", logprob=0.0)]
    >>> token_at(toks, 10)
    (1, ': [[')
    """
    start = 0
    for i, tok in enumerate(tokens):
        end = start + len(tok.token)
        if start <= offset < end:
            return i, tok.token[: offset - start]
        start = end
    return None


def distribution_from_tokens(
    tokens: Sequence[TokenLogprob],
    index: int,
    candidates: Mapping[str, float],
    *,
    lead: str = "",
    groups: Mapping[str, str] | None = None,
    match: Match = "normalized",
) -> VerdictDistribution | None:
    """The verdict distribution read from the top alternatives at ``tokens[index]``.

    ``lead`` is the text of that token before the verdict starts (see :func:`token_at`):
    alternatives must start with it. Returns None when no alternative spells a verdict.
    """
    walker = _Walker(tokens, candidates, match)
    walker.walk(index, "", 0.0, lead)
    mass: dict[str, float] = {}
    scores: dict[str, float] = {}
    for cand, score in candidates.items():
        verdict = groups.get(cand, cand) if groups else cand
        mass[verdict] = mass.get(verdict, 0.0) + walker.mass.get(cand, 0.0)
        scores[verdict] = score
    return _finish(mass, scores)


_CONTINUES = re.compile(r"\w|\.\d")


class _Walker:
    """Follows the alternatives of the generated tokens, assigning mass to verdicts."""

    def __init__(
        self, tokens: Sequence[TokenLogprob], candidates: Mapping[str, float], match: Match
    ) -> None:
        self.tokens = tokens
        self.match = match
        folded = [c.casefold() for c in candidates]
        self.fold = match == "normalized" and len(set(folded)) == len(folded)
        self.keys = {self._key(c): c for c in candidates}
        self.mass: dict[str, float] = {}

    def _key(self, s: str) -> str:
        return s.casefold() if self.fold else s

    def _alternatives(self, tok: TokenLogprob) -> tuple[TopLogprob, ...]:
        alts = tok.top or (TopLogprob(token=tok.token, logprob=tok.logprob),)
        if all(a.token != tok.token for a in alts):
            alts = (*alts, TopLogprob(token=tok.token, logprob=tok.logprob))
        return alts

    def _classify(self, piece: str) -> tuple[str | None, list[str]]:
        """The verdict ``piece`` completes (if any) and the verdicts it is a strict prefix of."""
        key = self._key(piece)
        exact: str | None = self.keys.get(key)
        longer = [c for k, c in self.keys.items() if len(k) > len(key) and k.startswith(key)]
        if exact is None and self.match == "normalized":
            # "7]]" or "A\n": a verdict followed by something that cannot continue it
            for k, c in self.keys.items():
                if key.startswith(k) and not _CONTINUES.match(key, len(k)):
                    exact = c if exact is None or len(k) > len(self._key(exact)) else exact
        return exact, longer

    def walk(self, index: int, prefix: str, logp: float, lead: str) -> None:
        if index >= len(self.tokens):
            return
        tok = self.tokens[index]
        for alt in self._alternatives(tok):
            text = alt.token
            if lead:
                if self.match == "exact":
                    if not text.startswith(lead):
                        continue
                    text = text[len(lead) :]
                else:
                    stripped = text.lstrip()
                    if not stripped.startswith(lead.lstrip()):
                        continue
                    text = stripped[len(lead.lstrip()) :]
            piece = prefix + text
            if not prefix and self.match == "normalized":
                piece = piece.lstrip()
            if not piece or not math.isfinite(alt.logprob):
                continue
            p = logp + alt.logprob
            exact, longer = self._classify(piece)
            on_path = alt.token == tok.token
            if longer and on_path and index + 1 < len(self.tokens):
                if exact is not None and self._key(piece) != self._key(exact):
                    self._add(exact, p)
                else:
                    self.walk(index + 1, piece, p, "")
            elif exact is not None:
                self._add(exact, p)
            elif len(longer) == 1:
                self._add(longer[0], p)

    def _add(self, cand: str, logp: float) -> None:
        self.mass[cand] = self.mass.get(cand, 0.0) + math.exp(logp)
