"""A rich progress bar for batches of judgments: items/s, ETA, failures, tokens, cost.

``BatchProgress(total, enabled=False)`` costs nothing when disabled, so library calls can
always report through it. ``completed`` starts the bar part way (a resumed run).

>>> with BatchProgress(3, completed=1) as bar:
...     bar.advance(ok=True, tokens=10, cost=0.5)
...     bar.advance(ok=False)
>>> bar.done, bar.failed, bar.tokens, bar.cost
(3, 1, 10, 0.5)
"""

from __future__ import annotations

from types import TracebackType

__all__ = ["BatchProgress"]


class BatchProgress:
    """Counts finished items, failures and tokens; draws a bar when ``enabled``."""

    def __init__(
        self,
        total: int | None,
        *,
        enabled: bool = False,
        description: str = "judging",
        completed: int = 0,
        show_cost: bool = False,
    ) -> None:
        self.total = total
        self.enabled = enabled
        self.description = description
        self.done = completed
        self.failed = 0
        self.tokens = 0
        self.cost = 0.0
        self.show_cost = show_cost
        self._progress: object | None = None
        self._task: object | None = None

    def __enter__(self) -> BatchProgress:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                TextColumn(
                    "failed {task.fields[failed]}  tokens {task.fields[tokens]}"
                    + ("  ${task.fields[cost]}" if self.show_cost else "")
                ),
                transient=False,
            )
            progress.start()
            self._task = progress.add_task(
                self.description,
                total=self.total,
                completed=self.done,
                failed=0,
                tokens=0,
                rate="",
                cost="0",
            )
            self._progress = progress
        return self

    def advance(self, *, ok: bool, tokens: int = 0, cost: float | None = None) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        self.tokens += tokens
        self.cost += cost or 0.0
        if self._progress is not None:
            from rich.progress import Progress

            assert isinstance(self._progress, Progress)
            task_id = self._task
            speed = self._progress.tasks[0].speed
            rate = f"{speed:.1f} items/s" if speed else ""
            self._progress.update(
                task_id,  # type: ignore[arg-type]
                advance=1,
                failed=self.failed,
                tokens=self.tokens,
                rate=rate,
                cost=f"{self.cost:.4f}",
            )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            from rich.progress import Progress

            assert isinstance(self._progress, Progress)
            self._progress.stop()
