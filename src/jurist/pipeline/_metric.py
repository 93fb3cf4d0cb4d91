""":class:`JudgeMetric`: a judge used as a metric, unitxt style.

A metric takes the predictions of a model under test (and optionally references and the
rest of each instance, ``task_data``), builds one judge item per instance, and returns
per-instance results (score, verdict, the judge's input and raw output, error) and
global results (mean score with a seeded bootstrap confidence interval, how many were
scored and how many failed). A failed instance is reported with its error and left out
of the mean: never scored 0.0. A pairwise judge compares each prediction (shown as
response A) with the reference (response B, the baseline) and also reports A's win rate.

Naming: ``acompute`` is the coroutine and ``compute`` its sync twin (the pair the batch
engine uses too: ``aevaluate`` / ``evaluate``); ``compute`` works inside a running loop.

>>> import jurist
>>> judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=["5", "2", "oops", "4"]),
...                         template="likert")
>>> metric = jurist.JudgeMetric(judge, context_fields={"prompt": "question"})
>>> res = metric.compute(["Austin", "Dallas", "blue", "Paris"],
...                      task_data=[{"question": q} for q in "abcd"])
>>> res.scores
[1.0, 0.25, None, 0.75]
>>> g = res.global_scores
>>> round(g.mean, 4), g.n_scored, g.n_failed, g.failures
(0.6667, 3, 1, {'parse': 1})
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from jurist._missing import is_missing
from jurist._sync import run_sync
from jurist.errors import ConfigError, DataError, JuristError, UserError
from jurist.judges._many import run_items
from jurist.judges._protocol import ItemJudge
from jurist.pipeline._metric_results import (
    GlobalScores,
    InstanceResult,
    JudgeCall,
    MetricResults,
    instance_result,
)
from jurist.types import Judgment, Usage

__all__ = ["GlobalScores", "InstanceResult", "JudgeCall", "JudgeMetric", "MetricResults"]


class JudgeMetric:
    """A judge as a metric over predictions.

    Args:
        judge: any judge (:class:`~jurist.LLMJudge`, :class:`~jurist.PairwiseJudge`,
            :class:`~jurist.Panel`, a rubric judge) or a catalog name
            (``"judges.likert.hf_qwen2_5_0_5b_instruct[temperature=0.2]"``).
        prediction_field: the ``task_data`` column that holds the prediction when
            ``predictions`` is not given (and where :func:`evaluate_model` puts it).
        reference_field: the ``task_data`` column that holds the reference when
            ``references`` is not given.
        context_fields: the other judge fields, from ``task_data``: a list of names
            (the same in the data and the judge) or a mapping judge field -> column
            (``{"prompt": "question"}``); default: every other field the judge reads,
            under its own name.
        judge_field: the judge field the prediction fills (default ``response``;
            ``response_a`` for a pairwise judge; a rubric judge's submission field).
        retries, concurrency: re-asks for unreadable verdicts; calls in flight.
        confidence, n_resamples, seed: the bootstrap interval of the mean.
    """

    def __init__(
        self,
        judge: ItemJudge | str,
        prediction_field: str = "prediction",
        reference_field: str | None = None,
        context_fields: Sequence[str] | Mapping[str, str] | None = None,
        *,
        judge_field: str | None = None,
        retries: int = 0,
        concurrency: int = 16,
        confidence: float = 0.95,
        n_resamples: int = 1000,
        seed: int = 0,
        name: str | None = None,
        catalog_root: str | Path | None = None,
    ) -> None:
        if isinstance(judge, str):
            from jurist import catalog

            judge = catalog.get(judge, root=catalog_root)
        if not isinstance(judge, ItemJudge):
            raise ConfigError(f"JudgeMetric needs a judge or a catalog name, not {judge!r}")
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
        if not 0 < confidence < 1:
            raise ConfigError(f"confidence must be between 0 and 1, got {confidence}")
        self.judge: ItemJudge = judge
        self.pairwise = _is_pairwise(judge)
        self.prediction_field = prediction_field
        self.reference_field = reference_field
        self.judge_field = judge_field or _default_target(judge, self.pairwise)
        self.reference_target = _reference_target(judge, self.pairwise)
        if context_fields is None:
            skip = {self.judge_field, self.reference_target}
            names = [f for f in _judge_fields(judge) if f not in skip]
            self.context: dict[str, str] = {f: f for f in names}
            self._context_given = False
        else:
            items = (
                context_fields.items()
                if isinstance(context_fields, Mapping)
                else ((f, f) for f in context_fields)
            )
            self.context = dict(items)
            self._context_given = True
        self.retries = retries
        self.concurrency = concurrency
        self.confidence = confidence
        self.n_resamples = n_resamples
        self.seed = seed
        self.name = name or f"judge_metric:{judge.name}"

    def __repr__(self) -> str:
        return f"JudgeMetric({self.judge.name!r}, prediction -> {self.judge_field!r})"

    def __copy__(self) -> JudgeMetric:
        """A shallow copy, as ``copy.copy`` makes one; refused, with what to use instead,
        when unitxt copies it as a recipe's metric (``metrics=[jurist.JudgeMetric(...)]``):
        it is no unitxt metric, and unitxt would fail only later, with the whole object
        serialised into its message."""
        if _called_from("unitxt", depth=4):
            raise ConfigError(
                "jurist.JudgeMetric is not a unitxt metric: in unitxt's metrics=[...] use "
                "jurist.compat.unitxt.JuristJudgeMetric(judge=..., context_fields=...) (or "
                "judge_metric(judge) for a catalog entry); it takes unitxt's "
                "(references, predictions, task_data) order"
            )
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        return other

    # -- building the judge items ---------------------------------------------------------

    def items(
        self,
        predictions: Sequence[Any] | None,
        *extra: Any,
        references: Sequence[Any] | None = None,
        task_data: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """The judge item of every instance, all checked before any call.

        A field the judge needs that an instance lacks is a :class:`DataError` naming the
        instance, the field, where it was looked for, and the fields the instance has.
        ``references`` and ``task_data`` are keyword-only (see :meth:`compute`).
        """
        _refuse_positional("items", extra)
        n = _count(predictions, references, task_data)
        rows = [dict(r) for r in task_data] if task_data is not None else [{} for _ in range(n)]
        out: list[dict[str, Any]] = []
        required = set(self.judge.required_fields)
        for i, row in enumerate(rows):
            item: dict[str, Any] = {}
            for field, column in self.context.items():
                if column in row:
                    item[field] = row[column]
                elif field in required or self._context_given:
                    raise _missing(i, field, f"task_data column {column!r}", row)
            if predictions is not None:
                item[self.judge_field] = predictions[i]
            elif self.prediction_field in row:
                item[self.judge_field] = row[self.prediction_field]
            else:
                raise _missing(
                    i, self.judge_field, f"prediction (column {self.prediction_field!r})", row
                )
            _check_prediction(i, item[self.judge_field])
            ref = references[i] if references is not None else None
            if ref is None and self.reference_field is not None:
                if self.reference_field not in row:
                    raise _missing(
                        i, self.reference_target, f"column {self.reference_field!r}", row
                    )
                ref = row[self.reference_field]
            if not is_missing(ref):
                item[self.reference_target] = ref
            absent = [f for f in self.judge.required_fields if is_missing(item.get(f))]
            if absent:
                field = absent[0]
                source = (
                    "references / reference_field"
                    if field == self.reference_target
                    else f"task_data column {self.context.get(field, field)!r}"
                )
                raise _missing(i, field, source, row)
            out.append(item)
        return out

    # -- computing --------------------------------------------------------------------------

    async def acompute(
        self,
        predictions: Sequence[Any] | None = None,
        *extra: Any,
        references: Sequence[Any] | None = None,
        task_data: Sequence[Mapping[str, Any]] | None = None,
        progress: bool = False,
    ) -> MetricResults:
        """Judge every instance and aggregate (see the class doc).

        Only ``predictions`` may be positional: ``references`` and ``task_data`` are
        keyword-only, because unitxt's metrics take ``(references, predictions,
        task_data)`` in that order, and a call in unitxt's order would judge the
        references. A positional second argument is a :class:`TypeError` saying so.
        """
        _refuse_positional("acompute", extra)
        items = self.items(predictions, references=references, task_data=task_data)

        async def one(i: int) -> Any:
            try:
                return await self.judge.judge(items[i], retries=self.retries)
            except UserError:
                raise
            except JuristError as e:
                return Judgment(score=None, error=f"{e.category}: {e}")

        outcomes = await run_items(one, len(items), concurrency=self.concurrency, progress=progress)
        instances = tuple(
            instance_result(i, outcome, items[i], self.judge_field, self.reference_target)
            for i, outcome in enumerate(outcomes)
        )
        return MetricResults(instances=instances, global_scores=self.aggregate(instances))

    def compute(
        self,
        predictions: Sequence[Any] | None = None,
        *extra: Any,
        references: Sequence[Any] | None = None,
        task_data: Sequence[Mapping[str, Any]] | None = None,
        progress: bool = False,
    ) -> MetricResults:
        """Sync twin of :meth:`acompute` (``references`` and ``task_data`` keyword-only);
        works inside a running event loop too.

        >>> import jurist
        >>> m = JudgeMetric(jurist.LLMJudge("mock:j"))
        >>> m.compute(["Paris"], ["Paris is the capital"], [{"prompt": "Capital?"}])
        Traceback (most recent call last):
        ...
        TypeError: JudgeMetric.compute() takes the predictions as its only positional argument, ...
        """
        _refuse_positional("compute", extra)
        return run_sync(
            self.acompute(
                predictions, references=references, task_data=task_data, progress=progress
            )
        )

    def aggregate(self, instances: Sequence[InstanceResult]) -> GlobalScores:
        """The global scores of per-instance results (failed ones counted, not averaged)."""
        scored = [r.score for r in instances if r.score is not None]
        failures: dict[str, int] = {}
        for r in instances:
            if r.score is None:
                category = (r.error or "error: unknown").partition(":")[0].strip()
                failures[category] = failures.get(category, 0) + 1
        mean, low, high = self._mean_ci(scored)
        usage = Usage()
        for r in instances:
            usage = usage + r.usage
        extra: dict[str, Any] = {}
        if self.pairwise:
            extra = self._pairwise(instances)
        return GlobalScores(
            metric=self.name,
            n=len(instances),
            n_scored=len(scored),
            n_failed=len(instances) - len(scored),
            mean=mean,
            ci_low=low,
            ci_high=high,
            confidence=self.confidence,
            n_resamples=self.n_resamples,
            seed=self.seed,
            failures=failures,
            usage=usage,
            **extra,
        )

    def mean_interval(self, values: Sequence[float]) -> tuple[float | None, float | None]:
        """The bootstrap interval of the mean of ``values`` at this metric's
        ``confidence`` (``None, None`` with fewer than 3 values).

        A percentile bootstrap: ``n_resamples`` resamples of the values drawn by
        ``numpy.random.default_rng(seed)``, the same draws and quantiles as
        ``scipy.stats.bootstrap(..., method="percentile")``, computed with numpy alone
        (a core dependency), so a metric never needs an optional package after judging.

        >>> import jurist
        >>> m = JudgeMetric(jurist.LLMJudge("mock:j"), seed=0)
        >>> m.mean_interval([0.0, 1.0, 1.0, 1.0])
        (0.25, 1.0)
        >>> m.mean_interval([0.5, 0.5, 0.5]), m.mean_interval([0.0, 1.0])
        ((0.5, 0.5), (None, None))
        """
        if len(values) < 3:
            return None, None
        if min(values) == max(values):
            return values[0], values[0]  # every resample has this mean
        return bootstrap_mean(
            values, n_resamples=self.n_resamples, confidence=self.confidence, seed=self.seed
        )

    def _mean_ci(self, values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
        if not values:
            return None, None, None
        low, high = self.mean_interval(values)
        return statistics.fmean(values), low, high

    def _pairwise(self, instances: Sequence[InstanceResult]) -> dict[str, Any]:
        winners = [r.verdict for r in instances if r.score is not None]
        points = {"A": 1.0, "tie": 0.5, "B": 0.0}
        rate, low, high = self._mean_ci([points[w] for w in winners if w in points])
        both = [r.outcome.get("consistent") for r in instances if r.score is not None]
        judged = [c for c in both if isinstance(c, bool)]
        return {
            "win_rate": rate,
            "win_rate_ci_low": low,
            "win_rate_ci_high": high,
            "n_a": winners.count("A"),
            "n_b": winners.count("B"),
            "n_tie": winners.count("tie"),
            "n_inconsistent": winners.count("inconsistent"),
            "consistency_rate": sum(judged) / len(judged) if judged else None,
        }


_DRAWS_PER_BATCH = 4_000_000  # resampled indices held at once (32 MB of int64)


def bootstrap_mean(
    values: Sequence[float], *, n_resamples: int, confidence: float, seed: int
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``values`` (see
    :meth:`JudgeMetric.mean_interval`); resamples are drawn in batches so memory stays
    bounded on large runs."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    n = len(data)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    step = max(1, _DRAWS_PER_BATCH // n)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        means[start:stop] = data[rng.integers(0, n, (stop - start, n))].mean(axis=-1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def _called_from(package: str, *, depth: int) -> bool:
    """Whether one of the ``depth`` frames above the caller's caller runs ``package``'s code."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return False
        name = frame.f_globals.get("__name__", "")
        if name == package or name.startswith(package + "."):
            return True
        frame = frame.f_back
    return False


