"""Reading a verdict from a judge's output: one policy for every template.

The policy, in order:

1. A reasoning block (``<think>...</think>``) is set aside; only the answer is read.
2. **The verdict form wins.** Each template names its verdict form
   (:class:`~jurist.templates.VerdictForm`): a key line ``Score: <verdict>`` (markdown
   emphasis allowed), a closed form ``[[<verdict>]]``, or a marker ``[RESULT] <verdict>``.
   When the output has the form, only the text inside it is read, and bare numbers or
   words elsewhere (an explanation that says "1 minor slip") are ignored. When it has no
   such form, templates whose judge replies with the verdict alone read the whole output
   as a bare verdict; templates whose judge explains first (MT-bench, Prometheus) fail.
3. **Only what the scale allows is matched.** Labels match case-insensitively on whole
   words or phrases, longest first (so "Incorrect" is never read as "correct", and "not
   correct" is one phrase). Numbers are read with their form: ``85.5``, ``90/100``,
   ``7 out of 10``, ``70%``. On a continuous scale a fraction or a percentage is a
   proportion of the range; on an integer scale a fraction counts only when its
   denominator is the scale's top (``4/5`` on 1-5; ``10/10`` there is a failure), and a
   percentage does not count. A range such as ``1-5`` is not a verdict.
4. **Out of range is a failure, not a clamp**: ``150`` on 0-100 fails.
5. **Agreement**: the same verdict repeated is fine; two different verdicts fail.
6. No fuzzy matching and no substrings: "Correctness" is not "Correct", and "Yes" means
   something only on a scale that defines it.
7. A JSON object output (``{"verdict": 4}``) is read exactly by
   :mod:`jurist.templates._json`; :meth:`~jurist.templates.Template.parse` detects it.
8. Only the judge's output is read, never the prompt or the text under judgment.

A failure is returned, never raised: ``ParsedVerdict.error`` says why and ``score`` is None.

>>> from jurist.templates._scale import NumericScale
>>> likert = NumericScale(low=1, high=5, integer=True)
>>> parse_verdict("Score: 4\\nExplanation: 1 minor slip", likert).value
4.0
>>> parse_verdict("10/10", likert).error
'parse: 10/10 is not on the scale (a whole number from 1 to 5)'
>>> from jurist.templates._forms import VerdictForm
>>> brackets = VerdictForm(open="[[", close="]]", bare=False)
>>> parse_verdict("3 points off. Rating: [[7]]", likert.model_copy(update={"high": 10}),
...               form=brackets).value
7.0
>>> parse_verdict("Rating: 7", likert, form=brackets).error
"parse: no '[[...]]' verdict in the output"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from jurist.templates._forms import VerdictForm
from jurist.templates._scale import LabelScale, NumericScale

__all__ = ["ParsedVerdict", "parse_verdict", "split_reasoning"]

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)
_NUMBER = re.compile(
    r"(?<![\w.])(?P<neg>-)?(?P<num>\d+(?:\.\d+)?)"
    r"(?:\s*(?P<pct>%)|\s*(?:/|\bout\s+of\b)\s*(?P<den>\d+(?:\.\d+)?))?"
    r"(?![\w%]|\.\d)",
    re.IGNORECASE,
)
_RANGE_AFTER = re.compile(r"\s*[-–]\s*\d")
_RANGE_BEFORE = re.compile(r"\d\s*[-–]\s*$")
_LEAD_KEY = re.compile(r"^[\s*_#>-]*(?:feedback|reasoning|rationale)[\s*_]*:[\s*_]*", re.IGNORECASE)
_EXPLANATION = re.compile(r"^[\s*_#>-]*explanation[\s*_]*[:=][\s*_]*", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ParsedVerdict:
    """A verdict read from a judge's output, or the reason none could be read."""

    value: str | float | None
    score: float | None
    error: str | None = None
    explanation: str | None = None


def split_reasoning(text: str) -> tuple[str, str | None]:
    """Split ``<think>`` blocks from the answer: ``(answer, reasoning or None)``.

    >>> split_reasoning("<think>hmm</think>Correct")
    ('Correct', 'hmm')
    """
    parts = _THINK.findall(text)
    if not parts:
        lower = text.lower()
        if "</think>" in lower and "<think>" not in lower:  # opened by the chat template
            cut = lower.index("</think>")
            return text[cut + len("</think>") :].strip(), text[:cut].strip() or None
        return text, None
    return _THINK.sub("", text).strip(), "\n".join(p.strip() for p in parts) or None


@lru_cache(maxsize=64)
def _key_form(key: str) -> VerdictForm:
    return VerdictForm(open=f"{key}: ")


_LabelIndex = tuple[re.Pattern[str], dict[str, tuple[str, float]]]
_LABEL_INDEX: dict[int, tuple[LabelScale, _LabelIndex]] = {}


def _label_index(scale: LabelScale) -> _LabelIndex:
    """The scale's phrase pattern and exact-phrase table, built once per scale object."""
    hit = _LABEL_INDEX.get(id(scale))
    if hit is not None and hit[0] is scale:
        return hit[1]
    phrases = sorted(
        {p.strip() for label in scale.labels for p in label.phrases}, key=len, reverse=True
    )
    alts = "|".join(r"\s+".join(re.escape(w) for w in p.split()) for p in phrases)
    pattern = re.compile(rf"(?<!\w)(?:{alts})(?!\w)", re.IGNORECASE)
    exact = {
        " ".join(p.split()).casefold(): (label.name, label.score)
        for label in scale.labels
        for p in label.phrases
    }
    if len(_LABEL_INDEX) >= 256:
        _LABEL_INDEX.clear()
    _LABEL_INDEX[id(scale)] = (scale, (pattern, exact))
    return pattern, exact


