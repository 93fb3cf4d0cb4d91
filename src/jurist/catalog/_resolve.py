"""Turning a catalog entry into a ready object: a judge, a template or a rubric.

Building never loads model weights or opens a connection: backends load lazily on their
first call, so ``get`` works offline and a missing model is reported by its backend at
the first call. Names inside an entry (a panel's judges, a judge's ``templates.x``, a
rubric judge's ``rubrics.x``) are resolved through the same catalog roots; a name that
refers back to itself is an error.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from jurist.catalog._entries import (
    CalibratedJudgeEntry,
    CascadeEntry,
    JudgeEntry,
    PairwiseEntry,
    PanelEntry,
    RubricEntry,
    RubricJudgeEntry,
    TemplateEntry,
    entry_model,
)
from jurist.catalog._names import parse_name
from jurist.catalog._store import EntryFile, read_entry, validation_error
from jurist.errors import ConfigError, DataError
from jurist.models import Model, get_model

__all__ = ["build", "build_entry"]


def build(
    text: str,
    *,
    root: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    stack: tuple[str, ...] = (),
) -> Any:
    """The object for ``name[overrides]``; keyword ``overrides`` win over inline ones."""
    name, inline = parse_name(text)
    merged: dict[str, Any] = {**inline, **(overrides or {})}
    return build_entry(read_entry(name, root), merged, root=root, stack=stack)


def build_entry(
    entry: EntryFile,
    overrides: dict[str, Any] | None = None,
    *,
    root: str | Path | None = None,
    stack: tuple[str, ...] = (),
) -> Any:
    """Apply ``overrides`` to ``entry``, validate it, and build its object."""
    if entry.name in stack:
        chain = " -> ".join((*stack, entry.name))
        raise ConfigError(f"{entry.path}: catalog entries refer to each other in a loop: {chain}")
    stack = (*stack, entry.name)
    over = dict(overrides or {})
    kind = entry.data["kind"]
    model_obj = over.pop("model") if not isinstance(over.get("model"), str | None) else None
    data = dict(entry.data)
    if not isinstance(data.get("model"), str | None):
        # a model object kept in an in-memory entry (the Ray engine's); overrides win
        held = data.pop("model")
        model_obj = held if model_obj is None else model_obj
    if model_obj is not None and kind not in ("judge", "pairwise_judge", "rubric_judge"):
        raise ConfigError(f"{entry.name}: a {kind!r} entry has no model to replace")
    data = copy.deepcopy(data)
    _apply(data, over, entry)
    try:
        spec = entry_model(kind).model_validate(data)
    except ValidationError as e:
        raise validation_error(entry, e, over) from None
    try:
        return _make(spec, entry, model_obj, root, stack)
    except (ConfigError, DataError) as e:
        text = str(e)
        if str(entry.path) in text:
            raise
        raise type(e)(f"{entry.path}: {text}") from None


def _apply(data: dict[str, Any], overrides: dict[str, Any], entry: EntryFile) -> None:
    kind = entry.data["kind"]
    fields = [f for f in entry_model(kind).model_fields if f != "kind"]
    for key, value in overrides.items():
        parts = key.split(".")
        if parts[0] not in fields:
            raise ConfigError(
                f"{entry.name}[{key}=...]: {parts[0]!r} is not a key of a {kind!r} entry "
                f"(keys: {', '.join(fields)})"
            )
        node = data
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                inner = ".".join(parts[: i + 1])
                raise ConfigError(
                    f"{entry.name}[{key}=...]: {inner!r} is not a mapping, so {key!r} "
                    "cannot be set inside it"
                )
            node = child
        node[parts[-1]] = value


def _model(spec_model: str | None, options: dict[str, Any], model_obj: Any) -> Model:
    if model_obj is not None:
        return get_model(model_obj)
    return get_model(spec_model, **options)


def _make(
    spec: Any,
    entry: EntryFile,
    model_obj: Any,
    root: str | Path | None,
    stack: tuple[str, ...],
) -> Any:
    from jurist.judges import LLMJudge, PairwiseJudge, Panel

    if isinstance(spec, JudgeEntry):
        return LLMJudge(
            _model(spec.model, spec.model_options, model_obj),
            _template(spec.template, entry, root, stack),
            explanations=spec.explanations,
            instructions=spec.instructions,
            labels=spec.labels,
            system_prompt=spec.system_prompt,
            temperature=spec.temperature,
            max_tokens=spec.max_tokens,
            concurrency=spec.concurrency,
            max_calls_per_min=spec.max_calls_per_min,
            name=spec.name or entry.name,
            scoring=spec.scoring,
            top_logprobs=spec.top_logprobs,
            min_coverage=spec.min_coverage,
            low_coverage=spec.low_coverage,
            extra_body=spec.extra_body,
            output=spec.output,
            examples=spec.examples,
            turn=spec.turn,
            max_tool_chars=spec.max_tool_chars,
        )
    if isinstance(spec, PairwiseEntry):
        return PairwiseJudge(
            _model(spec.model, spec.model_options, model_obj),
            _template(spec.template, entry, root, stack),
            swap=spec.swap,
            consistency=spec.consistency,
            explanations=spec.explanations,
            temperature=spec.temperature,
            max_tokens=spec.max_tokens,
            max_calls_per_min=spec.max_calls_per_min,
            concurrency=spec.concurrency,
            name=spec.name or entry.name,
            turn=spec.turn,
            max_tool_chars=spec.max_tool_chars,
        )
    if isinstance(spec, PanelEntry):
        judges = [_panel_judge(j, i, entry, root, stack) for i, j in enumerate(spec.judges)]
        return Panel(
            judges,
            aggregation=spec.aggregation,
            weights=spec.weights,
            name=spec.name or entry.name,
            concurrency=spec.concurrency,
        )
    if isinstance(spec, CascadeEntry):
        from jurist.trust import CascadeJudge

        tiers = [_panel_judge(t, i, entry, root, stack, "tiers") for i, t in enumerate(spec.tiers)]
        return CascadeJudge(
            tiers,
            spec.thresholds,
            name=spec.name or entry.name,
            concurrency=spec.concurrency,
        )
    if isinstance(spec, RubricJudgeEntry):
        return _rubric_judge(spec, entry, model_obj, root, stack)
    if isinstance(spec, CalibratedJudgeEntry):
        return _calibrated_judge(spec, entry, root, stack)
    if isinstance(spec, TemplateEntry):
        return _template(spec.template, entry, root, stack)
    assert isinstance(spec, RubricEntry)
    from jurist.judges.rubric import Rubric

    return Rubric.from_dict(spec.rubric, source=f"{entry.where('rubric')}: rubric")


def _calibrated_judge(
    spec: CalibratedJudgeEntry, entry: EntryFile, root: str | Path | None, stack: tuple[str, ...]
) -> Any:
    from jurist.trust import CalibratedJudge, Calibration

    if isinstance(spec.judge, str):
        judge = build(spec.judge, root=root, stack=stack)
    else:
        data = dict(spec.judge)
        data.setdefault("kind", "judge")
        entry_model(data["kind"])
        inner = EntryFile(
            name=f"{entry.name}.judge",
            path=entry.path,
            source=entry.source,
            data=data,
            lines={k: entry.lines.get("judge", 0) for k in data},
        )
        judge = build_entry(inner, root=root, stack=stack)
    try:
        calibration = Calibration.model_validate(spec.calibration)
    except ValidationError as e:
        raise ConfigError(f"{entry.where('calibration')}: not a calibration: {e}") from None
    return CalibratedJudge(judge, calibration, name=spec.name or entry.name)


def _panel_judge(
    item: str | dict[str, Any],
    index: int,
    entry: EntryFile,
    root: str | Path | None,
    stack: tuple[str, ...],
    field: str = "judges",
) -> Any:
    from jurist.judges import ItemJudge

    if isinstance(item, str):
        judge = build(item, root=root, stack=stack)
    else:
        data = {"kind": "judge", **item}
        inner = EntryFile(
            name=f"{entry.name}.{field}[{index}]",
            path=entry.path,
            source=entry.source,
            data=data,
            lines={k: entry.lines.get(field, 0) for k in data},
        )
        entry_model(data["kind"])
        judge = build_entry(inner, root=root, stack=stack)
    if not isinstance(judge, ItemJudge):
        raise ConfigError(
            f"{entry.where(field)}: {field}[{index}]: {item!r} is a {type(judge).__name__}, "
            "not a judge"
        )
    return judge


def _template(
    value: str | dict[str, Any],
    entry: EntryFile,
    root: str | Path | None,
    stack: tuple[str, ...],
) -> Any:
    from jurist.templates import Template, get_template
    from jurist.templates._yaml import template_from_dict

    if isinstance(value, dict):
        source = f"{entry.where('template')}: template"
        default = entry.name.rsplit(".", 1)[-1]
        if "messages" in value:
            return template_from_dict(value, source=source, default_name=default)
        try:
            return Template.model_validate({"name": default, **value})
        except ValidationError as e:
            err = e.errors()[0]
            key = ".".join(str(x) for x in err["loc"])
            raise ConfigError(f"{source}.{key}: {err['msg']}") from None
    if value.startswith("templates."):
        tpl = build(value, root=root, stack=stack)
        if not isinstance(tpl, Template):
            raise ConfigError(f"{entry.where('template')}: template: {value!r} is not a template")
        return tpl
    if value.lower().endswith((".yaml", ".yml")) and not Path(value).is_absolute():
        value = str(entry.path.parent / value)
    try:
        return get_template(value)
    except ConfigError as e:
        raise ConfigError(f"{entry.where('template')}: template: {e}") from None


def _rubric_judge(
    spec: RubricJudgeEntry,
    entry: EntryFile,
    model_obj: Any,
    root: str | Path | None,
    stack: tuple[str, ...],
) -> Any:
    from jurist.judges.rubric import CriterionGrader, Rubric

    if isinstance(spec.rubric, str):
        rubric = build(spec.rubric, root=root, stack=stack)
        if not isinstance(rubric, Rubric):
            raise ConfigError(f"{entry.where('rubric')}: rubric: {spec.rubric!r} is not a rubric")
    else:
        rubric = Rubric.from_dict(spec.rubric, source=f"{entry.where('rubric')}: rubric")
    models = (
        [get_model(model_obj)]
        if model_obj is not None
        else [get_model(m, **spec.model_options) for m in spec.models]
    )
    grader = CriterionGrader(
        models,
        aggregation=spec.aggregation,
        ordinal_aggregation=spec.ordinal_aggregation,
        nominal_aggregation=spec.nominal_aggregation,
        shuffle_options=spec.shuffle_options,
        seed=spec.seed,
        auto_na_option=spec.auto_na_option,
        calls=spec.calls,
        cannot_assess=spec.cannot_assess,  # type: ignore[arg-type]
        partial_credit=spec.partial_credit,
        explanations=spec.explanations,
        instructions=spec.instructions,
        temperature=spec.temperature,
        max_tokens=spec.max_tokens,
        concurrency=spec.concurrency,
        name=spec.name or entry.name,
        turn=spec.turn,
        max_tool_chars=spec.max_tool_chars,
    )
    return grader.for_rubric(
        rubric,
        submission_field=spec.submission_field,
        query_field=spec.query_field,
        reference_field=spec.reference_field,
    )
