"""A judge kind is its configuration: declared once, everything else derived.

Each judge kind declares its parameters once, as a frozen pydantic model (a
:class:`JudgeConfig` subclass: the field names are the constructor's keywords and the
catalog entry's keys, the defaults live there and nowhere else) and registers it with
:func:`register`. From that one declaration come:

- the catalog entry (:func:`entry_of`): ``{"kind": ..., **options that differ from the
  defaults}``, objects (a model, a template, member judges) written by their field's
  :class:`Codec` (see :mod:`jurist.judges._codecs`);
- the schema of an entry file (:func:`entry_model`), which the catalog validates YAML with,
  and the judge an entry builds (:func:`build`);
- ``with_options`` (:meth:`Declared.with_options`: a copy of the configuration with some
  fields changed, checked as the constructor checks them);
- the settings of what the model is asked (:meth:`JudgeConfig.request_settings`: the
  options declared ``request=True`` go into every :class:`~jurist.types.Request` under
  their own name);
- the options a judge's ``describe()`` writes for a run manifest, whose equality is
  resume's comparison (:meth:`JudgeConfig.described`): each field says whether it is written
  ``"always"`` (the options runs have always recorded), only when ``"changed"`` from its
  default (the default for a new option, so older runs still resume), or ``"never"`` (how
  fast, not what: concurrency, pacing; or what the resolved template already shows).

A new option is one field in its kind's declaration (:func:`option`, with an example value
that the round-trip tests use), its test and its doc line.

>>> from typing import Literal
>>> class Toy(JudgeConfig):
...     strict: bool = option(False, example=True)
...     name: str | None = option(None, example="toy", describe="never")
>>> Toy(strict=True).entry()
{'strict': True}
>>> Toy().updated("Toy", {"strict": True}).described()
{'strict': True}
>>> Toy().updated("Toy", {"strictly": True})
Traceback (most recent call last):
...
jurist.errors.ConfigError: Toy.with_options: unknown option(s) ['strictly']; the options are \
['name', 'strict']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from jurist.errors import ConfigError

__all__ = [
    "Codec",
    "Declaration",
    "Declared",
    "JudgeConfig",
    "Kind",
    "LoadContext",
    "build",
    "config_error",
    "declaration_of",
    "default_of",
    "entry_model",
    "entry_of",
    "judge_kinds",
    "kind_of",
    "option",
    "register",
]

DescribeMode = Literal["always", "changed", "never"]


def option(
    default: Any = ...,
    *,
    example: Any,
    describe: DescribeMode = "changed",
    request: bool = False,
    default_factory: Callable[[], Any] | None = None,
    **constraints: Any,
) -> Any:
    """A declared option: its default, an ``example`` (a value other than the default, or a
    function that makes one, used by the round-trip tests), how ``describe()`` writes it,
    and pydantic constraints. ``request=True``: a setting of what the model is asked, sent
    with every call as the :class:`~jurist.types.Request` field of the same name (each
    backend translates it into its own parameters)."""
    mark = Declaration(example=example, describe=describe, request=request)
    if default_factory is not None:
        field = Field(default_factory=default_factory, **constraints)
    else:
        field = Field(default, **constraints)
    field.metadata.append(mark)
    return field


@dataclass(frozen=True)
class Declaration:
    """What :func:`option` adds to a field: its example and how ``describe()`` writes it."""

    example: Any
    describe: DescribeMode
    request: bool = False


def declaration_of(info: FieldInfo) -> Declaration:
    """The :class:`Declaration` of a field (a field declared without :func:`option` has the
    defaults: no example, written when changed)."""
    return next(
        (m for m in info.metadata if isinstance(m, Declaration)),
        Declaration(example=None, describe="changed"),
    )


def _mode(info: FieldInfo) -> DescribeMode:
    return declaration_of(info).describe


def codec_of(info: FieldInfo) -> Codec | None:
    """The :class:`Codec` a field is annotated with (``Annotated[T, SomeCodec()]``)."""
    return next((m for m in info.metadata if isinstance(m, Codec)), None)


class LoadContext(Protocol):
    """What a codec may ask the catalog while an entry is read back."""

    @property
    def name(self) -> str:
        """The entry's name (a judge's name when the entry gives none)."""

    @property
    def folder(self) -> Path | None:
        """The folder of the entry's file (a template file named relative to it)."""

    @property
    def model(self) -> Any:
        """A model object that replaces the entry's model(s), or ``None``."""

    def where(self, key: str) -> str:
        """``file:line`` of an entry key, for errors."""

    def resolve(self, name: str) -> Any:
        """The object a catalog name (``templates.x``, ``rubrics.x``, ``judges.x``) builds."""

    def member(self, data: dict[str, Any], field: str, index: int | None) -> Any:
        """The judge an inline entry inside field ``field`` (at ``index``) builds."""


