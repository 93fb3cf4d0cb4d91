"""A suite's cells made ready to run: their data, their judge, and the dry run's plan.

:func:`cell_data` is what a cell judges (a data file's path, or a ``datasets.Dataset``);
:func:`cell_judge` is the judge the engine runs (for a ``generate`` dataset, the model
under test answering first: :class:`~jurist.pipeline.GenerateThenJudge`, its answers kept
in ``<out>/<dataset>/answers.sqlite`` so every judge of the dataset judges the same
answers and the model under test answers each prompt once).

:func:`plan` is ``jurist run --dry-run``: per cell, the items, the calls and a
**worst-case** cost before any call, at the run prices (:mod:`jurist.runs._cost`; a
suite's ``settings.prices`` override them). The bound is deliberate: every item is
judged and re-asked ``settings.retries`` times, every answer is as long as the judge
allows (its ``max_tokens``, else ``settings.max_tokens``), and a prompt has at most as
many tokens as it has UTF-8 bytes (a tokenizer's token is at least one byte), plus 8 per
message for the chat format; a generated answer counts as long as ``generate.max_tokens``
allows. A judge kind whose prompts the plan cannot build (a rubric grader, a pairwise
judge, a grader file) has no bound, and a model with no price has no cost: the plan says
which, never a made-up figure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jurist.errors import ConfigError
from jurist.pipeline.suites._bars import bar_text
from jurist.pipeline.suites._load import Cell, Suite
from jurist.pipeline.suites._model import DatasetSpec, HubSource

__all__ = ["CellPlan", "Plan", "cell_data", "cell_fields", "cell_judge", "plan"]

# the dataset key of a Hugging Face dataset (the field's name, not a model provider)
_HUB_KEY = next(
    k for k, f in DatasetSpec.model_fields.items() if f.annotation == (HubSource | None)
)

PER_MESSAGE = 8
"""Tokens a chat format may add per message (role markers), in the dry run's bound."""


def cell_data(suite: Suite, cell: Cell, cache: dict[str, Any] | None = None) -> Any:
    """What ``cell`` judges: a data file's path, or a Hugging Face dataset (loaded once
    per suite dataset when ``cache`` is given)."""
    spec = cell.spec
    if spec.path is not None:
        return suite.resolve(spec.path)
    if cache is not None and cell.dataset in cache:
        return cache[cell.dataset]
    hub = spec.hf
    assert hub is not None
    try:
        import datasets
    except ImportError:
        from jurist.errors import MissingDependencyError

        raise MissingDependencyError("datasets", "dev", "A suite's Hugging Face dataset") from None
    files: Any = hub.data_files
    if isinstance(files, str):
        files = str(suite.resolve(files))
    elif isinstance(files, list):
        files = [str(suite.resolve(f)) for f in files]
    try:
        ds = datasets.load_dataset(
            hub.path, hub.name, split=hub.split, revision=hub.revision, data_files=files
        )
    except Exception as e:  # the hub library's many errors: one line naming the dataset
        where = suite.where("datasets", cell.dataset, _HUB_KEY)
        raise ConfigError(f"{where}: {e}") from None
    if cache is not None:
        cache[cell.dataset] = ds
    return ds


def cell_fields(cell: Cell) -> dict[str, str] | None:
    """The judge field -> column mapping the engine reads the cell's items with."""
    if cell.spec.generate is not None:
        return None  # the generate-then-judge judge reads its own columns
    return dict(cell.spec.fields) or None


def cell_judge(suite: Suite, cell: Cell) -> Any:
    """The judge the engine runs for ``cell``."""
    gen = cell.spec.generate
    if gen is None:
        return cell.judge_obj
    from jurist.models import CachedModel, get_model
    from jurist.pipeline import JudgeMetric
    from jurist.pipeline._generate_judge import GenerateThenJudge

    try:
        under_test = get_model(gen.model, **gen.model_options)
    except (ConfigError, TypeError) as e:
        raise ConfigError(f"{suite.where('datasets', cell.dataset, 'generate')}: {e}") from None
    answers = CachedModel(
        under_test, suite.out / cell.dataset / "answers.sqlite", only_deterministic=False
    )
    metric = JudgeMetric(
        cell.judge_obj,
        reference_field=gen.reference_field,
        context_fields=dict(cell.spec.fields) or None,
        retries=suite.file.settings.retries,
    )
    if not cell.spec.fields and metric.context.get("prompt") == "prompt":
        metric.context["prompt"] = gen.prompt_field
    return GenerateThenJudge(
        answers,
        metric,
        prompt_field=gen.prompt_field,
        prompt_template=gen.prompt_template,
        system_prompt=gen.system_prompt,
        max_tokens=gen.max_tokens,
        temperature=gen.temperature,
    )


