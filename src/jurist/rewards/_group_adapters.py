"""Groupwise rewards for the trainers: TRL's batch call, verl's reward loop (by group).

- :func:`group_reward_from_kwargs` builds the cached :class:`~jurist.rewards._group.
  GroupReward` that keyword arguments describe: the reward judge's keywords
  (:func:`~jurist.rewards.reward_judge_from_kwargs`; ``template`` is a pairwise template,
  ``mt_bench_pair`` by default) plus ``max_pairs`` and ``seed``. Its model and limits are
  the cached reward judge's, so a group reward and a pointwise reward on the same options
  share one connection pool and one bound.
- :func:`trl_group_reward_func` / :func:`trl_group_reward_func_async`: TRL passes the whole
  generation batch (G completions per prompt) to a reward; completions with the same prompt
  are one group.
- :func:`group_compute_score_async`: verl's reward loop calls ``compute_score`` once per
  sample; samples wait for their group (same ``extra_info["uid"]``, else
  ``extra_info["index"]``) until ``group_size`` have arrived or ``group_wait`` seconds have
  passed since the first, then the group is judged at once. A group judged short is
  flagged (``group_incomplete``).

>>> fn = trl_group_reward_func(model="mock:g", outputs=["[[A]]", "[[B]]"], cycle=True)
>>> fn(prompts=["2+2?"] * 2, completions=["4", "5"])  # A first: "4" wins both orders
[1.0, 0.0]
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from jurist.errors import ConfigError, DataError
from jurist.judges._llm_judge import LLMJudge
from jurist.judges._pairwise import PairwiseJudge
from jurist.rewards._group import GroupReward
from jurist.rewards._reward_judge import reward_judge_from_kwargs, run_in_background
from jurist.rewards._trl import _text
from jurist.rewards._verl import router_kwargs

__all__ = [
    "AsyncGroupTRLReward",
    "GroupTRLReward",
    "group_compute_score_async",
    "group_reward_from_kwargs",
    "trl_group_reward_func",
    "trl_group_reward_func_async",
]

_CACHE: dict[tuple[tuple[str, str], ...], GroupReward] = {}
_LOCK = threading.Lock()


def group_reward_from_kwargs(**kwargs: Any) -> GroupReward:
    """The cached :class:`GroupReward` that ``kwargs`` describe (module doc)."""
    key = tuple(sorted((k, repr(v)) for k, v in kwargs.items()))
    with _LOCK:
        cached = _CACHE.get(key)
    if cached is not None:
        return cached
    options = dict(kwargs)
    max_pairs = options.pop("max_pairs", None)
    seed = options.pop("seed", 0)
    if options.get("timeout") is not None:
        raise ConfigError("group rewards take no timeout: bound the model's calls instead")
    if "judge" not in options:
        options.setdefault("template", "mt_bench_pair")
    rj = reward_judge_from_kwargs(**options)
    llm = rj.judge
    if not isinstance(llm, LLMJudge):  # a scalar reward model ranks a group by its rewards
        raise ConfigError(
            f"group rewards compare pairs with a judge that writes verdicts; {llm.model.spec} "
            "is a scalar reward model: use its rewards as they are (reward_judge_from_kwargs)"
        )
    pairwise = PairwiseJudge(
        llm.model,
        template=llm.template,
        temperature=llm.temperature,
        max_tokens=llm.max_tokens,
        concurrency=llm.concurrency,
    )
    built = GroupReward(
        pairwise,
        max_pairs=max_pairs,
        seed=int(seed),
        failure_value=rj.failure_value,
        retries=rj.retries,
    )
    with _LOCK:
        return _CACHE.setdefault(key, built)


def _groups(prompts: Sequence[str]) -> dict[str, list[int]]:
    """Indices of equal prompts, in first-seen order."""
    out: dict[str, list[int]] = {}
    for i, p in enumerate(prompts):
        out.setdefault(p, []).append(i)
    return out


class GroupTRLReward:
    """A TRL reward that ranks the completions of each prompt against each other."""

    def __init__(self, answer_column: str | None = None, name: str | None = None, **kwargs: Any):
        self.answer_column = answer_column
        self.kwargs = kwargs
        self.group = group_reward_from_kwargs(**kwargs)
        self.__name__ = name or "jurist_group_reward"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.group!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Travels as its options (TRL's spawned workers): the copy builds its own judge."""
        return {"answer_column": self.answer_column, "name": self.__name__, "kwargs": self.kwargs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["answer_column"], state["name"], **state["kwargs"])  # type: ignore[misc]

    async def _score(self, completions: Sequence[Any], columns: dict[str, Any]) -> list[Any]:
        prompts = columns.get("prompts")
        if prompts is None or len(prompts) != len(completions):
            got = "none" if prompts is None else len(prompts)
            raise DataError(
                f"{self.__name__}: a group reward groups completions by prompt; it needs "
                f"one prompt per completion ({len(completions)}), got {got}"
            )
        texts = [_text(c, f"completions[{i}]") for i, c in enumerate(completions)]
        questions = [_text(p, f"prompts[{i}]") for i, p in enumerate(prompts)]
        refs: list[Any] = [None] * len(texts)
        if self.answer_column is not None:
            if self.answer_column not in columns:
                raise DataError(f"{self.__name__}: no dataset column {self.answer_column!r}")
            refs = list(columns[self.answer_column])
        records: list[Any] = [None] * len(texts)
        groups = list(_groups(questions).values())
        done = await asyncio.gather(
            *(
                self.group.score_group([texts[i] for i in g], questions[g[0]], refs[g[0]])
                for g in groups
            )
        )
        for g, recs in zip(groups, done, strict=True):
            for i, r in zip(g, recs, strict=True):
                records[i] = r
        log_metric = columns.get("log_metric")
        if callable(log_metric):
            n = max(1, len(records))
            log_metric(f"{self.__name__}/failed", sum(bool(r["error"]) for r in records) / n)
            pairs = sum(r["pairs"] for r in records) or 1
            log_metric(
                f"{self.__name__}/inconsistent",
                sum(r["inconsistent_pairs"] for r in records) / pairs,
            )
        return [r["reward"] for r in records]

    def __call__(self, completions: Sequence[Any], **columns: Any) -> list[float | None]:
        return run_in_background(self._score(completions, columns))


