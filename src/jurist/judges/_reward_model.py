""":class:`RewardModelJudge`: a scalar reward model as a judge, pointwise or pairwise.

A scalar reward model (``hf-reward:``, ``reward-server:``: a model whose
:attr:`~jurist.models.Capabilities.scalar` is true) reads a conversation and gives one
number. This judge sends it the item as the conversation ``[system?, user: prompt,
assistant: response]`` (the model's own chat template is applied by its backend) and
turns the reward into a score by the map of :mod:`jurist.judges._reward_map`:

- pointwise (``prompt``, ``response``): ``sigmoid((reward - center) / temperature)``, or the
  raw reward with ``squash="none"``; the verdict is the raw reward;
- pairwise (``pairwise=True``: ``prompt``, ``response_a``, ``response_b``): both responses
  scored (each alone: there is no position to swap), ``P(A better) = sigmoid((reward_A -
  reward_B) / temperature)``; the outcome is a :class:`~jurist.judges.PairJudgment` whose
  ``forward`` judgment holds the margin as its verdict and ``max(p, 1 - p)`` as its
  confidence, so calibration, selective judging and cascades
  (:class:`~jurist.trust.CascadeJudge`, as the cheap first tier) read it like any judge's.

:meth:`RewardModelJudge.fit` sets ``temperature`` (and ``center``, pointwise) from
labelled items by maximum likelihood. A failed call gives ``score=None`` with the
categorised error, never a made-up reward.

>>> import jurist
>>> rm = jurist.get_model("mock:rm", outputs=[2.0, 0.5], scalar=True)
>>> judge = RewardModelJudge(rm, pairwise=True)
>>> out = judge.judge_one_sync({"prompt": "2+2?", "response_a": "4", "response_b": "5"})
>>> out.winner, round(out.score, 4), out.forward.verdict
('A', 0.8176, 1.5)
>>> RewardModelJudge(jurist.get_model("mock:rm", outputs=[0.0], scalar=True)).judge_one_sync(
...     {"prompt": "2+2?", "response": "4"}).score
0.5
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

from jurist._sync import run_sync
from jurist.errors import ConfigError, DataError, JuristError
from jurist.judges._codecs import JudgeModel, ModelSpec
from jurist.judges._declare import Declared, JudgeConfig, checked, option, register
from jurist.judges._items import as_item_dicts
from jurist.judges._many import ManyItemsJudge, map_items, run_items
from jurist.judges._pairwise_results import PairJudgment, PairwiseResults, side
from jurist.judges._results import JudgeResults
from jurist.judges._reward_map import fit_map, pair_probability, squash
from jurist.judges._spec import judge_model
from jurist.models import Model
from jurist.models._backends import backends, providers_shown, scripted_spec
from jurist.models._stack import limits_layer, with_limits
from jurist.types import Judgment, Message, Request, Usage

__all__ = ["RewardModelConfig", "RewardModelJudge"]

Squash = Literal["sigmoid", "none"]


def _example_model() -> Model:
    from jurist.models import get_model

    return get_model(scripted_spec("rm"), scalar=True, outputs=[1.0], cycle=True)


class RewardModelConfig(JudgeConfig):
    """A :class:`RewardModelJudge`'s options (catalog kind ``reward_model``)."""

    model: Annotated[JudgeModel, ModelSpec(rate_key="max_calls_per_min")] = option(
        example=_example_model, describe="never"
    )
    pairwise: bool = option(False, example=True, describe="always")
    squash: Squash = option("sigmoid", example="none", describe="always")
    temperature: float = option(1.0, example=2.5, describe="always", gt=0.0)
    center: float = option(0.0, example=1.5, describe="always")
    system_prompt: str | None = option(None, example="Be helpful.", describe="changed")
    max_calls_per_min: int | None = option(None, example=30, describe="never", ge=1)
    concurrency: int = option(64, example=4, describe="never", ge=1)
    name: str | None = option(None, example="mine", describe="never")


