"""One typed object for how a run goes: :class:`RunOptions`.

:func:`jurist.evaluate` takes its settings either as keywords or as one ``RunOptions``
(the keywords, when given, override the object's fields), and the CLI commands build one
from their flags and forward it whole, so no layer repeats the list.

>>> opts = RunOptions(run_dir="runs/exp1", retries=2)
>>> opts.resume, opts.concurrency, str(opts.run_dir)
(True, None, 'runs/exp1')
>>> with_overrides(opts, {"resume": False}).resume
False
>>> RunOptions(prices={"openai:mine": {"prompt": 1, "completion": 1}}).prices
{'openai:mine': {'prompt': 1, 'completion': 1}}
>>> RunOptions(concurrency=0)
Traceback (most recent call last):
...
jurist.errors.ConfigError: run options: concurrency: concurrency must be at least 1, got 0
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jurist._local_files import roots_of
from jurist.errors import ConfigError
from jurist.runs._cost import PriceTable

if TYPE_CHECKING:
    from jurist.trust._repeats import RepeatPlan

__all__ = ["RunOptions", "with_overrides"]


class RunOptions(BaseModel):
    """Everything :func:`jurist.evaluate` takes besides the data, the judge and the engine.

    ``run_dir``: the run folder (a fresh temporary one when ``None``); ``resume``:
    continue the run already there (``False`` starts over); ``retry_failed``: on resume,
    judge again the items stored without a score; ``overwrite``: write into a folder that
    is not a jurist run folder anyway; ``fields``: judge field -> column; ``retries``:
    re-asks for an unreadable verdict; ``concurrency``: items in flight (default: the
    judge's, else 16); ``progress``: draw a progress bar; ``prices``: a
    :class:`~jurist.runs.PriceTable`, or spec -> price overriding the default table;
    ``repeats``: judge each item this many times (``adaptive``: ``min_repeats`` first,
    more only while its verdict is not settled; see :class:`~jurist.trust.RepeatPlan`);
    ``files_root``: folders (one or several) local image files the items name may be read
    from, besides a data file's own folder (items in memory: only these; see
    :mod:`jurist._local_files`); ``notes``: facts about how the run was set up that change
    no judgment, kept in the manifest's ``settings`` (the demonstration model chosen as the
    default offline: ``{"default_model": why}``).

    A bad value is a :class:`~jurist.errors.ConfigError` naming the field, raised before
    any run folder is made.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_dir: Path | None = None
    resume: bool = True
    retry_failed: bool = True
    overwrite: bool = False
    fields: dict[str, str] | None = None
    retries: int = 0
    concurrency: int | None = None
    progress: bool = False
    # a PriceTable as it is, a mapping as a mapping (never read as a PriceTable's fields)
    prices: Annotated[dict[str, Any] | PriceTable | None, Field(union_mode="left_to_right")] = None
    repeats: int = 1
    adaptive: bool = False
    min_repeats: int | None = None
    files_root: tuple[Path, ...] = ()
    notes: dict[str, str] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise ConfigError(_problems(e)) from None

    @field_validator("files_root", mode="before")
    @classmethod
    def _files_root(cls, value: Any) -> tuple[Path, ...]:
        return roots_of(value)  # real paths of existing folders

    @field_validator("retries")
    @classmethod
    def _retries(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"retries must be >= 0, got {value}")
        return value

    @model_validator(mode="after")
    def _repeats(self) -> RunOptions:
        self.repeat_plan()  # a bad combination is refused here
        return self

    def repeat_plan(self) -> RepeatPlan | None:
        """How many times each item is judged (``None``: once, no repeats)."""
        if self.repeats == 1 and not self.adaptive and self.min_repeats is None:
            return None
        from jurist.trust._repeats import RepeatPlan  # jurist.trust loads on first use

        return RepeatPlan(
            repeats=self.repeats, adaptive=self.adaptive, min_repeats=self.min_repeats
        )

    @field_validator("concurrency")
    @classmethod
    def _concurrency(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"concurrency must be at least 1, got {value}")
        return value


def _problems(error: ValidationError) -> str:
    """``run options: FIELD: what is wrong`` for each wrong field, one per line."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(p) for p in problem["loc"]) or "options"
        message = str(problem["msg"]).removeprefix("Value error, ")
        lines.append(f"{where}: {message}")
    return "run options: " + "\n  ".join(lines)


def with_overrides(options: RunOptions | None, overrides: Mapping[str, Any]) -> RunOptions:
    """``options`` (default: ``RunOptions()``) with the fields given in ``overrides``
    replaced (a ``None`` there is not given), checked."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if options is not None and not given:
        return options
    return RunOptions(**{**dict(options or RunOptions()), **given})
