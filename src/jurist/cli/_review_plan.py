"""``jurist review RUN --plan N``: which N items people should label, written as a plan.

:func:`make_plan` draws N of the run's items, each with a known probability, so that the
corrected interval (``jurist estimate``) narrows most for N labels while its estimate
stays unbiased (labels weighted by ``1 / probability``):

- the probabilities grow with how far an item's label may fall from the judge
  (:func:`jurist.metrics.residual_spread`): learnt from the labels so far (30 or more),
  else from a panel's disagreement (its recorded ``spread``), else from the judge's own
  uncertainty on a 0-1 score; ``by="uniform"`` draws every item alike;
- a uniform share (``uniform_share``, 0.3) keeps every item's probability away from 0;
- the plan is written to the run folder as ``plan.jsonl`` (:mod:`jurist.runs._plan`), in
  a random order: label it from the top, and any first part of it is a random part.

It also says how many uniformly drawn labels an interval of ``target_width`` needs, from
the labels so far, and how much narrower the chosen items should make the interval than a
uniform draw if the spread it planned from holds. :func:`print_plan` prints that; the
``review`` command calls :func:`run_plan`, which does both (this module registers no
command)::

    if plan is not None:   # jurist review RUN --plan N [--labels ...] [--by ...] ...
        return run_plan(run_dir, plan, labels=labels, by=by, target_width=target_width,
                        seed=seed)
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from rich.console import Console

from jurist.errors import ConfigError

__all__ = ["PlanBy", "PlanSummary", "make_plan", "print_plan", "run_plan"]

PlanBy = Literal["auto", "uniform", "spread"]


class PlanSummary(BaseModel):
    """What a plan holds and what it should buy."""

    model_config = ConfigDict(frozen=True)

    path: str
    planned: int
    already_labelled: int
    """Planned items that already have a label (they cost nothing more)."""
    spread: str
    """Where the probabilities came from."""
    expected_gain: float
    """1 - the width this plan should give / a uniform draw's, if the spread holds."""
    labels_so_far: int
    target_width: float | None = None
    needed_with_judge: int | None = None
    needed_alone: int | None = None


def _inputs(run: Any, labels: str | None) -> tuple[list[Any], list[Any], list[Any], str | None]:
    """The judge's prediction, the labels so far (numbers, ``None`` where none) and each
    item's panel disagreement (``None`` for a single judge), and the labels' source."""
    from jurist.metrics._labels import label_missing
    from jurist.metrics._ppi import win_value
    from jurist.runs._estimate import judge_values
    from jurist.runs._labels import LABELS_NAME, run_labels
    from jurist.runs.report._scale import scale_of

    rows = list(run.rows())
    outcomes = [r["outcome"] if isinstance(r["outcome"], dict) else {} for r in rows]
    scores = [r["score"] for r in rows]
    spread = [o.get("spread") for o in outcomes]
    source: str | None = None
    values: list[Any] = [None] * len(rows)
    file = Path(run.run_dir) / LABELS_NAME
    if labels is not None and not labels.endswith(".jsonl"):
        values = [None if label_missing(r["item"].get(labels)) else r["item"][labels] for r in rows]
        source = f"field {labels!r}"
    elif labels is not None or file.exists():
        got = run_labels(run, Path(labels) if labels is not None else None)
        values, source = list(got.values), got.path
    if any("winner" in o for o in outcomes):
        return [win_value(s) for s in scores], [win_value(v) for v in values], spread, source
    if all(v is None for v in values):
        return [None if s is None else float(s) for s in scores], values, spread, source
    verdicts = [o.get("verdict") for o in outcomes]
    pred, nums, _ = judge_values(scores, verdicts, values, scale_of(run.manifest.judge))
    return pred, nums, spread, source


