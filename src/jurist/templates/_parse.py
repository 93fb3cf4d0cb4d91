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
>>> from jurist.templates._forms import LEAD, VerdictForm
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
from typing import Literal

import orjson

from jurist.templates._forms import LEAD, VerdictForm
from jurist.templates._scale import LabelScale, NumericScale

__all__ = ["CONFLICT_RULES", "Conflict", "ParsedVerdict", "parse_verdict", "split_reasoning"]

_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_NUMBER = re.compile(
    r"(?<![\w.])(?P<neg>-)?(?P<num>\d+(?:\.\d+)?)"
    r"(?:\s*(?P<pct>%)|\s*(?:/|\bout\s+of\b)\s*(?P<den>\d+(?:\.\d+)?))?"
    r"(?![\w%]|\.\d)",
    re.IGNORECASE,
)
_RANGE_AFTER = re.compile(r"\s*+[-–]\s*+\d")
_DASHES = "-–"
_LEAD_KEY = re.compile(
    r"^[\s*_#>-]*+(?:feedback|reasoning|rationale)[\s*_]*+:[\s*_]*+", re.IGNORECASE
)
_EXPLANATION = re.compile(rf"^{LEAD}explanation[\s*_]*+[:=][\s*_]*+", re.IGNORECASE | re.MULTILINE)


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
    parts: list[str] = []
    kept: list[str] = []
    pos = 0
    block: tuple[int, int] | None = None  # (start, end) of the open tag of the block under way
    for m in _THINK_TAG.finditer(text):  # one pass: the first close after an open ends it
        if not m.group(1):
            if block is None:
                block = (m.start(), m.end())
        elif block is not None:
            kept.append(text[pos : block[0]])
            parts.append(text[block[1] : m.start()])
            block, pos = None, m.end()
    kept.append(text[pos:])  # an open tag never closed stays text
    if not parts:
        lower = text.lower()
        if "</think>" in lower and "<think>" not in lower:  # opened by the chat template
            if _whole_json_object(text):
                return text, None  # the tag is text inside the answer's JSON (a string)
            cut = lower.index("</think>")
            return text[cut + len("</think>") :].strip(), text[:cut].strip() or None
        return text, None
    return "".join(kept).strip(), "\n".join(p.strip() for p in parts) or None


def _whole_json_object(text: str) -> bool:
    """Whether ``text`` is one JSON object and nothing else (a ``</think>`` in it is data).

    >>> _whole_json_object('{"verdict": 1, "explanation": "</think>"}')
    True
    >>> _whole_json_object('hmm</think>{"verdict": 1}')
    False
    """
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return False
    try:
        return isinstance(orjson.loads(stripped), dict)
    except orjson.JSONDecodeError:
        return False


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


Conflict = Literal["fail", "first", "last"]
"""What two different verdicts in one output mean: a failure, or the first / last wins."""

CONFLICT_RULES: tuple[Conflict, ...] = ("fail", "first", "last")


def parse_verdict(
    text: str,
    scale: LabelScale | NumericScale,
    verdict_key: str = "Score",
    *,
    explanation: bool = False,
    form: VerdictForm | None = None,
    conflict: Conflict = "fail",
) -> ParsedVerdict:
    """Read the verdict in ``text`` on ``scale`` under the policy of this module.

    ``form`` is where the verdict is written; without one it is the ``verdict_key`` line.
    ``conflict`` says what different verdicts in one output mean: ``"fail"`` (a failure),
    ``"first"`` or ``"last"`` (that verdict, in the order of the text, wins).

    >>> from jurist.templates._scale import Label
    >>> ab = LabelScale(labels=(Label(name="A", score=1.0), Label(name="B", score=0.0)))
    >>> cot = "Output [[A]] is shorter... Therefore, [[B]] is better."
    >>> brackets = VerdictForm(open="[[", close="]]", bare=False)
    >>> parse_verdict(cot, ab, form=brackets).error
    "parse: conflicting verdicts in the '[[...]]' verdict: A, B"
    >>> parse_verdict(cot, ab, form=brackets, conflict="last").value
    'B'
    """
    if conflict not in CONFLICT_RULES:
        raise ValueError(f"conflict must be one of {', '.join(CONFLICT_RULES)}: {conflict!r}")
    answer, _ = split_reasoning(text)
    form = form or _key_form(verdict_key)
    segments, where = form.find(answer), form.describe()
    if not segments:
        if not form.bare:
            return _fail(f"no {where} in the output")
        segments, where = [answer], "output"
    if isinstance(scale, LabelScale):
        verdict = _read_labels(segments, scale, where, conflict)
    else:
        verdict = _read_numbers(segments, scale, where, conflict)
    if explanation and verdict.error is None:
        return ParsedVerdict(verdict.value, verdict.score, None, _explanation(answer, form))
    return verdict


def _fail(message: str) -> ParsedVerdict:
    return ParsedVerdict(None, None, f"parse: {message}")


