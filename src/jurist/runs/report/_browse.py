"""The report's sample browser: every item as JSON data in the page, shown a page at a time.

The rows travel in a ``<script type="application/json">`` block, which the browser never
runs. Its text is JSON with ``<``, ``>`` and ``&`` written as ``\\u003c``, ``\\u003e`` and
``\\u0026``, so no model text (``</script>``, ``<!--``) can end the block early; the
page's own script (``report.js``, allowed by its hash in the Content-Security-Policy,
nothing else may run) parses it and builds each page of rows with DOM calls and
``textContent``, so model text is only ever text.

>>> block = embed_json(["</script><script>alert(1)</script>"], "rows")
>>> "</script><script>" in block, block.count("</script>")
(False, 1)
>>> json.loads(block.split(">", 1)[1].rsplit("<", 1)[0])
['</script><script>alert(1)</script>']

Each row is a list, in the order of :data:`COLUMNS`; ``name`` is what the page calls the
item (:func:`~jurist.data._item_names.item_label`: its id, else its 1-based row number),
also in the address (``#item=NAME``); ``idx`` is the store's 0-based key. Long text is cut at
:data:`TEXT_LIMIT` characters, saying how many were left out. Input fields that appear
whole in the judge prompt are stored once: the prompt keeps a marker in their place.

>>> _shared("<q>What is 2+2, really?</q>", {"prompt": "What is 2+2, really?", "n": 4})
('<q>\\x00prompt\\x00</q>', ['prompt'])
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import orjson

from jurist._files import replaced_atomically
from jurist._secrets import scrub
from jurist.data._item_names import item_label

__all__ = [
    "COLUMNS",
    "DATA",
    "PAGE_SIZE",
    "TEXT_LIMIT",
    "browse_row",
    "embed_json",
    "page_template",
    "script_tag",
    "write_page",
]

COLUMNS = (
    "idx",
    "score",
    "verdict",
    "label",
    "disagreement",
    "response",
    "prompt",
    "error",
    "attempts",
    "explanation",
    "fields",
    "in_prompt",
    "other",
    "usage",
    "name",
    "reasoning",
    "thinking_note",
)
TEXT_LIMIT = 20_000
PREVIEW_LIMIT = 300
PAGE_SIZE = 50
DATA = "\x00jurist-report-data\x00"  # where the data blocks go in the page
_SHOWN = {
    "score",
    "verdict",
    "response",
    "judge_prompt",
    "error",
    "explanation",
    "attempts",
    "latency",
    "reasoning",
    "thinking_note",
    "reasoning_cost",
}
_MARK = "\x00"
_DUMP = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def clip(value: Any, limit: int = TEXT_LIMIT) -> Any:
    """Text cut at ``limit`` characters, saying how much was left out; other values as
    they are."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]} [... {len(value) - limit} more characters]"
    return value


