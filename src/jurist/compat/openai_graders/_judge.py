""":class:`GraderJudge`: an OpenAI grader as a jurist judge (an ``ItemJudge``).

The item is the ``item`` namespace (the dataset row as it is); the ``sample`` namespace
is read from the item's ``sample_field`` (``response`` by default, so ``--response-field``
picks it): a string is ``output_text`` (and ``output_json`` when it holds valid JSON, as
the graders API did with a model sample); a mapping is the sample itself (``output_text``,
``output_json``, ``output_tools``, ``choices``).

A judgment's ``verdict`` is the grade as OpenAI's grader gave it (a ``score_model`` grade
on its own ``range``, a ``label_model`` label, a ``multi`` formula's value); ``score`` is
that grade on [0, 1] (a ``score_model`` grade rescaled from its range; a ``python`` or
``multi`` grade outside [0, 1] clipped, and the explanation says so); the explanation
shows each grade, and ``pass_threshold`` passed or not.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jurist._sync import run_sync
from jurist.compat.openai_graders._model_graders import ask_model_grader
from jurist.compat.openai_graders._python import PythonLimits, run_python_grader
from jurist.compat.openai_graders._similarity import Embed, similarity
from jurist.compat.openai_graders._spec import (
    LabelModelGrader,
    MultiGrader,
    PythonGrader,
    ScoreModelGrader,
    StringCheckGrader,
    TextSimilarityGrader,
)
from jurist.compat.openai_graders._template import render
from jurist.errors import ConfigError, JuristError
from jurist.judges._results import JudgeResults
from jurist.models import Model, get_model, server_spec
from jurist.types import Judgment, Usage

__all__ = ["Grade", "GraderJudge", "namespaces_of"]

ModelChoice = Model | str | Mapping[str, Model | str] | Callable[[str], Model] | None


@dataclass(frozen=True)
class Grade:
    """One grader's result on one item: ``value`` as OpenAI's grader gave it."""

    value: float | None
    error: str | None = None
    label: str | None = None
    usage: Usage = field(default_factory=Usage)
    detail: str = ""
    prompt: str = ""
    text: str | None = None


def namespaces_of(item: Mapping[str, Any], sample_field: str = "response") -> dict[str, Any]:
    """The ``item`` and ``sample`` namespaces of one jurist item.

    >>> ns = namespaces_of({"response": '{"name": "Jo"}', "name": "Jo"})
    >>> ns["sample"]["output_json"], ns["item"]["name"]
    ({'name': 'Jo'}, 'Jo')
    """
    row = {k: v for k, v in item.items() if not k.startswith("__jurist")}
    raw = item.get(sample_field)
    sample: dict[str, Any]
    if isinstance(raw, Mapping):
        sample = dict(raw)
    elif isinstance(raw, list) and raw and isinstance(raw[-1], Mapping):
        sample = {"output_text": str(raw[-1].get("content") or "")}  # a conversation
    else:
        sample = {"output_text": "" if raw is None else str(raw)}
    text = sample.get("output_text")
    if "output_json" not in sample and isinstance(text, str):
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict | list):
            sample["output_json"] = decoded
    return {"item": row, "sample": sample}


def _leaves(grader: Any) -> list[Any]:
    return list(grader.graders.values()) if isinstance(grader, MultiGrader) else [grader]


class GraderJudge:
    """An OpenAI grader definition judged by jurist; build it with
    :func:`~jurist.compat.openai_graders.load_grader`."""

    def __init__(
        self,
        grader: Any,
        *,
        model: ModelChoice = None,
        allow_python: bool = False,
        python_limits: PythonLimits | None = None,
        embed: Embed | None = None,
        sample_field: str = "response",
        _models: Sequence[Model] | None = None,
    ) -> None:
        self.grader = grader
        self.allow_python = allow_python
        self.python_limits = python_limits or PythonLimits()
        self.embed = embed
        self.sample_field = sample_field
        self.name = grader.name or grader.type
        leaves = _leaves(grader)
        for leaf in leaves:
            if isinstance(leaf, PythonGrader) and not allow_python:
                raise ConfigError(
                    f"grader {leaf.name or self.name!r} is a python grader: it runs the code in "
                    "the grader file; opt in with allow_python=True (--allow-python-graders) to "
                    "run it in a separate, bounded process"
                )
            cosine = isinstance(leaf, TextSimilarityGrader) and leaf.evaluation_metric == "cosine"
            if cosine and embed is None:
                raise ConfigError(
                    f"grader {leaf.name or self.name!r} uses cosine: it needs an embedding "
                    "function, embed=lambda texts: vectors"
                )
        self._model_leaves = [
            g for g in leaves if isinstance(g, ScoreModelGrader | LabelModelGrader)
        ]
        if _models is not None:
            self._models = tuple(_models)
        else:
            self._models = tuple(_model_for(g.model, model) for g in self._model_leaves)

    # -- the ItemJudge protocol ----------------------------------------------------------

    @property
    def required_fields(self) -> tuple[str, ...]:
        return (self.sample_field,)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "openai_grader",
            "name": self.name,
            "grader": self.grader.model_dump(mode="json"),
            "models": [m.spec for m in self._models],
            "sample_field": self.sample_field,
            "allow_python": self.allow_python,
        }

    def models(self) -> tuple[Model, ...]:
        return self._models

    def with_models(self, fn: Callable[[Model], Model]) -> GraderJudge:
        new = copy.copy(self)
        new._models = tuple(fn(m) for m in self._models)
        return new

    def __repr__(self) -> str:
        return f"GraderJudge({self.name!r}, type={self.grader.type!r})"

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> Judgment:
        """Grade one item; never raises for a failed grade (the judgment's ``error``)."""
        try:
            ns = namespaces_of(item, self.sample_field)
        except JuristError as e:
            return Judgment(score=None, error=f"{e.category}: {e}")
        grade = await self.grade(ns["sample"], ns["item"])
        return self._judgment(grade)

    def judge_sync(self, items: Iterable[Mapping[str, Any]]) -> JudgeResults:
        """Grade every item (concurrently), in order."""
        rows = [dict(i) for i in items]

        async def all_of() -> list[Judgment]:
            return list(await asyncio.gather(*(self.judge(r) for r in rows)))

        return JudgeResults(run_sync(all_of()), rows)

    # -- grading -------------------------------------------------------------------------

    async def grade(self, sample: Mapping[str, Any], item: Mapping[str, Any]) -> Grade:
        """The grade OpenAI's grader would give ``sample`` for ``item`` (``value`` as it
        gave it; ``error`` when there is none)."""
        ns = {"item": dict(item), "sample": dict(sample)}
        if isinstance(self.grader, MultiGrader):
            return await self._multi(self.grader, ns)
        return await self._leaf(self.grader, ns, 0)

    async def _leaf(self, g: Any, ns: Mapping[str, Any], index: int) -> Grade:
        try:
            if isinstance(g, StringCheckGrader):
                text, ref = render(g.input, ns), render(g.reference, ns)
                ok = {
                    "eq": text == ref,
                    "ne": text != ref,
                    "like": ref in text,
                    "ilike": ref.lower() in text.lower(),
                }[g.operation]
                return Grade(float(ok), detail=f"{g.operation}: {int(ok)}")
            if isinstance(g, TextSimilarityGrader):
                text, ref = render(g.input, ns), render(g.reference, ns)
                value = (
                    await asyncio.to_thread(
                        similarity, text, ref, g.evaluation_metric, embed=self.embed
                    )
                    if len(text) + len(ref) > 20_000
                    else similarity(text, ref, g.evaluation_metric, embed=self.embed)
                )
                return Grade(value, detail=f"{g.evaluation_metric} {value:.4f}{_passed(value, g)}")
            if isinstance(g, PythonGrader):
                ran, why = await run_python_grader(
                    g.source, ns["sample"], ns["item"], self.python_limits
                )
                if ran is None:
                    return Grade(None, error=f"grader: {why}")
                return Grade(ran, detail=f"python {ran:g}{_passed(ran, g)}")
            model = self._model_of(g)
            got = await ask_model_grader(g, model, ns)
            detail = (
                f"label {got.label!r}"
                if got.label is not None
                else f"score {got.value:g} on {list(g.range)}{_passed(got.value, g)}"
                if got.value is not None
                else ""
            )
            return Grade(got.value, got.error, got.label, got.usage, detail, got.prompt, got.text)
        except JuristError as e:
            return Grade(None, error=f"{e.category}: {e}")

    def _model_of(self, g: Any) -> Model:
        for i, leaf in enumerate(self._model_leaves):
            if leaf is g:
                return self._models[i]
        raise ConfigError(f"grader {g.name!r}: no model")  # pragma: no cover - built with one

    async def _multi(self, g: MultiGrader, ns: Mapping[str, Any]) -> Grade:
        names = list(g.graders)
        grades = await asyncio.gather(*(self._leaf(g.graders[n], ns, 0) for n in names))
        usage = sum((x.usage for x in grades), Usage())
        parts = [
            f"{n}={x.value:g}" if x.value is not None else f"{n}=failed"
            for n, x in zip(names, grades, strict=True)
        ]
        failed = [(n, x) for n, x in zip(names, grades, strict=True) if x.value is None]
        prompt = next((x.prompt for x in grades if x.prompt), "")
        text = next((x.text for x in grades if x.text), None)
        if failed:
            n, x = failed[0]
            category, _, message = (x.error or "grader: no grade").partition(": ")
            return Grade(
                None,
                f"{category}: {n}: {message}",
                usage=usage,
                detail=", ".join(parts),
                prompt=prompt,
                text=text,
            )
        try:
            value = g.formula.evaluate(
                {n: float(x.value or 0.0) for n, x in zip(names, grades, strict=True)}
            )
        except ValueError as e:
            return Grade(
                None, f"grader: {e}", usage=usage, detail=", ".join(parts), prompt=prompt, text=text
            )
        return Grade(
            value,
            usage=usage,
            detail=f"{', '.join(parts)}; {g.calculate_output} = {value:g}",
            prompt=prompt,
            text=text,
        )

    def _judgment(self, grade: Grade) -> Judgment:
        if grade.value is None:
            return Judgment(
                score=None,
                error=grade.error or "grader: no grade",
                explanation=grade.detail or None,
                usage=grade.usage,
                judge_prompt=grade.prompt,
                response=grade.text,
            )
        g = self.grader
        score = grade.value
        note = ""
        if isinstance(g, ScoreModelGrader):
            lo, hi = g.range
            score = (grade.value - lo) / (hi - lo)
        elif not 0.0 <= score <= 1.0:
            score = min(max(score, 0.0), 1.0)
            note = f" (score clipped to [0, 1] from {grade.value:g})"
        verdict: str | float = grade.label if grade.label is not None else grade.value
        return Judgment(
            score=score,
            verdict=verdict,
            explanation=f"{self.name}: {grade.detail}{note}",
            usage=grade.usage,
            judge_prompt=grade.prompt,
            response=grade.text,
            attempts=grade.usage.attempts,
        )


def _passed(value: float | None, g: Any) -> str:
    threshold = getattr(g, "pass_threshold", None)
    if threshold is None or value is None:
        return ""
    return f" (pass_threshold {threshold:g}: {'passed' if value >= threshold else 'failed'})"


def _model_for(name: str, choice: ModelChoice) -> Model:
    if isinstance(choice, Mapping):
        choice = choice.get(name, choice.get("*"))
        if choice is None:
            raise ConfigError(f"no model given for the grader model {name!r}")
    if isinstance(choice, Model):
        return choice
    if callable(choice):
        return choice(name)
    # OpenAI's model names: the backend of the OpenAI-compatible protocol serves them
    return get_model(choice if isinstance(choice, str) else server_spec(name))
