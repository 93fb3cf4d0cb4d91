""":class:`Rubric`: criteria in order, optional guidelines and sections, loaded from YAML/JSON.

>>> rubric = Rubric.from_dict({
...     "guidelines": "The reader is a beginner.",
...     "criteria": [
...         {"name": "correct", "requirement": "States that water boils at 100 C", "weight": 10},
...         {"name": "jargon", "requirement": "Uses unexplained jargon", "weight": -5},
...         {"name": "depth", "requirement": "How deep is the explanation?",
...          "options": [{"label": "Shallow", "value": 0}, {"label": "Adequate", "value": 0.5},
...                      {"label": "Thorough", "value": 1}]},
...     ],
... })
>>> [c.kind for c in rubric.criteria]
['binary', 'binary', 'ordinal']
>>> rubric.compute_score([CriterionVerdict.MET, "UNMET", "Adequate"])
0.75
>>> rubric.compute_score(["MET", "MET", "Thorough"])
0.75
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from jurist._files import read_utf8
from jurist.errors import ConfigError
from jurist.judges.rubric._criteria import Criterion, CriterionVerdict
from jurist.judges.rubric._loader import load_yaml, rubric_fields
from jurist.judges.rubric._scoring import (
    CannotAssess,
    ScoredCriterion,
    scored_from_label,
    weighted_score,
)

__all__ = ["Rubric"]


class Rubric(BaseModel):
    """A list of criteria, with optional guidelines (free text that applies to all of them).

    Criteria listed under sections keep the section's name in ``Criterion.section``.
    Load one with :meth:`from_yaml`, :meth:`from_json`, :meth:`from_file` (by suffix) or
    :meth:`from_dict`; loader errors name the file, the criterion and the field.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    criteria: tuple[Criterion, ...] = Field(min_length=1)
    guidelines: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _unique_names(self) -> Rubric:
        seen: set[str] = set()
        for c in self.criteria:
            if c.name is None:
                continue
            if c.name in seen:
                raise ValueError(f"duplicate criterion name {c.name!r}")
            seen.add(c.name)
        return self

    def __len__(self) -> int:
        return len(self.criteria)

    def criterion_names(self) -> list[str]:
        """Each criterion's name, or ``c<N>`` (1-based) for an unnamed one."""
        return [c.name or f"c{i + 1}" for i, c in enumerate(self.criteria)]

    @property
    def sections(self) -> list[str]:
        """The section names, in order of first appearance."""
        return list(dict.fromkeys(c.section for c in self.criteria if c.section is not None))

    @property
    def total_positive_weight(self) -> float:
        return sum(c.weight for c in self.criteria if c.weight > 0)

    # -- loading --------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<rubric>") -> Rubric:
        """Build a rubric from parsed data: a list of criteria, or a mapping with
        ``criteria`` and/or ``sections`` (plus ``guidelines``, ``name``)."""
        fields = rubric_fields(data, source)
        try:
            return cls(criteria=fields.criteria, guidelines=fields.guidelines, name=fields.name)
        except ValidationError as e:
            raise ConfigError(f"{source}: {e.errors()[0]['msg']}") from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> Rubric:
        """Load a rubric from a YAML file (errors name the file, line, criterion, field)."""
        return cls.from_dict(load_yaml(Path(path)), source=str(path))

    @classmethod
    def from_json(cls, path: str | Path) -> Rubric:
        """Load a rubric from a JSON file."""
        p = Path(path)
        try:
            data = json.loads(read_utf8(p, what="the rubric file"))
        except OSError as e:
            raise ConfigError(f"{p}: cannot read the rubric file: {e.strerror or e}") from e
        except json.JSONDecodeError as e:
            raise ConfigError(f"{p}:{e.lineno}: not valid JSON: {e.msg}") from e
        return cls.from_dict(data, source=str(p))

    @classmethod
    def from_file(cls, path: str | Path) -> Rubric:
        """Load a rubric from ``.yaml`` / ``.yml`` / ``.json`` by its suffix."""
        suffix = Path(path).suffix.lower()
        if suffix in (".yaml", ".yml"):
            return cls.from_yaml(path)
        if suffix == ".json":
            return cls.from_json(path)
        raise ConfigError(f"{path}: a rubric file must end in .yaml, .yml or .json")

    def to_dict(self) -> dict[str, Any]:
        """The rubric in the file format :meth:`from_dict` reads (sections kept)."""
        data: dict[str, Any] = {}
        if self.name is not None:
            data["name"] = self.name
        if self.guidelines is not None:
            data["guidelines"] = self.guidelines
        if any(c.section is not None for c in self.criteria):
            sections: list[dict[str, Any]] = []
            for c in self.criteria:
                if not sections or sections[-1].get("name") != c.section:
                    sections.append(
                        {"name": c.section, "criteria": []} if c.section else {"criteria": []}
                    )
                sections[-1]["criteria"].append(c.to_dict())
            data["sections"] = sections
        else:
            data["criteria"] = [c.to_dict() for c in self.criteria]
        return data

    def to_yaml(self) -> str:
        import yaml

        text: str = yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)
        return text

    # -- scoring ground truth ---------------------------------------------------------------

    def compute_score(
        self,
        verdicts: Sequence[CriterionVerdict | str],
        *,
        normalize: bool = True,
        cannot_assess: CannotAssess = "skip",
        partial_credit: float = 0.5,
    ) -> float | None:
        """The score of one verdict per criterion (binary verdicts, option labels).

        The same scoring as a grader's report: a weighted sum over the criteria that count,
        over the total positive weight, clamped to [0, 1] (``normalize=False``: the raw
        sum); ``None`` when nothing can be scored.
        """
        if len(verdicts) != len(self.criteria):
            raise ConfigError(
                f"expected {len(self.criteria)} verdicts (one per criterion), got {len(verdicts)}"
            )
        scored: list[ScoredCriterion] = []
        for i, (criterion, verdict) in enumerate(zip(self.criteria, verdicts, strict=True)):
            try:
                scored.append(scored_from_label(criterion, verdict))
            except ValueError as e:
                name = criterion.name or f"c{i + 1}"
                raise ConfigError(f"criterion {name!r}: {e}") from None
        return weighted_score(
            scored, cannot_assess=cannot_assess, partial_credit=partial_credit, normalize=normalize
        )