class Codec:
    """How a field holding an object (a model, a template, judges) is written in an entry
    and read back. The default codec of a plain field is its JSON value."""

    takes_model: ClassVar[bool] = False
    """Whether a model object given to the catalog (``get(name, model=...)``) replaces it."""

    def entry_fields(self, name: str, info: FieldInfo) -> dict[str, tuple[Any, Any]]:
        """The entry keys this field is written as: key -> (type, default or FieldInfo)."""
        raise NotImplementedError

    def dump(self, name: str, value: Any) -> dict[str, Any]:
        """The entry keys for ``value``."""
        raise NotImplementedError

    def load(self, name: str, entry: Mapping[str, Any], ctx: LoadContext) -> Any:
        """The field's value from the (validated) entry keys."""
        raise NotImplementedError


class JudgeConfig(BaseModel):
    """The base of every judge kind's declaration (frozen, no unknown keys)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    keeps_alignment: ClassVar[bool] = False
    """Whether a catalog entry of this kind may keep ``jurist align``'s record."""

    def arguments(self) -> dict[str, Any]:
        """The fields as the judge's constructor takes them (objects, not dumps)."""
        return {name: getattr(self, name) for name in type(self).model_fields}

    def updated(self, who: str, changes: Mapping[str, Any]) -> Self:
        """A copy with ``changes``, checked as a new configuration is."""
        fields = type(self).model_fields
        unknown = sorted(set(changes) - set(fields))
        if unknown:
            raise ConfigError(
                f"{who}.with_options: unknown option(s) {unknown}; the options are {sorted(fields)}"
            )
        return checked(type(self), {**self.arguments(), **changes}, who)

    def entry(self) -> dict[str, Any]:
        """The catalog entry's keys: every field that differs from its default."""
        out: dict[str, Any] = {}
        for name, info in type(self).model_fields.items():
            value = getattr(self, name)
            codec = codec_of(info)
            if codec is not None:
                out.update(codec.dump(name, value))
            elif not _is_default(info, value):
                out[name] = self._json(name, value)
        return out

    def request_settings(self) -> dict[str, Any]:
        """The options sent with every call, by :class:`~jurist.types.Request` field."""
        return {
            name: getattr(self, name)
            for name, info in type(self).model_fields.items()
            if declaration_of(info).request
        }

    def described(self) -> dict[str, Any]:
        """The options ``describe()`` writes for a run manifest (see the module docs)."""
        out: dict[str, Any] = {}
        for name, info in type(self).model_fields.items():
            mode = _mode(info)
            value = getattr(self, name)
            if mode == "always" or (mode == "changed" and not _is_default(info, value)):
                codec = codec_of(info)
                out[name] = codec.dump(name, value).get(name) if codec else self._json(name, value)
        return out

    def _json(self, name: str, value: Any) -> Any:
        return self.model_dump(mode="json", include={name})[name]


def default_of(config: type[JudgeConfig], field: str) -> Any:
    """The declared default of ``field`` (for a constructor that keeps positional
    parameters: its default is read from the declaration, not written twice)."""
    return config.model_fields[field].get_default(call_default_factory=True)


def _is_default(info: FieldInfo, value: Any) -> bool:
    default = info.get_default(call_default_factory=True)
    if isinstance(value, tuple | list) and isinstance(default, tuple | list):
        return tuple(value) == tuple(default)
    return value is default or (type(value) is type(default) and bool(value == default))


C = TypeVar("C", bound=JudgeConfig)


def checked(cls: type[C], values: Mapping[str, Any], who: str) -> C:
    """``cls(**values)``, a validation problem as a :class:`~jurist.errors.ConfigError`."""
    try:
        return cls.model_validate(dict(values))
    except ValidationError as e:
        raise config_error(e, cls, who) from None


def config_error(error: ValidationError, cls: type[BaseModel], who: str) -> ConfigError:
    """The first problem of ``error`` in words: ``concurrency must be at least 1, got 0``."""
    err = error.errors()[0]
    key = ".".join(str(x) for x in err["loc"])
    got = err.get("input")
    info = cls.model_fields.get(str(err["loc"][0])) if err["loc"] else None
    bounds = {k: v for m in (info.metadata if info else ()) for k, v in _bounds(m).items()}
    kind = err["type"]
    if "ge" in bounds and "le" in bounds and kind in ("greater_than_equal", "less_than_equal"):
        return ConfigError(
            f"{key} must be between {bounds['ge']:g} and {bounds['le']:g}, got {got!r}"
        )
    if kind == "greater_than_equal":
        return ConfigError(f"{key} must be at least {bounds['ge']}, got {got!r}")
    if kind == "less_than_equal":
        return ConfigError(f"{key} must be at most {bounds['le']}, got {got!r}")
    if kind == "literal_error":  # pydantic's "'a', 'b' or 'c'" is already in words
        return ConfigError(f"{key} must be {(err.get('ctx') or {}).get('expected')}, got {got!r}")
    if kind == "extra_forbidden":
        return ConfigError(f"{who}: unknown option {key!r}")
    return ConfigError(f"{who}: {key}: {err['msg']}, got {got!r}")