class RewardModelJudge(Declared, ManyItemsJudge[Any, Any]):
    """A scalar reward model as a pointwise or pairwise judge (see the module docs).

    Args:
        model: a scalar reward model: a :class:`~jurist.models.Model` or a spec
            (``"hf-reward:PATH"``, ``"reward-server:NAME"`` with ``base_url=``).
        pairwise: judge pairs (``response_a``, ``response_b``) instead of single responses.
        squash: ``"sigmoid"`` (a score in (0, 1)) or ``"none"`` (the raw reward), pointwise.
        temperature, center: the map's scale and (pointwise) offset; :meth:`fit` fits them.
        system_prompt: a system message sent before the prompt (as the reward model was
            trained with one, if it was).
        max_calls_per_min, concurrency, name: as for :class:`~jurist.judges.LLMJudge`.
        **model_options: the backend's options, with a spec.
    """

    config: RewardModelConfig

    def __init__(
        self, model: Model | str | Any | None = None, *, pairwise: bool = False, **options: Any
    ) -> None:
        fields = RewardModelConfig.model_fields
        given = {k: options.pop(k) for k in list(options) if k in fields}
        base = judge_model(model, options, "RewardModelJudge")
        given.update(model=base, pairwise=pairwise)
        self._setup(checked(RewardModelConfig, given, "RewardModelJudge"))

    @classmethod
    def from_config(cls, config: RewardModelConfig) -> RewardModelJudge:
        judge = cls.__new__(cls)
        judge._setup(config)
        return judge

    def _setup(self, config: RewardModelConfig, live: Model | None = None) -> None:
        self.config = config
        model = live if live is not None else config.model
        if live is None and config.max_calls_per_min is not None:
            model = with_limits(model, limits_layer(rpm=config.max_calls_per_min))
        if not model.capabilities.scalar:
            scalar = providers_shown([b.provider for b in backends() if b.scalar])
            raise ConfigError(
                f"RewardModelJudge: {model.spec} is not a scalar reward model "
                f"(capabilities.scalar is false): use a {scalar} model, or judge with "
                "LLMJudge / PairwiseJudge"
            )
        self.model: Model = model
        kind = "pair" if config.pairwise else "point"
        self.name = config.name or f"reward-{kind}@{model.spec}"

    @property
    def concurrency(self) -> int:  # type: ignore[override]
        return self.config.concurrency

    @property
    def pairwise(self) -> bool:
        return self.config.pairwise

    def summary(self) -> str:
        """One line about this judge (a catalog entry's default description)."""
        how = "pairwise" if self.pairwise else "pointwise"
        return f"scalar reward model {self.model.spec}, {how}"

    def __repr__(self) -> str:
        return f"RewardModelJudge({self.model.spec!r}, pairwise={self.pairwise})"

    def models(self) -> tuple[Model, ...]:
        """The one model this judge calls."""
        return (self.model,)

    def with_models(self, fn: Callable[[Model], Model]) -> RewardModelJudge:
        """A copy of this judge calling ``fn(model)`` instead of its model."""
        other = RewardModelJudge.__new__(RewardModelJudge)
        other._setup(self.config, live=fn(self.model))
        return other

    @property
    def required_fields(self) -> tuple[str, ...]:
        if self.pairwise:
            return ("prompt", "response_a", "response_b")
        return ("prompt", "response")

    def describe(self) -> dict[str, Any]:
        """The judge's whole configuration as JSON-able data (for run manifests)."""
        return {
            "kind": "reward_model",
            "name": self.name,
            "model": self.model.identity(),
            **self.config.described(),
        }

    # -- one item ---------------------------------------------------------------------------

    def messages(
        self, item: Mapping[str, Any], *, response: str = "response"
    ) -> tuple[Message, ...]:
        """The conversation the reward model reads for ``item``'s ``prompt`` and its field
        ``response`` (``response_a`` / ``response_b`` for each side of a pair)."""
        head = (
            (Message(role="system", content=self.config.system_prompt),)
            if self.config.system_prompt
            else ()
        )
        prompt = item.get("prompt")
        return (
            *head,
            Message(role="user", content="" if prompt is None else str(prompt)),
            Message(role="assistant", content=str(item.get(response, ""))),
        )

    def judge_messages(
        self, messages: tuple[Message, ...], *, retries: int = 0
    ) -> Coroutine[Any, Any, Judgment]:
        """:meth:`reward` of messages from :meth:`messages` (the interface the reward
        adapters share with :class:`~jurist.judges.LLMJudge`)."""
        return self.reward(messages)

    async def reward(self, messages: tuple[Message, ...]) -> Judgment:
        """The raw reward of one conversation as a judgment: ``verdict`` the reward,
        ``score`` the pointwise map of it (``None`` with the error when the call failed)."""
        started = time.perf_counter()
        try:
            done = await self.model.complete(Request(messages=messages))
        except JuristError as e:
            return Judgment(
                score=None,
                error=f"{e.category}: {e}",
                judge_prompt=messages[-2].content,
                usage=Usage(attempts=getattr(e, "attempts", 1)),
                latency=time.perf_counter() - started,
            )
        if done.score is None:
            return Judgment(
                score=None,
                error=f"api: {self.model.spec} answered text, not a score",
                judge_prompt=messages[-2].content,
                usage=done.billed_usage,
                latency=done.latency,
            )
        raw = float(done.score)
        c = self.config
        score = (
            raw if c.squash == "none" else squash(raw, center=c.center, temperature=c.temperature)
        )
        return Judgment(
            score=score,
            verdict=raw,
            judge_prompt=messages[-2].content,
            confidence=None if c.squash == "none" else max(score, 1.0 - score),
            usage=done.billed_usage,
            latency=done.latency,
            cached=done.cached,
            attempts=done.attempts,
        )

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> Any:
        """Judge one item (a :class:`~jurist.types.Judgment`, or a
        :class:`~jurist.judges.PairJudgment` when pairwise); never raises for a failed call.
        ``retries`` is accepted for the judge protocol: a score is never unreadable."""
        map_items([item], None, self.required_fields, self._who())
        if not self.pairwise:
            return await self.reward(self.messages(item))
        a, b = await asyncio.gather(
            self.reward(self.messages(item, response="response_a")),
            self.reward(self.messages(item, response="response_b")),
        )
        return self.combine(a, b)

    def combine(self, a: Judgment, b: Judgment) -> PairJudgment:
        """The pair's judgment from each response's reward judgment."""
        usage = a.usage + b.usage
        for j, which in ((a, "A"), (b, "B")):
            if j.verdict is None:
                error = j.error or "api: no reward"
                category, _, message = error.partition(": ")
                failed = Judgment(score=None, error=error, usage=usage, latency=j.latency)
                return PairJudgment(
                    score=None,
                    error=f"{category}: response {which}: {message}",
                    forward=failed,
                    usage=usage,
                )
        ra, rb = float(a.verdict or 0.0), float(b.verdict or 0.0)
        p = pair_probability(ra, rb, temperature=self.config.temperature)
        forward = Judgment(
            score=p,
            verdict=ra - rb,
            explanation=f"reward A {ra:.6g}, reward B {rb:.6g}",
            judge_prompt=a.judge_prompt,
            distribution={"A": p, "B": 1.0 - p},
            confidence=max(p, 1.0 - p),
            usage=usage,
            latency=max(a.latency, b.latency),
            cached=a.cached and b.cached,
            attempts=a.attempts + b.attempts,
        )
        return PairJudgment(score=p, winner=side(p), preferences=(p,), forward=forward, usage=usage)

    # -- batches ----------------------------------------------------------------------------

    def _who(self) -> str:
        return f"reward-model judge {self.name!r}"

    def _results(self, outcomes: list[Any], rows: list[dict[str, Any]]) -> Any:
        if self.pairwise:
            return PairwiseResults(outcomes, rows)
        return JudgeResults(outcomes, rows)

    # -- fitting ----------------------------------------------------------------------------

    async def fit(
        self,
        items: Iterable[Mapping[str, Any]] | Any,
        labels: Sequence[float],
        *,
        fields: Mapping[str, str] | None = None,
    ) -> RewardModelJudge:
        """A copy of this judge with ``temperature`` (pairwise) or ``temperature`` and
        ``center`` (pointwise, sigmoid) fitted to ``labels`` by maximum likelihood
        (:func:`~jurist.judges._reward_map.fit_map`). Labels are in [0, 1]: pairwise 1.0 =
        A better, 0.0 = B better, 0.5 = tie; pointwise 1.0 = good, 0.0 = bad. Items whose
        reward call failed are left out of the fit (at least 2 must remain)."""
        if not self.pairwise and self.config.squash == "none":
            raise ConfigError("RewardModelJudge.fit: squash='none' has no map to fit")
        rows = map_items(as_item_dicts(items), fields, self.required_fields, self._who())
        if len(labels) != len(rows):
            raise DataError(f"RewardModelJudge.fit: {len(labels)} labels for {len(rows)} items")

        async def one(i: int) -> Any:
            return await self.judge(rows[i])

        outs = await run_items(one, len(rows), concurrency=self.concurrency)
        values: list[float] = []
        kept: list[float] = []
        for out, label in zip(outs, labels, strict=True):
            raw = out.forward.verdict if self.pairwise else out.verdict
            if isinstance(raw, int | float):
                values.append(float(raw))
                kept.append(float(label))
        fitted = fit_map(values, kept, center=not self.pairwise)
        changes: dict[str, Any] = {"temperature": fitted.temperature}
        if not self.pairwise:
            changes["center"] = fitted.center
        return self.with_options(**changes)

    def fit_sync(
        self, items: Iterable[Mapping[str, Any]] | Any, labels: Sequence[float], **options: Any
    ) -> RewardModelJudge:
        """Sync twin of :meth:`fit`."""
        return run_sync(self.fit(items, labels, **options))


register("reward_model", RewardModelConfig, RewardModelJudge)
