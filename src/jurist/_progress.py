"""A rich progress bar for batches of judgments: items/s, ETA, failures, tokens, cost.

``BatchProgress(total, enabled=False)`` costs nothing when disabled, so library calls can
always report through it. ``completed`` starts the bar part way (a resumed run).

The rate is honest: the items finished in this session divided by the time since the bar
started (:attr:`BatchProgress.rate`), and the time left is the items left at that rate.
Items finished before a resume do not count, and a burst of completions (a batched
backend answers a whole batch at once) does not read as thousands of items a second, as
a rate over a short window of recent completions would.

>>> with BatchProgress(3, completed=1) as bar:
...     bar.advance(ok=True, tokens=10, cost=0.5)
...     bar.advance(ok=False)
>>> bar.done, bar.failed, bar.tokens, bar.cost
(3, 1, 10, 0.5)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from types import TracebackType

__all__ = ["BatchProgress", "quiet_library_bars"]


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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.enabled = enabled
        self.description = description
        self.done = completed
        self.failed = 0
        self.tokens = 0
        self.cost = 0.0
        self.show_cost = show_cost
        self._clock = clock
        self._resumed = completed
        self._started = clock()
        self._progress: object | None = None
        self._task: object | None = None

    @property
    def rate(self) -> float | None:
        """Items finished in this session per second since the bar started (None: none yet).

        >>> ticks = iter([0.0, 4.0])
        >>> bar = BatchProgress(100, completed=40, clock=lambda: next(ticks))
        >>> for _ in range(10):
        ...     bar.advance(ok=True)
        >>> bar.rate
        2.5
        """
        session = self.done - self._resumed
        elapsed = self._clock() - self._started
        if session <= 0 or elapsed <= 0:
            return None
        return session / elapsed

    def _rate_fields(self) -> dict[str, str]:
        rate = self.rate
        if rate is None:
            return {"rate": "", "eta": ""}
        eta = ""
        if self.total is not None:
            left = max(0, self.total - self.done)
            seconds = round(left / rate)
            eta = f"ETA {seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        return {"rate": f"{rate:,.1f} items/s", "eta": eta}

    def __enter__(self) -> BatchProgress:
        self._started = self._clock()
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[eta]}"),
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
                eta="",
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
            fields = self._rate_fields()
            self._progress.update(
                self._task,  # type: ignore[arg-type]
                advance=1,
                failed=self.failed,
                tokens=self.tokens,
                cost=f"{self.cost:.4f}",
                rate=fields["rate"],
                eta=fields["eta"],
            )

    def describe(self, text: str) -> None:
        """Show ``text`` as the bar's description (a batch engine's request counts).

        >>> bar = BatchProgress(10)
        >>> bar.describe("batch 1: 40/100 requests done")
        >>> bar.description
        'batch 1: 40/100 requests done'
        """
        self.description = text
        if self._progress is not None:
            from rich.progress import Progress

            assert isinstance(self._progress, Progress)
            self._progress.update(self._task, description=text)  # type: ignore[arg-type]

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


@contextlib.contextmanager
def quiet_library_bars(quiet: bool = True) -> Iterator[None]:
    """While the block runs, no library draws a progress bar either (``--no-progress``):
    transformers' "Loading weights", huggingface_hub's downloads. A library imported in the
    block reads ``HF_HUB_DISABLE_PROGRESS_BARS``; one imported already is told directly.
    Everything is put back afterwards (the process may go on: a test, a notebook)."""
    if not quiet:
        yield
        return
    import os
    import sys

    key = "HF_HUB_DISABLE_PROGRESS_BARS"
    before = os.environ.get(key)
    loaded = {name for name in ("transformers", "huggingface_hub.utils") if name in sys.modules}
    os.environ[key] = "1"
    undo: list[Callable[[], object]] = []
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        if hf_logging.is_progress_bar_enabled():
            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            undo.append(hf_logging.enable_progress_bar)
    hub = sys.modules.get("huggingface_hub.utils")
    if hub is not None and not getattr(hub, "are_progress_bars_disabled")():  # noqa: B009
        getattr(hub, "disable_progress_bars")()  # noqa: B009  (not in its __all__)
        undo.append(getattr(hub, "enable_progress_bars"))  # noqa: B009
    try:
        yield
    finally:
        for step in undo:
            step()
        if before is None:  # imported in the block: bars off by the variable, turn them on
            if "transformers" not in loaded and "transformers" in sys.modules:
                from transformers.utils import logging as hf_logging

                hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
            hub = sys.modules.get("huggingface_hub.utils")
            if "huggingface_hub.utils" not in loaded and hub is not None:
                getattr(hub, "enable_progress_bars")()  # noqa: B009
            os.environ.pop(key, None)
        else:
            os.environ[key] = before
