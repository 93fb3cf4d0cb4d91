"""One item's path from judge to store, shared by every engine (local, Ray, batch API).

Whichever way an item travels (an asyncio worker here, a Ray actor, requests in a batch
file), it ends in the same steps: the judge's outcome (or an :class:`ErrorOutcome` for a
runtime error), its cost from the price table (:class:`Coster`), and one
:class:`~jurist.runs._store.StoredResult` row. :data:`current_item` names the item
being judged in the running task, for layers below the judge (the batch API collector
keys its requests by it).
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from jurist.errors import ConfigError, JuristRuntimeError
from jurist.judges._panel import Panel
from jurist.judges._protocol import ItemJudge, models_of
from jurist.runs._cost import Price, PriceTable, bill, reasoning_bill, uncached
from jurist.runs._store import StoredResult
from jurist.types import Usage

__all__ = [
    "Coster",
    "ErrorOutcome",
    "check_judge",
    "current_item",
    "judge_models",
    "judge_one",
    "stored_result",
]

current_item: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "jurist_current_item", default=None
)
"""The dataset index of the item the running task judges (``None`` outside the engine)."""


class ErrorOutcome(BaseModel):
    """The outcome recorded when a judge raised a runtime error instead of returning one."""

    model_config = ConfigDict(frozen=True)

    score: float | None = None
    error: str
    usage: Usage = Usage()


def judge_models(judge: Any) -> list[str]:
    """The ``provider:name`` of each model a judge calls (its ``models()``), once each;
    ``[]`` for a custom judge that names none.

    >>> import jurist
    >>> judge_models(jurist.Panel([jurist.LLMJudge("mock:a"), jurist.LLMJudge("mock:a")]))
    ['mock:a']
    """
    return list(dict.fromkeys(model.spec for model in models_of(judge)))


class Coster:
    """Prices one outcome by the judge's model(s).

    One price for every model the judge calls (its ``models()``): the outcome's total usage
    prices exactly. A model the table has no price for that is served on this machine (an
    OpenAI-compatible server on a loopback address: llama.cpp, vLLM, ``transformers
    serve``) costs nothing (:func:`local_price`); a price in the table wins. A judgment
    answered from the cache alone (no request sent) costs nothing, whatever the price.
    Otherwise a :class:`~jurist.Panel` or a :class:`~jurist.trust.CascadeJudge`, whose
    outcome keeps each judge's own outcome (``judgments``, in panel / tier order), is priced
    judge by judge; anything else is unpriced (``None``), never guessed.
    """

    def __init__(self, judge: Any, table: PriceTable) -> None:
        from jurist.trust._cascade import CascadeJudge  # here: `import jurist` stays light

        self.specs = judge_models(judge)
        prices = {table.price_for(m.spec) or local_price(m) for m in models_of(judge)}
        self.price = prices.pop() if len(prices) == 1 else None
        subs = judge.judges if isinstance(judge, Panel | CascadeJudge) else ()
        self.subs = [] if self.price is not None else [Coster(j, table) for j in subs]

    @property
    def priced(self) -> bool:
        return self.price is not None or (bool(self.subs) and all(s.priced for s in self.subs))

    def cost(self, outcome: Any, *, prompt_cache: bool = True) -> tuple[float | None, bool]:
        """The outcome's cost and whether it is an estimate; ``prompt_cache=False``: what
        it would have cost with no provider prompt caching (:func:`~jurist.runs._cost.uncached`)."""
        usage: Usage = outcome.usage if prompt_cache else uncached(outcome.usage)
        if usage.calls == 0 and usage.attempts == 0 and usage.cache_hits > 0:
            return 0.0, False  # answered from the cache alone: nothing was billed
        if usage.calls == 0 and usage.cache_hits == 0 and usage.total_tokens == 0:
            # no usage came back (an API error): a priced model billed nothing; an unpriced
            # one may have billed anything, so its cost stays unknown
            return (0.0, False) if self.priced else (None, False)
        if self.price is not None:
            return bill(usage, self.price)
        parts = getattr(outcome, "judgments", None)
        if not self.subs or parts is None or len(parts) != len(self.subs):
            return None, False
        total, estimated = 0.0, False
        for coster, part in zip(self.subs, parts, strict=True):
            cost, est = coster.cost(part, prompt_cache=prompt_cache)
            if cost is None:
                return None, False
            total, estimated = total + cost, estimated or est
        return total, estimated

    def reasoning_cost(self, outcome: Any) -> float | None:
        """The part of :meth:`cost` that paid for reasoning tokens (``None``: unknown)."""
        usage: Usage = outcome.usage
        if not usage.reasoning_tokens:
            return 0.0
        if self.price is not None:
            return reasoning_bill(usage, self.price)
        parts = getattr(outcome, "judgments", None)
        if not self.subs or parts is None or len(parts) != len(self.subs):
            return None
        costs = [c.reasoning_cost(p) for c, p in zip(self.subs, parts, strict=True)]
        return None if None in costs else sum(c for c in costs if c is not None)


_FREE = Price(prompt=0.0, completion=0.0, batch_prompt=0.0, batch_completion=0.0)


def local_price(model: Any) -> Price | None:
    """Nothing (a zero price) for a model served on this machine: its ``base_url`` is on a
    loopback address (``localhost``, ``127.x.x.x``, ``::1``); ``None`` otherwise.

    >>> import jurist
    >>> local_price(jurist.get_model("openai:x", base_url="http://127.0.0.1:8080/v1",
    ...                              api_key="k")).prompt
    0.0
    >>> local_price(jurist.get_model("openai:x", base_url="https://api.example.com/v1",
    ...                              api_key="k")) is None
    True
    """
    import ipaddress
    from urllib.parse import urlsplit

    identity = model.identity() if hasattr(model, "identity") else {}
    url = identity.get("base_url") if isinstance(identity, dict) else None
    if not isinstance(url, str) or not url:
        return None
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return _FREE
    try:
        return _FREE if ipaddress.ip_address(host).is_loopback else None
    except ValueError:
        return None


def check_judge(judge: Any, retries: int) -> ItemJudge:
    """``judge`` as a judge every engine can run, and ``retries`` as re-asks; a
    :class:`~jurist.errors.ConfigError` naming what is wrong otherwise."""
    if not isinstance(judge, ItemJudge):
        raise ConfigError(
            f"{type(judge).__name__} is not a judge: it needs name, required_fields, "
            "describe() and async judge(item)"
        )
    if retries < 0:
        raise ConfigError(f"retries must be >= 0, got {retries}")
    return judge


async def judge_one(judge: ItemJudge, values: Mapping[str, Any], idx: int, retries: int) -> Any:
    """The judge's outcome for one item; a runtime error becomes an :class:`ErrorOutcome`
    (with the attempts it made), never an exception that loses the batch."""
    token = current_item.set(idx)
    try:
        return await judge.judge(values, retries=retries)
    except JuristRuntimeError as e:
        sent = int(getattr(e, "attempts", 0) or 0)
        return ErrorOutcome(error=f"{e.category}: {e}", usage=Usage(attempts=sent))
    finally:
        current_item.reset(token)


def stored_result(
    idx: int, digest: str, row: Mapping[str, Any], outcome: Any, coster: Coster
) -> StoredResult:
    """The store row for one item's outcome (priced by ``coster``)."""
    cost, estimated = coster.cost(outcome)
    u = outcome.usage
    cost_uncached = (
        coster.cost(outcome, prompt_cache=False)[0]
        if u.cached_tokens or u.cache_write_tokens
        else cost
    )
    dumped = outcome.model_dump(mode="json", exclude={"usage"})
    if outcome.usage.reasoning_tokens:  # what the thinking cost, for the summary and report
        dumped["reasoning_cost"] = coster.reasoning_cost(outcome)
    return StoredResult(
        idx=idx,
        item_hash=digest,
        item=dict(row),
        score=outcome.score,
        error=outcome.error,
        outcome=dumped,
        usage=outcome.usage,
        cost=cost,
        cost_estimated=estimated,
        latency=float(dumped.get("latency") or 0.0),
        cost_uncached=cost_uncached,
    )
