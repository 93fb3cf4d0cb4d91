"""What calls cost: a price table per model that the user can override, and billing rules.

Prices are US dollars per million tokens: ``prompt`` for uncached input, ``cached`` for
input the provider served from its prompt cache (``Usage.cached_tokens``, part of
``prompt_tokens``), ``cache_write`` for input it wrote to its prompt cache
(``Usage.cache_write_tokens``, part of ``prompt_tokens`` too: Anthropic bills them at 1.25x
the input price), ``completion`` for output. :func:`uncached` gives the usage as it would
have been billed with no prompt caching, so ``bill(usage) - bill(uncached(usage))`` is
what caching saved (negative while it only writes). Local backends (``mock``, ``hf``, ``vllm``)
cost nothing. A model with no price is *unknown*: its cost is ``None``, never a made-up 0.

A thinking model's reasoning tokens (``Usage.reasoning_tokens``, part of
``completion_tokens``) are billed as output, unless the price names a ``reasoning`` rate
(live calls). :func:`reasoning_bill` is their share of a bill.

Answers from jurist's own cache are not billed twice: a judgment whose calls were all
cache hits (``calls == 0``) costs nothing. When one judgment mixes hits and real calls
(a re-ask after a cached unreadable verdict) its tokens are billed in proportion to the
real calls, and the result is marked as an estimate.

Calls a provider's batch API served (``Usage.batch_calls``) are billed at the batch rates
(``batch_prompt``, ``batch_cached``, ``batch_completion``; the built-in table carries
half the live rates, as OpenAI bills batches). A price without batch rates leaves the cost
of batch calls unknown (``None``). A judgment whose calls were partly batch, partly live
(re-asks sent live) is billed in proportion and marked as an estimate.

>>> table = PriceTable.default().with_prices({"openai:mine": {"prompt": 1.0, "completion": 2.0}})
>>> price = table.price_for("openai:mine")
>>> price.completion
2.0
>>> bill(Usage(prompt_tokens=1_000_000, completion_tokens=500_000, calls=1), price)
(2.0, False)
>>> bill(Usage(prompt_tokens=10, completion_tokens=5, calls=0, cache_hits=1), price)
(0.0, False)
>>> table.price_for("openai:unheard-of") is None
True
>>> batch = table.price_for("openai:gpt-4o-mini")
>>> bill(Usage(prompt_tokens=1_000_000, calls=1, batch_calls=1), batch)
(0.075, False)
>>> bill(Usage(prompt_tokens=1_000_000, calls=1, batch_calls=1), price)
(None, False)
>>> sonnet = table.price_for("anthropic:claude-sonnet-4-5")
>>> [round(bill(u, sonnet)[0], 4) for u in (
...     Usage(prompt_tokens=1_000_000, cached_tokens=900_000, calls=1),
...     Usage(prompt_tokens=1_000_000, cache_write_tokens=900_000, calls=1),
...     uncached(Usage(prompt_tokens=1_000_000, cached_tokens=900_000, calls=1)))]
[0.57, 3.675, 3.0]
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from jurist.errors import ConfigError
from jurist.types import Usage

__all__ = ["Price", "PriceTable", "bill", "cache_text", "reasoning_bill", "uncached"]


class Price(BaseModel):
    """Dollars per million tokens; ``cached`` and ``cache_write`` default to the prompt
    price."""

    model_config = ConfigDict(frozen=True)

    prompt: float = Field(ge=0)
    completion: float = Field(ge=0)
    cached: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    batch_prompt: float | None = Field(default=None, ge=0)
    batch_completion: float | None = Field(default=None, ge=0)
    batch_cached: float | None = Field(default=None, ge=0)
    batch_cache_write: float | None = Field(default=None, ge=0)
    reasoning: float | None = Field(default=None, ge=0)

    @property
    def cached_rate(self) -> float:
        return self.prompt if self.cached is None else self.cached

    @property
    def cache_write_rate(self) -> float:
        return self.prompt if self.cache_write is None else self.cache_write

    @property
    def batch_rates(self) -> tuple[float, float, float] | None:
        """``(prompt, cached, completion)`` for batch calls; ``None`` when not priced."""
        if self.batch_prompt is None or self.batch_completion is None:
            return None
        cached = self.batch_prompt if self.batch_cached is None else self.batch_cached
        return self.batch_prompt, cached, self.batch_completion


def _live_prices() -> dict[str, dict[str, float]]:
    """Published list prices (USD per 1M tokens) of widely used judge models, as each
    backend declares them (:attr:`~jurist.models.BackendInfo.list_prices`; override
    freely), and nothing for every model of a backend that runs in this process."""
    from jurist.models._backends import backends

    live: dict[str, dict[str, float]] = {}
    for backend in backends():
        for name, rates in backend.list_prices.items():
            live[f"{backend.provider}:{name}"] = dict(rates)
    for backend in backends():
        if backend.runs_here:
            live[f"{backend.provider}:*"] = {"prompt": 0.0, "completion": 0.0}
    return live


# Batch rates are added here: half of each live rate.
_LIVE = _live_prices()
_DEFAULTS: dict[str, dict[str, float]] = {
    spec: {**rates, **{f"batch_{k}": v / 2 for k, v in rates.items()}}
    for spec, rates in _LIVE.items()
}


class PriceTable(BaseModel):
    """Prices by model spec; keys may be exact (``openai:gpt-4o``) or globs (``hf:*``).

    An exact key wins over a glob; among globs the longest pattern wins.
    """

    model_config = ConfigDict(frozen=True)

    prices: dict[str, Price] = Field(default_factory=dict)

    @classmethod
    def default(cls) -> PriceTable:
        return cls(prices={k: Price(**v) for k, v in _DEFAULTS.items()})

    def with_prices(self, overrides: Mapping[str, Price | Mapping[str, float]]) -> PriceTable:
        """A copy with ``overrides`` added or replacing entries."""
        merged = dict(self.prices)
        for spec, price in overrides.items():
            try:
                merged[spec] = price if isinstance(price, Price) else Price(**price)
            except (TypeError, ValueError) as e:
                raise ConfigError(f"price for {spec!r}: {e}") from None
        return PriceTable(prices=merged)

    def price_for(self, spec: str) -> Price | None:
        """The price of model ``spec`` (``provider:name``), or ``None`` when unknown."""
        if spec in self.prices:
            return self.prices[spec]
        matches = [p for p in self.prices if fnmatch.fnmatchcase(spec, p)]
        if not matches:
            return None
        return self.prices[max(matches, key=len)]


def _at(
    usage: Usage,
    prompt: float,
    cached_rate: float,
    completion: float,
    write_rate: float,
    reasoning: float | None = None,
) -> float:
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    written = min(usage.cache_write_tokens, usage.prompt_tokens - cached)
    thought = min(usage.reasoning_tokens, usage.completion_tokens) if reasoning is not None else 0
    return (
        (usage.prompt_tokens - cached - written) * prompt
        + cached * cached_rate
        + written * write_rate
        + (usage.completion_tokens - thought) * completion
        + thought * (reasoning or 0.0)
    ) / 1_000_000


def uncached(usage: Usage) -> Usage:
    """``usage`` with no prompt-cache reads or writes: what the same calls would have been
    billed for without prompt caching (every prompt token at the input price)."""
    if not usage.cached_tokens and not usage.cache_write_tokens:
        return usage
    return usage.model_copy(update={"cached_tokens": 0, "cache_write_tokens": 0})


def bill(usage: Usage, price: Price) -> tuple[float | None, bool]:
    """The cost of ``usage`` at ``price``, and whether it is an estimate (cache hits, or
    batch and live calls, mixed in); ``None`` for batch calls the price has no rate for."""
    if usage.calls == 0 and usage.cache_hits > 0:
        return 0.0, False
    live = _at(
        usage,
        price.prompt,
        price.cached_rate,
        price.completion,
        price.cache_write_rate,
        price.reasoning,
    )
    estimated = False
    full = live
    batch_calls = min(usage.batch_calls, usage.calls)
    if batch_calls:
        rates = price.batch_rates
        if rates is None:
            return None, False
        write = price.batch_cache_write if price.batch_cache_write is not None else rates[0]
        batched = _at(usage, *rates, write)
        if batch_calls == usage.calls:
            full = batched
        else:  # tokens are not split by call: share them by calls
            share = batch_calls / usage.calls
            full, estimated = batched * share + live * (1 - share), True
    if usage.cache_hits and usage.calls:
        return full * usage.calls / (usage.calls + usage.cache_hits), True
    return full, estimated


def reasoning_bill(usage: Usage, price: Price) -> float | None:
    """The part of ``bill(usage, price)`` that paid for reasoning tokens (``None`` where
    the bill is unknown).

    >>> price = Price(prompt=1.0, completion=10.0)
    >>> reasoning_bill(Usage(prompt_tokens=1000, completion_tokens=3000, reasoning_tokens=2000,
    ...                      calls=1), price) == 2000 * 10.0 / 1_000_000
    True
    """
    if not usage.reasoning_tokens:
        return 0.0
    full, _ = bill(usage, price)
    if full is None:
        return None
    thought = min(usage.reasoning_tokens, usage.completion_tokens)
    bare = usage.model_copy(
        update={"completion_tokens": usage.completion_tokens - thought, "reasoning_tokens": 0}
    )
    rest, _ = bill(bare, price)
    return None if rest is None else full - rest


def resolve_prices(prices: PriceTable | Mapping[str, Any] | None) -> PriceTable:
    """The default table, overridden by ``prices`` (a table or a spec -> price map)."""
    if isinstance(prices, PriceTable):
        return prices
    table = PriceTable.default()
    return table.with_prices(prices) if prices else table


def cache_text(summary: dict[str, Any]) -> str | None:
    """What the provider's prompt cache did: tokens read and written, and what it saved
    against the same calls with no caching; ``None`` when it did nothing.

    >>> cache_text({"cached_tokens": 900, "cache_write_tokens": 100, "prompt_tokens": 1200,
    ...             "cost": 0.25, "cost_without_prompt_cache": 1.0, "prompt_cache_saved": 0.75})
    '900 prompt tokens read, 100 written (of 1200); saved $0.7500 (75%; $1.0000 without)'
    >>> cache_text({"cached_tokens": 0, "cache_write_tokens": 0}) is None
    True
    """
    read = int(summary.get("cached_tokens") or 0)
    written = int(summary.get("cache_write_tokens") or 0)
    if not read and not written:
        return None
    text = f"{read} prompt tokens read, {written} written (of {summary.get('prompt_tokens', 0)})"
    saved, without = summary.get("prompt_cache_saved"), summary.get("cost_without_prompt_cache")
    if saved is None or without is None:
        return text + "; saving unknown (no price)"
    share = f"{saved / without:.0%}; " if without else ""
    return f"{text}; saved ${saved:.4f} ({share}${without:.4f} without)"
