"""The codecs of declared fields that hold objects: how each is written in a catalog entry
and read back (see :mod:`jurist.judges._declare`).

- :class:`ModelSpec`: a model as ``model: provider:name`` and ``model_options`` (the backend
  options that rebuild it, never a secret: :meth:`~jurist.models.Model.rebuild_options`);
  pacing found on its stack is written as the judge's ``rate_key`` option;
- :class:`ModelSpecs`: several models as ``models: [...]`` sharing ``model_options``;
- :class:`TemplateRef`: a template by its registered name, or inline when it is another;
- :class:`Members` / :class:`Member`: judges inside a judge (a panel's, a cascade's tiers, a
  calibrated judge's), as catalog names or inline entries of any kind;
- a rubric's codec is the rubric judge's own (:mod:`jurist.judges.rubric._judge_config`).

>>> from jurist.models import get_model, with_limits
>>> from jurist.models._stack import limits_layer
>>> ModelSpec(rate_key="max_calls_per_min").dump("model", get_model("mock:j"))
{'model': 'mock:j'}
>>> paced = with_limits(get_model("mock:j"), limits_layer(rpm=30))
>>> ModelSpec(rate_key="max_calls_per_min").dump("model", paced)
{'model': 'mock:j', 'max_calls_per_min': 30}
>>> TemplateRef().dump("template", "likert")
{'template': 'likert'}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError
from pydantic.fields import FieldInfo

from jurist.errors import ConfigError
from jurist.judges._declare import Codec, LoadContext, entry_of
from jurist.models import Model, get_model

__all__ = [
    "JudgeModel",
    "Member",
    "Members",
    "ModelSpec",
    "ModelSpecs",
    "TemplateRef",
    "model_spec",
]


def _as_model(value: Any) -> Any:
    return value if isinstance(value, Model) else get_model(value)


JudgeModel = Annotated[Model, BeforeValidator(_as_model)]
"""A judge's model field: a :class:`~jurist.models.Model` (a spec or ``None`` is built)."""


def model_spec(model: Model) -> tuple[str, dict[str, Any], int | None]:
    """``provider:name``, the options that rebuild the backend, and the calls-per-minute
    pacing found on the stack around it (``None``: not paced)."""
    from jurist.models import LimitedModel, WrapperModel

    rate: int | None = None
    inner = model
    while isinstance(inner, WrapperModel):
        if isinstance(inner, LimitedModel) and inner.max_calls_per_min is not None:
            rate = int(inner.max_calls_per_min)
        inner = inner.wrapped
    try:
        options = inner.rebuild_options()  # the backend says what rebuilds it
    except ConfigError as e:
        raise ConfigError(f"cannot store a judge whose model cannot be rebuilt: {e}") from None
    return inner.spec, dict(options), rate


class ModelSpec(Codec):
    """One model, as ``model`` and ``model_options`` (and the pacing as ``rate_key``)."""

    takes_model = True

    def __init__(self, *, options_key: str = "model_options", rate_key: str | None = None):
        self.options_key = options_key
        self.rate_key = rate_key

    def entry_fields(self, name: str, info: FieldInfo) -> dict[str, tuple[Any, Any]]:
        return {
            name: (str | None, None),
            self.options_key: (dict[str, Any], Field(default_factory=dict)),
        }

    def dump(self, name: str, value: Any) -> dict[str, Any]:
        spec, options, rate = model_spec(value)
        out: dict[str, Any] = {name: spec}
        if options:
            out[self.options_key] = options
        if rate is not None and self.rate_key is not None:
            out[self.rate_key] = rate
        return out

    def load(self, name: str, entry: Mapping[str, Any], ctx: LoadContext) -> Any:
        if ctx.model is not None:
            return get_model(ctx.model)
        return _built(entry[name], entry[self.options_key], ctx.where(self.options_key))


class ModelSpecs(Codec):
    """Several models, as ``models: [provider:name, ...]`` sharing ``model_options``."""

    takes_model = True

    def __init__(self, *, options_key: str = "model_options"):
        self.options_key = options_key

    def entry_fields(self, name: str, info: FieldInfo) -> dict[str, tuple[Any, Any]]:
        return {
            name: (list[str], Field(min_length=1)),
            self.options_key: (dict[str, Any], Field(default_factory=dict)),
        }

    def dump(self, name: str, value: Any) -> dict[str, Any]:
        specs = [model_spec(m) for m in value]
        options = specs[0][1] if specs else {}
        if any(s[1] != options for s in specs):
            raise ConfigError(f"cannot store a judge whose {name} need different backend options")
        out: dict[str, Any] = {name: [s[0] for s in specs]}
        if options:
            out[self.options_key] = options
        return out

    def load(self, name: str, entry: Mapping[str, Any], ctx: LoadContext) -> Any:
        if ctx.model is not None:
            return (get_model(ctx.model),)
        where = ctx.where(self.options_key)
        return tuple(_built(m, entry[self.options_key], where) for m in entry[name])


