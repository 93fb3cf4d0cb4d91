"""The range of every numeric command-line flag, in one table.

Each numeric flag takes its ``min`` and ``max`` from :data:`BOUNDS` through
:func:`bounded`, so a value out of range (``--retries 99999999999999999999``,
``--timeout 1e300``) is a usage error that names the flag and the range (exit 2) before
any model is built or any run folder is made. The upper bounds are far above any sensible
setting; they exist so that nothing downstream (a semaphore, a SQLite integer, a timer)
meets a number it cannot hold. ``tests/cli/test_cli_bounds.py`` checks that every numeric flag
of every command has both bounds.

>>> bounded("retries", help="Re-asks.")
{'help': 'Re-asks.', 'min': 0, 'max': 100}
"""

from __future__ import annotations

from typing import Any

__all__ = ["BOUNDS", "bounded"]

_DAY = 86_400.0

#: flag (its parameter name) -> (min, max)
BOUNDS: dict[str, tuple[float, float]] = {
    "retries": (0, 100),  # re-asks of an unreadable verdict
    "max_retries": (0, 100),  # retries of a transient API error
    "timeout": (0.1, _DAY),  # seconds per API call
    "rpm": (1, 10**9),
    "tpm": (1, 10**12),
    "concurrency": (1, 100_000),
    "judge_concurrency": (1, 100_000),
    "temperature": (0.0, 100.0),
    "max_tokens": (1, 10**7),
    "seed": (0, 2**63 - 1),
    "actors": (1, 100_000),
    "gpus_per_actor": (0.0, 1024.0),
    "batch_poll": (0.001, _DAY),
    "port": (0, 65_535),
    "batch_window": (0.0, 1000.0),  # milliseconds a reward-server batch stays open
    "max_pairs": (1, 10**6),  # pairs judged per group of a group reward
    "failure_value": (-1e9, 1e9),
    "tolerance": (0.0, 1e9),
    "pairs_budget": (1, 10**9),  # pairs `jurist compare` judges of N systems
    "bootstrap": (0, 100_000),  # resamples of a leaderboard's Bradley-Terry intervals
    "repeats": (1, 10_000),  # judgments of each item (--repeats)
    "min_repeats": (1, 10_000),
    "min_score": (0.0, 1.0),  # jurist gate: scores are normalised to [0, 1]
    "max_drop": (0.0, 1.0),
    "level": (0.5, 0.9999),  # an interval's confidence level
    "min_labels": (2, 10**7),  # jurist estimate: the fewest labels an interval rests on
    "resamples": (100, 100_000),  # jurist estimate --method bootstrap
    "target_width": (1e-6, 1e9),  # jurist estimate / review --plan: an interval's width
    "plan": (1, 10**7),  # jurist review --plan N: items to label
    "threshold": (0.0, 1.0),  # jurist audit: a share of verdicts swung
    "pad_factor": (0.0, 100.0),  # jurist audit: filler added, times the reply's length
    "max_tool_chars": (0, 10**7),  # characters of a tool result kept in a conversation
    "fraction": (0.05, 0.95),  # jurist calibrate: the share of items fitted on
    "max_result": (20, 10**7),  # jurist traces: characters of a tool result kept
    "max_examples": (0, 1000),  # jurist align: few-shot examples chosen
    "pool": (1, 10_000),  # jurist align: candidate examples tried per step
    "budget": (1, 10**9),  # jurist align: judge and proposer calls
    "score_items": (1, 10**7),  # jurist align: train items each candidate is judged on
    "held_out": (0.05, 0.95),  # jurist align: the share of items held out
    "rounds": (1, 1000),  # jurist align: proposer rounds
    "cascade_splits": (1, 100_000),  # jurist bench: half splits a cascade is replayed on
    "cascade_target": (0.0, 1.0),  # jurist bench: accuracy a cascade's cheap tier keeps
    "cascade_delta": (1e-6, 1.0),
}


def bounded(name: str, **info: Any) -> dict[str, Any]:
    """``typer.Option`` keyword arguments ``info`` with the ``min`` and ``max`` of flag
    ``name`` from :data:`BOUNDS`."""
    low, high = BOUNDS[name]
    return {**info, "min": low, "max": high}


VERDICT_MAX_TOKENS_HELP = (
    "Tokens the judge may write per answer (default: the template's or the rubric's size). "
    "Raise it when an answer is reported cut at max_tokens."
)
