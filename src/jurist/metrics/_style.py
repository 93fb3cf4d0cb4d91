"""Style features of answer pairs for Bradley-Terry style control, as Arena-Hard-Auto counts them.

:func:`markdown_counts` counts an answer's markdown headers (``#`` to ``######`` at a line
start), list items (``1.`` or ``-``/``*``/``+`` at a line start) and bold spans (``**x**``,
``__x__``), after removing fenced code blocks, with Arena-Hard-Auto's patterns.
:func:`style_differences` turns two lists of answers into the per-battle features
``bradley_terry(style=...)`` takes, Arena-Hard-Auto's normalised differences:

- ``length``: ``(len_a - len_b) / (len_a + len_b)``;
- ``header``, ``list``, ``bold``: with ``d = count / length`` per answer,
  ``(d_a - d_b) / (d_a + d_b + 1)``.

Arena-Hard-Auto measures length in GPT-4o tokens; pass your own ``lengths_a`` /
``lengths_b`` (e.g. token counts) to match it, otherwise the length is the number of
whitespace-separated words.

>>> text = "# Title\\n\\n- one\\n- two\\n\\n**bold** and __also__\\n"
>>> markdown_counts(text + "```\\n# not a header\\n```")
MarkdownCounts(headers=1, lists=2, bold=2)
>>> d = style_differences(["# A\\n- x\\n- y"], ["plain answer here"])
>>> {k: round(float(v[0]), 3) for k, v in d.items()}
{'length': 0.333, 'header': 0.143, 'list': 0.25, 'bold': 0.0}
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from jurist.errors import DataError
from jurist.metrics._winrate import as_float_array

__all__ = ["MarkdownCounts", "markdown_counts", "style_differences"]

_CODE = re.compile(r"```([^`]*)```")
_HEADERS = [re.compile(rf"^#{{{k}}}\s", re.MULTILINE) for k in range(1, 7)]
_ORDERED = re.compile(r"^\s*\d+\.\s", re.MULTILINE)
_UNORDERED = re.compile(r"^\s*[-*+]\s", re.MULTILINE)
_BOLD = [re.compile(r"\*\*[^*\n]+\*\*"), re.compile(r"__[^_\n]+__")]


class MarkdownCounts(NamedTuple):
    """Markdown elements in one answer (code blocks left out)."""

    headers: int
    lists: int
    bold: int


def markdown_counts(text: str) -> MarkdownCounts:
    """Count ``text``'s markdown headers, list items and bold spans (see the module)."""
    for block in _CODE.findall(text):
        text = text.replace(block, "")
    return MarkdownCounts(
        headers=sum(len(p.findall(text)) for p in _HEADERS),
        lists=len(_ORDERED.findall(text)) + len(_UNORDERED.findall(text)),
        bold=sum(len(p.findall(text)) for p in _BOLD),
    )


def _ratio(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], extra: float
) -> npt.NDArray[np.float64]:
    den = x + y + extra
    return np.divide(x - y, den, out=np.zeros_like(x), where=den > 0)


def style_differences(
    answers_a: Sequence[str],
    answers_b: Sequence[str],
    *,
    lengths_a: Sequence[float] | npt.ArrayLike | None = None,
    lengths_b: Sequence[float] | npt.ArrayLike | None = None,
) -> dict[str, npt.NDArray[np.float64]]:
    """Per-battle style features of ``answers_a`` against ``answers_b`` (see the module)."""
    if len(answers_a) != len(answers_b):
        raise DataError(f"answers_a has {len(answers_a)} answers, answers_b {len(answers_b)}")
    for name, answers in (("answers_a", answers_a), ("answers_b", answers_b)):
        for i, text in enumerate(answers):
            if not isinstance(text, str):
                raise DataError(f"{name}[{i}] is {type(text).__name__}, not a string")

    def lengths(given: object, answers: Sequence[str], name: str) -> npt.NDArray[np.float64]:
        if given is None:
            return np.array([len(t.split()) for t in answers], dtype=float)
        arr = as_float_array(given, name)
        if arr.size != len(answers):
            raise DataError(f"{name} has {arr.size} values, there are {len(answers)} answers")
        return arr

    len_a = lengths(lengths_a, answers_a, "lengths_a")
    len_b = lengths(lengths_b, answers_b, "lengths_b")
    counts_a = np.array([markdown_counts(t) for t in answers_a], dtype=float).reshape(-1, 3)
    counts_b = np.array([markdown_counts(t) for t in answers_b], dtype=float).reshape(-1, 3)
    dens_a = np.divide(
        counts_a, len_a[:, None], out=np.zeros_like(counts_a), where=len_a[:, None] > 0
    )
    dens_b = np.divide(
        counts_b, len_b[:, None], out=np.zeros_like(counts_b), where=len_b[:, None] > 0
    )
    out = {"length": _ratio(len_a, len_b, 0.0)}
    for j, name in enumerate(("header", "list", "bold")):
        out[name] = _ratio(dens_a[:, j], dens_b[:, j], 1.0)
    return out
