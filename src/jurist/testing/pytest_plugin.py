"""jurist's pytest plugin: gate a judged run inside a test suite.

Installed with jurist (the ``pytest11`` entry point ``jurist``), it gives tests
:func:`assert_judged` (also importable: ``from jurist.testing.pytest_plugin import
assert_judged``) as the fixture ``assert_judged``: the same check as ``jurist gate``
(:func:`jurist.trust.gate_scores`, intervals with the judge's own variance when the run
has repeats), failing the test with the markdown summary as its message when the bar is
missed. An inconclusive check (its interval straddles the bar) passes with a
:class:`JudgedWarning` unless ``strict=True``. Every gate a test ran is listed in the
terminal summary at the end of the session.

.. code-block:: python

    def test_answers_are_good(assert_judged):
        run = jurist.evaluate("answers.jsonl", judge, run_dir="runs/ci", repeats=3)
        assert_judged(run, min_score=0.8)

``run`` may be a :class:`jurist.Run`, a run folder, judge results (anything with
``.scores``: ``judge.judge_sync(items)``), or a sequence of scores (or of per-item lists
of repeat scores). A run (and a baseline run) must have finished, and a baseline run must
be judged the same way, as for ``jurist gate`` (:mod:`jurist.runs._state`): otherwise
:class:`~jurist.errors.ConfigError` says why.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # jurist itself loads when a test first gates: pytest starts as fast
    from jurist.runs import Run
    from jurist.trust import GateResult

__all__ = ["JudgedWarning", "assert_judged"]

_RESULTS = pytest.StashKey[list[tuple[str, "GateResult"]]]()


class JudgedWarning(UserWarning):
    """A gate whose interval straddles its bar: not shown to miss it, not shown to clear it."""


def _scores(value: Any) -> tuple[list[list[float | None]], Run | None]:
    """Per-item repeat scores of ``value`` (and the run, when it is one)."""
    from jurist.runs import Run

    if isinstance(value, str | Path):
        value = Run(value)
    if isinstance(value, Run):
        return value.item_scores(), value
    scores = getattr(value, "scores", value)
    if not isinstance(scores, Sequence) or isinstance(scores, str | bytes):
        raise TypeError(
            f"assert_judged takes a jurist.Run, a run folder, judge results or a sequence "
            f"of scores, not {type(value).__name__}"
        )
    return [list(s) if isinstance(s, Sequence) else [s] for s in scores], None


def _same_items(a: Run | None, b: Run | None) -> bool:
    if a is None or b is None:
        return False
    x, y = a.manifest.dataset, b.manifest.dataset
    return x.hash is not None and x.hash == y.hash and x.items == y.items


def _gate(
    run: Any,
    *,
    min_score: float | None = None,
    baseline: Any = None,
    max_drop: float | None = None,
    level: float = 0.95,
    strict: bool = False,
    paired: bool | None = None,
) -> tuple[GateResult, str]:
    from jurist.trust import Bar, gate_scores

    bar = Bar(min_score=min_score, max_drop=max_drop, level=level, strict=strict)
    from jurist.runs._state import check_same_kind, require_finished

    scores, the_run = _scores(run)
    base_scores, base_run = _scores(baseline) if baseline is not None else (None, None)
    # as `jurist gate`: finished runs only, and a baseline judged the same way
    if the_run is not None:
        require_finished(the_run)
    if base_run is not None:
        require_finished(base_run, "baseline run")
    if the_run is not None and base_run is not None:
        check_same_kind(the_run, base_run)
    pair = _same_items(the_run, base_run) if paired is None else paired
    result = gate_scores(scores, bar, baseline=base_scores, paired=pair)
    name = str(the_run.run_dir) if the_run is not None else type(run).__name__
    return result, result.markdown(f"jurist gate `{name}`")


def _act(result: GateResult, text: str) -> GateResult:
    if not result.passed:
        raise AssertionError(text)
    if result.status == "warn":
        warnings.warn(JudgedWarning(text), stacklevel=3)
    return result


def assert_judged(
    run: Any,
    *,
    min_score: float | None = None,
    baseline: Any = None,
    max_drop: float | None = None,
    level: float = 0.95,
    strict: bool = False,
    paired: bool | None = None,
) -> GateResult:
    """Fail (``AssertionError`` with the markdown summary) when ``run`` misses the bar;
    the gate's result otherwise. ``paired``: whether ``run`` and ``baseline`` judged the
    same items in the same order (default: two runs of the same data are, anything else
    is not)."""
    return _act(
        *_gate(
            run,
            min_score=min_score,
            baseline=baseline,
            max_drop=max_drop,
            level=level,
            strict=strict,
            paired=paired,
        )
    )


@pytest.fixture(name="assert_judged")
def assert_judged_fixture(request: pytest.FixtureRequest) -> Callable[..., GateResult]:
    """:func:`assert_judged`, with each result listed in the session's terminal summary."""
    kept = request.config.stash.setdefault(_RESULTS, [])

    def check(run: Any, **bar: Any) -> GateResult:
        result, text = _gate(run, **bar)
        kept.append((request.node.nodeid, result))
        return _act(result, text)

    return check


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line per gate the session ran: its status, the test and the figures."""
    kept = config.stash.get(_RESULTS, [])
    if not kept:
        return
    terminalreporter.section("jurist gates")
    for nodeid, result in kept:
        figures = "; ".join(
            f"{c.name} {c.value:.4f} [{c.low:.4f}, {c.high:.4f}] {c.outcome}" for c in result.checks
        )
        terminalreporter.write_line(f"{result.status.upper()} {nodeid}: {figures}")