def parse_verdict(
    text: str,
    scale: LabelScale | NumericScale,
    verdict_key: str = "Score",
    *,
    explanation: bool = False,
    form: VerdictForm | None = None,
) -> ParsedVerdict:
    """Read the verdict in ``text`` on ``scale`` under the policy of this module.

    ``form`` is where the verdict is written; without one it is the ``verdict_key`` line.
    """
    answer, _ = split_reasoning(text)
    form = form or _key_form(verdict_key)
    segments, where = form.find(answer), form.describe()
    if not segments:
        if not form.bare:
            return _fail(f"no {where} in the output")
        segments, where = [answer], "output"
    if isinstance(scale, LabelScale):
        verdict = _read_labels(segments, scale, where)
    else:
        verdict = _read_numbers(segments, scale, where)
    if explanation and verdict.error is None:
        return ParsedVerdict(verdict.value, verdict.score, None, _explanation(answer, form))
    return verdict


def _fail(message: str) -> ParsedVerdict:
    return ParsedVerdict(None, None, f"parse: {message}")


def _agree(values: list[float | str], scores: dict[float | str, float], form: str) -> ParsedVerdict:
    distinct = list(dict.fromkeys(values))
    if not distinct:
        return _fail(f"no verdict on the scale in the {form}")
    if len(distinct) > 1:
        shown = ", ".join(_show(v) for v in distinct)
        return _fail(f"conflicting verdicts in the {form}: {shown}")
    value = distinct[0]
    return ParsedVerdict(value, scores[value])


def _show(v: float | str) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _read_labels(segments: list[str], scale: LabelScale, form: str) -> ParsedVerdict:
    pattern, exact = _label_index(scale)
    if len(segments) == 1:  # the common case: the output is just the label
        hit = exact.get(" ".join(segments[0].strip(" \t\n.!*\"'`").split()).casefold())
        if hit is not None:
            return ParsedVerdict(hit[0], hit[1])
    found: list[float | str] = []
    scores: dict[float | str, float] = {}
    for segment in segments:
        for m in pattern.finditer(segment):
            name, score = exact[" ".join(m.group(0).split()).casefold()]
            found.append(name)
            scores[name] = score
    if not found:
        return _fail(f"none of {scale.describe()} in the {form}")
    return _agree(found, scores, form)


def _read_numbers(segments: list[str], scale: NumericScale, form: str) -> ParsedVerdict:
    found: list[float | str] = []
    scores: dict[float | str, float] = {}
    for segment in segments:
        for m in _NUMBER.finditer(segment):
            if m.group("den") is None and m.group("pct") is None and _is_range(segment, m):
                continue
            value, error = _number_value(m, scale)
            if error is not None:
                return _fail(error)
            assert value is not None
            found.append(value)
            scores[value] = scale.normalize(value)
    if not found:
        return _fail(f"no number on the scale ({scale.describe()}) in the {form}")
    return _agree(found, scores, form)


def _is_range(segment: str, m: re.Match[str]) -> bool:
    if m.group("neg"):
        return False
    after = _RANGE_AFTER.match(segment, m.end())
    before = _RANGE_BEFORE.search(segment, 0, m.start())
    return after is not None or before is not None


def _number_value(m: re.Match[str], scale: NumericScale) -> tuple[float | None, str | None]:
    raw = m.group(0).strip()
    num = float(m.group("num")) * (-1.0 if m.group("neg") else 1.0)
    zero = scale.low if scale.origin is None else scale.origin
    where = f"({scale.describe()})"
    if m.group("pct"):
        if scale.integer:
            return None, f"{raw} is a percentage, not a verdict on the scale {where}"
        proportion = num / 100.0
    elif m.group("den") is not None:
        den = float(m.group("den"))
        if scale.integer:
            if den != scale.high or not scale.contains(num):
                return None, f"{raw} is not on the scale {where}"
            return num, None
        if den <= 0 or not 0.0 <= num / den <= 1.0:
            return None, f"{raw} is not a proportion of the scale {where}"
        proportion = num / den
    else:
        if scale.integer and scale.low <= num <= scale.high and not num.is_integer():
            return None, f"{raw} is not a whole number on the scale {where}"
        if not scale.contains(num):
            return None, f"{raw} is outside the scale {where}"
        return num, None
    if not 0.0 <= proportion <= 1.0:
        return None, f"{raw} is outside the scale {where}"
    value = zero + proportion * (scale.high - zero)
    if not scale.contains(value):
        return None, f"{raw} is outside the scale {where}"
    return value, None


def _explanation(answer: str, form: VerdictForm) -> str | None:
    m = _EXPLANATION.search(answer)
    if m is not None:
        text = form.strip_verdicts(answer[m.end() :])
        return text or None
    rest = _LEAD_KEY.sub("", form.strip_verdicts(answer)).strip()
    return rest or None