@dataclass
class CellPlan:
    """One cell in the dry run: its items, calls, token bound and worst-case cost."""

    dataset: str
    judge: str
    run_dir: Path
    items: int
    done: int = 0
    calls: int | None = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    cost: float | None = 0.0
    bars: list[str] = field(default_factory=list)
    note: str | None = None


@dataclass
class Plan:
    """The dry run of a suite: every cell's plan and the total worst-case cost."""

    cells: list[CellPlan]

    @property
    def cost(self) -> float | None:
        costs = [c.cost for c in self.cells]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def _rows(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, Path):
        from jurist.data import read_records

        return list(read_records(data))
    return [dict(r) for r in data]


def _bytes(messages: Any) -> int:
    total = 0
    for m in messages:
        content = m.content if isinstance(m.content, str) else json.dumps(m.content, default=str)
        total += len(content.encode("utf-8")) + PER_MESSAGE
    return total


def _calls(judge: Any, item: dict[str, Any], settings: Any) -> list[tuple[str, int, int]] | None:
    """``(model spec, prompt token bound, answer token bound)`` of each call ``judge``
    may make on ``item`` (re-asks aside), or ``None`` when the plan cannot build them."""
    members = getattr(judge, "judges", None)
    if members is not None and not hasattr(judge, "messages"):
        out: list[tuple[str, int, int]] = []
        for member in members:
            calls = _calls(member, item, settings)
            if calls is None:
                return None
            out += calls
        return out
    if hasattr(judge, "messages") and hasattr(judge, "model") and hasattr(judge, "max_tokens"):
        prompt = _bytes(judge.messages(item))
        return [(judge.model.spec, prompt, judge.max_tokens or settings.max_tokens)]
    return None


def _kind(judge: Any) -> str:
    return type(judge).__name__


def plan(suite: Suite) -> Plan:
    """The dry run of ``suite``: nothing is called, nothing is written."""
    from jurist.runs import Run
    from jurist.runs._cost import resolve_prices

    settings = suite.file.settings
    prices = resolve_prices(settings.prices or None)
    cache: dict[str, Any] = {}
    cells = []
    for cell in suite.cells():
        rows = _rows(cell_data(suite, cell, cache))
        gen = cell.spec.generate
        done = 0
        if (cell.run_dir / "manifest.json").is_file():
            done = Run(cell.run_dir).stored_status()[1]
        cp = CellPlan(cell.dataset, cell.judge, cell.run_dir, len(rows), done=done)
        cp.bars = [bar_text(b) for b in cell.bars]
        unpriced: set[str] = set()
        for row in rows:
            item = dict(row)
            if gen is None:
                item.update({jf: row.get(col) for jf, col in cell.spec.fields.items()})
                calls = _calls(cell.judge_obj, item, settings)
            else:
                question = str(row.get(gen.prompt_field, ""))
                item.update({"prompt": question, "response": ""})
                first = [(gen.model, len(question.encode()) + 2 * PER_MESSAGE, gen.max_tokens)]
                judged = _calls(cell.judge_obj, item, settings)
                calls = (
                    None
                    if judged is None
                    else first + [(s, p + gen.max_tokens, c) for s, p, c in judged]
                )
            if calls is None:
                cp.calls = cp.prompt_tokens = cp.completion_tokens = cp.cost = None
                cp.note = f"no bound for a {_kind(cell.judge_obj)} judge"
                break
            tries = 1 + settings.retries
            for n, (spec, prompt, answer) in enumerate(calls):
                k = 1 if gen is not None and n == 0 else tries
                assert cp.calls is not None and cp.prompt_tokens is not None
                assert cp.completion_tokens is not None
                cp.calls += k
                cp.prompt_tokens += k * prompt
                cp.completion_tokens += k * answer
                price = prices.price_for(spec)
                if price is None:
                    unpriced.add(spec)
                elif cp.cost is not None:
                    cp.cost += k * (prompt * price.prompt + answer * price.completion) / 1e6
        if unpriced and cp.cost is not None:
            cp.cost = None
            cp.note = "no price for " + ", ".join(sorted(unpriced)) + " (settings.prices)"
        cells.append(cp)
    return Plan(cells)
