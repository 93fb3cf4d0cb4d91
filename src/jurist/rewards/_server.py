"""The reward service behind ``jurist serve-reward``: request bodies in, reward records out.

:class:`RewardService` wraps one :class:`~jurist.rewards._batch.RewardJudge` and is shared
by every request of the server (see :mod:`jurist.rewards._server_app` for the HTTP side):

- **one bound**: at most ``concurrency`` judgments run at once, whichever requests their
  items came in; items of requests that arrive together are judged together;
- **coalescing**: an item whose judge input (the rendered judge messages) equals one
  already being judged waits for that judgment instead of making another;
- **failures**: a judgment that fails, or takes longer than the judge's ``timeout``
  (judging time, not time queued for the bound), gets the judge's failure value with
  ``error`` saying why (``"parse: ..."``, ``"api: ..."``, ``"timeout: ..."``); never a
  made-up score.

Bodies are checked before anything is judged; a problem raises :class:`BadBody`, which
names the field and index (the server answers it with HTTP 400).

>>> import asyncio
>>> from jurist.judges import LLMJudge
>>> from jurist.rewards._batch import RewardJudge
>>> service = RewardService(RewardJudge(LLMJudge("mock:j", outputs=["Score: 0.8"],
...                                              template="reward")), concurrency=4)
>>> items = service.openrlhf_items({"query": ["Q: 2+2? A: 4"], "prompts": ["Q: 2+2? A:"],
...                                 "labels": ["4"]})
>>> items[0]["response"]
' 4'
>>> [r["reward"] for r in asyncio.run(service.score(items, "/get_reward"))]
[0.8]
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from jurist._secrets import get_logger, scrub
from jurist.errors import JuristError
from jurist.rewards._batch import RewardJudge
from jurist.rewards._server_metrics import ServerMetrics

__all__ = ["ITEM_FIELDS", "BadBody", "RewardService", "derive_response"]

ITEM_FIELDS = ("response", "reference", "prompt")
"""The fields of an item of ``POST /v1/rewards``."""

_log = get_logger("jurist.rewards.server")
_Key = tuple[tuple[str, str], ...]


class BadBody(JuristError):
    """A request body the server cannot judge; the message names the field and index."""


def derive_response(query: str, prompt: str | None) -> str:
    """The response inside an OpenRLHF ``query`` (prompt + response text).

    The query minus the prompt when the query starts with the prompt, else the whole query.

    >>> derive_response("Q? A: yes", "Q? A:")
    ' yes'
    >>> derive_response("retokenized Q? yes", "Q?")
    'retokenized Q? yes'
    """
    if prompt and query.startswith(prompt):
        return query[len(prompt) :]
    return query


class RewardService:
    """Judges reward items for the server: one bound, coalescing, metrics (see module doc)."""

    def __init__(self, judge: RewardJudge, *, concurrency: int = 256) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.judge = judge
        self.concurrency = concurrency
        self.metrics = ServerMetrics()
        self.in_flight = 0
        self._bound: asyncio.Semaphore | None = None
        self._pending: dict[_Key, asyncio.Task[dict[str, Any]]] = {}
        self._needs = set(judge.judge.required_fields) & set(ITEM_FIELDS)

    # -- bodies -------------------------------------------------------------------------

    def openrlhf_items(self, body: Any) -> list[dict[str, Any]]:
        """Items of an OpenRLHF ``/get_reward`` body: ``query``, ``prompts``, ``labels``."""
        if not isinstance(body, Mapping):
            raise BadBody(f"body: expected a JSON object with a 'query' list, got {_kind(body)}")
        queries = _strings(body, "query", None, required=True)
        assert queries is not None
        n = len(queries)
        prompts = _strings(body, "prompts", n)
        labels = _labels(body, "labels", n)
        where = {"response": "query", "reference": "labels", "prompt": "prompts"}
        items: list[dict[str, Any]] = []
        for i, query in enumerate(queries):
            prompt = prompts[i] if prompts is not None else None
            assert query is not None  # _strings(required=True) allows no null
            item = {
                "response": derive_response(query, prompt),
                "reference": labels[i] if labels is not None else None,
                "prompt": prompt,
            }
            items.append(self._checked(item, lambda f, i=i: f"{where[f]}[{i}]"))
        return items

    def jurist_items(self, body: Any) -> list[dict[str, Any]]:
        """Items of a ``/v1/rewards`` body: ``{"items": [{"response", "reference", "prompt"}]}``."""
        if not isinstance(body, Mapping):
            raise BadBody(f"body: expected a JSON object with an 'items' list, got {_kind(body)}")
        unknown = sorted(set(body) - {"items"})
        if unknown:
            raise BadBody(f"body: unknown field(s) {unknown}; the body is {{'items': [...]}}")
        raw = body.get("items")
        if not isinstance(raw, list):
            raise BadBody(f"items: expected a list of objects, got {_kind(raw)}")
        items: list[dict[str, Any]] = []
        for i, entry in enumerate(raw):
            if not isinstance(entry, Mapping):
                raise BadBody(f"items[{i}]: expected an object, got {_kind(entry)}")
            extra = sorted(set(entry) - set(ITEM_FIELDS))
            if extra:
                raise BadBody(
                    f"items[{i}]: unknown field(s) {extra}; the fields are {list(ITEM_FIELDS)}"
                )
            response = entry.get("response")
            if not isinstance(response, str):
                raise BadBody(f"items[{i}].response: expected a string, got {_kind(response)}")
            prompt = entry.get("prompt")
            if prompt is not None and not isinstance(prompt, str):
                raise BadBody(f"items[{i}].prompt: expected a string or null, got {_kind(prompt)}")
            reference = _label(entry.get("reference"), f"items[{i}].reference")
            item = {"response": response, "reference": reference, "prompt": prompt}
            items.append(self._checked(item, lambda f, i=i: f"items[{i}].{f}"))
        return items

    def _checked(self, item: dict[str, Any], name: Any) -> dict[str, Any]:
        for field in sorted(self._needs):
            if item[field] is None or item[field] == "":
                raise BadBody(
                    f"{name(field)}: the {self.judge.judge.template.name!r} template needs "
                    f"a {field}, got {_kind(item[field])}"
                )
        try:
            item["_key"] = self._key(item)
        except JuristError as e:
            raise BadBody(f"{name('response')}: {e}") from None
        return item

    def _key(self, item: Mapping[str, Any]) -> _Key:
        judged = {k: item[k] for k in ITEM_FIELDS if item[k] is not None}
        return tuple((m.role, m.content) for m in self.judge.judge.messages(judged))

    # -- judging ------------------------------------------------------------------------

    async def score(self, items: Sequence[dict[str, Any]], endpoint: str) -> list[dict[str, Any]]:
        """One reward record per item (from :meth:`openrlhf_items` / :meth:`jurist_items`)."""
        self.metrics.count_items(endpoint, len(items))
        tasks = [self._task(item) for item in items]
        # shield: a request that goes away does not cancel judgments others wait for
        records = await asyncio.gather(*(asyncio.shield(t) for t in tasks))
        return [dict(r) for r in records]

    def _task(self, item: dict[str, Any]) -> asyncio.Task[dict[str, Any]]:
        key: _Key = item["_key"]
        task = self._pending.get(key)
        if task is not None:
            self.metrics.coalesced += 1
            return task
        task = asyncio.ensure_future(self._judge_one(item))
        self._pending[key] = task

        def forget(done: asyncio.Task[dict[str, Any]]) -> None:
            if self._pending.get(key) is done:
                del self._pending[key]

        task.add_done_callback(forget)
        return task

    async def _judge_one(self, item: Mapping[str, Any]) -> dict[str, Any]:
        if self._bound is None:
            self._bound = asyncio.Semaphore(self.concurrency)
        async with self._bound:
            self.in_flight += 1
            start = time.perf_counter()
            try:
                record = await self.judge.score_one(
                    item["response"], item["reference"], item["prompt"]
                )
            except Exception as e:  # a bug or an unexpected backend failure: flagged, logged
                _log.warning("reward judgment failed: %s: %s", type(e).__name__, e)
                record = {
                    "reward": self.judge.failure_value,
                    "raw_score": None,
                    "judge_output": None,
                    "clamped": False,
                    "parse_failed": False,
                    "error": scrub(f"error: {type(e).__name__}: {e}"),
                }
            finally:
                self.in_flight -= 1
            self.metrics.count_judgment(time.perf_counter() - start, record.get("error"))
        return record

    async def aclose(self) -> None:
        """Close the judge model's connections."""
        await self.judge.judge.model.aclose()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    names = {str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    names.update({list: "a list", dict: "an object"})
    return names.get(type(value), f"a {type(value).__name__}")


def _strings(
    body: Mapping[str, Any], field: str, n: int | None, *, required: bool = False
) -> list[str | None] | None:
    value = body.get(field)
    if value is None:
        if required:
            raise BadBody(f"{field}: missing; expected a list of strings")
        return None
    if not isinstance(value, list):
        raise BadBody(f"{field}: expected a list of strings, got {_kind(value)}")
    if n is not None and len(value) != n:
        raise BadBody(f"{field}: has {len(value)} items but query has {n}")
    for i, entry in enumerate(value):
        ok = isinstance(entry, str) or (entry is None and not required)
        if not ok:
            raise BadBody(f"{field}[{i}]: expected a string, got {_kind(entry)}")
    return list(value)


def _labels(body: Mapping[str, Any], field: str, n: int) -> list[str | None] | None:
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, list):
        raise BadBody(f"{field}: expected a list, got {_kind(value)}")
    if len(value) != n:
        raise BadBody(f"{field}: has {len(value)} items but query has {n}")
    return [_label(entry, f"{field}[{i}]") for i, entry in enumerate(value)]


def _label(value: Any, where: str) -> str | None:
    """A reference: a string, a number (as text) or null."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise BadBody(f"{where}: expected a string, a number or null, got {_kind(value)}")
