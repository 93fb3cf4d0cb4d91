"""The catalog's entry files: one pydantic model per kind of entry.

Every entry is a YAML mapping with a ``kind`` and a one-line ``description``; the other
keys depend on the kind (unknown keys are errors, so a typo never goes unnoticed):

- ``judge`` (an :class:`~jurist.LLMJudge`): ``model`` (``provider:name``; omitted: the
  default model), ``model_options`` (backend options: ``base_url``, ``dtype``...),
  ``template`` (a built-in template name, a catalog name ``templates.x``, or an inline
  template mapping) and the judge's parameters (``temperature``, ``max_tokens``,
  ``explanations``, ``scoring``, ``instructions``, ``labels``, ``system_prompt``,
  ``extra_body``, ``output``, ``top_logprobs``, ``min_coverage``, ``low_coverage``,
  ``concurrency``, ``max_calls_per_min``, ``name``, ``examples``: few-shot examples,
  each ``{item: {...}, verdict: ...}``) and, for conversation items, ``turn`` (``last``,
  ``all`` or a reply's index) and ``max_tool_chars``;
- ``pairwise_judge`` (a :class:`~jurist.PairwiseJudge`): ``model``, ``model_options``,
  ``template``, ``swap``, ``consistency``, ``turn``, ``max_tool_chars`` and sampling
  parameters;
- ``panel`` (a :class:`~jurist.Panel`): ``judges`` (catalog names, overrides allowed, or
  inline judge entries), ``aggregation``, ``weights``;
- ``cascade`` (a :class:`~jurist.trust.CascadeJudge`): ``tiers`` (as a panel's
  ``judges``, cheapest first) and ``thresholds`` (one per tier, ``null`` keeps nothing);
- ``rubric_judge`` (a :class:`~jurist.CriterionGrader` bound to a rubric): ``rubric`` (a
  catalog name ``rubrics.x`` or inline rubric data), ``models`` (the grader's judges),
  the grader's settings (``turn`` and ``max_tool_chars`` too) and the item fields;
- ``calibrated_judge`` (a :class:`~jurist.trust.CalibratedJudge`): ``judge`` (a catalog
  name or an inline entry of any judge kind) and ``calibration`` (the fitted map, the label
  values and ``fitted_on``: a fingerprint of the items it was fitted on), as
  ``jurist calibrate --save`` writes it;
- ``judge`` and ``calibrated_judge`` entries saved by ``jurist align`` also keep
  ``alignment``: the record of the alignment (the data it was fitted on, the examples
  chosen, held-out agreement before and after); it is not used to build the judge;
- ``template``: ``template`` (the YAML template format of :func:`jurist.load_template`,
  with ``messages``, or a full dump of a :class:`~jurist.Template`);
- ``rubric``: ``rubric`` (the format of :meth:`jurist.Rubric.from_dict`).

>>> entry_model("judge").model_validate({"kind": "judge", "template": "likert"}).temperature
0.0
>>> sorted(entry_model("panel").model_fields)[:3]
['aggregation', 'concurrency', 'description']
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from jurist.errors import ConfigError
from jurist.templates import DEFAULT_MAX_TOOL_CHARS

__all__ = [
    "KINDS",
    "CalibratedJudgeEntry",
    "Entry",
    "JudgeEntry",
    "PairwiseEntry",
    "PanelEntry",
    "RubricEntry",
    "RubricJudgeEntry",
    "TemplateEntry",
    "entry_model",
]


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""


class _ModelKeys(_Base):
    model: str | None = None
    model_options: dict[str, Any] = Field(default_factory=dict)


class _Conversation(_Base):
    """How a judge reads conversation items: the turn judged, the tool text kept."""

    turn: int | Literal["last", "all"] = "last"
    max_tool_chars: int | None = Field(default=DEFAULT_MAX_TOOL_CHARS, ge=1)


class JudgeEntry(_ModelKeys, _Conversation):
    """A single-answer judge: model + template + parameters."""

    kind: Literal["judge"] = "judge"
    template: str | dict[str, Any] = "true_false_uncertain"
    explanations: bool = False
    instructions: str | None = None
    labels: dict[str, float] | None = None
    system_prompt: str | None = None
    temperature: float | None = 0.0
    max_tokens: int | None = Field(default=None, ge=1)
    concurrency: int = Field(default=32, ge=1)
    max_calls_per_min: int | None = Field(default=None, ge=1)
    name: str | None = None
    scoring: Literal["parse", "logprobs", "auto"] = "parse"
    top_logprobs: int = Field(default=20, ge=1)
    min_coverage: float = Field(default=0.5, ge=0.0, le=1.0)
    low_coverage: Literal["fail", "flag"] = "fail"
    extra_body: dict[str, Any] = Field(default_factory=dict)
    output: Literal["auto", "text", "json"] = "auto"
    examples: list[dict[str, Any]] = Field(default_factory=list)
    alignment: dict[str, Any] | None = None


class PairwiseEntry(_ModelKeys, _Conversation):
    """A pairwise judge: which of two responses is better, in both orders by default."""

    kind: Literal["pairwise_judge"] = "pairwise_judge"
    template: str | dict[str, Any] = "mt_bench_pair"
    swap: bool = True
    consistency: Literal["tie", "inconsistent"] = "tie"
    explanations: bool = False
    temperature: float | None = 0.0
    max_tokens: int | None = Field(default=None, ge=1)
    concurrency: int = Field(default=16, ge=1)
    max_calls_per_min: int | None = Field(default=None, ge=1)
    name: str | None = None


class PanelEntry(_Base):
    """Several judges combined: catalog names or inline judge entries."""

    kind: Literal["panel"] = "panel"
    judges: list[str | dict[str, Any]] = Field(min_length=1)
    aggregation: Literal["mean", "median", "min", "max", "majority", "weighted"] = "mean"
    weights: list[float] | None = None
    concurrency: int = Field(default=16, ge=1)
    name: str | None = None


class CascadeEntry(_Base):
    """Judges in tiers, cheapest first, each deciding what it is confident of."""

    kind: Literal["cascade"] = "cascade"
    tiers: list[str | dict[str, Any]] = Field(min_length=1)
    thresholds: list[float | None] | None = None
    concurrency: int = Field(default=16, ge=1)
    name: str | None = None


class RubricJudgeEntry(_Conversation):
    """A rubric grader bound to a rubric, judging one item at a time."""

    kind: Literal["rubric_judge"] = "rubric_judge"
    rubric: str | dict[str, Any] | list[Any]
    models: list[str] = Field(min_length=1)
    model_options: dict[str, Any] = Field(default_factory=dict)
    aggregation: str = "majority"
    ordinal_aggregation: str = "mean"
    nominal_aggregation: str = "mode"
    shuffle_options: bool = True
    seed: int = 0
    auto_na_option: bool = True
    calls: Literal["per_item", "per_criterion"] = "per_item"
    cannot_assess: str = "skip"
    partial_credit: float = Field(default=0.5, ge=0.0, le=1.0)
    explanations: bool = True
    instructions: str | None = None
    temperature: float | None = 0.0
    max_tokens: int | None = Field(default=None, ge=1)
    concurrency: int = Field(default=32, ge=1)
    name: str | None = None
    submission_field: str = "response"
    query_field: str | None = "prompt"
    reference_field: str | None = None


class CalibratedJudgeEntry(_Base):
    """A judge whose scores go through a fitted calibration (``jurist calibrate``)."""

    kind: Literal["calibrated_judge"] = "calibrated_judge"
    judge: str | dict[str, Any]
    calibration: dict[str, Any]
    name: str | None = None
    alignment: dict[str, Any] | None = None


class TemplateEntry(_Base):
    """A prompt template."""

    kind: Literal["template"] = "template"
    template: dict[str, Any]


class RubricEntry(_Base):
    """A rubric: its criteria (and sections, guidelines)."""

    kind: Literal["rubric"] = "rubric"
    rubric: dict[str, Any] | list[Any]


Entry = (
    JudgeEntry
    | PairwiseEntry
    | PanelEntry
    | RubricJudgeEntry
    | CalibratedJudgeEntry
    | CascadeEntry
    | RubricJudgeEntry
    | TemplateEntry
    | RubricEntry
)

KINDS: dict[str, type[_Base]] = {
    "judge": JudgeEntry,
    "pairwise_judge": PairwiseEntry,
    "panel": PanelEntry,
    "cascade": CascadeEntry,
    "rubric_judge": RubricJudgeEntry,
    "calibrated_judge": CalibratedJudgeEntry,
    "template": TemplateEntry,
    "rubric": RubricEntry,
}


def entry_model(kind: Any) -> type[_Base]:
    """The entry class of ``kind``, or a ConfigError listing the kinds."""
    model = KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ConfigError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    return model
