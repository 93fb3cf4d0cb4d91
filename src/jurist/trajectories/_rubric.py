""":class:`TrajectoryRubric`: deterministic checks and LLM criteria in one rubric.

A trajectory rubric lists **checks** (criteria that a Python check decides: see
:mod:`jurist.trajectories._checks`) beside ordinary rubric **criteria** (judged by the
models of a :class:`~jurist.CriterionGrader` over the rendered trajectory). In a file::

    guidelines: The agent books restaurants for users.
    checks:
      - name: searched_first
        check: {kind: tool_sequence, tools: [search, book], mode: in_order}
      - name: few_steps
        weight: 5
        check: {kind: step_count, max: 6}
    criteria:
      - name: grounded_answer
        requirement: The final answer states only what the tool results support
    steps: {name: sound_steps, weight: 10}

Each check becomes a binary criterion (MET when it passes) with one vote from the judge id
``"check"``, its reason the check's reason. ``steps`` adds a criterion judged step by step
(a :class:`~jurist.trajectories.StepJudge`): its options are the step template's verdicts
(``Good`` / ``Neutral`` / ``Bad``) and its vote is the verdict of the weakest step, so one
bad step costs the criterion. The grade is assembled with the grader's aggregation and
scoring like any other rubric, so checks, step verdicts and judges weigh in together.

>>> rubric = TrajectoryRubric.from_dict({"checks": [
...     {"name": "searched", "check": {"kind": "tool_used", "tool": "search"}}]})
>>> [c.name for c in rubric.checks], rubric.rubric is None
(['searched'], True)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from jurist.errors import ConfigError
from jurist.judges.rubric import Criterion, Rubric
from jurist.judges.rubric._loader import load_yaml
from jurist.trajectories._checks import CheckSpec, CustomCheck

__all__ = ["CheckCriterion", "StepsCriterion", "TrajectoryRubric"]


class CheckCriterion(BaseModel):
    """A rubric criterion decided by a check: its name, the check, its weight, and the
    requirement shown in reports (default: what the check checks)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    name: str = Field(min_length=1)
    check: CheckSpec | CustomCheck
    weight: float = 10.0
    requirement: str | None = None

    def criterion(self) -> Criterion:
        """The binary rubric criterion this check stands for."""
        return Criterion(
            name=self.name,
            requirement=self.requirement or self.check.describe(),
            weight=self.weight,
        )

    def to_dict(self) -> dict[str, Any]:
        check = (
            {"kind": "custom", "description": self.check.description}
            if isinstance(self.check, CustomCheck)
            else self.check.model_dump(mode="json")
        )
        out: dict[str, Any] = {"name": self.name, "weight": self.weight, "check": check}
        if self.requirement is not None:
            out["requirement"] = self.requirement
        return out


class StepsCriterion(BaseModel):
    """The criterion judged step by step: its name, weight and requirement; its vote is the
    verdict of the weakest step."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(default="sound_steps", min_length=1)
    weight: float = 10.0
    requirement: str = "Every step is a sound move toward the task (the weakest step decides)"


class TrajectoryRubric(BaseModel):
    """Checks, (optionally) an LLM rubric and a step-by-step criterion; names are unique
    across them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    checks: tuple[CheckCriterion, ...] = ()
    rubric: Rubric | None = None
    steps: StepsCriterion | None = None

    @model_validator(mode="after")
    def _names(self) -> TrajectoryRubric:
        if not self.checks and self.rubric is None and self.steps is None:
            raise ValueError("a trajectory rubric needs checks, criteria, steps or some of them")
        seen: set[str] = set()
        names = [c.name for c in self.checks]
        if self.rubric is not None:
            names += self.rubric.criterion_names()
        if self.steps is not None:
            names.append(self.steps.name)
        for name in names:
            if name in seen:
                raise ValueError(f"the name {name!r} is given to two criteria")
            seen.add(name)
        return self

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<rubric>") -> TrajectoryRubric:
        """From the mapping a rubric file holds: ``checks`` plus the usual rubric keys."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: a trajectory rubric must be a mapping")
        rest = {k: v for k, v in data.items() if k not in ("checks", "steps")}
        raw_checks = data.get("checks") or []
        if not isinstance(raw_checks, list):
            raise ConfigError(f"{source}: checks must be a list")
        checks = []
        for i, raw in enumerate(raw_checks):
            name = raw.get("name") if isinstance(raw, Mapping) else None
            try:
                checks.append(CheckCriterion.model_validate(raw))
            except ValidationError as e:
                first = e.errors()[0]
                field = ".".join(str(p) for p in first["loc"] if "[" not in str(p))
                raise ConfigError(
                    f"{source}: check {i + 1}{f' ({name!r})' if name else ''}: {field}: "
                    f"{first['msg']}"
                ) from None
        rubric = Rubric.from_dict(rest) if rest.get("criteria") else None
        if rest and rubric is None and set(rest) - {"name"}:
            raise ConfigError(f"{source}: {sorted(rest)} given without criteria")
        try:
            steps = (
                None if data.get("steps") is None else StepsCriterion.model_validate(data["steps"])
            )
        except ValidationError as e:
            first = e.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"{source}: steps: {field}: {first['msg']}") from None
        try:
            return cls(checks=tuple(checks), rubric=rubric, steps=steps)
        except ValidationError as e:
            raise ConfigError(f"{source}: {e.errors()[0]['msg']}") from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> TrajectoryRubric:
        """From a YAML (or JSON) file: see the module doc."""
        p = Path(path)
        return cls.from_dict(_read(p), source=str(p))

    @classmethod
    def from_file_if_trajectory(cls, path: str | Path) -> TrajectoryRubric | None:
        """The trajectory rubric in the file when it has ``checks`` or ``steps``, else None
        (a plain rubric, for :meth:`jurist.Rubric.from_file`)."""
        p = Path(path)
        data = _read(p)
        if isinstance(data, Mapping) and ("checks" in data or "steps" in data):
            return cls.from_dict(data, source=str(p))
        return None

    def to_dict(self) -> dict[str, Any]:
        """The rubric in the file format (custom checks as their description)."""
        out: dict[str, Any] = {"checks": [c.to_dict() for c in self.checks]}
        if self.rubric is not None:
            out.update(self.rubric.to_dict())
        if self.steps is not None:
            out["steps"] = self.steps.model_dump()
        return out


def _read(path: Path) -> Any:
    """The file's data (YAML or JSON), with the rubric loader's errors (file and line)."""
    return load_yaml(path)
