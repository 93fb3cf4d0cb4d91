"""The fault server of ``campaign.py``: an OpenAI-compatible stub that fails on purpose.

It is :mod:`_stub_server`'s raw-asyncio HTTP/1.1 server (a few tens of microseconds of CPU
per request, its own process) with a fault plan in front of every answer. The plan is a
pure function of ``(seed, item, attempt)``: ``item`` is the number in the prompt's
``[campaign item N]`` marker and ``attempt`` counts the requests the server has received
for that item (1 for the first, over every session of the run). So the driver can compute
what each item must end as:

- about 2% of the items fail on every attempt (HTTP 500, HTTP 400, a dropped connection or
  an unreadable verdict): they must end as failures, never as scores;
- about 28% fail their first attempt (429 with ``Retry-After: 1`` or a small
  ``retry-after-ms``, 500, 502, 503, a dropped connection, a hang past the client's
  timeout, an unreadable verdict: plain text or a JSON verdict off the 1-5 scale), a fifth
  of those their second attempt too; from the third attempt on they answer;
- the rest answer at once.

A readable answer carries the item's own rating (:func:`expected_rating`, from the item
number) and an explanation naming the item, as JSON when the request carries a schema and
in the likert template's text format (``Score: 4`` / ``Explanation: ...``) otherwise.

Endpoints: ``POST /v1/chat/completions``; ``POST /session`` (body ``{"session": n}``:
the requests that follow are recorded under session ``n``); ``GET /stats``: every request
as parallel lists ``item``, ``attempt``, ``session``, ``fault`` (in arrival order), the
requests without a marker (``unmarked``), and per session the bearer tokens and the
``model`` names seen, with their counts (``keys``, ``models``).

Run by hand: ``python benchmarks/_campaign_server.py --seed 19 --port 8000``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import re
import socket
import subprocess
import sys
import urllib.request
from collections import Counter
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stub_server import _BACKLOG, _completion_body, _HTTPProtocol, _response, _schema_of

__all__ = [
    "ALWAYS_KINDS",
    "CampaignServer",
    "ItemPlan",
    "expected_rating",
    "fault",
    "item_plan",
]

MARKER = re.compile(r"\[campaign item (\d+)\]")
ALWAYS_RATE = 0.02
FIRST_RATE = 0.28
SECOND_SHARE = 0.2
ALWAYS_KINDS = ("500", "400", "drop", "garbage")
# (kind, weight) of a first-attempt fault; "hang" stays rare: each costs a client timeout
FIRST_KINDS = (
    ("429", 12),
    ("429ms", 13),
    ("500", 13),
    ("502", 8),
    ("503", 9),
    ("drop", 13),
    ("hang", 2),
    ("garbage", 15),
    ("badjson", 15),
)
SECOND_KINDS = (("429ms", 1), ("500", 1), ("503", 1), ("drop", 1), ("garbage", 1), ("badjson", 1))
UNREADABLE = frozenset({"garbage", "badjson"})
GARBAGE_TEXT = "I would rather not say anything about this one, sorry."


class ItemPlan:
    """What the server does with one item's attempts."""

    __slots__ = ("always", "first", "second")

    def __init__(self, always: str | None, first: str, second: str) -> None:
        self.always = always
        self.first = first
        self.second = second


def _weighted(rng: random.Random, table: tuple[tuple[str, int], ...]) -> str:
    kinds, weights = zip(*table, strict=True)
    return str(rng.choices(kinds, weights=weights)[0])


@cache
def item_plan(seed: int, item: int) -> ItemPlan:
    """The item's faults: deterministic in ``seed`` and ``item``."""
    rng = random.Random(f"campaign:{seed}:{item}")
    u = rng.random()
    if u < ALWAYS_RATE:
        return ItemPlan(rng.choice(ALWAYS_KINDS), "", "")
    if u < ALWAYS_RATE + FIRST_RATE:
        first = _weighted(rng, FIRST_KINDS)
        second = _weighted(rng, SECOND_KINDS) if rng.random() < SECOND_SHARE else "ok"
        return ItemPlan(None, first, second)
    return ItemPlan(None, "ok", "ok")


def fault(seed: int, item: int, attempt: int) -> str:
    """What attempt ``attempt`` (1-based) of ``item`` gets: ``ok`` or a fault kind."""
    plan = item_plan(seed, item)
    if plan.always is not None:
        return plan.always
    if attempt == 1:
        return plan.first
    if attempt == 2:
        return plan.second
    return "ok"