def make_plan(
    run_dir: str | Path,
    n: int,
    *,
    labels: str | None = None,
    by: PlanBy = "auto",
    uniform_share: float = 0.3,
    target_width: float | None = None,
    level: float = 0.95,
    seed: int | None = None,
) -> PlanSummary:
    """Draw ``n`` items of the finished run in ``run_dir`` to label and write
    ``plan.jsonl`` there (see the module docs). ``labels``: the labels so far (an item
    field or a labels file; default: the run folder's ``labels.jsonl`` when there is one)."""
    from jurist.cli._gate import open_finished
    from jurist.data._item_names import item_label
    from jurist.metrics import draw_plan, inclusion_probabilities, labels_for_width
    from jurist.metrics import residual_spread as spread_of
    from jurist.runs._folder import STORE_NAME
    from jurist.runs._plan import PlanEntry, write_plan
    from jurist.runs._store import RunStore

    if by not in ("auto", "uniform", "spread"):
        raise ConfigError(f"--by must be auto, uniform or spread, not {by!r}")
    run = open_finished(Path(run_dir))
    pred, values, disagreement, _ = _inputs(run, labels)
    size = len(pred)
    if not 1 <= n <= size:
        raise ConfigError(f"--plan {n}: the run has {size} items; plan between 1 and {size}")
    have = [v is not None for v in values]
    if by == "uniform":
        spread, source = np.ones(size), "uniform"
    else:
        dis = disagreement if any(d is not None for d in disagreement) else None
        spread, source = spread_of(pred, values, disagreement=dis)
    pi = inclusion_probabilities(spread, n, uniform_share=uniform_share)
    uniform = n / size
    s2 = np.asarray(spread, dtype=float) ** 2
    gain = 1 - float(np.sqrt((s2 / pi).sum() / (s2 / uniform).sum()))
    chosen = draw_plan(pi, np.random.default_rng(seed))
    now = datetime.now(UTC)
    rows = {r["idx"]: r["item"] for r in run.rows()}
    store = RunStore(Path(run.run_dir) / STORE_NAME, readonly=True)
    try:
        entries = [
            PlanEntry(
                item=item_label(int(i), rows[int(i)]),
                item_hash=store.hash_of(int(i)) or "",
                inclusion_probability=float(pi[i]),
                rank=rank,
                planned_at=now,
                spread=source,
            )
            for rank, i in enumerate(chosen, start=1)
        ]
    finally:
        store.close()
    path = write_plan(run.run_dir, entries)
    needed: tuple[int | None, int | None] = (None, None)
    if target_width is not None and sum(have) >= 2:
        needed = labels_for_width(pred, values, target_width, level=level)
    return PlanSummary(
        path=str(path),
        planned=len(entries),
        already_labelled=sum(have[int(i)] for i in chosen),
        spread=source,
        expected_gain=gain,
        labels_so_far=sum(have),
        target_width=target_width,
        needed_with_judge=needed[0],
        needed_alone=needed[1],
    )


def print_plan(console: Console, plan: PlanSummary) -> None:
    """What the plan holds, in a few lines."""
    say = console.print
    say(f"plan: {plan.planned} items to label, in order, written to {plan.path}", markup=False)
    if plan.already_labelled:
        say(f"{plan.already_labelled} of them already have a label", markup=False)
    say(
        f"probabilities from: {plan.spread}; if that spread holds, the corrected interval "
        f"should be {plan.expected_gain:.0%} narrower than from as many uniformly drawn labels",
        markup=False,
        highlight=False,
    )
    if plan.target_width is not None:
        if plan.labels_so_far < 2:
            say("how many labels a width needs: label some items first (none so far)", markup=False)
            return

        def n(x: int | None) -> str:
            return "more than every item" if x is None else str(x)

        say(
            f"an interval {plan.target_width:g} wide needs about {n(plan.needed_with_judge)} "
            f"labels with the judge, {n(plan.needed_alone)} alone (from {plan.labels_so_far} "
            "labels so far)",
            markup=False,
            highlight=False,
        )


def run_plan(
    run_dir: str | Path,
    n: int,
    *,
    labels: str | None = None,
    by: str = "auto",
    uniform_share: float = 0.3,
    target_width: float | None = None,
    level: float = 0.95,
    seed: int | None = None,
    console: Console | None = None,
) -> int:
    """``jurist review RUN --plan N``: :func:`make_plan`, then :func:`print_plan`; the
    exit status (0)."""
    from jurist.cli._app import EXIT_OK

    plan = make_plan(
        run_dir,
        n,
        labels=labels,
        by=by,  # type: ignore[arg-type]  # make_plan checks it
        uniform_share=uniform_share,
        target_width=target_width,
        level=level,
        seed=seed,
    )
    print_plan(console or Console(soft_wrap=True), plan)
    return EXIT_OK