def _built(spec: str | None, options: Mapping[str, Any], where: str) -> Model:
    try:
        return get_model(spec, **options)
    except TypeError as e:
        if "unexpected keyword argument" not in str(e):
            raise
        raise ConfigError(f"{where}: model_options: not an option of the backend ({e})") from None


class TemplateRef(Codec):
    """A template: its registered name, or the template inline when it is another (a
    judge's turn options are its own, so a template judged at another turn stays a name)."""

    def entry_fields(self, name: str, info: FieldInfo) -> dict[str, tuple[Any, Any]]:
        return {name: (str | dict[str, Any], info.default)}

    def dump(self, name: str, value: Any) -> dict[str, Any]:
        from jurist.templates import DEFAULT_MAX_TOOL_CHARS, list_templates

        if isinstance(value, str):
            return {name: value}
        plain = value.with_turn("last", max_tool_chars=DEFAULT_MAX_TOOL_CHARS)
        if list_templates().get(value.name) == plain:
            return {name: value.name}
        return {name: plain.model_dump(mode="json")}

    def load(self, name: str, entry: Mapping[str, Any], ctx: LoadContext) -> Any:
        from jurist.templates import Template, get_template, list_templates
        from jurist.templates._yaml import template_from_dict

        value = entry[name]
        where = f"{ctx.where(name)}: {name}"
        if isinstance(value, dict):
            default = ctx.name.rsplit(".", 1)[-1]
            if "messages" in value:
                return template_from_dict(value, source=where, default_name=default)
            try:
                return Template.model_validate({"name": default, **value})
            except ValidationError as e:
                err = e.errors()[0]
                key = ".".join(str(x) for x in err["loc"])
                raise ConfigError(f"{where}.{key}: {err['msg']}") from None
        if value.startswith("templates."):
            tpl = ctx.resolve(value)
            if not isinstance(tpl, Template):
                raise ConfigError(f"{where}: {value!r} is not a template")
            return tpl
        if value in list_templates():
            return value
        if value.lower().endswith((".yaml", ".yml")) and not Path(value).is_absolute():
            value = str((ctx.folder or Path()) / value)
        try:
            return get_template(value)
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None


class Members(Codec):
    """Judges inside a judge: each a catalog name or an inline entry (kind ``judge`` when
    it names none; ``drop_kind``: written without ``kind: judge``)."""

    def __init__(self, *, drop_kind: bool = False):
        self.drop_kind = drop_kind

    def entry_fields(self, name: str, info: FieldInfo) -> dict[str, tuple[Any, Any]]:
        return {name: (list[str | dict[str, Any]], Field(min_length=1))}

    def dump(self, name: str, value: Any) -> dict[str, Any]:
        out = []
        for judge in value:
            sub = entry_of(judge)
            if self.drop_kind and sub["kind"] == "judge":
                del sub["kind"]
            out.append(sub)
        return {name: out}

    def load(self, name: str, entry: Mapping[str, Any], ctx: LoadContext) -> Any:
        return tuple(_member(item, name, i, ctx) for i, item in enumerate(entry[name]))


class Member(Codec):
    """One judge inside a judge (a calibrated judge's): a catalog name or an inline entry."""

    def entry_fields(self, name: str, info: FieldInfo) -> dict[str, tuple[Any, Any]]:
        return {name: (str | dict[str, Any], ...)}

    def dump(self, name: str, value: Any) -> dict[str, Any]:
        return {name: entry_of(value)}

    def load(self, name: str, entry: Mapping[str, Any], ctx: LoadContext) -> Any:
        return _member(entry[name], name, None, ctx)


def _member(item: str | dict[str, Any], field: str, index: int | None, ctx: LoadContext) -> Any:
    from jurist.judges._protocol import ItemJudge

    if isinstance(item, str):
        judge = ctx.resolve(item)
    else:
        judge = ctx.member({"kind": "judge", **item}, field, index)
    if not isinstance(judge, ItemJudge):
        at = field if index is None else f"{field}[{index}]"
        raise ConfigError(
            f"{ctx.where(field)}: {at}: {item!r} is a {type(judge).__name__}, not a judge"
        )
    return judge
