"""A rich progress bar for batches of judgments: items/s, ETA, failures, tokens.

``Progress(total, enabled=False)`` costs nothing when disabled, so library calls can always
report through it.
"""

from __future__ import annotations

from types import TracebackType

__all__ = ["BatchProgress"]


class BatchProgress:
    """Counts finished items, failures and tokens; draws a bar when ``enabled``."""

    def __init__(
        self, total: int | None, *, enabled: bool = False, description: str = "judging"
    ) -> None:
        self.total = total
        self.enabled = enabled
        self.description = description
        self.done = 0
        self.failed = 0
        self.tokens = 0
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
                TextColumn("failed {task.fields[failed]}  tokens {task.fields[tokens]}"),
                transient=False,
            )
            progress.start()
            self._task = progress.add_task(
                self.description, total=self.total, failed=0, tokens=0, rate=""
            )
            self._progress = progress
        return self

    def advance(self, *, ok: bool, tokens: int = 0) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        self.tokens += tokens
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
