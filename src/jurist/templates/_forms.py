"""Verdict forms: where in a judge's output the verdict is written.

A :class:`VerdictForm` names the literal text right before the verdict (``open``) and right
after it (``close``). Three shapes cover every built-in template:

- a **key line**: ``open="Score: "``, no close. Lines of the form ``Score: <verdict>``
  (markdown emphasis and ``=`` allowed) are found and the rest of each line is read.
- a **closed form**: ``open="[["``, ``close="]]"``. Every ``[[...]]`` on a line is found
  and the text between the brackets is read.
- a **marker**: ``open="[RESULT] "``, no close, not a key. The rest of the line after each
  ``[RESULT]`` is read.

A custom pattern (``regex`` with one capture group) replaces the form for YAML templates.
``bare`` says whether the whole output may be read as a bare verdict when the form is
absent: right for templates whose judge replies with the verdict alone ("Correct", "4"),
wrong where an explanation comes first (MT-bench), since numbers in the explanation would
then be read.

>>> VerdictForm(open="[[", close="]]").segments("Good. Rating: [[8]]")
['8']
>>> VerdictForm().segments("Score: 4\\nExplanation: 1 minor slip")
['4']
>>> VerdictForm(open="[RESULT] ", bare=False).segments("Feedback: fine. [RESULT] 4")
['4']
>>> VerdictForm(open="[[", close="]]", bare=False).segments("no brackets, 7") is None
True
"""

from __future__ import annotations

import re
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["VerdictForm"]

_KEY = re.compile(r"^\s*(?P<key>[A-Za-z][\w ]*?)\s*[:=]\s*$")
_KEY_REMNANT = re.compile(r"^[\s*_#>-]*+[A-Za-z][\w ]{0,30}?[\s*_]*+[:=][\s*_]*+$")
# Line-leading decoration of a key line: whitespace (never a newline), markdown marks.
LEAD = r"[ \t\r\f\v*_#>-]*+"


class VerdictForm(BaseModel):
    """The literal text around the verdict in the judge's output, and how absence is read.

    ``open`` and ``close`` are matched case-insensitively; a closed form never spans lines.
    """

    model_config = ConfigDict(frozen=True)

    open: str = "Score: "
    close: str = ""
    bare: bool = True
    regex: str | None = Field(default=None, description="a pattern with one capture group")

    @field_validator("regex")
    @classmethod
    def _one_group(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            compiled = re.compile(value)
        except re.error as e:
            raise ValueError(f"regex {value!r} does not compile: {e}") from None
        if compiled.groups != 1:
            raise ValueError(
                f"regex {value!r} must have exactly one capture group (it has {compiled.groups})"
            )
        return value

    @property
    def key(self) -> str | None:
        """The key of a key-line form (``"Score"``), else None."""
        return _key_of(self.open, self.close, self.regex)

    def describe(self) -> str:
        """How error messages name the form: ``'Score:' line``, ``'[[...]]' verdict``."""
        if self.regex is not None:
            return f"match of /{self.regex}/"
        if self.key is not None:
            return f"'{self.key}:' line"
        return f"'{self.open.strip()}...{self.close.strip()}' verdict"

    @property
    def _pattern(self) -> re.Pattern[str]:
        return _compile(self.open, self.close, self.regex)

    def find(self, answer: str) -> list[str]:
        """The contents of every occurrence of the form in ``answer``, in order.

        Linear in the length of ``answer`` for the built-in shapes (a custom ``regex`` costs
        what its pattern costs).
        """
        return [content for _start, _end, content in self._spans(answer)]

    def _spans(self, answer: str) -> list[tuple[int, int, str]]:
        if self.regex is None and self.close.strip():
            return _closed_spans(answer, *_closed_parts(self.open, self.close))
        return [
            (m.start(), m.end(), m.group(1))
            for m in self._pattern.finditer(answer)
            if m.group(1) is not None  # an optional group that took no part
        ]

    def segments(self, answer: str) -> list[str] | None:
        """The texts the verdict is read from: the form's contents, or the whole answer.

        None when the form is absent and ``bare`` is off (the verdict is missing).
        """
        found = self.find(answer)
        if found:
            return found
        return [answer] if self.bare else None

    def strip_verdicts(self, answer: str) -> str:
        """``answer`` without its verdict forms and the keys left dangling by them."""
        parts, last = [], 0
        for start, end, _content in self._spans(answer):
            parts.append(answer[last:start])
            last = end
        rest = "".join(parts) + answer[last:]
        lines = [ln for ln in rest.splitlines() if not _KEY_REMNANT.match(ln)]
        return "\n".join(lines).strip()


@lru_cache(maxsize=256)
def _key_of(open_: str, close: str, regex: str | None) -> str | None:
    if regex is not None or close:
        return None
    m = _KEY.match(open_)
    return m.group("key") if m else None


@lru_cache(maxsize=256)
def _compile(open_: str, close: str, regex: str | None) -> re.Pattern[str]:
    key = _key_of(open_, close, regex)
    if regex is not None:
        return re.compile(regex, re.MULTILINE)
    if key is not None:
        k = r"\s+".join(re.escape(w) for w in key.split())
        return re.compile(
            rf"^{LEAD}{k}[\s*_]*+[:=][\s*_]*+(?P<rest>.*)$", re.IGNORECASE | re.MULTILINE
        )
    o = re.escape(open_.strip())
    if close.strip():
        c = re.escape(close.strip())
        return re.compile(rf"{o}[ \t]*(?P<rest>[^\n]*?)[ \t]*{c}", re.IGNORECASE)
    return re.compile(rf"{o}[ \t]*(?P<rest>[^\n]*)", re.IGNORECASE)


@lru_cache(maxsize=256)
def _closed_parts(open_: str, close: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    return (
        re.compile(re.escape(open_.strip()), re.IGNORECASE),
        re.compile(re.escape(close.strip()), re.IGNORECASE),
    )


def _closed_spans(
    text: str, opener: re.Pattern[str], closer: re.Pattern[str]
) -> list[tuple[int, int, str]]:
    """Every ``open ... close`` on one line, the first close after each open: one pass.

    The same reading as the pattern ``open[ \\t]*(.*?)[ \\t]*close`` within a line, but a
    line full of openers with no closer costs one scan, not one scan per opener.
    """
    spans: list[tuple[int, int, str]] = []
    pos, line_end, size = 0, -1, len(text)
    while True:
        mo = opener.search(text, pos)
        if mo is None:
            return spans
        start = mo.end()
        if start > line_end:
            nl = text.find("\n", start)
            line_end = size if nl < 0 else nl
        mc = closer.search(text, start, line_end)
        if mc is None:  # no closer on the rest of this line: no later opener there closes
            pos = line_end
            continue
        spans.append((mo.start(), mc.end(), text[start : mc.start()].strip(" \t")))
        pos = mc.end()
