"""The review page as HTML: one file, its one script allowed by hash, item text only ever
text.

The items, the scale and (when the page may show them) the judge's verdicts travel as JSON
data blocks (:func:`~jurist.runs.report._browse.embed_json`, the report's: no text inside
can end the block); the page's script (``review.js``) builds the item with DOM calls and
``textContent``. The Content-Security-Policy allows that one script by its hash, images
only from the page itself (``data:`` URIs, and the server's own ``/image/`` route), and
requests only to the server that served the page; an exported page may call nothing.
Known secrets are masked (:func:`~jurist._secrets.redact_known`), as in the report.

>>> from pathlib import Path
>>> from jurist.runs.review._items import ReviewItems, parse_scale
>>> found = ReviewItems(run_dir=Path("r"), run_id="x", title="</title><script>",
...                     scale=parse_scale("1-3"), pairwise=False, rubric=None,
...                     items=[{"idx": 0, "name": "1", "fields": {"q": "</script><b>"}}])
>>> html = review_html(found, mode="export", show_verdict=False)
>>> "</script><b>" in html, "&lt;/title&gt;&lt;script&gt;" in html
(False, True)
"""

from __future__ import annotations

import base64
import hashlib
from html import escape
from importlib import resources
from string import Template
from typing import Any, Literal

from jurist._secrets import redact_known, scrub
from jurist._version import __version__
from jurist.runs.report._browse import embed_json
from jurist.runs.review._items import ReviewItems

__all__ = ["review_html"]


def _script() -> tuple[str, str]:
    code = resources.files("jurist.runs.review").joinpath("review.js").read_text("utf-8")
    digest = base64.b64encode(hashlib.sha256(code.encode("utf-8")).digest()).decode()
    return f'<script id="review-code">{code}</script>', f"'sha256-{digest}'"


def review_html(
    found: ReviewItems,
    *,
    mode: Literal["server", "export"],
    show_verdict: bool,
    token: str | None = None,
) -> str:
    """The page: served (``mode="server"``: labels go to the server that served it) or
    exported (``"export"``: labels stay in the browser and download as JSON Lines)."""
    files = resources.files("jurist.runs.report")
    style = files.joinpath("report.css").read_text("utf-8").rstrip("\n")
    page = Template(
        resources.files("jurist.runs.review").joinpath("review.html").read_text("utf-8")
    )
    script, script_src = _script()
    items = [
        {
            **it,
            "hash": found.hashes.get(it["idx"], ""),
            **({"p": found.probabilities[it["idx"]]} if it["idx"] in found.probabilities else {}),
        }
        for it in found.items
    ]
    meta: dict[str, Any] = {
        "mode": mode,
        "run_id": found.run_id,
        "title": scrub(found.title),
        "version": __version__,
        "scale": {
            "points": found.scale.points,
            "names": found.scale.names,
            "kind": found.scale.kind,
            "source": found.scale.source,
        },
        "pairwise": found.pairwise,
        "rubric": found.rubric,
        "show_verdict": show_verdict,
        "token": token,
    }
    blocks = [embed_json(items, "review-items")]
    if mode == "export":
        meta["images"] = found.data_uris()
    if mode == "export" or show_verdict:  # a served page asks for each verdict once labelled
        blocks.append(embed_json({str(k): v for k, v in found.verdicts.items()}, "review-verdicts"))
    blocks.insert(0, embed_json(meta, "review-meta"))
    html = page.substitute(
        style=style,
        title=escape(scrub(found.title)),
        script_src=script_src,
        img_src="data: 'self'" if mode == "server" else "data:",
        connect_src="'self'" if mode == "server" else "'none'",
        data="\n".join(redact_known(b) for b in blocks),
        script=script,
    )
    return html
