"""Turning a judge, template or rubric object back into a catalog entry (for ``add``).

The entry holds what rebuilds the object: the model's ``provider:name`` and the backend
options that change its outputs (an OpenAI-compatible server's ``base_url``, an ``hf``
model's ``revision`` and ``dtype``) with those the backend gives back itself
(:meth:`~jurist.models.Model.rebuild_options`: the options given that differ from the
defaults), never a secret (API keys stay in the environment), the template by name when
it is the registered one and inline otherwise, and every judge parameter (a conversation
judge's ``turn`` and ``max_tool_chars`` too, where they are not the defaults).

>>> import jurist
>>> judge = jurist.LLMJudge("mock:j", template="likert", temperature=0.3)
>>> d = entry_of(judge)
>>> d["kind"], d["model"], d["template"], d["temperature"]
('judge', 'mock:j', 'likert', 0.3)
"""

from __future__ import annotations

from typing import Any

from jurist.errors import ConfigError
from jurist.models import Model, backend_info

__all__ = ["entry_of", "kind_of"]


def kind_of(obj: Any) -> str:
    """The entry kind ``obj`` is stored as."""
    from jurist.judges import LLMJudge, PairwiseJudge, Panel, RubricJudge
    from jurist.judges.rubric import Rubric
    from jurist.templates import Template
    from jurist.trust import CalibratedJudge, CascadeJudge

    for cls, kind in (
        (CalibratedJudge, "calibrated_judge"),
        (LLMJudge, "judge"),
        (PairwiseJudge, "pairwise_judge"),
        (Panel, "panel"),
        (CascadeJudge, "cascade"),
        (RubricJudge, "rubric_judge"),
        (Template, "template"),
        (Rubric, "rubric"),
    ):
        if isinstance(obj, cls):
            return kind
    raise ConfigError(
        f"cannot store a {type(obj).__name__} in the catalog: it takes an LLMJudge, "
        "PairwiseJudge, Panel, CascadeJudge, RubricJudge, CalibratedJudge, Template or Rubric"
    )


def entry_of(obj: Any, description: str | None = None) -> dict[str, Any]:
    """The catalog entry (a JSON/YAML-able mapping) that rebuilds ``obj``."""
    kind = kind_of(obj)
    out: dict[str, Any] = {"kind": kind}
    if description is not None:
        out["description"] = description
    if kind == "judge":
        out.update(_llm_judge(obj))
    elif kind == "pairwise_judge":
        inner = _llm_judge(obj.llm_judge)
        keys = ("model", "model_options", "template", "turn", "max_tool_chars")
        out.update({k: inner[k] for k in keys if k in inner})
        out.update(
            swap=obj.swap,
            consistency=obj.consistency,
            explanations=obj.llm_judge.explanations,
            temperature=obj.llm_judge.temperature,
            max_tokens=obj.llm_judge.max_tokens,
            concurrency=obj.concurrency,
            name=obj.name,
        )
        if "max_calls_per_min" in inner:
            out["max_calls_per_min"] = inner["max_calls_per_min"]
    elif kind == "panel":
        judges = []
        for judge in obj.judges:
            sub = entry_of(judge)
            if sub["kind"] == "judge":
                del sub["kind"]
            judges.append(sub)
        out.update(judges=judges, aggregation=obj.aggregation, name=obj.name)
        if obj.weights is not None:
            out["weights"] = [float(w) for w in obj.weights]
        out["concurrency"] = obj.concurrency
    elif kind == "cascade":
        if "confidence" in obj.describe():
            raise ConfigError(
                f"cannot store cascade {obj.name!r} in the catalog: its confidence function "
                "is code (the catalog keeps the default, outcome_confidence)"
            )
        tiers = [entry_of(tier) for tier in obj.tiers]
        thresholds = list(obj.thresholds) if obj.thresholds is not None else None
        out.update(tiers=tiers, thresholds=thresholds, name=obj.name)
        out["concurrency"] = obj.concurrency
    elif kind == "rubric_judge":
        out.update(_rubric_judge(obj))
    elif kind == "calibrated_judge":
        out.update(
            judge=entry_of(obj.inner),
            calibration=obj.calibration.model_dump(mode="json"),
            name=obj.name,
        )
    elif kind == "template":
        out["template"] = obj.model_dump(mode="json")
    else:
        out["rubric"] = obj.to_dict()
    return out


