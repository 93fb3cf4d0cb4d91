"""The logprob step of an :class:`~jurist.judges.LLMJudge`: weigh the verdicts of one item.

A :class:`Weigher` is built once per judge (see :func:`~jurist.judges._scoring.choose_route`)
and turns either a prompt (one forward pass, when the answer is the bare verdict) or a
parsed answer (its verdict located, then weighed) into a judgment whose score is the
expected score. When the probabilities cannot be had for an item, a strict judge
(``scoring="logprobs"``) fails that item with a ``logprobs: ...`` error; an ``"auto"`` judge
keeps the parsed score and says why in ``scoring_note``.

**Coverage.** The expected score is renormalised over the verdicts, so it reads the same
whether the model put 99% or 0.3% of its probability on them. Below ``min_coverage`` the
verdicts are not what the model would write there, and the score says little: the judgment
is marked ``low_coverage=True`` and, with ``low_coverage="fail"`` (the default), a strict
judge fails it (``logprobs: verdict probability mass 0.0028 below min_coverage 0.5``), an
``"auto"`` judge keeps the parsed verdict's score (``scoring_note`` says why) and the
one-pass route, which has no parsed verdict, fails it either way; ``low_coverage="flag"``
keeps the weighed score, flagged. The coverage and the distribution are kept in every case.

**After thought.** With ``reasoning`` (a thinking judge) the one-pass route is off: the
judge thinks first, and the verdicts are weighed after its trace. When the answer names no
verdict at all, :meth:`Weigher.after_answer` reads the distribution in one extra prefill
after what the judge wrote (:mod:`jurist.judges._after_thought`) instead of re-asking;
the judgment's ``scoring_note`` says so. Every scoring request carries the judge's
``reasoning``, so a local model renders its prompt with the same thinking switch as the
answer was generated with.

Usage is accounted as for a parsed judgment: the forward pass's own
:attr:`~jurist.types.CandidateScores.usage` (prompt tokens; ``calls=0, cache_hits=1`` from a
cache) and its requests sent in ``usage.attempts``; when the weighing follows a generated
answer, the scoring pass is added to the answer's usage.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from jurist.errors import ConfigError, JuristError
from jurist.judges._after_thought import prefill_after
from jurist.judges._logprob import (
    VerdictDistribution,
    distribution_from_candidates,
    distribution_from_tokens,
    token_at,
)
from jurist.judges._scoring import Route, VerdictSpace, verdict_offset
from jurist.models import Model
from jurist.models._retry import attempts_of
from jurist.templates import Template
from jurist.types import (
    CandidateScores,
    Completion,
    Judgment,
    Message,
    Reasoning,
    Request,
    Usage,
)

__all__ = [
    "AFTER_ANSWER_NOTE",
    "DEFAULT_MIN_COVERAGE",
    "LowCoverage",
    "Weigher",
    "check_coverage_options",
]

LowCoverage = Literal["fail", "flag"]

DEFAULT_MIN_COVERAGE = 0.5
"""The least probability a judge must put on the scale's verdicts for its expected score
to count (see docs/scoring.md): below half, the model more likely writes something that is
not a verdict at all."""


AFTER_ANSWER_NOTE = "the answer named no verdict: the verdicts were weighed after it (prefill)"
"""The ``scoring_note`` of a judgment whose verdict was read from the distribution after an
answer that named none (:meth:`Weigher.after_answer`)."""


def check_coverage_options(min_coverage: float, low_coverage: str) -> None:
    """A :class:`~jurist.errors.ConfigError` for a threshold outside [0, 1] or an unknown
    ``low_coverage``."""
    if isinstance(min_coverage, bool) or not 0.0 <= min_coverage <= 1.0:
        raise ConfigError(f"min_coverage must be between 0 and 1, got {min_coverage!r}")
    if low_coverage not in ("fail", "flag"):
        raise ConfigError(f"low_coverage must be 'fail' or 'flag', got {low_coverage!r}")


def below(coverage: float, min_coverage: float) -> str:
    """Why a distribution does not count.

    >>> below(0.0028, 0.5)
    'verdict probability mass 0.0028 below min_coverage 0.5'
    """
    return f"verdict probability mass {coverage:.4g} below min_coverage {min_coverage:g}"


class Weigher:
    """Weighs a template's verdicts by their probabilities on one backend route."""

    def __init__(
        self,
        model: Model,
        template: Template,
        route: Route,
        space: VerdictSpace,
        *,
        top_logprobs: int,
        bare: bool,
        strict: bool,
        min_coverage: float = DEFAULT_MIN_COVERAGE,
        low_coverage: LowCoverage = "fail",
        reasoning: Reasoning | str | int | None = None,
    ) -> None:
        self.model = model
        self.template = template
        self.route: Route = route
        self.space = space
        self.top_logprobs = top_logprobs
        self.bare = bare
        self.reasoning = Reasoning.parse(reasoning)
        thinks = self.reasoning is not None and self.reasoning.effort != "none"
        self.one_pass = route == "candidates" and bare and not thinks
        self.strict = strict
        self.min_coverage = min_coverage
        self.low_coverage: LowCoverage = low_coverage

    def _low(self, dist: VerdictDistribution) -> bool:
        return dist.coverage < self.min_coverage

    # -- one forward pass, no generation ---------------------------------------------------

    async def score_bare(self, messages: tuple[Message, ...], prompt_text: str) -> Judgment:
        """Score every verdict as the whole answer, in one forward pass."""
        request = Request(
            messages=messages, max_tokens=1, temperature=0.0, reasoning=self.reasoning
        )
        started = time.perf_counter()
        try:
            scored = await self.model.candidate_scores(request, list(self.space.candidates))
        except JuristError as e:
            sent = attempts_of(e)
            return Judgment(
                score=None,
                error=f"{e.category}: {e}",
                judge_prompt=prompt_text,
                attempts=sent,
                usage=Usage(attempts=sent),
                scoring="logprobs",
                latency=time.perf_counter() - started,
            )
        latency = time.perf_counter() - started
        dist = distribution_from_candidates(scored, self.space.candidates, self.space.groups)
        usage = scored.billed_usage
        if dist is None:
            return Judgment(
                score=None,
                error="logprobs: the model put no probability on any verdict",
                judge_prompt=prompt_text,
                attempts=scored.attempts,
                usage=usage,
                scoring="logprobs",
                latency=latency,
                cached=scored.cached,
            )
        low = self._low(dist)
        if low and self.low_coverage == "fail":
            return Judgment(
                score=None,
                error=f"logprobs: {below(dist.coverage, self.min_coverage)}",
                judge_prompt=prompt_text,
                attempts=scored.attempts,
                usage=usage,
                scoring="logprobs",
                distribution=dist.probs,
                coverage=dist.coverage,
                low_coverage=True,
                latency=latency,
                cached=scored.cached,
            )
        return Judgment(
            score=dist.expected,
            verdict=self.space.values[dist.top],
            low_coverage=low,
            judge_prompt=prompt_text,
            attempts=scored.attempts,
            usage=usage,
            scoring="logprobs",
            distribution=dist.probs,
            confidence=dist.confidence,
            coverage=dist.coverage,
            latency=latency,
            cached=scored.cached,
        )

    # -- after a parsed answer --------------------------------------------------------------

    async def weigh(
        self, messages: tuple[Message, ...], completion: Completion, parsed: Judgment
    ) -> Judgment:
        """The parsed judgment re-scored by the verdicts' probabilities at its verdict."""
        if self.route == "top":
            dist, why = self._from_tokens(completion, parsed.verdict)
        else:
            dist, why, extra = await self._from_candidates(
                messages, completion.text, parsed.verdict
            )
            parsed = parsed.model_copy(
                update={
                    "usage": parsed.usage + extra,
                    "attempts": parsed.attempts + extra.attempts,
                    "cached": parsed.cached and extra.calls == 0 and extra.attempts == 0,
                }
            )
        if dist is not None and self._low(dist) and self.low_coverage == "fail":
            why = below(dist.coverage, self.min_coverage)
            seen = {"distribution": dist.probs, "coverage": dist.coverage, "low_coverage": True}
            if self.strict:
                return parsed.model_copy(
                    update={"score": None, "error": f"logprobs: {why}", "scoring": "logprobs"}
                    | seen
                )
            return parsed.model_copy(update={"scoring_note": f"parsed, not weighed: {why}"} | seen)
        if dist is not None:
            return parsed.model_copy(
                update={
                    "score": dist.expected,
                    "scoring": "logprobs",
                    "distribution": dist.probs,
                    "confidence": dist.confidence,
                    "coverage": dist.coverage,
                    "low_coverage": self._low(dist),
                    "scoring_note": None,
                }
            )
        if self.strict:
            return parsed.model_copy(
                update={"score": None, "error": f"logprobs: {why}", "scoring": "logprobs"}
            )
        return parsed.model_copy(update={"scoring_note": f"parsed, not weighed: {why}"})

    # -- after an answer that names no verdict --------------------------------------------

    @property
    def prefills(self) -> bool:
        """Whether an answer that names no verdict can be weighed after it (the backend
        scores candidates after an assistant prefix)."""
        return self.route == "candidates"

    @property
    def no_prefill_note(self) -> str | None:
        """Why a strict judge's answer that named no verdict was not weighed after it (a
        backend that scores no candidates), or ``None``."""
        if self.prefills or not self.strict:
            return None
        return (
            f"not weighed: the answer named no verdict, and {self.model.spec} cannot read "
            "the verdicts after it (capabilities.candidate_scores is False; an "
            "OpenAI-compatible server that continues an assistant prefix can, with the "
            "model option prefill=completions or prefill=chat)"
        )

    async def after_answer(
        self, messages: tuple[Message, ...], completion: Completion, failed: Judgment
    ) -> Judgment | None:
        """``failed`` (an answer whose verdict could not be read) weighed after the answer
        in one prefill (:mod:`jurist.judges._after_thought`); ``None`` when no prefix can
        be built (a trace cut inside its thinking): the judge goes on as without it."""
        found = prefill_after(
            completion.text, self.template, bare=self.bare, reasoning=completion.reasoning
        )
        if isinstance(found, str):
            return None
        dist, why, extra = await self._scored_after(messages, found.prefix, found.gap)
        base = failed.model_copy(
            update={
                "usage": failed.usage + extra,
                "attempts": failed.attempts + extra.attempts,
                "cached": failed.cached and extra.calls == 0 and extra.attempts == 0,
            }
        )
        if dist is None:
            if self.strict:
                return base.model_copy(update={"error": f"logprobs: {why}", "scoring": "logprobs"})
            return base.model_copy(update={"scoring_note": f"not weighed: {why}"})
        seen = {
            "distribution": dist.probs,
            "coverage": dist.coverage,
            "low_coverage": self._low(dist),
        }
        if self._low(dist) and self.low_coverage == "fail":
            why = below(dist.coverage, self.min_coverage)
            if self.strict:
                return base.model_copy(
                    update={"error": f"logprobs: {why}", "scoring": "logprobs"} | seen
                )
            return base.model_copy(update={"scoring_note": f"not weighed: {why}"} | seen)
        return base.model_copy(
            update={
                "score": dist.expected,
                "verdict": self.space.values[dist.top],
                "error": None,
                "scoring": "logprobs",
                "confidence": dist.confidence,
                "scoring_note": AFTER_ANSWER_NOTE,
            }
            | seen
        )

    def _from_tokens(
        self, completion: Completion, value: Any
    ) -> tuple[VerdictDistribution | None, str]:
        tokens = completion.logprobs
        if not tokens:
            return None, "the model returned no token logprobs"
        joined = "".join(t.token for t in tokens)
        offset = verdict_offset(joined, self.template, value)
        if offset is None:
            return None, f"the verdict {value!r} is not in the returned tokens"
        located = token_at(tokens, offset)
        if located is None:
            return None, "the verdict's position is past the returned tokens"
        index, lead = located
        if not tokens[index].top:
            return None, "the model returned no alternatives at the verdict's position"
        dist = distribution_from_tokens(
            tokens, index, self.space.candidates, lead=lead, groups=self.space.groups
        )
        if dist is None:
            return None, "no verdict among the alternatives at the verdict's position"
        return dist, ""

    async def _from_candidates(
        self, messages: tuple[Message, ...], text: str, value: Any
    ) -> tuple[VerdictDistribution | None, str, Usage]:
        """The distribution (or why none) and the scoring pass's usage."""
        offset = verdict_offset(text, self.template, value)
        if offset is None:
            return None, f"the verdict {value!r} is not in the answer", Usage()
        before = text[:offset]
        prefill = before.rstrip()
        gap = before[len(prefill) :]
        return await self._scored_after(messages, prefill, gap)

    async def _scored_after(
        self, messages: tuple[Message, ...], prefill: str, gap: str
    ) -> tuple[VerdictDistribution | None, str, Usage]:
        """The verdicts scored after the assistant prefix ``prefill``, each string starting
        with ``gap``: the distribution (or why none) and the pass's usage."""
        strings = {gap + c: c for c in self.space.candidates}
        history = (*messages, Message(role="assistant", content=prefill)) if prefill else messages
        request = Request(messages=history, max_tokens=1, temperature=0.0, reasoning=self.reasoning)
        try:
            scored = await self.model.candidate_scores(request, list(strings))
        except JuristError as e:
            failed = Usage(attempts=attempts_of(e))
            return None, f"candidate scoring failed: {e.category}: {e}", failed
        usage = scored.billed_usage
        renamed = CandidateScores(
            logprobs={strings[k]: v for k, v in scored.logprobs.items()},
            probs={strings[k]: v for k, v in scored.probs.items()},
            coverage=scored.coverage,
        )
        dist = distribution_from_candidates(renamed, self.space.candidates, self.space.groups)
        if dist is None:
            return None, "the model put no probability on any verdict", usage
        return dist, "", usage
