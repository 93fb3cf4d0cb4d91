"""The grader definitions, as OpenAI's graders API reference spells them, as pydantic
models (one per ``type``), and the reading of a grader file.

A file holds one grader object, a list of them, or an eval (an object with
``testing_criteria``: its list of graders). Fields the API carried that change no grade
(``id``, ``image_tag``, ...) are accepted and ignored; a missing or mistyped field is an
error naming the grader and the field.

>>> g = parse_grader({"type": "string_check", "name": "city", "operation": "ilike",
...                   "input": "{{ sample.output_text }}", "reference": "paris"})
>>> g.type, g.operation
('string_check', 'ilike')
>>> parse_grader({"type": "string_check", "name": "x", "input": "a", "reference": "b",
...               "operation": "neq"})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
jurist.errors.ConfigError: grader 'x' (string_check): operation: Input should be 'eq', ...
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from jurist.compat.openai_graders._formula import Formula
from jurist.compat.openai_graders._similarity import Metric
from jurist.compat.openai_graders._template import check_template
from jurist.errors import ConfigError

__all__ = [
    "Grader",
    "InputMessage",
    "LabelModelGrader",
    "MultiGrader",
    "PythonGrader",
    "SamplingParams",
    "ScoreModelGrader",
    "StringCheckGrader",
    "TextSimilarityGrader",
    "parse_grader",
    "read_graders",
]

MAX_FILE_BYTES = 4_000_000
MAX_SOURCE_BYTES = 256_000
"""A python grader's source, at most (OpenAI's own bound)."""


class _Base(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str = ""


class StringCheckGrader(_Base):
    type: Literal["string_check"]
    input: str
    reference: str
    operation: Literal["eq", "ne", "like", "ilike"]

    @model_validator(mode="after")
    def _templates(self) -> StringCheckGrader:
        check_template(self.input)
        check_template(self.reference)
        return self


class TextSimilarityGrader(_Base):
    type: Literal["text_similarity"]
    input: str
    reference: str
    evaluation_metric: Metric
    pass_threshold: float | None = None

    @model_validator(mode="after")
    def _templates(self) -> TextSimilarityGrader:
        check_template(self.input)
        check_template(self.reference)
        return self


class InputMessage(BaseModel):
    """One message of a model grader's ``input``; ``content`` is text or a text part
    (``{"type": "input_text", "text": ...}``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    role: Literal["system", "developer", "user", "assistant"]
    content: str | dict[str, Any]
    type: Literal["message"] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        kind = self.content.get("type")
        if kind in ("input_text", "output_text") and isinstance(self.content.get("text"), str):
            return str(self.content["text"])
        raise ConfigError(
            f"a model grader's message content of type {kind!r} is not supported here "
            "(text only: a string, input_text or output_text)"
        )

    @model_validator(mode="after")
    def _templates(self) -> InputMessage:
        check_template(self.text)
        return self


class SamplingParams(BaseModel):
    """A model grader's ``sampling_params``; the guide spells the token bound
    ``max_completions_tokens``, the API reference ``max_completion_tokens``: both read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int | None = None
    top_p: float | None = None
    temperature: float | None = None
    max_completion_tokens: int | None = Field(default=None, ge=1)
    max_completions_tokens: int | None = Field(default=None, ge=1)
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None

    @property
    def max_tokens(self) -> int | None:
        return self.max_completion_tokens or self.max_completions_tokens


class ScoreModelGrader(_Base):
    type: Literal["score_model"]
    input: tuple[InputMessage, ...] = Field(min_length=1)
    model: str
    range: tuple[float, float] = (0.0, 1.0)
    pass_threshold: float | None = None
    sampling_params: SamplingParams | None = None

    @model_validator(mode="after")
    def _range(self) -> ScoreModelGrader:
        if not self.range[0] < self.range[1]:
            raise ValueError(f"range must be [low, high] with low < high, got {list(self.range)}")
        return self


class LabelModelGrader(_Base):
    type: Literal["label_model"]
    input: tuple[InputMessage, ...] = Field(min_length=1)
    model: str
    labels: tuple[str, ...] = Field(min_length=1)
    passing_labels: tuple[str, ...] = Field(min_length=1)
    sampling_params: SamplingParams | None = None

    @model_validator(mode="after")
    def _subset(self) -> LabelModelGrader:
        extra = [x for x in self.passing_labels if x not in self.labels]
        if extra:
            raise ValueError(f"passing_labels {extra} are not among labels {list(self.labels)}")
        return self


class PythonGrader(_Base):
    type: Literal["python"]
    source: str = Field(max_length=MAX_SOURCE_BYTES)
    pass_threshold: float | None = None


Leaf = Annotated[
    StringCheckGrader | TextSimilarityGrader | ScoreModelGrader | LabelModelGrader | PythonGrader,
    Field(discriminator="type"),
]


class MultiGrader(_Base):
    type: Literal["multi"]
    _formula: Formula = PrivateAttr()
    graders: dict[str, Leaf]
    calculate_output: str

    @model_validator(mode="before")
    @classmethod
    def _named(cls, data: Any) -> Any:
        """A list of graders (the API reference's example) is keyed by each one's name."""
        if isinstance(data, Mapping) and isinstance(data.get("graders"), list):
            named: dict[str, Any] = {}
            for i, g in enumerate(data["graders"]):
                key = g.get("name") if isinstance(g, Mapping) else None
                if not isinstance(key, str) or not key.isidentifier() or key in named:
                    raise ValueError(
                        f"graders[{i}]: a list's graders are named by 'name', which must be a "
                        "unique identifier; key them in an object instead"
                    )
                named[key] = g
            data = {**data, "graders": named}
        return data

    @model_validator(mode="after")
    def _check_formula(self) -> MultiGrader:
        if not self.graders:
            raise ValueError("graders: a multi grader needs at least one grader")
        # parsed once here, so a bad formula fails at load
        self._formula = Formula.parse(self.calculate_output, names=set(self.graders))
        return self

    @property
    def formula(self) -> Formula:
        return self._formula


Grader = Annotated[Leaf | MultiGrader, Field(discriminator="type")]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(Grader)


def parse_grader(data: Any, where: str = "") -> Any:
    """One grader object as its model; errors name the grader, its type and the field."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}a grader is a JSON object, not {type(data).__name__}")
    label = f"{where}grader {data.get('name')!r} ({data.get('type')})"
    if data.get("type") == "multi" and isinstance(data.get("graders"), Mapping | list):
        subs = data["graders"]
        for key, sub in subs.items() if isinstance(subs, Mapping) else enumerate(subs):
            if isinstance(sub, Mapping) and sub.get("type") == "multi":
                raise ConfigError(f"{label}: graders.{key}: a multi grader cannot hold another")
    try:
        return _ADAPTER.validate_python(dict(data))
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"][1:] if p not in _TYPES) or "grader"
        raise ConfigError(f"{label}: {loc}: {first['msg']}") from None
    except ConfigError as e:
        raise ConfigError(f"{label}: {e}") from None


_TYPES = {"string_check", "text_similarity", "score_model", "label_model", "python", "multi"}


def read_graders(source: str | Path | Mapping[str, Any] | list[Any]) -> list[Any]:
    """The graders in ``source``: a path to a JSON (or YAML) file, or the decoded data:
    one grader, a list of graders, or an eval with ``testing_criteria``."""
    where = ""
    data: Any = source
    if isinstance(source, str | Path):
        path = Path(source)
        where = f"{path}: "
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise ConfigError(
                    f"{path}: {size} bytes (a grader file is at most {MAX_FILE_BYTES})"
                )
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"{path}: cannot read the grader file: {e.strerror}") from None
        try:
            data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError) as e:
            raise ConfigError(
                f"{path}: not valid {path.suffix.lstrip('.') or 'JSON'}: {e}"
            ) from None
    if isinstance(data, Mapping) and "testing_criteria" in data:
        data = data["testing_criteria"]
    items = data if isinstance(data, list) else [data]
    if not items:
        raise ConfigError(f"{where}no graders")
    return [
        parse_grader(g, where=f"{where}[{i}] " if isinstance(data, list) else where)
        for i, g in enumerate(items)
    ]
