"""The declaration of the rubric judge (catalog kind ``rubric_judge``): a
:class:`~jurist.CriterionGrader`'s options, its models and rubric, and the item fields of the
:class:`~jurist.judges.RubricJudge` it is bound as.

The grader keeps its settings as the grading code reads them; :func:`config_of` reads them
back into the declaration (the one place that names them) and :func:`judge_of` builds the
grader and binds it again, so the catalog entry, ``with_options`` and the run's kept entry
all come from :class:`RubricJudgeConfig`.

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

from typing import Annotated, Any, Literal

from jurist.errors import ConfigError
from jurist.judges._codecs import ModelSpecs, RubricRef
from jurist.judges._declare import JudgeConfig, option, register
from jurist.judges.rubric._grader import CriterionGrader
from jurist.judges.rubric._item_judge import RubricJudge
from jurist.judges.rubric._rubric import Rubric
from jurist.models import get_model
from jurist.templates import DEFAULT_MAX_TOOL_CHARS, Turn

__all__ = ["RubricJudgeConfig", "config_of", "judge_of"]

_FIELDS = ("submission_field", "query_field", "reference_field")
"""The options of the binding (:meth:`~jurist.CriterionGrader.for_rubric`), not the grader."""


class RubricJudgeConfig(JudgeConfig):
    """A rubric judge's options (documented on :class:`~jurist.CriterionGrader`)."""

    rubric: Annotated[Rubric, RubricRef()] = option(
        example=lambda: Rubric.from_dict([{"name": "short", "requirement": "Is short"}]),
        describe="never",
    )
    models: Annotated[tuple[Any, ...], ModelSpecs()] = option(
        example=lambda: (get_model("mock:a"), get_model("mock:b")), describe="never"
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
    concurrency: int = option(32, example=4, describe="never", ge=1)
    name: str | None = option(None, example="mine", describe="never")
    submission_field: str = option("response", example="answer", describe="never")
    query_field: str | None = option("prompt", example="question", describe="never")
    reference_field: str | None = option(None, example="reference", describe="never")
    turn: Turn = option("last", example="all", describe="never")
    max_tool_chars: int | None = option(DEFAULT_MAX_TOOL_CHARS, example=50, describe="never", ge=1)


def config_of(judge: RubricJudge) -> RubricJudgeConfig:
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
        max_tool_chars=getattr(grader, "max_tool_chars", DEFAULT_MAX_TOOL_CHARS),
        **{k: getattr(judge, k) for k in _FIELDS},
    )
    return RubricJudgeConfig.model_validate(values)


def refuse_weights(judge: RubricJudge) -> None:
    """A rubric judge with weighted judges cannot be stored yet (its entry has no weights)."""
    if any(spec.get("weight", 1.0) != 1.0 for spec in judge.grader.describe()["judges"]):
        raise ConfigError("cannot store a rubric judge with weighted judges yet")


def judge_of(config: RubricJudgeConfig) -> RubricJudge:
    """The grader ``config`` declares, bound to its rubric."""
    options = config.arguments()
    rubric, models = options.pop("rubric"), options.pop("models")
    binding = {k: options.pop(k) for k in _FIELDS}
    return CriterionGrader(list(models), **options).for_rubric(rubric, **binding)


register("rubric_judge", RubricJudgeConfig, RubricJudge)