def _bounds(meta: Any) -> dict[str, Any]:
    return {k: getattr(meta, k) for k in ("ge", "le") if getattr(meta, k, None) is not None}


# -- the registry of kinds -------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """A registered judge kind: its catalog name, declaration and judge class."""

    name: str
    config: type[JudgeConfig]
    judge: type[Any]
    builder: Callable[[Any], Any] | None = None

    def make(self, config: Any) -> Any:
        """The judge ``config`` declares (the kind's builder, else ``judge.from_config``)."""
        return (self.builder or self.judge.from_config)(config)

    @property
    def takes_model(self) -> bool:
        """Whether a model object given to the catalog replaces this kind's model(s)."""
        return any(
            (c := codec_of(info)) is not None and c.takes_model
            for info in self.config.model_fields.values()
        )


_KINDS: dict[str, Kind] = {}
_ENTRY_MODELS: dict[str, type[BaseModel]] = {}


def register(
    name: str,
    config: type[JudgeConfig],
    judge: type[Any],
    builder: Callable[[Any], Any] | None = None,
) -> None:
    """Register judge class ``judge``, declared by ``config``, as catalog kind ``name``
    (``builder``: what builds a judge from a configuration, when not ``judge.from_config``)."""
    _KINDS[name] = Kind(name, config, judge, builder)
    _ENTRY_MODELS.pop(name, None)


def judge_kinds() -> dict[str, Kind]:
    """Every registered kind, by catalog name (the kinds of the packages imported so far)."""
    return dict(_KINDS)


def kind_of(judge: Any) -> Kind | None:
    """The registered kind of ``judge`` (its class or the nearest registered base)."""
    by_class = {k.judge: k for k in _KINDS.values()}
    return next((by_class[c] for c in type(judge).__mro__ if c in by_class), None)


def entry_of(judge: Any) -> dict[str, Any]:
    """The catalog entry that rebuilds ``judge``: its kind and its declared options that
    differ from the defaults, with the judge's name (a stored judge keeps its name)."""
    kind = kind_of(judge)
    if kind is None:
        raise ConfigError(f"a {type(judge).__name__} is no registered judge kind")
    refuse = getattr(judge, "refuse_entry", None)
    if refuse is not None:
        refuse()
    out = {"kind": kind.name, **judge.config.entry()}
    if "name" in kind.config.model_fields:
        out["name"] = judge.name
    return out


def entry_model(name: str) -> type[BaseModel]:
    """The schema of a catalog entry of kind ``name``, derived from its declaration: the
    plain fields as declared, each object field as its codec writes it, plus ``kind``,
    ``description`` and (for a kind that keeps one) ``alignment``."""
    found = _ENTRY_MODELS.get(name)
    if found is not None:
        return found
    kind = _KINDS[name]
    fields: dict[str, Any] = {
        "description": (str, ""),
        "kind": (Literal[name], name),
    }
    for field, info in kind.config.model_fields.items():
        codec = codec_of(info)
        if codec is not None:
            fields.update(codec.entry_fields(field, info))
        else:
            fields[field] = (info.annotation, info)
    if kind.config.keeps_alignment:
        fields["alignment"] = (dict[str, Any] | None, None)
    model = create_model(
        f"{kind.config.__name__}Entry",
        __config__=ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True),
        **fields,
    )
    _ENTRY_MODELS[name] = model
    return model  # type: ignore[no-any-return]


def build(name: str, entry: BaseModel, ctx: LoadContext) -> Any:
    """The judge a validated entry (an :func:`entry_model` instance) of kind ``name`` builds."""
    kind = _KINDS[name]
    raw = dict(entry)
    values: dict[str, Any] = {}
    for field, info in kind.config.model_fields.items():
        codec = codec_of(info)
        if codec is not None:
            values[field] = codec.load(field, raw, ctx)
        elif field in raw:
            values[field] = raw[field]
    if "name" in values and values["name"] is None:
        values["name"] = ctx.name  # an entry's judge is named after the entry
    config = checked(kind.config, values, kind.judge.__name__)
    return kind.make(config)


class Declared:
    """What a declared judge kind shares: ``config`` (its declaration's values, the one place
    its options are kept), :meth:`from_config` and :meth:`with_options`."""

    config: Any

    @classmethod
    def from_config(cls, config: Any) -> Self:
        """The judge ``config`` declares (by default: the constructor given its fields)."""
        return cls(**config.arguments())

    def with_options(self, **changes: Any) -> Self:
        """A new judge with the same configuration except ``changes`` (constructor
        keywords); objects in the configuration (models, member judges) are shared."""
        return self._rebuilt(self.config.updated(type(self).__name__, changes))

    def _rebuilt(self, config: Any) -> Self:
        """The judge of ``config`` (a kind keeping state beyond its declaration adds it)."""
        return type(self).from_config(config)
