"""What command help shows before the modules that own it are imported.

``jurist judge --help`` lists the built-in templates, the scales of ``--criteria`` and the
default of ``--min-coverage``, ``jurist grade --help`` the rubric aggregations; the modules
that define them (:mod:`jurist.templates`, :mod:`jurist.judges`) take longer to import
than the help takes to print, so the help reads these copies instead.
tests/cli/test_cli_startup.py checks every copy against its source, so a template added to the
built-ins fails there until it is listed here."""

from __future__ import annotations

__all__ = [
    "BINARY_AGGREGATIONS",
    "BUILTIN_TEMPLATES",
    "CRITERIA_SCALES",
    "DEFAULT_MIN_COVERAGE",
    "NOMINAL_AGGREGATIONS",
    "ORDINAL_AGGREGATIONS",
]

BUILTIN_TEMPLATES: dict[str, tuple[str, ...]] = {
    "single": (
        "answer_relevance",
        "context_relevance",
        "continuous",
        "criteria_first",
        "faithfulness",
        "likert",
        "mt_bench",
        "mt_bench_multi_turn",
        "mt_bench_reference",
        "mt_bench_reference_multi_turn",
        "prometheus",
        "reward",
        "solve_first",
        "trajectory",
        "trajectory_step",
        "true_false",
        "true_false_uncertain",
    ),
    "pairwise": ("arena_hard", "mt_bench_pair", "prometheus_relative"),
}
"""The built-in templates by kind, sorted (:func:`jurist.templates.list_templates`)."""

CRITERIA_SCALES = ("yes_no", "yes_no_partly", "likert", "ten", "continuous")
"""The scales of ``--criteria`` (:data:`jurist.templates._criteria.CRITERIA_SCALES`)."""

DEFAULT_MIN_COVERAGE = 0.5
"""``--min-coverage``'s default (:data:`jurist.judges._weigher.DEFAULT_MIN_COVERAGE`)."""

BINARY_AGGREGATIONS = ("majority", "weighted", "unanimous", "any")
"""``grade --aggregation`` (:data:`jurist.judges.rubric._aggregate.BINARY_AGGREGATIONS`)."""

ORDINAL_AGGREGATIONS = ("mean", "median", "weighted_mean", "mode", "min", "max")
"""``grade --ordinal-aggregation`` (``jurist.judges.rubric._criteria``)."""

NOMINAL_AGGREGATIONS = ("mode", "weighted_mode", "unanimous")
"""``grade --nominal-aggregation`` (``jurist.judges.rubric._criteria``)."""
