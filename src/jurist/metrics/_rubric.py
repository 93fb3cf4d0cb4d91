"""Metrics on graded rubric datasets: per criterion, between judges, per judge.

Inputs are plain shapes, so this layer knows nothing of graders or models:

- the rubric's criteria, as :class:`CriterionInfo` (``criteria_info(rubric)`` reads them
  from a :class:`jurist.Rubric` or anything with ``.criteria`` of the same form);
- the ground truth: one list of labels per item (``"MET"`` / ``"UNMET"`` /
  ``"CANNOT_ASSESS"`` or an option label), ``None`` for an item without one; a
  ``RubricDataset`` gives it as ``[item.ground_truth for item in dataset]``;
- the grade reports: :class:`GradeReport` objects or their ``model_dump(mode="json")``
  dicts (what a run store keeps): ``criteria[i].final`` and ``criteria[i].votes``.

Per criterion: accuracy, Cohen's kappa, linear / quadratic weighted kappa for ordinal
criteria, the confusion matrix, RMSE and MAE on the option values. Between judges:
Krippendorff's alpha and Fleiss' kappa from the votes. Per judge: accuracy against the
ground truth, pooled over criteria. CANNOT_ASSESS / NA labels and failed votes are left out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from jurist.metrics._measures import (
    accuracy,
    cohen_kappa,
    confusion,
    fleiss_kappa,
    krippendorff_alpha,
    mae,
    rmse,
)

__all__ = [
    "CriterionInfo",
    "CriterionMetrics",
    "RubricMetrics",
    "criteria_info",
    "rubric_metrics",
]

_BINARY = {"MET": 1.0, "UNMET": 0.0}


class CriterionInfo(BaseModel):
    """What metrics need of a criterion: its name, kind and scored labels in order."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: Literal["binary", "ordinal", "nominal"]
    labels: tuple[str, ...]
    values: dict[str, float]

    def value(self, label: str | None) -> float | None:
        return None if label is None else self.values.get(label)

    def rank(self, label: str | None) -> int | None:
        return self.labels.index(label) if label in self.labels else None


def criteria_info(rubric: Any) -> list[CriterionInfo]:
    """The criteria of a rubric object (``.criteria`` with ``name``, ``options``...)."""
    out: list[CriterionInfo] = []
    for i, c in enumerate(rubric.criteria):
        name = str(getattr(c, "name", None) or f"c{i + 1}")
        options = getattr(c, "options", None)
        if not options:
            out.append(
                CriterionInfo(name=name, kind="binary", labels=("UNMET", "MET"), values=_BINARY)
            )
            continue
        scored = [o for o in options if not o.na and o.value is not None]
        kind: Literal["ordinal", "nominal"] = (
            "nominal" if getattr(c, "scale_type", "ordinal") == "nominal" else "ordinal"
        )
        out.append(
            CriterionInfo(
                name=name,
                kind=kind,
                labels=tuple(o.label for o in scored),
                values={o.label: float(o.value) for o in scored},
            )
        )
    return out


class CriterionMetrics(BaseModel):
    """One criterion's figures (``None`` where they cannot be computed)."""

    name: str
    kind: str
    n: int
    accuracy: float | None = None
    kappa: float | None = None
    linear_kappa: float | None = None
    quadratic_kappa: float | None = None
    rmse: float | None = None
    mae: float | None = None
    confusion_labels: list[str] = []
    confusion: list[list[int]] = []
    judges_alpha: float | None = None
    judges_fleiss_kappa: float | None = None
    judges_items: int = 0


class RubricMetrics(BaseModel):
    """Per criterion, per judge and overall figures of a graded dataset."""

    criteria: list[CriterionMetrics]
    judges: dict[str, float | None]
    judges_per_criterion: dict[str, dict[str, float | None]]
    overall_accuracy: float | None


def _clean(x: float) -> float | None:
    return None if math.isnan(x) else x


def _report_dict(report: Any) -> Mapping[str, Any]:
    if hasattr(report, "model_dump"):
        dumped: Mapping[str, Any] = report.model_dump(mode="json")
        return dumped
    return dict(report)