def _refuse_positional(method: str, extra: tuple[Any, ...]) -> None:
    """A positional argument after the predictions: refused, never read in some order."""
    if not extra:
        return
    raise TypeError(
        f"JudgeMetric.{method}() takes the predictions as its only positional argument, got "
        f"{1 + len(extra)}: pass references= and task_data= by keyword (unitxt's metrics take "
        "(references, predictions, task_data) in that order, so a positional call could "
        "judge the references); inside unitxt use jurist.compat.unitxt.JuristJudgeMetric"
    )


def _is_pairwise(judge: Any) -> bool:
    fields = set(judge.required_fields)
    return {"response_a", "response_b"} <= fields


def _default_target(judge: Any, pairwise: bool) -> str:
    if pairwise:
        return "response_a"
    submission = getattr(judge, "submission_field", None)
    return submission if isinstance(submission, str) else "response"


def _reference_target(judge: Any, pairwise: bool) -> str:
    if pairwise:
        return "response_b"
    ref = getattr(judge, "reference_field", None)
    return ref if isinstance(ref, str) else "reference"


def _judge_fields(judge: Any) -> list[str]:
    """Required fields, then the optional fields of the judge's template(s)."""
    seen: dict[str, None] = dict.fromkeys(judge.required_fields)
    templates = [getattr(judge, "template", None)]
    templates += [getattr(j, "template", None) for j in getattr(judge, "judges", ()) or ()]
    for tpl in templates:
        for f in getattr(tpl, "optional_fields", ()) or ():
            seen.setdefault(f, None)
    query = getattr(judge, "query_field", None)
    if isinstance(query, str):
        seen.setdefault(query, None)
    return list(seen)


