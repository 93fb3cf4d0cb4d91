"""The repeat flags of ``jurist judge``, ``compare`` and ``grade`` (``--repeats N``,
``--adaptive``, ``--min-repeats K``), typed once; they go to
:class:`~jurist.engines.RunOptions` as they are."""

from __future__ import annotations

from typing import Annotated

import typer

from jurist.cli._bounds import bounded

__all__ = ["AdaptiveFlag", "MinRepeatsFlag", "RepeatsFlag"]

RepeatsFlag = Annotated[
    int,
    typer.Option(
        **bounded(
            "repeats",
            help="Judge each item N times (fresh draws at the judge's temperature, never a "
            "cached answer of another repeat); the summary shows flip rates, self-consistency "
            "and an interval with the judge's own variance. Local engine only.",
        )
    ),
]
AdaptiveFlag = Annotated[
    bool,
    typer.Option(
        help="With --repeats N: judge --min-repeats first, then more (up to N) only while "
        "an item's verdict is not settled (unanimous, or a lead no remaining repeat can undo)."
    ),
]
MinRepeatsFlag = Annotated[
    int | None,
    typer.Option(
        **bounded("min_repeats", help="With --adaptive: repeats every item gets (default 3).")
    ),
]
