"""The reward registry: ``@reward(name=..., llm_config=...)``, lookup by name, listing.

A decorated function becomes a :class:`RewardFunction`: called like the function, it is
also registered under ``name`` (case-insensitive). With ``llm_config``, the function must
take an ``llm_backend`` parameter; the backend the config describes is built once, on the
first call that needs it (thread-safe), and passed whenever the caller gives none.
An ``async def`` reward is called synchronously too (through
:func:`jurist._sync.run_sync`); :meth:`RewardFunction.acall` awaits it.

>>> @reward(name="exact_match")
... def exact_match(prediction: str, golden_answer: str) -> dict[str, float]:
...     return {"reward": float(prediction.strip() == golden_answer.strip())}
>>> get_reward_from_name("Exact_Match")("Paris", "Paris")
{'reward': 1.0}
>>> "exact_match" in list_rewards()
True
>>> get_reward_from_name("nope")
Traceback (most recent call last):
...
jurist.rewards._registry.UnknownRewardError: unknown reward 'nope'; known rewards: ...
"""

from __future__ import annotations

import difflib
import functools
import inspect
import threading
from collections.abc import Callable, Mapping
from typing import Any

from jurist._sync import run_sync
from jurist.errors import ConfigError
from jurist.rewards._backend import RewardBackend, build_backend

__all__ = [
    "RewardFunction",
    "UnknownRewardError",
    "get_reward_from_name",
    "list_rewards",
    "register_reward",
    "reward",
]

_REGISTRY: dict[str, RewardFunction] = {}
_LOCK = threading.Lock()


class UnknownRewardError(ConfigError, KeyError):
    """No reward is registered under that name (a ``KeyError`` too, as the seed raised)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class RewardFunction:
    """A registered reward: the function, its name, and its lazily built judge backend."""

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str,
        llm_config: Mapping[str, Any] | None = None,
    ) -> None:
        self.fn = fn
        self.name = name
        self.llm_config: dict[str, Any] | None = dict(llm_config) if llm_config else None
        self._signature = inspect.signature(fn)
        self._takes_backend = "llm_backend" in self._signature.parameters
        if self.llm_config is not None and not self._takes_backend:
            raise ConfigError(
                f"reward {name!r} has an llm_config but {fn.__qualname__}() takes no "
                "llm_backend parameter to receive the backend"
            )
        self._backend: RewardBackend | None = None
        self._backend_lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"RewardFunction({self.name!r}, llm_config={self.llm_config!r})"

    def backend(self) -> RewardBackend | None:
        """The backend ``llm_config`` describes, built on first use; ``None`` without one."""
        if self.llm_config is None:
            return None
        if self._backend is None:
            with self._backend_lock:
                if self._backend is None:
                    self._backend = build_backend(self.llm_config)
        return self._backend

    def _call_args(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call's arguments with the built backend in ``llm_backend`` when none is given."""
        if not self._takes_backend or self.llm_config is None:
            return args, kwargs
        bound = self._signature.bind_partial(*args, **kwargs)
        if bound.arguments.get("llm_backend") is not None:
            return args, kwargs
        bound.arguments["llm_backend"] = self.backend()
        return bound.args, bound.kwargs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = self._call_args(args, kwargs)
        result = self.fn(*args, **kwargs)
        if inspect.isawaitable(result):
            return run_sync(_await(result))
        return result

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        """Call the reward from async code (awaits an ``async def`` reward)."""
        args, kwargs = self._call_args(args, kwargs)
        result = self.fn(*args, **kwargs)
        if inspect.isawaitable(result):
            return await result
        return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


def register_reward(fn: RewardFunction, *, overwrite: bool = False) -> RewardFunction:
    """Add ``fn`` to the registry under its (lower-cased) name.

    Registering another function under a taken name is an error unless ``overwrite``;
    redefining the same function (same module and name, as when a notebook cell is run
    again) replaces it.
    """
    key = fn.name.lower()
    with _LOCK:
        old = _REGISTRY.get(key)
        if old is not None and not overwrite and _origin(old.fn) != _origin(fn.fn):
            raise ConfigError(
                f"a reward named {fn.name!r} is already registered ({_origin(old.fn)}); pass "
                "overwrite=True to replace it"
            )
        _REGISTRY[key] = fn
    return fn


def reward(
    name: str | None = None,
    llm_config: Mapping[str, Any] | None = None,
    *,
    overwrite: bool = False,
) -> Callable[[Callable[..., Any]], RewardFunction]:
    """Register the decorated function as a reward named ``name`` (default: its own name).

    ``llm_config`` describes the judge backend to pass as ``llm_backend`` (see
    :mod:`jurist.rewards._backend`).
    """

    def deco(fn: Callable[..., Any]) -> RewardFunction:
        return register_reward(
            RewardFunction(fn, name or fn.__name__, llm_config), overwrite=overwrite
        )

    return deco


def get_reward_from_name(name: str) -> RewardFunction:
    """The reward registered as ``name`` (case-insensitive); unknown names list the known."""
    try:
        return _REGISTRY[name.lower()]
    except KeyError:
        known = sorted(_REGISTRY)
        hint = difflib.get_close_matches(name.lower(), known, n=1)
        extra = f" Did you mean {hint[0]!r}?" if hint else ""
        raise UnknownRewardError(
            f"unknown reward {name!r}; known rewards: {', '.join(known)}.{extra}"
        ) from None


def list_rewards() -> list[str]:
    """The names of every registered reward, sorted."""
    return sorted(_REGISTRY)


def _origin(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"
