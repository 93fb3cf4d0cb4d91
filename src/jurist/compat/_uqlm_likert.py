"""The drop-in's ``likert`` template: ratings 1-5, and uqlm's verdict phrases for them.

uqlm 0.6's likert judge scores a bare rating from 1 to 5 and also a handful of verdict
phrases, each standing for one rating (the facts below are uqlm's; the reading is jurist's):

====== ===== ===========================================
rating score phrases
====== ===== ===========================================
1      0.0   "completely incorrect", "not correct"
2      0.25  "mostly incorrect", "somewhat correct"
3      0.5   "partially correct", "moderately correct"
4      0.75  "mostly correct", "very correct"
5      1.0   "completely correct", "highly correct"
====== ===== ===========================================

jurist's own ``likert`` template stays strict: it reads numbers only. The leniency lives
here, in the compat layer, and follows the same parsing policy (see ``docs/parsing.md``):

- the verdict text is the ``Score:`` line when there is one, else the whole output; a
  phrase elsewhere (in an explanation) is not a verdict;
- phrases match whole words, case-insensitively, longest first, so "mostly incorrect" is
  never read as "mostly correct";
- a rating and a phrase in the verdict text must agree, and so must several phrases;
- a phrase is read alone only where the verdict text has no digits: "3.5, partially
  correct" fails, as "3.5" does, and so does "partially correct: 2 of 3 facts" (uqlm reads
  the "2" there as a rating);
- a JSON verdict object is read exactly, as by the native template.

The phrases are a field of the template, so a judge's ``describe()`` (and a run's
manifest) records them.

>>> t = uqlm_likert_template()
>>> t.parse("Partially correct.").score
0.5
>>> t.parse("4 - Mostly correct").value
4.0
>>> t.parse("4 - partially correct").error
"parse: conflicting verdicts in the output: 4 and 'partially correct' (3)"
>>> t.parse("Score: Mostly correct\\nExplanation: 2 small slips", explanations=True).explanation
'2 small slips'
"""

from __future__ import annotations

import re
from functools import lru_cache

from pydantic import model_validator

from jurist.templates import (
    Label,
    LabelScale,
    NumericScale,
    ParsedVerdict,
    Template,
    get_template,
    parse_verdict,
    split_reasoning,
)

__all__ = ["LIKERT_PHRASES", "PhrasedLikertTemplate", "uqlm_likert_template"]

LIKERT_PHRASES: dict[str, float] = {
    "completely incorrect": 1,
    "not correct": 1,
    "mostly incorrect": 2,
    "somewhat correct": 2,
    "partially correct": 3,
    "moderately correct": 3,
    "mostly correct": 4,
    "very correct": 4,
    "completely correct": 5,
    "highly correct": 5,
}
"""uqlm 0.6's likert verdict phrases -> the rating (1-5) each stands for."""


class PhrasedLikertTemplate(Template):
    """A numeric-scale template that also reads verdict phrases, each naming a rating.

    ``phrases`` maps a phrase to the rating it stands for; every rating must be on the
    template's numeric scale.
    """

    phrases: dict[str, float]

    @model_validator(mode="after")
    def _phrases_on_scale(self) -> PhrasedLikertTemplate:
        if not isinstance(self.scale, NumericScale):
            raise ValueError(f"template {self.name!r}: verdict phrases need a numeric scale")
        seen: set[str] = set()
        for phrase, rating in self.phrases.items():
            key = _key(phrase)
            if not key:
                raise ValueError(f"template {self.name!r}: a verdict phrase is empty")
            if key in seen:
                raise ValueError(f"template {self.name!r}: verdict phrase {phrase!r} is repeated")
            seen.add(key)
            if not self.scale.contains(rating):
                shown = _show(rating)
                raise ValueError(
                    f"template {self.name!r}: phrase {phrase!r} stands for {shown}, which is "
                    f"not on the scale ({self.scale.describe()})"
                )
        return self

    def parse(
        self, text: str, *, explanations: bool = False, json: bool | None = None
    ) -> ParsedVerdict:
        """Read a rating or a verdict phrase (see the module's policy)."""
        read = super().parse(text, explanations=explanations, json=json)
        if json or self.json_only or not self.phrases or not isinstance(self.scale, NumericScale):
            return read
        if json is None and "{" in text and super().parse(text, json=True).score is not None:
            return read  # a JSON verdict object: read exactly, phrases in its strings are prose
        answer, _ = split_reasoning(text)
        form = self.verdict_form
        segments = form.segments(answer)
        if segments is None:
            return read
        phrase_scale, ratings, finder = _phrase_index(tuple(self.phrases.items()), self.scale)
        mentioned = [m.group(0) for s in segments for m in finder.finditer(s)]
        if not mentioned:
            return read
        where = form.describe() if form.find(answer) else "output"
        words = parse_verdict(
            text, phrase_scale, self.verdict_key, explanation=explanations, form=form
        )
        if words.score is None:  # phrases that disagree with each other
            return words
        rating = ratings[str(words.value)]
        if read.score is not None:
            if read.value == rating:
                return read
            shown = _show(read.value)
            return _fail(
                f"conflicting verdicts in the {where}: {shown} and {mentioned[0]!r} "
                f"({_show(rating)})"
            )
        if any(ch.isdigit() for s in segments for ch in s):
            return read  # a number that is no verdict on the scale is not replaced by a phrase
        return ParsedVerdict(rating, self.scale.normalize(rating), None, words.explanation)


@lru_cache(maxsize=1)
def uqlm_likert_template() -> PhrasedLikertTemplate:
    """jurist's ``likert`` template (same prompt, same name) that also reads uqlm's phrases."""
    native = get_template("likert")
    fields = {name: getattr(native, name) for name in Template.model_fields}
    fields["description"] = f"{native.description}; also reads uqlm's verdict phrases"
    return PhrasedLikertTemplate(**fields, phrases=LIKERT_PHRASES)


_PhraseIndex = tuple[LabelScale, dict[str, float], re.Pattern[str]]


@lru_cache(maxsize=64)
def _phrase_index(phrases: tuple[tuple[str, float], ...], scale: NumericScale) -> _PhraseIndex:
    """The phrases as a label scale (one label per rating), label name -> rating, a finder."""
    grouped: dict[float, list[str]] = {}
    for phrase, rating in phrases:
        grouped.setdefault(float(rating), []).append(phrase)
    labels = tuple(
        Label(name=words[0], score=scale.normalize(rating), aliases=tuple(words[1:]))
        for rating, words in sorted(grouped.items())
    )
    ratings = {words[0]: rating for rating, words in grouped.items()}
    longest_first = sorted((p for p, _ in phrases), key=len, reverse=True)
    alternatives = "|".join(r"\s+".join(map(re.escape, p.split())) for p in longest_first)
    finder = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)
    return LabelScale(labels=labels), ratings, finder


def _key(phrase: str) -> str:
    return " ".join(phrase.split()).casefold()


def _show(value: str | float | None) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _fail(message: str) -> ParsedVerdict:
    return ParsedVerdict(None, None, f"parse: {message}")
