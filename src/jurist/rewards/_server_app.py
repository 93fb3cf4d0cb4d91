"""The aiohttp app of ``jurist serve-reward`` and the loop that serves it.

Endpoints (see ``docs/rewards.md``, "Reward server"):

- ``POST /get_reward``: OpenRLHF's remote reward model. Body ``{"query": [...],
  "prompts": [...], "labels": [...]}``; answer ``{"rewards": [...], "scores": [...],
  "extra_logs": {...}, "raw_scores": [...], "errors": [...]}`` where ``scores`` are the
  rewards clamped to [0, 1], ``extra_logs`` holds one 0/1 list per flag (OpenRLHF makes
  a tensor of each): ``parse_failed``, ``clamped``, ``failed``, ``timed_out``,
  ``refused``; ``raw_scores`` the judge's numbers (``null`` where none) and ``errors``
  why a sample has no score (``null`` where it has one).
- ``POST /slime``: slime's ``remote_rm``, one sample: ``{"prompt", "response", "label"}``
  in, ``{"reward", "score", "raw_score", "error", "parse_failed", "clamped", "failed",
  "timed_out", "refused"}`` out (slime reads the number with ``--reward-key reward``).
- ``POST /v1/rewards``: ``{"items": [{"response", "reference", "prompt"}, ...]}`` in,
  ``{"rewards": [record, ...]}`` out (``reward``, ``raw_score``, ``judge_output``,
  ``clamped``, ``parse_failed``, ``error``, ``refused``).
- ``POST /v1/group_rewards``: ``{"groups": [{"prompt", "reference", "responses": [...]}]}``
  in, ``{"groups": [{"rewards": [...], "records": [...]}]}`` out: each group's responses
  ranked against each other by the service's pairwise judge
  (:mod:`jurist.rewards._group`).
- ``GET /health``: ``{"status": "ok", ...}``; ``GET /metrics``: Prometheus text.

A body that is not the documented shape gets HTTP 400 with ``{"error": "<field[index]>:
<problem>"}``, as does one nested deeper than ``MAX_DEPTH`` or asking for more than
``MAX_SAMPLES`` samples; one longer than ``MAX_BODY_BYTES`` gets HTTP 413 with the same
kind of body, unread (the bounds: :mod:`jurist.rewards._server_bodies`). A sample the
judge cannot take is refused on its own (see :mod:`jurist.rewards._server`). Every JSON
answer is strict JSON: a number that is not finite is written ``null``, never the ``NaN``
token strict parsers reject.
:func:`serve` binds, calls ``on_ready`` with the URL, and on SIGTERM or SIGINT stops
accepting connections and finishes the requests in flight before it returns.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import orjson
from aiohttp import web

from jurist._json import TooDeep, loads
from jurist._secrets import get_logger, scrub
from jurist.rewards._heap import freeze_heap as freeze_process_heap
from jurist.rewards._server import BadBody, RewardService
from jurist.rewards._server_bodies import MAX_BODY_BYTES, MAX_DEPTH
from jurist.rewards._server_metrics import CONTENT_TYPE

__all__ = ["BACKLOG", "MAX_BODY_BYTES", "make_app", "serve"]

BACKLOG = 4096
"""Connections the listening socket queues (the kernel caps it at ``net.core.somaxconn``).
OpenRLHF opens a connection per sample, hundreds at once: with aiohttp's default of 128
the overflow is dropped and each dropped client retries a second later."""

_log = get_logger("jurist.rewards.server")
_SERVICE: web.AppKey[RewardService] = web.AppKey("service", RewardService)
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def make_app(service: RewardService) -> web.Application:
    """The app serving ``service`` (see the module doc for the endpoints)."""
    app = web.Application(middlewares=[_timed], client_max_size=MAX_BODY_BYTES)
    app[_SERVICE] = service
    app.router.add_post("/get_reward", _get_reward)
    app.router.add_post("/v1/rewards", _rewards)
    app.router.add_post("/slime", _slime)
    app.router.add_post("/v1/group_rewards", _group_rewards)
    app.router.add_get("/health", _health)
    app.router.add_get("/metrics", _metrics)
    return app


@web.middleware
async def _timed(request: web.Request, handler: _Handler) -> web.StreamResponse:
    start = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as e:
        status = e.status
        raise
    finally:
        if request.match_info.route.resource is not None:  # a known endpoint
            endpoint = request.match_info.route.resource.canonical
            service = request.app[_SERVICE]
            service.metrics.count_request(endpoint, status, time.perf_counter() - start)


async def _body(request: web.Request) -> Any:
    """The request's JSON body, read under the bounds of
    :mod:`jurist.rewards._server_bodies`: one decode from the bytes (orjson), Python's
    ``json`` for what orjson refuses and it reads (NaN, a missing label; big integers)."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:  # aiohttp's is plain text: the same, as JSON
        message = (
            f"body: longer than {MAX_BODY_BYTES:,} bytes, the most the server reads "
            "(send smaller batches)"
        )
        raise web.HTTPRequestEntityTooLarge(
            max_size=MAX_BODY_BYTES, text=_error(message), content_type="application/json"
        ) from None
    charset = (request.charset or "utf-8").lower()
    try:
        data = raw if charset in ("utf-8", "utf8") else raw.decode(charset)
        return loads(data, max_depth=MAX_DEPTH)
    except TooDeep as e:
        raise _bad(f"body: {e}; no documented body is more than 4 deep") from None
    except (ValueError, LookupError) as e:  # not JSON, not UTF-8, an unknown charset
        raise _bad(f"body: not valid JSON: {e}") from None