def _label(entry: Mapping[str, Any] | None) -> str | None:
    if not entry or entry.get("na") or entry.get("error"):
        return None
    label = entry.get("verdict") or entry.get("selected_label")
    return None if label in (None, "CANNOT_ASSESS") else str(label)


def rubric_metrics(
    criteria: Sequence[CriterionInfo],
    truth: Sequence[Sequence[str | None] | None],
    reports: Sequence[Any],
) -> RubricMetrics:
    """Compare grade reports with ground truth (see the module docs for the shapes)."""
    dumped = [_report_dict(r) for r in reports]
    per_criterion: list[CriterionMetrics] = []
    judge_hits: dict[str, list[int]] = {}
    judge_crit: dict[str, dict[str, list[int]]] = {}
    all_pred: list[str | None] = []
    all_true: list[str | None] = []
    for ci, info in enumerate(criteria):
        pred: list[str | None] = []
        gold: list[str | None] = []
        votes_by_judge: dict[str, list[str | None]] = {}
        for item, report in enumerate(dumped):
            crit = (
                (report.get("criteria") or [])[ci]
                if ci < len(report.get("criteria") or [])
                else None
            )
            labels = truth[item] if item < len(truth) else None
            g = None if labels is None else labels[ci]
            g = None if g in (None, "CANNOT_ASSESS") or g not in info.labels else g
            p = _label(crit.get("final") if crit else None)
            pred.append(p)
            gold.append(g)
            for vote in (crit or {}).get("votes") or []:
                jid = str(vote.get("judge_id"))
                column = votes_by_judge.setdefault(jid, [None] * len(dumped))
                column[item] = _label(vote)
                v = column[item]
                if v is not None and g is not None:
                    judge_hits.setdefault(jid, []).append(int(v == g))
                    judge_crit.setdefault(jid, {}).setdefault(info.name, []).append(int(v == g))
        all_pred += pred
        all_true += gold
        per_criterion.append(_criterion_metrics(info, pred, gold, votes_by_judge))
    return RubricMetrics(
        criteria=per_criterion,
        judges={j: sum(h) / len(h) if h else None for j, h in judge_hits.items()},
        judges_per_criterion={
            j: {c: sum(h) / len(h) for c, h in crit.items()} for j, crit in judge_crit.items()
        },
        overall_accuracy=_clean(accuracy(all_pred, all_true)),
    )


def _criterion_metrics(
    info: CriterionInfo,
    pred: list[str | None],
    gold: list[str | None],
    votes: dict[str, list[str | None]],
) -> CriterionMetrics:
    n = sum(1 for p, g in zip(pred, gold, strict=True) if p is not None and g is not None)
    m = CriterionMetrics(name=info.name, kind=info.kind, n=n)
    if n:
        m.accuracy = _clean(accuracy(pred, gold))
        m.kappa = _clean(cohen_kappa(pred, gold))
        if info.kind == "ordinal":
            ranks_p = [info.rank(p) for p in pred]
            ranks_g = [info.rank(g) for g in gold]
            m.linear_kappa = _clean(cohen_kappa(ranks_p, ranks_g, weights="linear"))
            m.quadratic_kappa = _clean(cohen_kappa(ranks_p, ranks_g, weights="quadratic"))
        values_p = [info.value(p) for p in pred]
        values_g = [info.value(g) for g in gold]
        m.rmse, m.mae = _clean(rmse(values_p, values_g)), _clean(mae(values_p, values_g))
        m.confusion_labels, m.confusion = confusion(pred, gold, labels=list(info.labels))
    if len(votes) >= 2:
        judges = sorted(votes)
        coded: list[list[Any]] = [
            [info.rank(v) if info.kind == "ordinal" else v for v in votes[j]] for j in judges
        ]
        level: Literal["nominal", "ordinal"] = "ordinal" if info.kind == "ordinal" else "nominal"
        m.judges_alpha = _clean(krippendorff_alpha(coded, level=level))
        complete = [list(col) for col in zip(*coded, strict=True) if None not in col]
        m.judges_items = len(complete)
        if complete:
            m.judges_fleiss_kappa = _clean(fleiss_kappa(complete))
    return m
