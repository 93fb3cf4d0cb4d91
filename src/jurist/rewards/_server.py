"""The reward service behind ``jurist serve-reward``: request bodies in, reward records out.

:class:`RewardService` wraps one :class:`~jurist.rewards._batch.RewardJudge` and is shared
by every request of the server (see :mod:`jurist.rewards._server_app` for the HTTP side):

- **one bound, micro-batched**: at most ``concurrency`` judgments run at once, whichever
  requests their items came in; the items of requests that arrive within ``batch_window``
  seconds of each other are judged as one batch (:mod:`jurist.rewards._stream`), so a
  stream of single-sample requests (OpenRLHF, slime) is judged like one batched request;
- **coalescing**: an item whose judge input (the rendered judge messages) equals one
  already being judged waits for that judgment instead of making another;
- **failures**: a judgment that fails, or takes longer than the judge's ``timeout``
  (judging time, not time queued for the bound), gets the judge's failure value with
  ``error`` saying why (``"parse: ..."``, ``"api: ..."``, ``"timeout: ..."``); never a
  made-up score.

Bodies are checked before anything is judged, in two tiers:

- a body that is not the documented shape (not an object, a missing or non-list field,
  lists of different lengths, a query, prompt or response that is not a string, an
  unknown field) raises :class:`BadBody`, which names the field and index (HTTP 400);
- a sample the judge cannot take (a label the template needs that is empty, null or NaN,
  a label that is neither a string nor a finite number, an item the template cannot
  render) is *refused*: it is not judged, gets the failure value with ``refused`` set and
  ``error`` ``"usage: <field[index]> ..."``, and the other samples are judged as usual.
  Labels come from the trainer's dataset (OpenRLHF sends ``""`` when its label key is
  unset), so one bad label never costs a batch. An empty label is no label: a template
  that takes no reference, or takes one optionally, judges the sample without it. A NaN
  label is a missing value, as in ``jurist judge`` (the string ``"nan"`` is text there
  and here).

>>> import asyncio
>>> from jurist.judges import LLMJudge
>>> from jurist.rewards._batch import RewardJudge
>>> service = RewardService(RewardJudge(LLMJudge("mock:j", outputs=["Score: 0.8"],
...                                              template="reward")), concurrency=4)
>>> items = service.openrlhf_items({"query": ["Q: 2+2? A: 4", "Q: 1+1? A: 2"],
...                                 "prompts": ["Q: 2+2? A:", "Q: 1+1? A:"],
...                                 "labels": ["4", ""]})
>>> items[0]["response"]
' 4'
>>> first, second = asyncio.run(service.score(items, "/get_reward"))
>>> first["reward"], second["reward"], second["refused"]
(0.8, 0.0, True)
>>> print(second["error"])  # doctest: +NORMALIZE_WHITESPACE
usage: labels[1] is an empty string; the 'reward' template needs a reference
(OpenRLHF sends "" when its label key is unset)
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from jurist._secrets import get_logger, scrub
from jurist.errors import DataError, JuristError
from jurist.rewards._batch import RewardJudge
from jurist.rewards._server_metrics import ServerMetrics
from jurist.rewards._stream import DEFAULT_WINDOW, MicroBatcher

__all__ = ["ITEM_FIELDS", "BadBody", "RewardService", "derive_response"]

ITEM_FIELDS = ("response", "reference", "prompt")
"""The fields of an item of ``POST /v1/rewards``."""

_log = get_logger("jurist.rewards.server")
_Key = tuple[tuple[str, str], ...]
_ABSENT = object()
_EMPTY_LABEL = '(OpenRLHF sends "" when its label key is unset)'


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

    def __init__(
        self,
        judge: RewardJudge,
        *,
        concurrency: int = 256,
        batch_window: float = DEFAULT_WINDOW,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.judge = judge
        self.concurrency = concurrency
        self.metrics = ServerMetrics()
        self.batcher = MicroBatcher(self._judge_one, concurrency=concurrency, window=batch_window)
        self._pending: dict[_Key, asyncio.Future[dict[str, Any]]] = {}
        template = judge.judge.template
        self._needs = set(judge.judge.required_fields) & set(ITEM_FIELDS)
        self._reads = self._needs | (set(template.optional_fields) & set(ITEM_FIELDS))

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
        items: list[dict[str, Any]] = []
        for i, query in enumerate(queries):
            prompt = prompts[i] if prompts is not None else _ABSENT
            assert query is not None  # _strings(required=True) allows no null
            given = {"prompt": prompt, "reference": labels[i] if labels is not None else _ABSENT}
            where = {
                "prompt": f"prompts[{i}]" if prompts is not None else "prompts",
                "reference": f"labels[{i}]" if labels is not None else "labels",
                "response": f"query[{i}]",
            }
            text = prompt if isinstance(prompt, str) else None
            items.append(self._item(derive_response(query, text), given, where))
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
            prompt = entry.get("prompt", _ABSENT)
            if prompt is not _ABSENT and prompt is not None and not isinstance(prompt, str):
                raise BadBody(f"items[{i}].prompt: expected a string or null, got {_kind(prompt)}")
            given = {"prompt": prompt, "reference": entry.get("reference", _ABSENT)}
            where = {f: f"items[{i}].{f}" for f in ITEM_FIELDS}
            items.append(self._item(response, given, where))
        return items

    def slime_item(self, body: Any) -> dict[str, Any]:
        """The item of a slime ``remote_rm`` body: ``{"prompt", "response", "label"}``.

        ``prompt`` is a string, null, or chat messages (``[{"role", "content"}, ...]``, as
        slime keeps a prompt it did not template), whose last user message is the question.
        """
        if not isinstance(body, Mapping):
            raise BadBody(f"body: expected a JSON object with a 'response', got {_kind(body)}")
        unknown = sorted(set(body) - {"prompt", "response", "label"})
        if unknown:
            raise BadBody(
                f"body: unknown field(s) {unknown}; the body is "
                "{'prompt': ..., 'response': ..., 'label': ...}"
            )
        response = body.get("response")
        if not isinstance(response, str):
            raise BadBody(f"response: expected a string, got {_kind(response)}")
        prompt = body.get("prompt", _ABSENT)
        if isinstance(prompt, list):
            prompt = _last_user(prompt)
        elif prompt is not _ABSENT and prompt is not None and not isinstance(prompt, str):
            raise BadBody(f"prompt: expected a string, chat messages or null, got {_kind(prompt)}")
        given = {"prompt": prompt, "reference": body.get("label", _ABSENT)}
        where = {"prompt": "prompt", "reference": "label", "response": "response"}
        return self._item(response, given, where)

    def _item(
        self, response: str, given: Mapping[str, Any], where: Mapping[str, str]
    ) -> dict[str, Any]:
        """An item to judge, or to refuse (``_refused`` says why; see the module doc)."""
        item: dict[str, Any] = {"response": response, "_refused": None}
        problems: list[str] = []
        for field in ("prompt", "reference"):
            text, why, invalid = _value(given[field])
            item[field] = text
            if invalid and field in self._reads:
                problems.append(f"{where[field]} {why}")
            elif text is None and field in self._needs:
                hint = ""
                if why == "is an empty string" and where[field].startswith("labels"):
                    hint = f" {_EMPTY_LABEL}"
                problems.append(
                    f"{where[field]} {why}; the {self._template!r} template needs a {field}{hint}"
                )
        if not problems:
            try:
                item["_key"] = self._key(item)
            except JuristError as e:
                problems.append(f"{where['response']}: {e}")
        if problems:
            item["_refused"] = scrub(f"{DataError.category}: {'; '.join(problems)}")
        return item

    @property
    def in_flight(self) -> int:
        """Judgments running now."""
        return self.batcher.in_flight

    @property
    def _template(self) -> str:
        return self.judge.judge.template.name

    def _key(self, item: Mapping[str, Any]) -> _Key:
        judged = {k: item[k] for k in ITEM_FIELDS if item[k] is not None}
        return tuple((m.role, m.content) for m in self.judge.judge.messages(judged))

    # -- judging ------------------------------------------------------------------------

    async def score(self, items: Sequence[dict[str, Any]], endpoint: str) -> list[dict[str, Any]]:
        """One reward record per item (from :meth:`openrlhf_items` / :meth:`jurist_items`).

        Each record has ``refused``: True for an item refused unjudged (its ``error`` says
        why), else False.
        """
        self.metrics.count_items(endpoint, len(items))
        refused = [item["_refused"] for item in items if item["_refused"] is not None]
        if refused:
            self.metrics.count_refused(endpoint, len(refused))
            _log.warning(
                "%s: %d of %d sample(s) refused unjudged, first: %s",
                endpoint,
                len(refused),
                len(items),
                refused[0],
            )
        tasks = {i: self._task(item) for i, item in enumerate(items) if item["_refused"] is None}
        # shield: a request that goes away does not cancel judgments others wait for
        done = await asyncio.gather(*(asyncio.shield(t) for t in tasks.values()))
        judged = dict(zip(tasks, done, strict=True))
        return [
            {**judged[i], "refused": False} if i in judged else self._refusal(item["_refused"])
            for i, item in enumerate(items)
        ]

    def _refusal(self, why: str) -> dict[str, Any]:
        return {
            "reward": self.judge.failure_value,
            "raw_score": None,
            "judge_output": None,
            "clamped": False,
            "parse_failed": False,
            "error": why,
            "refused": True,
        }

    def _task(self, item: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        key: _Key = item["_key"]
        task = self._pending.get(key)
        if task is not None:
            self.metrics.coalesced += 1
            return task
        task = self.batcher.submit(item)
        self._pending[key] = task

        def forget(done: asyncio.Future[dict[str, Any]]) -> None:
            if self._pending.get(key) is done:
                del self._pending[key]

        task.add_done_callback(forget)
        return task

    async def _judge_one(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """One judgment (the batcher holds the bound); every failure becomes a record."""
        start = time.perf_counter()
        try:
            record = await self.judge.score_one(item["response"], item["reference"], item["prompt"])
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
        self.metrics.count_judgment(time.perf_counter() - start, record.get("error"))
        return record

    async def aclose(self) -> None:
        """Finish the batches dispatched, then close the judge model's connections."""
        await self.batcher.aclose()
        await self.judge.judge.model.aclose()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    names = {str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    names.update({list: "a list", dict: "an object"})
    return names.get(type(value), f"a {type(value).__name__}")


def _last_user(messages: list[Any]) -> str | None:
    """The content of the last ``user`` message of chat messages (a slime prompt)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str | None):
            raise BadBody(f"prompt[{i}]: expected a {{'role', 'content'}} message, got {_kind(m)}")
        if m.get("role") == "user":
            content = m.get("content")
            return content if isinstance(content, str) else None
    return None


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


def _labels(body: Mapping[str, Any], field: str, n: int) -> list[Any] | None:
    """The labels list as sent; each label's value is checked per sample (see :func:`_value`)."""
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, list):
        raise BadBody(f"{field}: expected a list, got {_kind(value)}")
    if len(value) != n:
        raise BadBody(f"{field}: has {len(value)} items but query has {n}")
    return list(value)


def _value(value: Any) -> tuple[str | None, str, bool]:
    """A prompt or reference as the judge takes it: ``(text, why, invalid)``.

    ``text`` is None when there is no usable value; ``why`` says what was found then
    (``"is missing"``, ``"is null"``, ``"is an empty string"``, ``"is NaN (a missing
    value)"``, ...), and ``invalid`` is True when a value was given that no template can
    take (a list, an object, a boolean, an infinite number). A number is its text.

    >>> _value(42), _value("")
    (('42', '', False), (None, 'is an empty string', False))
    >>> _value(float("nan"))
    (None, 'is NaN (a missing value)', False)
    >>> _value([1])
    (None, 'is a list, not a string or a number', True)
    """
    if value is _ABSENT:
        return None, "is missing", False
    if value is None:
        return None, "is null", False
    if isinstance(value, str):
        return (value, "", False) if value else (None, "is an empty string", False)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and math.isnan(value):
            return None, "is NaN (a missing value)", False
        if isinstance(value, float) and math.isinf(value):
            return None, f"is {value:g}, not a finite number", True
        return str(value), "", False
    return None, f"is {_kind(value)}, not a string or a number", True