T = TypeVar("T")


async def _parsed(request: web.Request, read: Callable[[Any], T]) -> T:
    """The request's JSON body read by ``read`` (a service's body reader); a malformed
    body (:class:`BadBody`) is a 400 naming what is wrong."""
    body = await _body(request)
    try:
        return read(body)
    except BadBody as e:
        raise _bad(str(e)) from None


def _bad(message: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(text=_error(message), content_type="application/json")


def _error(message: str) -> str:
    return json.dumps({"error": scrub(message)})


async def _get_reward(request: web.Request) -> web.Response:
    service = request.app[_SERVICE]
    items = await _parsed(request, service.openrlhf_items)
    records = await service.score(items, "/get_reward")
    rewards = [r["reward"] for r in records]
    body = {
        "rewards": rewards,
        "scores": [_unit(r) for r in rewards],
        "extra_logs": {
            "parse_failed": [int(bool(r["parse_failed"])) for r in records],
            "clamped": [int(bool(r["clamped"])) for r in records],
            "failed": [int(r["error"] is not None) for r in records],
            "timed_out": [int(str(r["error"]).startswith("timeout:")) for r in records],
            "refused": [int(r["refused"]) for r in records],
        },
        "raw_scores": [r["raw_score"] for r in records],
        "errors": [r["error"] for r in records],
    }
    return _json(body)


def _json(body: Any) -> web.Response:
    """Strict JSON: NaN and infinities are written ``null`` (orjson's rule)."""
    return web.Response(body=orjson.dumps(body), content_type="application/json")


def _unit(reward: float | None) -> float | None:
    if reward is None:  # a RewardJudge built with failure_value=None
        return None
    return min(1.0, max(0.0, float(reward)))


async def _rewards(request: web.Request) -> web.Response:
    service = request.app[_SERVICE]
    items = await _parsed(request, service.jurist_items)
    records = await service.score(items, "/v1/rewards")
    return _json({"rewards": records})


async def _slime(request: web.Request) -> web.Response:
    service = request.app[_SERVICE]
    item = await _parsed(request, service.slime_item)
    (r,) = await service.score([item], "/slime")
    return _json(
        {
            "reward": r["reward"],
            "score": _unit(r["reward"]),
            "raw_score": r["raw_score"],
            "error": r["error"],
            "parse_failed": int(bool(r["parse_failed"])),
            "clamped": int(bool(r["clamped"])),
            "failed": int(r["error"] is not None),
            "timed_out": int(str(r["error"]).startswith("timeout:")),
            "refused": int(r["refused"]),
        }
    )


async def _group_rewards(request: web.Request) -> web.Response:
    service = request.app[_SERVICE]
    groups = await _parsed(request, service.group_items)
    out = await service.score_groups(groups)
    return _json({"groups": [{"rewards": [r["reward"] for r in g], "records": g} for g in out]})


async def _health(request: web.Request) -> web.Response:
    service = request.app[_SERVICE]
    judge = service.judge.judge
    return _json(
        {
            "status": "ok",
            "model": scrub(judge.model.spec),
            "template": service.judge.kind_name,
            "in_flight": service.in_flight,
            "concurrency": service.concurrency,
        }
    )


async def _metrics(request: web.Request) -> web.Response:
    service = request.app[_SERVICE]
    text = service.metrics.render(in_flight=service.in_flight, batches=service.batcher.batches)
    return web.Response(body=text.encode(), headers={"Content-Type": CONTENT_TYPE})


async def serve(
    service: RewardService,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    on_ready: Callable[[str], None] | None = None,
    shutdown_timeout: float = 60.0,
    freeze_heap: bool = False,
) -> None:
    """Serve until SIGTERM or SIGINT, then finish the requests in flight and return.

    ``on_ready`` gets the URL once the socket is bound (with the real port when ``port``
    is 0). ``shutdown_timeout``: how long in-flight requests may take to finish.
    ``freeze_heap``: once bound, freeze the heap out of the garbage collector's way
    (:mod:`jurist.rewards._heap`; for a process that is only this server, as ``jurist
    serve-reward``'s is: its full collections took about 0.16 s each, a stall of every
    request, and about 0.02 s frozen).
    """
    runner = web.AppRunner(
        make_app(service),
        handle_signals=False,
        shutdown_timeout=shutdown_timeout,
        access_log=None,
    )
    await runner.setup()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    try:
        site = web.TCPSite(runner, host, port, backlog=BACKLOG)
        await site.start()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        bound_host, bound_port = runner.addresses[0][:2]
        shown = f"[{bound_host}]" if ":" in str(bound_host) else str(bound_host)
        url = f"http://{shown}:{bound_port}"
        _log.info("reward server listening on %s", url)
        if freeze_heap:  # the process is the server's: its startup heap lives as long
            freeze_process_heap()
        if on_ready is not None:
            on_ready(url)
        await stop.wait()
        _log.info("reward server stopping: finishing %d judgment(s) in flight", service.in_flight)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await runner.cleanup()
        await service.aclose()
