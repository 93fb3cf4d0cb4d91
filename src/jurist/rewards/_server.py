"""The reward service behind ``jurist serve-reward``: request bodies in, reward records out.

:class:`RewardService` wraps one :class:`~jurist.rewards._reward_judge.RewardJudge` and is shared
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
>>> from jurist.rewards._reward_judge import RewardJudge
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
import time
from collections.abc import Mapping, Sequence
from typing import Any

from jurist._secrets import get_logger, scrub
from jurist.errors import DataError, JuristError
from jurist.rewards._group import GroupReward
from jurist.rewards._reward_judge import RewardJudge
from jurist.rewards._server_bodies import ABSENT as _ABSENT
from jurist.rewards._server_bodies import (
    BadBody,
    _count,
    _kind,
    _labels,
    _last_user,
    _strings,
    _value,
)
from jurist.rewards._server_metrics import ServerMetrics
from jurist.rewards._stream import DEFAULT_WINDOW, MicroBatcher

__all__ = ["ITEM_FIELDS", "BadBody", "RewardService", "derive_response"]

ITEM_FIELDS = ("response", "reference", "prompt")
"""The fields of an item of ``POST /v1/rewards``."""

_log = get_logger("jurist.rewards.server")
_Key = tuple[tuple[str, str], ...]
_EMPTY_LABEL = '(OpenRLHF sends "" when its label key is unset)'


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
        group: GroupReward | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.judge = judge
        self.concurrency = concurrency
        self.metrics = ServerMetrics()
        self.batcher = MicroBatcher(self._judge_one, concurrency=concurrency, window=batch_window)
        self.group = group
        self._pending: dict[_Key, asyncio.Future[dict[str, Any]]] = {}
        self._needs = set(judge.judge.required_fields) & set(ITEM_FIELDS)
        self._reads = self._needs | (set(judge.optional_fields) & set(ITEM_FIELDS))

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
        _count("items", len(raw))
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

    def group_items(self, body: Any) -> list[dict[str, Any]]:
        """The groups of a ``/v1/group_rewards`` body: ``{"groups": [{"prompt",
        "reference", "responses": [...]}]}``."""
        if self.group is None:
            raise BadBody("this server has no pairwise judge for group rewards")
        if not isinstance(body, Mapping) or not isinstance(body.get("groups"), list):
            raise BadBody(f"body: expected {{'groups': [...]}}, got {_kind(body)}")
        groups = []
        samples = 0
        for i, g in enumerate(body["groups"]):
            if not isinstance(g, Mapping):
                raise BadBody(f"groups[{i}]: expected an object, got {_kind(g)}")
            extra = sorted(set(g) - {"prompt", "reference", "responses"})
            if extra:
                raise BadBody(f"groups[{i}]: unknown field(s) {extra}")
            responses = g.get("responses")
            if not isinstance(responses, list) or not all(isinstance(r, str) for r in responses):
                raise BadBody(f"groups[{i}].responses: expected a list of strings")
            for field in ("prompt", "reference"):
                value = g.get(field)
                if value is not None and not isinstance(value, str):
                    raise BadBody(f"groups[{i}].{field}: expected a string or null")
            samples += len(responses)
            groups.append(
                {"responses": responses, "prompt": g.get("prompt"), "reference": g.get("reference")}
            )
        _count("groups", samples)
        return groups

    async def score_groups(self, groups: Sequence[Mapping[str, Any]]) -> list[list[dict[str, Any]]]:
        """Per-response records of each group (from :meth:`group_items`), judged together."""
        assert self.group is not None
        group = self.group
        self.metrics.count_items("/v1/group_rewards", sum(len(g["responses"]) for g in groups))
        return list(
            await asyncio.gather(
                *(group.score_group(g["responses"], g["prompt"], g["reference"]) for g in groups)
            )
        )

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
            try:  # rendered once: the coalescing key, then what is judged
                messages = self.judge.messages_of(response, item["reference"], item["prompt"])
                item["_messages"] = messages
                item["_key"] = tuple((m.role, m.content) for m in messages)
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
        return self.judge.kind_name

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
        if len(tasks) == 1:  # a streamed sample: no gathering future of its own
            done: list[dict[str, Any]] = [await asyncio.shield(next(iter(tasks.values())))]
        else:
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
            record = await self.judge.score_messages(item["_messages"])
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
