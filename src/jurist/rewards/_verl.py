"""verl's batch and async reward shapes over one cached reward judge.

Targets verl 0.9.1 (read from its source):

- ``batch_compute_score`` is called the way ``verl.workers.reward_manager.batch.
  BatchRewardManager.verify`` calls ``compute_score``: ``compute_score(data_sources=,
  solution_strs=, ground_truths=, extra_infos=, **reward_kwargs)``, expecting one score or
  dict per sample. The whole batch is judged concurrently.
- ``compute_score_async`` is an ``async def`` with the per-sample signature: verl's reward
  loop (``verl.experimental.reward_loop.reward_manager.naive.NaiveRewardManager.
  run_single``) awaits a coroutine-function ``compute_score`` on its worker's event loop,
  every sample of a chunk at once (``RewardLoopWorker.compute_score_batch`` gathers them),
  instead of running a sync one in a thread pool.

Each sample's dict has ``score`` plus the extras verl collects per key: ``raw_score``
(``None`` when the judge gave no number: verl's validation metrics drop ``None`` before
averaging, where a NaN would turn the mean into NaN), and ``parse_failed``, ``clamped`` and
``failed`` as 0.0 / 1.0. Every dict has the same keys (verl's reward loop reads the keys of
the first sample from all of them). A failed judgment scores ``failure_value``.

The keyword arguments are :func:`~jurist.rewards._reward_judge.reward_judge_from_kwargs`'s
(verl's ``reward_kwargs``). Every call with the same arguments uses the same cached judge,
so the concurrent per-sample calls of one reward loop worker share one judge, one
concurrency bound and one connection pool.

**verl's reward servers.** When verl runs reward model servers of its own
(``reward.reward_model.enable=True``), its reward loop adds ``reward_router_address``
(``host:port`` of its router, which answers ``POST /v1/chat/completions``) and
``reward_model_tokenizer``. The router is then the judge's endpoint: ``openai:NAME`` at
``http://ADDRESS/v1``, where NAME is the name of ``model`` when given (``openai:NAME`` or
``NAME``), else the reward model tokenizer's ``name_or_path`` (the model path verl serves).
A ``base_url`` given as well is a :class:`~jurist.errors.ConfigError`: two endpoints for
one judge.

**Multi-turn rollouts.** With a trajectory template (``template: trajectory``) or checks
(``checks``, ``min_turns``, ``max_turns``) in ``reward_kwargs``, each sample is scored as
a rollout: ``extra_info``'s ``num_turns`` and ``messages`` feed the checks and the judge,
and the dicts carry ``checks_passed`` and ``num_turns`` too (see
:mod:`jurist.rewards._trajectory`).

>>> out = batch_compute_score(["gsm8k", "gsm8k"], ["42", "41"], ["42", "42"],
...                           model="mock:v", outputs=["Score: 1.0", "no idea"])
>>> out[0]
{'score': 1.0, 'raw_score': 1.0, 'parse_failed': 0.0, 'clamped': 0.0, 'failed': 0.0}
>>> out[1]
{'score': 0.0, 'raw_score': None, 'parse_failed': 1.0, 'clamped': 0.0, 'failed': 1.0}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from jurist.errors import ConfigError, DataError
from jurist.models import backend_info, server_spec
from jurist.rewards._heap import freeze_heap
from jurist.rewards._reward_judge import RewardJudge, reward_judge_from_kwargs
from jurist.rewards._trajectory import (
    TrajectoryGate,
    judge_rollout,
    score_rollouts_sync,
    wants_trajectory,
)

__all__ = ["batch_compute_score", "compute_score_async", "router_kwargs", "verl_record"]


class Column(Protocol):
    """A list or a numpy array: what verl passes (its non-tensor columns are arrays)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> Any: ...


def verl_record(record: Mapping[str, Any]) -> dict[str, float | None]:
    """A reward record as the dict verl takes: ``score`` plus numeric extras."""
    score = record["reward"]
    if score is None:
        raise ConfigError("verl needs a number for every sample: failure_value must not be None")
    raw = record.get("raw_score")
    return {
        "score": float(score),
        "raw_score": None if raw is None else float(raw),
        "parse_failed": float(bool(record.get("parse_failed"))),
        "clamped": float(bool(record.get("clamped"))),
        "failed": float(record.get("error") is not None),
    }


def _rollout_record(record: Mapping[str, Any]) -> dict[str, float | None]:
    turns = record.get("num_turns")
    return {
        **verl_record(record),
        "checks_passed": float(bool(record["checks_passed"])),
        "num_turns": None if turns is None else float(turns),
    }


def _rollout_call(solution: str, ground_truth: Any, extra_info: Any, where: str) -> dict[str, Any]:
    info = extra_info if isinstance(extra_info, Mapping) else {}
    return {
        "solution": solution,
        "reference": ground_truth,
        "question": _question(info),
        "messages": info.get("messages"),
        "num_turns": info.get("num_turns"),
        "where": where,
    }


_Resolved = tuple[TrajectoryGate | None, RewardJudge, bool]
_RESOLVED: dict[tuple[tuple[str, type, Any], ...], _Resolved] = {}


