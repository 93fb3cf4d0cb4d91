"""The declaration of the rubric judge (catalog kind ``rubric_judge``): a
:class:`~jurist.CriterionGrader`'s options, its models and rubric, and the item fields of the
:class:`~jurist.judges.RubricJudge` it is bound as.

The grader keeps its settings as the grading code reads them; :func:`config_of` reads them
back into the declaration (the one place that names them) and the grader's module builds
the grader from one and binds it again (it registers the kind), so the catalog entry,
``with_options`` and the run's kept entry all come from :class:`RubricJudgeConfig`.

>>> import jurist
>>> rubric = jurist.Rubric.from_dict([{"name": "ok", "requirement": "Answers"}])
>>> judge = jurist.CriterionGrader(judges=["mock:j"], seed=3).for_rubric(rubric)
>>> entry = judge.config.entry()
>>> entry["models"], entry["seed"]
(['mock:j'], 3)
>>> judge.with_options(seed=4).grader.seed
4
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic.fields import FieldInfo

from jurist.errors import ConfigError
from jurist.judges._codecs import ModelSpecs
from jurist.judges._declare import Codec, JudgeConfig, LoadContext, option
from jurist.judges._llm_config import ReasoningOption
from jurist.judges.rubric._rubric import Rubric
from jurist.models import get_model
from jurist.models._backends import scripted_spec
from jurist.templates import DEFAULT_MAX_TOOL_CHARS, Turn
from jurist.types import Reasoning

__all__ = ["BINDING", "RubricJudgeConfig", "RubricRef", "config_of", "refuse_weights"]


class RubricRef(Codec):
    """A rubric, written inline (a catalog name ``rubrics.x`` is read too)."""

    def entry_fields(self, name: str, info: FieldInfo) -> dict[str, tuple[Any, Any]]:
        return {name: (str | dict[str, Any] | list[Any], ...)}

    def dump(self, name: str, value: Any) -> dict[str, Any]:
        return {name: value.to_dict()}

    def load(self, name: str, entry: Mapping[str, Any], ctx: LoadContext) -> Any:
        value = entry[name]
        if isinstance(value, str):
            rubric = ctx.resolve(value)
            if not isinstance(rubric, Rubric):
                raise ConfigError(f"{ctx.where(name)}: {name}: {value!r} is not a rubric")
            return rubric
        return Rubric.from_dict(value, source=f"{ctx.where(name)}: {name}")


BINDING = ("submission_field", "query_field", "reference_field")
"""The options of the binding (:meth:`~jurist.CriterionGrader.for_rubric`), not the grader."""


class RubricJudgeConfig(JudgeConfig):
    """A rubric judge's options (documented on :class:`~jurist.CriterionGrader`)."""

    rubric: Annotated[Rubric, RubricRef()] = option(
        example=lambda: Rubric.from_dict([{"name": "short", "requirement": "Is short"}]),
        describe="never",
    )
    models: Annotated[tuple[Any, ...], ModelSpecs()] = option(
        example=lambda: (get_model(scripted_spec("a")), get_model(scripted_spec("b"))),
        describe="never",
    )
    aggregation: str = option("majority", example="unanimous", describe="never")
    ordinal_aggregation: str = option("mean", example="median", describe="never")
    nominal_aggregation: str = option("mode", example="unanimous", describe="never")
    shuffle_options: bool = option(True, example=False, describe="never")
    seed: int = option(0, example=7, describe="never")
    auto_na_option: bool = option(True, example=False, describe="never")
    calls: Literal["per_item", "per_criterion"] = option(
        "per_item", example="per_criterion", describe="never"
    )
    cannot_assess: str = option("skip", example="zero", describe="never")
    partial_credit: float = option(0.5, example=0.25, describe="never", ge=0.0, le=1.0)
    explanations: bool = option(True, example=False, describe="never")
    instructions: str | None = option(None, example="Grade strictly.", describe="never")
    temperature: float | None = option(0.0, example=0.7, describe="never")
    max_tokens: int | None = option(None, example=64, describe="never", ge=1)
    reasoning: ReasoningOption = option(None, example=Reasoning(budget_tokens=2048))
    keep_reasoning: bool = option(True, example=False, describe="never")
    concurrency: int = option(32, example=4, describe="never", ge=1)
    name: str | None = option(None, example="mine", describe="never")
    submission_field: str = option("response", example="answer", describe="never")
    query_field: str | None = option("prompt", example="question", describe="never")
    reference_field: str | None = option(None, example="reference", describe="never")
    turn: Turn = option("last", example="all", describe="never")
    max_tool_chars: int | None = option(DEFAULT_MAX_TOOL_CHARS, example=50, describe="never", ge=1)


def config_of(judge: Any) -> RubricJudgeConfig:
    """The declaration of a rubric judge, read from its grader and binding."""
    info = judge.grader.describe()
    grader = judge.grader
    values: dict[str, Any] = {
        k: info[k] for k in RubricJudgeConfig.model_fields if k in info and k != "name"
    }
    values.update(
        rubric=judge.rubric,
        models=grader.models(),
        name=grader.name,
        temperature=getattr(grader, "temperature", 0.0),
        concurrency=getattr(grader, "concurrency", 32),
        turn=getattr(grader, "turn", "last"),
        keep_reasoning=getattr(grader, "keep_reasoning", True),
        max_tool_chars=getattr(grader, "max_tool_chars", DEFAULT_MAX_TOOL_CHARS),
        **{k: getattr(judge, k) for k in BINDING},
    )
    return RubricJudgeConfig.model_validate(values)


def refuse_weights(judge: Any) -> None:
    """A rubric judge with weighted judges cannot be stored yet (its entry has no weights)."""
    if any(spec.get("weight", 1.0) != 1.0 for spec in judge.grader.describe()["judges"]):
        raise ConfigError("cannot store a rubric judge with weighted judges yet")