def _clip_all(value: Any) -> Any:
    if isinstance(value, str):
        return clip(value)
    if isinstance(value, dict):
        return {k: _clip_all(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip_all(v) for v in value]
    return value


def _escape(text: str) -> str:
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def embed_json(value: Any, element_id: str) -> str:
    """``value`` as a JSON data block that no text inside it can break out of."""
    text = _escape(orjson.dumps(value, option=_DUMP, default=str).decode())
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def page_template(name: str) -> Template:
    """The page template ``name`` (``report.html``, ``side_by_side.html``) with the
    stylesheet the pages share (``report.css``) in its ``$style``."""
    files = resources.files("jurist.runs.report")
    style = files.joinpath("report.css").read_text("utf-8").rstrip("\n")
    return Template(files.joinpath(name).read_text("utf-8").replace("$style", style, 1))


def script_tag() -> tuple[str, str]:
    """The page's script element and the CSP source that allows exactly it."""
    code = resources.files("jurist.runs.report").joinpath("report.js").read_text("utf-8")
    digest = base64.b64encode(hashlib.sha256(code.encode("utf-8")).digest()).decode()
    return f'<script id="report-code">{code}</script>', f"'sha256-{digest}'"


def browse_row(
    row: dict[str, Any], verdict: str | None, label: Any, disagreement: float | None
) -> list[Any]:
    """One stored row as the page's script reads it (see :data:`COLUMNS`)."""
    outcome: dict[str, Any] = row["outcome"]
    item: dict[str, Any] = row["item"]
    prompt, in_prompt = _shared(outcome.get("judge_prompt"), item)
    usage = row["usage"]
    error = row["error"] or outcome.get("error")
    return [
        row["idx"],
        row["score"],
        verdict,
        clip(label, PREVIEW_LIMIT),
        disagreement,
        clip(_text(_response(outcome))),
        prompt,
        scrub(error) if error else None,
        usage.attempts or outcome.get("attempts"),
        clip(_text(outcome.get("explanation"))),
        {k: _clip_all(v) for k, v in item.items()},
        in_prompt,
        {k: _clip_all(v) for k, v in outcome.items() if k not in _SHOWN and v is not None},
        [
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.calls,
            row.get("latency"),
            usage.reasoning_tokens,
            outcome.get("reasoning_cost"),
        ],
        item_label(row["idx"], item),
        clip(_text(outcome.get("reasoning"))),
        outcome.get("thinking_note"),
    ]


def write_page(
    path: Path,
    html: str,
    meta: dict[str, Any],
    rows: Iterable[list[Any]],
    redact: Callable[[str], str],
) -> Path:
    """Write ``html`` to ``path`` with the data blocks (``meta``, then ``rows`` streamed,
    one in memory at a time) where it says :data:`DATA`; ``redact`` is applied to every
    piece (to each row's JSON before it is escaped). The file appears whole or not at all
    (a temporary file, then a rename)."""
    head, _, tail = html.rpartition(DATA)  # the last: model text before it may hold DATA too
    meta = {**meta, "columns": COLUMNS, "page_size": PAGE_SIZE}
    with (
        replaced_atomically(path, what="the report") as tmp,
        tmp.open("w", encoding="utf-8") as out,
    ):
        out.write(redact(head))
        out.write(redact(embed_json(meta, "report-meta")))
        out.write('\n<script type="application/json" id="report-rows">[')
        for n, row in enumerate(rows):
            text = redact(orjson.dumps(row, option=_DUMP, default=str).decode())
            out.write(("," if n else "") + _escape(text))
        out.write("]</script>")
        out.write(redact(tail))
    return path


def _shared(prompt: Any, item: dict[str, Any]) -> tuple[str | None, list[str]]:
    """The judge prompt with the input fields it holds whole written as ``NUL name NUL``
    (the script puts them back), and their names: each field's text is stored once.
    A prompt where that would not give back the same text is kept as it is."""
    if not isinstance(prompt, str):
        return None, []
    if _MARK in prompt:
        return clip(prompt), []
    found = sorted(
        (
            k
            for k, v in item.items()
            if isinstance(v, str) and 8 <= len(v) <= TEXT_LIMIT and v in prompt
        ),
        key=lambda k: -len(item[k]),
    )
    skeleton = prompt
    for key in found:
        skeleton = skeleton.replace(item[key], f"{_MARK}{key}{_MARK}")
    parts = skeleton.split(_MARK)
    rebuilt = "".join(str(item.get(p)) if i % 2 else p for i, p in enumerate(parts))
    if (
        not found
        or len(skeleton) > TEXT_LIMIT
        or rebuilt != prompt
        or any(i % 2 and p not in found for i, p in enumerate(parts))
    ):
        return clip(prompt), []
    return skeleton, [k for k in item if k in found]


def _response(outcome: dict[str, Any]) -> Any:
    """The judge's raw answer; a pairwise judgment's two orders' answers, each labelled.

    >>> print(_response({"forward": {"response": "[[A]]"}, "swapped": {"response": "[[B]]"}}))
    A shown first: [[A]]
    <BLANKLINE>
    B shown first: [[B]]
    """
    if outcome.get("response") is not None:
        return outcome["response"]
    parts = [
        f"{label}: {sub['response']}"
        for label, key in (("A shown first", "forward"), ("B shown first", "swapped"))
        if isinstance(sub := outcome.get(key), dict) and sub.get("response") is not None
    ]
    return "\n\n".join(parts) or None


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