def expected_rating(item: int) -> int:
    """The 1-5 rating every readable answer for ``item`` carries."""
    return 1 + (item * 7 + item // 5) % 5


def _head(status: int, reason: str, length: int, keep_alive: bool, extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n{extra}"
        f"Content-Length: {length}\r\nConnection: {'keep-alive' if keep_alive else 'close'}"
        "\r\n\r\n"
    ).encode()


def _error(status: int, keep_alive: bool, extra: str = "") -> bytes:
    reasons = {400: "Bad Request", 429: "Too Many Requests", 500: "Internal Server Error"}
    reasons |= {502: "Bad Gateway", 503: "Service Unavailable"}
    body = json.dumps({"error": {"message": f"campaign fault {status}", "type": "campaign"}})
    data = body.encode()
    return _head(status, reasons[status], len(data), keep_alive, extra) + data


class _State:
    def __init__(self, seed: int, latency: float, hang: float) -> None:
        self.seed = seed
        self.latency = latency
        self.hang = hang
        self.session = 0
        self.attempts: Counter[int] = Counter()
        self.items: list[int] = []
        self.attempt: list[int] = []
        self.sessions: list[int] = []
        self.faults: list[str] = []
        self.unmarked = 0
        self.keys: dict[int, Counter[str]] = {}
        self.models: dict[int, Counter[str]] = {}

    def stats(self) -> dict[str, Any]:
        return {
            "count": len(self.items),
            "item": self.items,
            "attempt": self.attempt,
            "session": self.sessions,
            "fault": self.faults,
            "unmarked": self.unmarked,
            "keys": {str(s): dict(c) for s, c in self.keys.items()},
            "models": {str(s): dict(c) for s, c in self.models.items()},
        }


def _answer(kind: str, item: int, payload: dict[str, Any]) -> str:
    schema = _schema_of(payload)
    if kind == "garbage":
        return GARBAGE_TEXT
    rating = 9 if kind == "badjson" else expected_rating(item)
    explanation = f"campaign item {item} rated {rating}."
    if schema is not None or kind == "badjson":
        return json.dumps({"explanation": explanation, "verdict": rating})
    return f"Score: {rating}\nExplanation: {explanation}"


class _FaultProtocol(_HTTPProtocol):
    state: _State  # type: ignore[assignment]

    def _dispatch(self, method: str, path: str, body: bytes, keep_alive: bool) -> None:
        state = self.state
        if path == "/v1/chat/completions" and method == "POST":
            self._chat(body, keep_alive)
        elif path == "/stats" and method == "GET":
            self._send(_response(200, state.stats(), keep_alive))
        elif path == "/session" and method == "POST":
            state.session = int(json.loads(body)["session"])
            self._send(_response(200, {"session": state.session}, keep_alive))
        else:
            self._send(_response(404, {"error": {"message": f"no route {path}"}}, keep_alive))

    def _chat(self, body: bytes, keep_alive: bool) -> None:
        state = self.state
        payload = json.loads(body)
        text = "\n".join(str(m.get("content") or "") for m in payload.get("messages", []))
        found = MARKER.search(text)
        auth = self.headers.get("authorization", "")
        key = auth[len("Bearer ") :] if auth.startswith("Bearer ") else auth
        state.keys.setdefault(state.session, Counter())[key] += 1
        model = str(payload.get("model", ""))
        state.models.setdefault(state.session, Counter())[model] += 1
        if found is None:
            state.unmarked += 1
            self._send(_error(400, keep_alive))
            return
        item = int(found.group(1))
        state.attempts[item] += 1
        attempt = state.attempts[item]
        kind = fault(state.seed, item, attempt)
        state.items.append(item)
        state.attempt.append(attempt)
        state.sessions.append(state.session)
        state.faults.append(kind)
        if kind == "drop":
            assert self.transport is not None
            self.transport.abort()
            return
        if kind == "hang":  # say nothing past the client's timeout, then hang up
            self.pending += 1
            self.loop.call_later(state.hang, self._hang_up)
            return
        if kind in ("429", "429ms"):
            hint = "Retry-After: 1\r\n" if kind == "429" else "retry-after-ms: 20\r\n"
            data = _error(429, keep_alive, hint)
        elif kind in ("400", "500", "502", "503"):
            data = _error(int(kind), keep_alive)
        else:
            answer = _answer(kind, item, payload)
            completion = _completion_body(answer, model, len(body))
            data = _response(200, completion, keep_alive)
        self.pending += 1
        self.loop.call_later(state.latency, self._send_later, data, keep_alive)

    def _hang_up(self) -> None:
        self.pending -= 1
        if self.transport is not None:
            self.transport.abort()


async def serve(seed: int, port: int = 0, latency: float = 0.005, hang: float = 3.0) -> None:
    """Serve until cancelled; print ``READY <port>`` on stdout."""
    state = _State(seed, latency, hang)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(_BACKLOG)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _FaultProtocol(state),  # type: ignore[arg-type]
        sock=sock,
        backlog=_BACKLOG,
    )
    print(f"READY {sock.getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


class CampaignServer:
    """The fault server in a subprocess of its own; a context manager."""

    def __init__(self, seed: int, *, latency: float = 0.005, hang: float = 3.0) -> None:
        self.seed, self.latency, self.hang = seed, latency, hang
        self._proc: subprocess.Popen[str] | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> CampaignServer:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--seed", str(self.seed)]
        cmd += ["--latency", repr(self.latency), "--hang", repr(self.hang)]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()  # READY <port>, or "" if it died
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"the campaign server did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def _call(self, path: str, data: bytes | None = None) -> Any:
        url = f"http://127.0.0.1:{self.port}{path}"
        req = urllib.request.Request(url, data=data, method="POST" if data else "GET")
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())

    def set_session(self, session: int) -> None:
        self._call("/session", json.dumps({"session": session}).encode())

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self._call("/stats")
        return stats

    def __enter__(self) -> CampaignServer:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The campaign's fault server (127.0.0.1).")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--latency", type=float, default=0.005, help="seconds per answer")
    parser.add_argument("--hang", type=float, default=3.0, help="seconds a hang lasts")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.seed, args.port, args.latency, args.hang))


if __name__ == "__main__":
    main()