def _count(
    predictions: Sequence[Any] | None,
    references: Sequence[Any] | None,
    task_data: Sequence[Mapping[str, Any]] | None,
) -> int:
    lengths = {
        name: len(seq)
        for name, seq in (
            ("predictions", predictions),
            ("references", references),
            ("task_data", task_data),
        )
        if seq is not None
    }
    if "predictions" not in lengths and "task_data" not in lengths:
        raise DataError("JudgeMetric needs predictions, or task_data holding them")
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{k}={v}" for k, v in lengths.items())
        raise DataError(f"predictions, references and task_data differ in length: {shown}")
    return next(iter(lengths.values()))


def _check_prediction(index: int, prediction: Any) -> None:
    """A prediction is text: anything else is a :class:`DataError` naming the instance and
    the type, never judged as its ``str()``. A missing one (``None``, NaN) is refused as
    missing by :meth:`JudgeMetric.items`.

    >>> _check_prediction(3, {"answer": 4})
    Traceback (most recent call last):
    ...
    jurist.errors.DataError: instance 3: the prediction is a dict ({'answer': 4}), not a string; ...
    """
    if isinstance(prediction, str) or is_missing(prediction):  # missing: see _missing
        return
    shown = repr(prediction)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    name = type(prediction).__name__
    raise DataError(
        f"instance {index}: the prediction is {'an' if name[0] in 'aeiou' else 'a'} {name} "
        f"({shown}), not a string; a judge reads text: convert the predictions first (str() "
        "or a formatter of your own)"
    )


def _missing(index: int, field: str, source: str, row: Mapping[str, Any]) -> DataError:
    return DataError(
        f"instance {index}: the judge needs field {field!r} (from {source}), which is missing; "
        f"the instance has fields {sorted(row)}"
    )
