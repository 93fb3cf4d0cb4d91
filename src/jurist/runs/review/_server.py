"""The review server: the page on 127.0.0.1, behind a random token, writing each label as it
is given.

Routes (every one needs the token, as ``?token=``; the ``Host`` must be the loopback):

- ``GET /``: the page;
- ``POST /api/label``: one label ``{item, label, annotator, at, note}`` (``label: null``
  takes it back); the server adds the item's hash from the run store and the item's
  inclusion probability from the queue, writes the line (:class:`LabelWriter`: whole, under
  a lock, fsynced) and answers ``{"saved": true, "new": ..., "verdict": ...}``: the
  judge's verdict comes back only now that the label is given. The same label sent again
  (same item, annotator and ``at``: a page retrying after the server restarted) is kept
  once (``"new": false``);
- ``GET /api/state?since=OFFSET``: the label lines written since that byte offset (by any
  annotator, any process), the new offset, each annotator's count and the agreement of
  every two annotators on the items both labelled (:func:`jurist.metrics.agreement`);
- ``GET /api/verdict?item=&annotator=``: an item's verdict, once that annotator labelled it;
- ``GET /image/SHA``: an image of the items, from the run store.

Nothing else is served: no file is read from a path a request names.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import secrets
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from pydantic import ValidationError

from jurist._files import replaced_atomically
from jurist.errors import DataError
from jurist.runs._label_writer import (
    LABELS_NAME,
    MAX_LINE_BYTES,
    LabelLine,
    LabelWriter,
    parse_lines,
    read_labels,
)
from jurist.runs.review._items import ReviewItems
from jurist.runs.review._page import review_html

__all__ = ["ReviewApp", "import_labels", "serve", "write_export"]

_LOOPBACK = {"127.0.0.1", "localhost"}
_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


class ReviewApp:
    """The server's state: the items, the writer, the labels in force and their agreement."""

    def __init__(
        self, found: ReviewItems, *, token: str | None = None, show_verdict: bool = False
    ) -> None:
        self.found = found
        self.token = token or secrets.token_urlsafe(24)
        self.show_verdict = show_verdict
        self.path = found.run_dir / LABELS_NAME
        self.writer = LabelWriter(self.path)
        self._items = {it["idx"] for it in found.items}
        self._latest: dict[tuple[int, str], LabelLine] = {}
        self._offset = 0
        self._line = 1
        self._agreement: tuple[int, dict[str, Any]] | None = None
        self._page: str | None = None

    def app(self) -> web.Application:
        """The aiohttp application (its routes: the module docs)."""
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_LINE_BYTES)
        app.router.add_get("/", self._index)
        app.router.add_post("/api/label", self._label)
        app.router.add_get("/api/state", self._state)
        app.router.add_get("/api/verdict", self._verdict)
        app.router.add_get("/image/{sha:[0-9a-f]{64}}", self._image)
        return app

    def close(self) -> None:
        """Release the labels file."""
        self.writer.close()

    @web.middleware
    async def _guard(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        try:
            host = request.url.host
        except ValueError:
            host = None
        given = request.query.get("token", "")
        if host not in _LOOPBACK:
            response: web.StreamResponse = _json({"error": "not a loopback host"}, 403)
        elif not hmac.compare_digest(given.encode(), self.token.encode()):
            response = _json({"error": "a missing or wrong token"}, 403)
        else:
            try:
                response = await handler(request)
            except web.HTTPException as e:
                response = _json({"error": e.reason}, e.status)
        response.headers.update(_HEADERS)
        if "Content-Security-Policy" not in response.headers:
            response.headers["Content-Security-Policy"] = "default-src 'none'"
        return response

    async def _index(self, _request: web.Request) -> web.Response:
        if self._page is None:
            self._page = review_html(
                self.found, mode="server", show_verdict=self.show_verdict, token=self.token
            )
        response = web.Response(text=self._page, content_type="text/html", charset="utf-8")
        # the page's own policy is in its <meta>; the header allows what that allows
        response.headers["Content-Security-Policy"] = "frame-ancestors 'none'"
        return response

    def _follow(self) -> None:
        found = read_labels(self.path, self._offset, self._line)
        for line in found.lines:
            if line.label is None:
                self._latest.pop((line.item, line.annotator), None)
            else:
                self._latest[(line.item, line.annotator)] = line
        self._offset, self._line = found.offset, found.next_line

    async def _label(self, request: web.Request) -> web.Response:
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return _json({"error": "the body is not JSON"}, 400)
        if not isinstance(body, dict):
            return _json({"error": "the body is a JSON object"}, 400)
        try:
            line = self.line_of(body)
        except (DataError, ValidationError) as e:
            return _json({"error": str(e).splitlines()[0]}, 400)
        new = await asyncio.to_thread(self.writer.write, line)
        self._follow()
        verdict = self.found.verdicts.get(line.item) if line.label is not None else None
        return _json({"saved": True, "new": new, "verdict": verdict})

    def line_of(self, body: dict[str, Any]) -> LabelLine:
        """A label sent by a page (or read from a downloaded file) as the line to write,
        checked against the run: its item, its hash, its scale."""
        item = body.get("item")
        if isinstance(item, bool) or not isinstance(item, int) or item not in self._items:
            raise DataError(f"item {item!r} is not one of the items on this page")
        stored = self.found.hashes[item]
        if body.get("item_hash") not in (None, stored):
            raise DataError(f"item {item}: its hash is not the run's (the data changed?)")
        allowed = {"item", "item_hash", "label", "annotator", "at", "note", "inclusion_probability"}
        extra = sorted(set(body) - allowed)
        if extra:
            raise DataError(f"item {item}: unknown field(s) {extra}")
        return LabelLine(
            item=item,
            item_hash=stored,
            label=self.found.scale.check(body.get("label")),
            annotator=_text(body.get("annotator")),
            at=_text(body.get("at")),
            note=body.get("note") or None,
            inclusion_probability=self.found.probabilities.get(item),
        )

    async def _state(self, request: web.Request) -> web.Response:
        try:
            since = max(0, int(request.query.get("since", "0")))
        except ValueError:
            return _json({"error": "since is a byte offset"}, 400)
        self._follow()
        if since > self._offset:
            since = 0  # the file is not the one the page read: start over
        found = read_labels(self.path, since) if since < self._offset else None
        lines = [ln.model_dump() for ln in found.lines] if found else []
        counts: dict[str, int] = {}
        for _item, who in self._latest:
            counts[who] = counts.get(who, 0) + 1
        figures = self._agreements()
        return _json(
            {
                "offset": found.offset if found else self._offset,
                "lines": lines,
                "annotators": dict(sorted(counts.items())),
                **figures,
            }
        )

    def _agreements(self) -> dict[str, Any]:
        if self._agreement is not None and self._agreement[0] == self._offset:
            return self._agreement[1]
        by: dict[str, dict[int, Any]] = {}
        for (item, who), line in self._latest.items():
            by.setdefault(who, {})[item] = line.label
        rows: list[dict[str, Any]] = []
        note = ""
        for a, b in itertools.combinations(sorted(by), 2):
            shared = sorted(set(by[a]) & set(by[b]))
            row: dict[str, Any] = {"a": a, "b": b, "n": len(shared)}
            if len(shared) >= 2:
                row.update(
                    _figures(
                        [by[a][i] for i in shared],
                        [by[b][i] for i in shared],
                        self.found.scale.kind,
                    )
                )
            rows.append(row)
        if rows:
            note = (
                f"{self.found.scale.kind} figures over the items both annotators labelled "
                "(jurist.metrics.agreement); a dash: too few shared items, or labels of one "
                "value only"
            )
        out = {"agreement": rows, "agreement_note": note}
        self._agreement = (self._offset, out)
        return out

    async def _verdict(self, request: web.Request) -> web.Response:
        try:
            item = int(request.query.get("item", ""))
        except ValueError:
            return _json({"error": "item is a number"}, 400)
        who = request.query.get("annotator", "").strip()
        self._follow()
        if item not in self._items:
            return _json({"error": f"item {item} is not on this page"}, 404)
        if not self.show_verdict and (item, who) not in self._latest:
            return _json({"verdict": None, "why": "give your label first"})
        return _json({"verdict": self.found.verdicts.get(item)})

    async def _image(self, request: web.Request) -> web.Response:
        found = self.found.image(request.match_info["sha"])
        if found is None or not found[0].startswith("image/"):
            return _json({"error": "no such image"}, 404)
        return web.Response(body=found[1], content_type=found[0])


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _figures(a: list[Any], b: list[Any], kind: str) -> dict[str, Any]:
    from jurist.errors import JuristError
    from jurist.metrics import agreement

    try:
        res = agreement(a, b, kind="ordinal" if kind == "ordinal" else "nominal", ci=False)
    except (JuristError, ValueError, ZeroDivisionError):
        return {}
    return {
        k: res.metrics[k].value
        for k in ("accuracy", "cohen_kappa", "krippendorff_alpha")
        if k in res.metrics
    }


async def serve(
    found: ReviewItems,
    *,
    port: int = 0,
    token: str | None = None,
    show_verdict: bool = False,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the page on 127.0.0.1:``port`` (0: a free one) until SIGINT or SIGTERM;
    ``ready(url)`` is called with the page's address (its token in it) once it listens."""
    state = ReviewApp(found, token=token, show_verdict=show_verdict)
    runner = web.AppRunner(state.app(), access_log=None)
    try:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        bound = runner.addresses[0][1]
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if ready is not None:
            ready(f"http://127.0.0.1:{bound}/?token={state.token}")
        await stop.wait()
    finally:
        await runner.cleanup()
        state.close()


def write_export(found: ReviewItems, path: str | Path, *, show_verdict: bool = False) -> Path:
    """Write the page as one self-contained file that works offline (module docs of
    :mod:`jurist.runs.review._page`); its labels download as ``labels.jsonl`` lines."""
    out = Path(path)
    html = review_html(found, mode="export", show_verdict=show_verdict)
    with replaced_atomically(out, what="the review page") as tmp:
        tmp.write_text(html, encoding="utf-8")
    return out


def import_labels(found: ReviewItems, path: str | Path) -> tuple[int, int]:
    """Add the labels of a downloaded file (an exported page's) to the run's
    ``labels.jsonl``: every line is checked first (its item, hash and scale), then each is
    written as the server writes it; ``(written, already there)``."""
    source = Path(path)
    try:
        data = source.read_bytes()
    except OSError as e:
        raise DataError(f"{source}: cannot read the labels: {e}") from e
    if data and not data.endswith(b"\n"):
        data += b"\n"
    lines, problems = parse_lines(data)
    if problems:
        n, why = problems[0]
        raise DataError(f"{source}:{n}: not a label line: {why}")
    state = ReviewApp(found)
    try:
        checked = []
        for n, line in enumerate(lines, start=1):
            try:
                checked.append(state.line_of(line.model_dump(exclude_none=False)))
            except (DataError, ValidationError) as e:
                raise DataError(f"{source}:{n}: {str(e).splitlines()[0]}") from e
        written = sum(state.writer.write(line) for line in checked)
    finally:
        state.writer.close()
    return written, len(checked) - written
