""":class:`RubricDataset`: submissions with ground-truth verdicts, saved and loaded as JSON.

Ground truth gives one label per criterion: a :class:`CriterionVerdict` (or its name) for a
binary criterion, an option label for a multi-choice one. Labels are checked against the
rubric when added or loaded, and errors name the item and the criterion.

>>> import jurist
>>> rubric = jurist.Rubric.from_dict([
...     {"name": "correct", "requirement": "The answer is correct"},
...     {"name": "clarity", "requirement": "How clear?", "options": [
...         {"label": "1", "value": 0}, {"label": "4", "value": 1}]},
...     {"name": "tone", "requirement": "Tone?", "scale_type": "nominal", "options": [
...         {"label": "Too formal", "value": 0.5}, {"label": "Just right", "value": 1}]},
... ])
>>> dataset = RubricDataset(rubric=rubric, prompt="Explain photosynthesis")
>>> dataset.add_item(submission="Plants turn light into sugar.", description="good",
...                  ground_truth=[CriterionVerdict.MET, "4", "Just right"])
>>> dataset.ground_truth_scores()
[1.0]
>>> RubricDataset.from_json(dataset.to_json()).items[0].ground_truth
['MET', '4', 'Just right']
>>> dataset.add_item(submission="?", ground_truth=["MET", "5", "Just right"])
Traceback (most recent call last):
...
jurist.errors.DataError: item 2: criterion 'clarity': no option '5'; the options are ['1', '4']
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from jurist._files import read_utf8
from jurist.errors import DataError
from jurist.judges.rubric._criteria import CriterionVerdict
from jurist.judges.rubric._rubric import Rubric
from jurist.judges.rubric._scoring import CannotAssess

__all__ = ["DataItem", "RubricDataset"]


class DataItem(BaseModel):
    """One submission, with its description, optional prompt and ground truth.

    ``ground_truth`` is stored as labels (``"MET"``, an option label), one per criterion.
    """

    model_config = ConfigDict(extra="forbid")

    submission: str
    description: str = ""
    ground_truth: list[str] | None = None
    prompt: str | None = None
    reference_submission: str | None = None
    ground_truth_reasons: list[str | None] | None = None


def _canonical(rubric: Rubric, labels: Sequence[Any], where: str) -> list[str]:
    names = rubric.criterion_names()
    if len(labels) != len(rubric.criteria):
        raise DataError(
            f"{where}: ground_truth has {len(labels)} labels but the rubric has "
            f"{len(rubric.criteria)} criteria ({', '.join(names)})"
        )
    out: list[str] = []
    for name, criterion, label in zip(names, rubric.criteria, labels, strict=True):
        if criterion.options is None:
            text = label.value if isinstance(label, CriterionVerdict) else str(label)
            try:
                out.append(CriterionVerdict(text.strip().upper()).value)
            except ValueError:
                raise DataError(
                    f"{where}: criterion {name!r}: {label!r} is not MET, UNMET or CANNOT_ASSESS"
                ) from None
            continue
        if isinstance(label, CriterionVerdict) or not isinstance(label, str):
            raise DataError(
                f"{where}: criterion {name!r}: a multi-choice criterion takes an option label, "
                f"got {label!r}"
            )
        try:
            out.append(criterion.options[criterion.option_index(label)].label)
        except ValueError as e:
            raise DataError(f"{where}: criterion {name!r}: {e}") from None
    return out


class RubricDataset(BaseModel):
    """A rubric, an optional shared prompt, and items with ground truth."""

    model_config = ConfigDict(extra="forbid")

    rubric: Rubric
    prompt: str | None = None
    name: str | None = None
    items: list[DataItem] = []

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[DataItem]:  # type: ignore[override]
        return iter(self.items)

    def __getitem__(self, index: int) -> DataItem:
        return self.items[index]

    def add_item(
        self,
        submission: str,
        description: str = "",
        ground_truth: Sequence[CriterionVerdict | str] | None = None,
        *,
        prompt: str | None = None,
        reference_submission: str | None = None,
        ground_truth_reasons: Sequence[str | None] | None = None,
    ) -> None:
        """Add an item; its ground truth is checked against the rubric."""
        where = f"item {len(self.items) + 1}"
        labels = None if ground_truth is None else _canonical(self.rubric, ground_truth, where)
        self.items.append(
            DataItem(
                submission=submission,
                description=description,
                ground_truth=labels,
                prompt=prompt,
                reference_submission=reference_submission,
                ground_truth_reasons=None
                if ground_truth_reasons is None
                else list(ground_truth_reasons),
            )
        )

    def query(self, index: int) -> str | None:
        """The prompt of an item: its own, else the dataset's."""
        item = self.items[index]
        return item.prompt if item.prompt is not None else self.prompt

    def to_items(
        self, *, submission_field: str = "response", query_field: str = "prompt"
    ) -> list[dict[str, Any]]:
        """Plain dicts for :meth:`CriterionGrader.grade_many` or :func:`jurist.evaluate`."""
        rows = []
        for i, item in enumerate(self.items):
            row: dict[str, Any] = {
                submission_field: item.submission,
                query_field: self.query(i),
                "description": item.description,
                "ground_truth": item.ground_truth,
            }
            if item.reference_submission is not None:
                row["reference"] = item.reference_submission
            rows.append(row)
        return rows

    def ground_truth_scores(
        self, *, cannot_assess: CannotAssess = "skip", partial_credit: float = 0.5
    ) -> list[float | None]:
        """Each item's score from its ground truth (``None`` without ground truth)."""
        return [
            None
            if item.ground_truth is None
            else self.rubric.compute_score(
                item.ground_truth, cannot_assess=cannot_assess, partial_credit=partial_credit
            )
            for item in self.items
        ]

    # -- JSON -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.name is not None:
            data["name"] = self.name
        if self.prompt is not None:
            data["prompt"] = self.prompt
        data["rubric"] = self.rubric.to_dict()
        data["items"] = [item.model_dump(exclude_none=True) for item in self.items]
        return data

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def save(self, path: str | Path) -> None:
        """Write the dataset as JSON."""
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")

    @classmethod
    def from_json(cls, text: str, *, source: str = "<dataset>") -> RubricDataset:
        """Read a dataset from JSON text (autorubric's dataset files read as they are)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(f"{source}:{e.lineno}: not valid JSON: {e.msg}") from None
        if not isinstance(data, dict) or "rubric" not in data:
            raise DataError(f"{source}: a dataset is a JSON object with 'rubric' and 'items'")
        unknown = sorted(set(data) - {"name", "prompt", "rubric", "items"})
        if unknown:
            raise DataError(f"{source}: unknown key(s) {unknown}")
        dataset = cls(
            rubric=Rubric.from_dict(data["rubric"], source=f"{source}: rubric"),
            prompt=data.get("prompt"),
            name=data.get("name"),
        )
        for i, raw in enumerate(data.get("items") or []):
            where = f"{source}: item {i}"
            if not isinstance(raw, dict):
                raise DataError(f"{where}: expected an object, got {type(raw).__name__}")
            try:
                item = DataItem.model_validate(raw)
            except ValidationError as e:
                first = e.errors()[0]
                field = ".".join(str(p) for p in first["loc"])
                raise DataError(f"{where}: field {field!r}: {first['msg']}") from None
            if item.ground_truth is not None:
                item.ground_truth = _canonical(dataset.rubric, item.ground_truth, where)
            dataset.items.append(item)
        return dataset

    @classmethod
    def load(cls, path: str | Path) -> RubricDataset:
        """Read a dataset saved by :meth:`save`."""
        p = Path(path)
        text = read_utf8(p, what="the dataset", error=DataError)
        return cls.from_json(text, source=str(p))