def _resolved(kwargs: dict[str, Any]) -> _Resolved:
    """The checks gate, the judge and whether samples are scored as rollouts, for verl's
    ``reward_kwargs``; resolved once per distinct keyword arguments (verl passes the same
    ones with every sample, and the reward loop calls once per sample), so a call costs one
    dict lookup, not the judge cache's key (a sorted tuple of every value's repr).

    ``gc_freeze=True`` freezes the process's heap out of the garbage collector's way once,
    after the judge is built (:mod:`jurist.rewards._heap`: in a verl worker a full
    collection walks about 510,000 objects)."""
    try:  # the type too: 1, 1.0 and True are equal keys but not the same setting
        key: tuple[tuple[str, type, Any], ...] | None = tuple(
            (k, type(v), v) for k, v in kwargs.items()
        )
        found = _RESOLVED.get(key)  # type: ignore[arg-type]
    except TypeError:  # an unhashable value (a list of checks, mock outputs): no memo
        key, found = None, None
    if found is not None:
        return found
    given = dict(kwargs)
    freeze = given.pop("gc_freeze", False)
    if not isinstance(freeze, bool):
        raise ConfigError(f"reward kwargs: gc_freeze must be true or false, got {freeze!r}")
    gate = TrajectoryGate.pop_from(given)
    judge = _judge(given)
    found = (gate, judge, gate is not None or wants_trajectory(judge))
    if freeze:
        freeze_heap(once=True)
    if key is not None:
        _RESOLVED[key] = found
    return found


def _judge(kwargs: dict[str, Any]) -> RewardJudge:
    address = kwargs.pop("reward_router_address", None)
    tokenizer = kwargs.pop("reward_model_tokenizer", None)
    if address is not None:
        kwargs = router_kwargs(kwargs, str(address), tokenizer)
    judge = reward_judge_from_kwargs(**kwargs)
    if judge.failure_value is None:
        raise ConfigError("verl needs a number for every sample: failure_value must not be None")
    return judge


def router_kwargs(kwargs: Mapping[str, Any], address: str, tokenizer: Any) -> dict[str, Any]:
    """``kwargs`` with verl's reward model router as the judge's endpoint (module doc).

    >>> router_kwargs({"model": "openai:judge"}, "10.0.0.5:30000", None)
    {'model': 'openai:judge', 'base_url': 'http://10.0.0.5:30000/v1'}
    """
    if kwargs.get("base_url") is not None:
        raise ConfigError(
            f"verl passed reward_router_address={address!r} (its own reward model servers, "
            f"reward.reward_model.enable=True) and reward_kwargs has base_url="
            f"{kwargs['base_url']!r}: one judge takes one endpoint; drop one of them"
        )
    given = kwargs.get("model")
    if isinstance(given, str) and given:
        provider, sep, name = given.partition(":")
        if sep and not backend_info(provider).any_server:
            raise ConfigError(
                f"verl's reward model router speaks the OpenAI API; model={given!r} names "
                f"the provider {provider!r}: give {server_spec('NAME')!r} or just NAME"
            )
        name = name if sep else given
    else:
        name = str(getattr(tokenizer, "name_or_path", "") or "")
        if not name:
            raise ConfigError(
                "verl passed reward_router_address but no model name: set "
                "reward_kwargs.model to the name its reward servers serve"
            )
    url = address if "://" in address else f"http://{address}"
    return {**kwargs, "model": server_spec(name), "base_url": f"{url.rstrip('/')}/v1"}


def _question(extra_info: Any) -> str | None:
    """The question verl's data preprocessing usually keeps in ``extra_info``."""
    if isinstance(extra_info, Mapping):
        for key in ("question", "prompt"):
            value = extra_info.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _reference(ground_truth: Any, where: str) -> str:
    if ground_truth is None:
        raise DataError(f"{where}: ground_truth is None; the judge needs a reference answer")
    return str(ground_truth)


def batch_compute_score(
    data_sources: Column,
    solution_strs: Sequence[str],
    ground_truths: Column,
    extra_infos: Column | None = None,
    **kwargs: Any,
) -> list[dict[str, float | None]]:
    """verl's batch ``compute_score``: the whole batch judged concurrently (module doc)."""
    gate, judge, rollouts = _resolved(kwargs)
    n = len(solution_strs)
    if len(ground_truths) != n or len(data_sources) != n:
        raise DataError(
            f"batch_compute_score: {n} solution_strs, {len(ground_truths)} ground_truths, "
            f"{len(data_sources)} data_sources; they must match"
        )
    if extra_infos is not None and len(extra_infos) != n:
        raise DataError(
            f"batch_compute_score: {len(extra_infos)} extra_infos for {n} solution_strs"
        )
    if rollouts:
        calls = [
            _rollout_call(
                solution_strs[i],
                ground_truths[i],
                None if extra_infos is None else extra_infos[i],
                f"batch_compute_score: sample {i}",
            )
            for i in range(n)
        ]
        return [_rollout_record(r) for r in score_rollouts_sync(judge, gate, calls)]
    refs = [_reference(ground_truths[i], f"batch_compute_score: sample {i}") for i in range(n)]
    prompts = None if extra_infos is None else [_question(extra_infos[i]) for i in range(n)]
    records = judge.score_batch_sync(list(solution_strs), refs, prompts)
    return [verl_record(r) for r in records]


async def compute_score_async(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any = None,
    **kwargs: Any,
) -> dict[str, float | None]:
    """verl's per-sample ``compute_score`` as a coroutine function, for its reward loop."""
    gate, judge, rollouts = _resolved(kwargs)
    if rollouts:
        where = f"compute_score_async ({data_source})"
        call = _rollout_call(solution_str, ground_truth, extra_info, where)
        return _rollout_record(await judge_rollout(judge, gate, **call))
    reference = _reference(ground_truth, f"compute_score_async ({data_source})")
    record = await judge.score_one(solution_str, reference, _question(extra_info))
    return verl_record(record)