class AsyncGroupTRLReward(GroupTRLReward):
    """The same, awaited on TRL's own event loop (an ``async`` ``__call__``)."""

    async def __call__(  # type: ignore[override]
        self, completions: Sequence[Any], **columns: Any
    ) -> list[float | None]:
        return await self._score(completions, columns)


def trl_group_reward_func(
    answer_column: str | None = None, name: str | None = None, **kwargs: Any
) -> GroupTRLReward:
    """A sync groupwise TRL reward; ``kwargs`` as :func:`group_reward_from_kwargs`."""
    return GroupTRLReward(answer_column, name, **kwargs)


def trl_group_reward_func_async(
    answer_column: str | None = None, name: str | None = None, **kwargs: Any
) -> AsyncGroupTRLReward:
    """An async groupwise TRL reward (TRL awaits it on its loop)."""
    return AsyncGroupTRLReward(answer_column, name, **kwargs)


# -- verl: samples meet their group ---------------------------------------------------


class _Gathering:
    """The samples of one group that have arrived so far (on one event loop)."""

    def __init__(self, size: int, prompt: str | None, reference: Any) -> None:
        self.size = size
        self.prompt = prompt
        self.reference = reference
        self.texts: list[str] = []
        self.futures: list[asyncio.Future[dict[str, Any]]] = []
        self.timer: asyncio.TimerHandle | None = None


_Slot = tuple[int, Any]  # (id of the GroupReward, the group's key)
_GATHERING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Slot, _Gathering]] = (
    weakref.WeakKeyDictionary()
)
"""The groups gathering on each event loop (a group's futures belong to its loop)."""
_TASKS: set[asyncio.Task[None]] = set()


def _group_key(extra_info: Any) -> Any:
    if isinstance(extra_info, Mapping):
        for key in ("uid", "index"):
            value = extra_info.get(key)
            if value is not None:
                return (key, str(value))
    raise DataError(
        "group_compute_score_async: extra_info has neither 'uid' nor 'index' to group the "
        "samples of one prompt by (verl's example data keeps 'index' in extra_info)"
    )


async def _judge_group(reward: GroupReward, group: _Gathering) -> None:
    try:
        records = await reward.score_group(group.texts, group.prompt, group.reference)
    except Exception as e:  # a bug or bad data: every waiter sees it
        for f in group.futures:
            if not f.done():
                f.set_exception(e)
        return
    short = float(len(group.texts) < group.size)
    for f, r in zip(group.futures, records, strict=True):
        if not f.done():
            f.set_result({**r, "group_incomplete": short})


def _close(groups: dict[_Slot, _Gathering], slot: _Slot, reward: GroupReward) -> None:
    group = groups.pop(slot, None)
    if group is None:
        return
    if group.timer is not None:
        group.timer.cancel()
    task = asyncio.ensure_future(_judge_group(reward, group))
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


async def group_compute_score_async(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any = None,
    *,
    group_size: int,
    group_wait: float = 60.0,
    **kwargs: Any,
) -> dict[str, float | None]:
    """verl's per-sample ``compute_score``, answered once the sample's group is judged."""
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise ConfigError(f"group_size must be a whole number >= 2 (rollout.n), got {group_size!r}")
    address = kwargs.pop("reward_router_address", None)
    tokenizer = kwargs.pop("reward_model_tokenizer", None)
    if address is not None:
        kwargs = router_kwargs(kwargs, str(address), tokenizer)
    reward = group_reward_from_kwargs(**kwargs)
    if reward.failure_value is None:
        raise ConfigError("verl needs a number for every sample: failure_value must not be None")
    loop = asyncio.get_running_loop()
    groups = _GATHERING.setdefault(loop, {})
    slot = (id(reward), _group_key(extra_info))
    group = groups.get(slot)
    if group is None:
        question = None
        if isinstance(extra_info, Mapping):
            question = extra_info.get("question") or extra_info.get("prompt")
        ref = None if ground_truth is None else str(ground_truth)
        group = groups[slot] = _Gathering(group_size, question, ref)
        group.timer = loop.call_later(group_wait, _close, groups, slot, reward)
    future: asyncio.Future[dict[str, Any]] = loop.create_future()
    group.texts.append(solution_str)
    group.futures.append(future)
    if len(group.texts) >= group_size:
        _close(groups, slot, reward)
    r = await future
    return {
        "score": float(r["reward"]),
        "raw_score": r["raw_score"],
        "parse_failed": float(r["parse_failed"]),
        "clamped": 0.0,
        "failed": float(r["error"] is not None),
        "pairs": float(r["pairs"]),
        "inconsistent_pairs": float(r["inconsistent_pairs"]),
        "group_incomplete": r["group_incomplete"],
    }