def _model_spec(model: Model) -> tuple[str, dict[str, Any], int | None]:
    from jurist.models import LimitedModel, WrapperModel

    rate: int | None = None
    inner = model
    while isinstance(inner, WrapperModel):
        if isinstance(inner, LimitedModel) and inner.max_calls_per_min is not None:
            rate = int(inner.max_calls_per_min)
        inner = inner.wrapped
    identity = inner.identity()
    provider = str(identity.get("provider", inner.provider))
    backend = backend_info(provider)  # what the backend declares (models/)
    if not backend.from_spec:
        raise ConfigError(
            f"cannot store a judge whose model is a {provider} object of this process; use "
            "a provider:name model"
        )
    # identity() values that are also backend options (a server's URL, an hf revision)
    options = {
        option: identity[key]
        for key, option in backend.identity_options.items()
        if identity.get(key) is not None
    }
    options.update(inner.rebuild_options())  # the backend says what rebuilds it
    return inner.spec, options, rate


def _llm_judge(judge: Any) -> dict[str, Any]:
    from jurist.judges._examples import dump_examples
    from jurist.templates import DEFAULT_MAX_TOOL_CHARS, list_templates

    (model,) = judge.models()
    spec, options, rate = _model_spec(model)
    out: dict[str, Any] = {"model": spec}
    if options:
        out["model_options"] = options
    tpl = judge.template
    # the conversation options are the judge's (its turn and max_tool_chars keys), not the
    # template's: a registered template judged at another turn is still stored by name
    plain = tpl.with_turn("last", max_tool_chars=DEFAULT_MAX_TOOL_CHARS)
    registered = list_templates().get(tpl.name)
    if registered is not None and registered == plain:
        out["template"] = tpl.name
    else:
        out["template"] = plain.model_dump(mode="json")
    out.update(_conversation_options(tpl.turn, tpl.max_tool_chars))
    has_schema = model.capabilities.json_schema
    output = "auto" if judge.json == has_schema or judge.template.json_only else "text"
    if judge.json and not has_schema and not judge.template.json_only:
        output = "json"
    out.update(
        explanations=judge.explanations,
        temperature=judge.temperature,
        max_tokens=judge.max_tokens,
        scoring=judge.scoring,
        output=output,
        concurrency=judge.concurrency,
        name=judge.name,
    )
    if judge.scoring != "parse":
        out.update(min_coverage=judge.min_coverage, low_coverage=judge.low_coverage)
    if judge.system_prompt is not None:
        out["system_prompt"] = judge.system_prompt
    if judge.extra_body:
        out["extra_body"] = dict(judge.extra_body)
    if judge.examples:
        out["examples"] = dump_examples(judge.examples)
    if rate is not None:
        out["max_calls_per_min"] = rate
    return out


def _rubric_judge(judge: Any) -> dict[str, Any]:
    info = judge.grader.describe(judge.rubric)
    models: list[str] = []
    options: dict[str, Any] = {}
    for i, (model, spec) in enumerate(zip(judge.models(), info["judges"], strict=True)):
        name, these, _ = _model_spec(model)
        models.append(name)
        if i == 0:
            options = these
        elif these != options:
            raise ConfigError(
                "cannot store a rubric judge whose models need different backend options"
            )
        if spec.get("weight", 1.0) != 1.0:
            raise ConfigError("cannot store a rubric judge with weighted judges yet")
    out: dict[str, Any] = {"rubric": info["rubric"], "models": models}
    if options:
        out["model_options"] = options
    for key in (
        "aggregation",
        "ordinal_aggregation",
        "nominal_aggregation",
        "shuffle_options",
        "seed",
        "auto_na_option",
        "calls",
        "cannot_assess",
        "partial_credit",
        "explanations",
        "instructions",
        "max_tokens",
    ):
        if key in info:
            out[key] = info[key]
    out.update(
        name=judge.grader.name,
        submission_field=judge.submission_field,
        query_field=judge.query_field,
        reference_field=judge.reference_field,
    )
    if info["judges"]:
        out["temperature"] = info["judges"][0].get("temperature")
    out.update(_conversation_options(judge.grader.turn, judge.grader.max_tool_chars))
    return out


def _conversation_options(turn: Any, max_tool_chars: int | None) -> dict[str, Any]:
    """A judge's ``turn`` and ``max_tool_chars`` where they are not the defaults."""
    from jurist.templates import DEFAULT_MAX_TOOL_CHARS

    out: dict[str, Any] = {}
    if turn != "last":
        out["turn"] = turn
    if max_tool_chars != DEFAULT_MAX_TOOL_CHARS:
        out["max_tool_chars"] = max_tool_chars
    return out