# A verdict read from the text, or the reason the text there is not one.
_Found = tuple[float | str, float] | str


def _decide(found: list[_Found], form: str, conflict: Conflict, none: str) -> ParsedVerdict:
    """Apply the conflict rule to the verdicts found, in the order of the text."""
    if not found:
        return _fail(none)
    if conflict != "fail":
        pick = found[0] if conflict == "first" else found[-1]
        return _fail(pick) if isinstance(pick, str) else ParsedVerdict(*pick)
    bad = next((f for f in found if isinstance(f, str)), None)
    if bad is not None:
        return _fail(bad)
    distinct = list(dict.fromkeys(f for f in found if not isinstance(f, str)))
    if len(distinct) > 1:
        shown = ", ".join(_show(v) for v, _s in distinct)
        return _fail(f"conflicting verdicts in the {form}: {shown}")
    return ParsedVerdict(*distinct[0])


def _show(v: float | str) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _read_labels(
    segments: list[str], scale: LabelScale, form: str, conflict: Conflict
) -> ParsedVerdict:
    pattern, exact = _label_index(scale)
    if len(segments) == 1:  # the common case: the output is just the label
        hit = exact.get(" ".join(segments[0].strip(" \t\n.!*\"'`").split()).casefold())
        if hit is not None:
            return ParsedVerdict(hit[0], hit[1])
    found: list[_Found] = []
    for segment in segments:
        for m in pattern.finditer(segment):
            found.append(exact[" ".join(m.group(0).split()).casefold()])
    return _decide(found, form, conflict, f"none of {scale.describe()} in the {form}")


def _read_numbers(
    segments: list[str], scale: NumericScale, form: str, conflict: Conflict
) -> ParsedVerdict:
    found: list[_Found] = []
    where = f" ({scale.describe()})"
    read: dict[str, _Found] = {}  # the same number written the same way reads the same
    for segment in segments:
        for m in _NUMBER.finditer(segment):
            if m.group("den") is None and m.group("pct") is None and _is_range(segment, m):
                continue
            hit = read.get(m.group(0))
            if hit is None:
                value, error = _number_value(m, scale)
                if error is not None:
                    hit = error + where
                else:
                    assert value is not None
                    hit = (value, scale.normalize(value))
                read[m.group(0)] = hit
            if isinstance(hit, str) and conflict == "fail":
                return _fail(hit)  # the first unreadable number decides: stop reading
            found.append(hit)
    none = f"no number on the scale ({scale.describe()}) in the {form}"
    return _decide(found, form, conflict, none)


def _is_range(segment: str, m: re.Match[str]) -> bool:
    """Whether the number is one end of a range (``1-5``, ``1 – 5``): not a verdict."""
    if m.group("neg"):
        return False
    end = m.end()
    gap = end < len(segment) and (segment[end] in _DASHES or segment[end].isspace())
    if gap and _RANGE_AFTER.match(segment, end) is not None:
        return True
    # Look back over the gap before the number (each gap is walked once: linear overall).
    i = m.start() - 1
    while i >= 0 and segment[i].isspace():
        i -= 1
    if i < 0 or segment[i] not in _DASHES:
        return False
    i -= 1
    while i >= 0 and segment[i].isspace():
        i -= 1
    return i >= 0 and segment[i].isdecimal()


def _number_value(m: re.Match[str], scale: NumericScale) -> tuple[float | None, str | None]:
    """The number's value on the scale, or why it is not one (the caller names the scale)."""
    raw = m.group(0).strip()
    num = float(m.group("num")) * (-1.0 if m.group("neg") else 1.0)
    zero = scale.low if scale.origin is None else scale.origin
    if m.group("pct"):
        if scale.integer:
            return None, f"{raw} is a percentage, not a verdict on the scale"
        proportion = num / 100.0
    elif m.group("den") is not None:
        den = float(m.group("den"))
        if scale.integer:
            if den != scale.high or not scale.contains(num):
                return None, f"{raw} is not on the scale"
            return num, None
        if den <= 0 or not 0.0 <= num / den <= 1.0:
            return None, f"{raw} is not a proportion of the scale"
        proportion = num / den
    else:
        if scale.integer and scale.low <= num <= scale.high and not num.is_integer():
            return None, f"{raw} is not a whole number on the scale"
        if not scale.contains(num):
            return None, f"{raw} is outside the scale"
        return num, None
    if not 0.0 <= proportion <= 1.0:
        return None, f"{raw} is outside the scale"
    value = zero + proportion * (scale.high - zero)
    if not scale.contains(value):
        return None, f"{raw} is outside the scale"
    return value, None


def _explanation(answer: str, form: VerdictForm) -> str | None:
    m = _EXPLANATION.search(answer)
    if m is not None:
        text = form.strip_verdicts(answer[m.end() :])
        return text or None
    rest = _LEAD_KEY.sub("", form.strip_verdicts(answer)).strip()
    return rest or None
