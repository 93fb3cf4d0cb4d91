"""One cached reward judge per configuration, judging whole batches concurrently.

This is the shared engine behind the batch and async reward shapes (verl, TRL, the reward
server). Other modules use it through two calls:

- ``reward_judge_from_kwargs(**kwargs) -> RewardJudge``: the judge that keyword arguments
  (verl's ``reward_kwargs``, a TRL factory's options, the server's flags) describe. It is
  built once per process for each distinct configuration and reused; building it opens
  nothing (connections open on first use).
- ``await judge.score_batch(responses, references, prompts)`` judges a batch concurrently
  under the judge's one concurrency bound and returns one reward record per item, in
  order; ``judge.score_batch_sync(...)`` is its twin for sync code (inside or outside a
  running event loop).

Keyword arguments: ``model`` (a ``provider:name`` spec; a bare name means ``hf:NAME``;
default ``$LLM_JUDGE_MODEL``, else ``hf:Qwen/Qwen2.5-0.5B-Instruct``), ``base_url``,
``api_key``, ``template`` (default ``"reward"``) or ``judge`` (a catalog name; its
template and settings, with ``model`` replacing its model when given), ``concurrency``
(judgments in flight per event loop, default 256), ``rpm``, ``tpm``, ``max_retries``
(transient API errors), ``retries`` (re-asks of an unreadable verdict, default 0),
``timeout`` (seconds per judgment, retries included), ``failure_value`` (default 0.0),
``tolerance`` (the clamp tolerance of the ``reward`` template, default 0.05),
``temperature`` (default 0.1 with the ``reward`` template) and ``max_tokens`` (default 10
with the ``reward`` template), and, for the ``mock`` provider, ``outputs`` and ``cycle``.
An unknown keyword is a :class:`~jurist.errors.ConfigError` that names it.

A reward record has ``reward``, ``raw_score``, ``judge_output``, ``clamped``,
``parse_failed`` and ``error``. A judgment that fails (API error, timeout, unreadable
verdict) gets ``failure_value`` as its reward, with ``error`` saying why: never a made-up
score.

Sync callers share one background event loop (a daemon thread), so the judge's
connection pool lives as long as the process and is never used from a loop it was not
opened in; async callers use their own loop (the HTTP backend keeps one pool per loop).

>>> judge = reward_judge_from_kwargs(model="mock:j", outputs=["Score: 0.9", "hmm"])
>>> judge is reward_judge_from_kwargs(model="mock:j", outputs=["Score: 0.9", "hmm"])
True
>>> good, bad = judge.score_batch_sync(["Paris", "Lyon"], ["Paris", "Paris"])
>>> good["reward"], good["raw_score"], good["error"]
(0.9, 0.9, None)
>>> bad["reward"], bad["parse_failed"], bad["error"].split(":")[0]
(0.0, True, 'parse')
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from jurist._sync import run_sync
from jurist.errors import ConfigError, DataError
from jurist.judges import LLMJudge, RewardModelJudge
from jurist.judges._many import run_items
from jurist.models import DEFAULT_MODEL, Transport, build_stack, get_model, with_limits
from jurist.models._stack import limits_layer
from jurist.rewards._judge_reward import DEFAULT_TOLERANCE, judgment_to_reward
from jurist.types import Judgment, Message

__all__ = [
    "DEFAULT_CONCURRENCY",
    "REWARD_KWARGS",
    "RewardJudge",
    "judgment_record",
    "reward_judge_from_kwargs",
    "run_in_background",
]

T = TypeVar("T")

DEFAULT_CONCURRENCY = 256
REWARD_KWARGS = (
    "model",
    "base_url",
    "api_key",
    "template",
    "judge",
    "concurrency",
    "rpm",
    "tpm",
    "max_retries",
    "retries",
    "timeout",
    "failure_value",
    "tolerance",
    "temperature",
    "max_tokens",
    "squash",
    "outputs",
    "cycle",
)
"""The keyword arguments :func:`reward_judge_from_kwargs` reads."""


class RewardJudge:
    """A judge, its limits and its failure value: what scores one batch of rewards.

    The judge is an :class:`~jurist.judges.LLMJudge`, or a
    :class:`~jurist.judges.RewardModelJudge` when ``model`` names a scalar reward model
    (``hf-reward:``, ``reward-server:``): its reward is the judge's score (the sigmoid map
    by default, the raw reward with ``squash="none"``) and ``raw_score`` the raw reward.
    """

    def __init__(
        self,
        judge: LLMJudge | RewardModelJudge,
        *,
        failure_value: float | None = 0.0,
        tolerance: float = DEFAULT_TOLERANCE,
        retries: int = 0,
        timeout: float | None = None,
    ) -> None:
        if timeout is not None and not timeout > 0:
            raise ConfigError(f"reward judge: timeout must be > 0 seconds, got {timeout!r}")
        if retries < 0:
            raise ConfigError(f"reward judge: retries must be >= 0, got {retries!r}")
        self.judge = judge
        self.failure_value = failure_value
        self.tolerance = tolerance
        self.retries = retries
        self.timeout = timeout
        template = getattr(judge, "template", None)  # a reward model's judge has none
        self._reward_template = template is not None and template.name == "reward"
        # a trajectory template judges the rollout's text as the trajectory
        takes = (*template.fields, *template.optional_fields) if template is not None else ()
        self._response_field = "trajectory" if "trajectory" in takes else "response"

    def __repr__(self) -> str:
        template = getattr(self.judge, "template", None)
        how = f"template={template.name!r}" if template is not None else "scalar reward model"
        return (
            f"RewardJudge({self.judge.model.spec!r}, {how}, "
            f"failure_value={self.failure_value!r}, timeout={self.timeout!r})"
        )

    @property
    def kind_name(self) -> str:
        """What judges: the template's name, or ``"reward_model"`` for a scalar model."""
        template = getattr(self.judge, "template", None)
        return "reward_model" if template is None else str(template.name)

    @property
    def optional_fields(self) -> tuple[str, ...]:
        """The item fields the judge reads when given (its template's optional ones)."""
        template = getattr(self.judge, "template", None)
        return () if template is None else tuple(template.optional_fields)

    @property
    def scalar(self) -> bool:
        """Whether a scalar reward model judges (its reward is its score)."""
        return isinstance(self.judge, RewardModelJudge)

    def messages_of(
        self, response: str, reference: Any = None, prompt: str | None = None
    ) -> tuple[Message, ...]:
        """The judge messages :meth:`score_one` sends for these arguments (rendered once:
        the reward server keys coalescing on them and then judges them as they are)."""
        item: dict[str, Any] = {self._response_field: response, "prompt": prompt}
        if reference is not None:
            item["reference"] = str(reference)
        return self.judge.messages(item)

    async def score_one(
        self, response: str, reference: Any = None, prompt: str | None = None
    ) -> dict[str, Any]:
        """The reward record of one response (see the module doc)."""
        return await self.score_messages(self.messages_of(response, reference, prompt))

    async def score_item(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The reward record of one item with the judge's template fields (a trajectory
        reward's ``trajectory``, say), under the same timeout and failure value."""
        return await self.score_messages(self.judge.messages(item))

    async def score_messages(self, messages: tuple[Message, ...]) -> dict[str, Any]:
        """The reward record of judge messages from :meth:`messages_of` (or the judge's
        ``messages``), under the judge's timeout and failure value."""
        if self.timeout is None:  # the common case: no timer to arm and cancel per judgment
            judgment = await self.judge.judge_messages(messages, retries=self.retries)
        else:
            try:
                async with asyncio.timeout(self.timeout):
                    judgment = await self.judge.judge_messages(messages, retries=self.retries)
            except TimeoutError:
                judgment = Judgment(
                    score=None, error=f"timeout: no judgment within {self.timeout:g} s"
                )
        return judgment_record(
            judgment,
            failure_value=self.failure_value,
            tolerance=self.tolerance,
            reward_template=self._reward_template,
        )

    async def score_batch(
        self,
        responses: Sequence[str],
        references: Sequence[Any] | None = None,
        prompts: Sequence[str | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Reward records for a batch, judged concurrently under the judge's bound; in order."""
        n = len(responses)
        for label, seq in (("references", references), ("prompts", prompts)):
            if seq is not None and len(seq) != n:
                raise DataError(f"reward batch: {label} has {len(seq)} items but responses has {n}")
        for i, r in enumerate(responses):
            if not isinstance(r, str):
                raise DataError(f"reward batch: response {i} is a {type(r).__name__}, not a string")

        async def one(i: int) -> dict[str, Any]:
            reference = None if references is None else references[i]
            return await self.score_one(
                responses[i], reference, None if prompts is None else prompts[i]
            )

        # a fixed pool of workers (not one task per item): fewer wake-ups on big batches;
        # the model's own bound still holds across batches judged at the same time
        return await run_items(one, n, concurrency=self.judge.concurrency, ok=_judged)

    def score_batch_sync(
        self,
        responses: Sequence[str],
        references: Sequence[Any] | None = None,
        prompts: Sequence[str | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Sync twin of :meth:`score_batch`, on the shared background event loop."""
        return run_in_background(self.score_batch(responses, references, prompts))


def _judged(record: dict[str, Any]) -> bool:
    return record["error"] is None


def judgment_record(
    judgment: Judgment,
    *,
    failure_value: float | None = 0.0,
    tolerance: float = DEFAULT_TOLERANCE,
    reward_template: bool = True,
) -> dict[str, Any]:
    """A judgment as a reward record; a failed one gets ``failure_value``.

    The ``reward`` template's judgments are read as :func:`judgment_to_reward` reads them
    (strict, with the clamp ``tolerance``); any other template's normalised score is the
    reward and its verdict, when a number, the raw score.
    """
    if reward_template:
        record = judgment_to_reward(judgment, tolerance=tolerance, lenient=False)
    else:
        verdict = judgment.verdict
        raw = (
            float(verdict)
            if isinstance(verdict, int | float) and not isinstance(verdict, bool)
            else None
        )
        error = None if judgment.score is not None else (judgment.error or "parse: no verdict")
        record = {
            "reward": judgment.score,
            "raw_score": raw,
            "judge_output": judgment.response,
            "clamped": False,
            "parse_failed": bool(error and error.startswith("parse:")),
            "error": error,
        }
    if record["error"] is not None:
        record["reward"] = failure_value
    return record


# -- the background loop for sync callers ---------------------------------------------


def run_in_background(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on jurist's shared background event loop and wait for its result.

    One loop serves every sync call (:func:`jurist._sync.run_sync`, the loop of every sync
    twin), so connection pools are opened once and reused.
    """
    return run_sync(coro)


# -- building from keyword arguments ------------------------------------------------

_CACHE: dict[tuple[tuple[str, str], ...], RewardJudge] = {}
_CACHE_LOCK = threading.Lock()


def reward_judge_from_kwargs(**kwargs: Any) -> RewardJudge:
    """The cached :class:`RewardJudge` that ``kwargs`` describe (see the module doc)."""
    unknown = sorted(set(kwargs) - set(REWARD_KWARGS))
    if unknown:
        raise ConfigError(
            f"reward judge: unknown keyword argument(s) {unknown}; the known ones are "
            f"{list(REWARD_KWARGS)}"
        )
    settings = {k: v for k, v in kwargs.items() if v is not None or k == "failure_value"}
    if "model" not in settings and "judge" not in settings:
        env = os.environ.get("LLM_JUDGE_MODEL")
        settings["model"] = env or DEFAULT_MODEL
    key = tuple(sorted((k, repr(v)) for k, v in settings.items()))
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is None:
            cached = _CACHE[key] = _build(settings)
    return cached


def _spec(model: str) -> str:
    """A bare model name is one of the default model's backend (a local model)."""
    return model if ":" in model else f"{DEFAULT_MODEL.partition(':')[0]}:{model}"


def _number(settings: Mapping[str, Any], name: str, default: float | None) -> float | None:
    value = settings.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"reward judge: {name} must be a number, got {value!r}")
    return float(value)


def _whole(settings: Mapping[str, Any], name: str, default: int | None) -> int | None:
    value = settings.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"reward judge: {name} must be a whole number >= 0, got {value!r}")
    return value


def _build(settings: Mapping[str, Any]) -> RewardJudge:
    if "judge" in settings and "template" in settings:
        raise ConfigError("reward judge: give template or judge (a catalog name), not both")
    options: dict[str, Any] = {
        k: settings[k] for k in ("base_url", "api_key", "outputs", "cycle") if k in settings
    }
    max_retries = _whole(settings, "max_retries", None)
    concurrency = _whole(settings, "concurrency", DEFAULT_CONCURRENCY)
    if concurrency == 0:
        raise ConfigError("reward judge: concurrency must be >= 1, got 0")
    rpm, tpm = _number(settings, "rpm", None), _number(settings, "tpm", None)
    base: LLMJudge | None = None
    if "judge" in settings:
        from jurist import catalog

        found = catalog.get(str(settings["judge"]))
        if not isinstance(found, LLMJudge):
            raise ConfigError(
                f"reward judge: judge={settings['judge']!r} is a {type(found).__name__}, "
                "not an LLMJudge (a catalog judges.* entry)"
            )
        if isinstance(found, RewardModelJudge) and "model" not in settings:
            layer = limits_layer(rpm=rpm, tpm=tpm, max_concurrency=concurrency)
            return _reward_model_judge(
                settings, with_limits(found.model, layer), concurrency or 1, found
            )
        base = found
    if "model" in settings:
        spec = str(settings["model"])
        if not isinstance(settings["model"], str) or not spec:
            raise ConfigError(f"reward judge: model must be a 'provider:name' spec, got {spec!r}")
        transport = Transport(
            max_retries=max_retries, rpm=rpm, tpm=tpm, max_concurrency=concurrency
        )
        backend = get_model(_spec(spec), max_retries=0, **options)
        limited = build_stack(backend, transport)
        if backend.capabilities.scalar:
            return _reward_model_judge(settings, limited, concurrency or 1)
    else:
        assert base is not None
        given = sorted([*options, *(["max_retries"] if max_retries is not None else [])])
        if given:
            raise ConfigError(f"reward judge: {given} apply to model=, which judge= lacks")
        layer = limits_layer(rpm=rpm, tpm=tpm, max_concurrency=concurrency)
        limited = with_limits(base.model, layer)  # under the catalog model's retries
    template = str(settings.get("template", "reward"))
    is_reward = base is None and template == "reward"
    sampling: dict[str, Any] = {}
    for name, default in (("temperature", 0.1), ("max_tokens", 10)):
        if name in settings or is_reward:
            sampling[name] = settings.get(name, default)
    _number(sampling, "temperature", None)
    _whole(sampling, "max_tokens", None)
    if base is not None:
        judge = base.with_options(model=limited, concurrency=concurrency or 1, **sampling)
    else:
        judge = LLMJudge(limited, template=template, concurrency=concurrency or 1, **sampling)
    failure = _number(settings, "failure_value", 0.0)
    tolerance = _number(settings, "tolerance", DEFAULT_TOLERANCE)
    assert tolerance is not None
    return RewardJudge(
        judge,
        failure_value=failure,
        tolerance=tolerance,
        retries=_whole(settings, "retries", 0) or 0,
        timeout=_number(settings, "timeout", None),
    )


_NOT_FOR_SCALAR = ("template", "temperature", "max_tokens")  # tolerance: no text to clamp


def _reward_model_judge(
    settings: Mapping[str, Any],
    model: Any,
    concurrency: int,
    found: RewardModelJudge | None = None,
) -> RewardJudge:
    """The reward judge of a scalar reward model: a :class:`RewardModelJudge`, pointwise
    (``squash``: its map, ``"sigmoid"`` by default, ``"none"`` for the raw reward)."""
    given = [k for k in _NOT_FOR_SCALAR if k in settings]
    if given:
        raise ConfigError(
            f"reward judge: {given} apply to a judge that writes text; {model.spec} is a "
            "scalar reward model (its reward is its score)"
        )
    changes: dict[str, Any] = {"model": model, "concurrency": concurrency}
    if "squash" in settings:
        changes["squash"] = settings["squash"]
    if found is not None:
        judge = found.with_options(pairwise=False, **changes)
    else:
        judge = RewardModelJudge(**changes)
    return RewardJudge(
        judge,
        failure_value=_number(settings, "failure_value", 0.0),
        retries=_whole(settings, "retries", 0) or 0,
        timeout=_number(settings, "timeout", None),
    )
