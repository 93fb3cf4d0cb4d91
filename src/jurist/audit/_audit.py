"""``audit(judge, items)``: probe a pairwise judge's biases on the user's own data.

``items`` are pairs as ``jurist compare`` writes them: ``prompt``, ``response_a`` and
``response_b`` (a list of dicts, a DataFrame, a datasets.Dataset). Every probe pair is
judged in both orders, so position cancels out of the content probes:

- ``position``: the user's pairs as they are; the effect is how much more often the reply
  shown first wins.
- ``verbosity``: each reply against itself padded with filler sentences
  (:func:`~jurist.audit.pad`, about ``pad_factor`` times longer).
- ``format``: each reply against the same sentences as a markdown list
  (:func:`~jurist.audit.as_markdown`).
- ``self_preference``: the replies on side ``own`` were written by the judge's own model;
  the pairs are judged by the judge and by a ``reference`` judge (another model), and the
  effect is how much more the own replies win under the judge. Skipped, with the reason,
  without ``reference`` and ``own``.

Effects, intervals and verdicts: see :mod:`jurist.audit._report`. A pair whose judging
failed in either order is left out of its probe and counted in ``n_failed``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from jurist._sync import run_sync
from jurist.audit._report import AuditReport, ProbeResult
from jurist.audit._transforms import as_markdown, pad
from jurist.data._item_names import item_name
from jurist.errors import ConfigError, DataError
from jurist.judges import PairJudgment, PairwiseJudge
from jurist.judges._items import as_item_dicts

__all__ = ["DEFAULT_THRESHOLD", "PROBES", "audit", "audit_sync"]

PROBES = ("position", "verbosity", "format", "self_preference")
"""The probes, in the order they run and are reported."""
DEFAULT_THRESHOLD = 0.1
"""The default tolerance: a bias may swing at most 10% of the verdicts."""


def _text(row: Mapping[str, Any], field: str, i: int) -> str | None:
    value = row.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DataError(f"{item_name(i, row)}: {field} is {type(value).__name__}, not text")
    return value


def _orders(pj: PairJudgment) -> tuple[float, float] | None:
    """(preference for the first shown in the forward order, the same in the swapped one)."""
    f = pj.forward.score
    s = pj.swapped.score if pj.swapped is not None else None
    return None if f is None or s is None else (f, s)


async def audit(
    judge: PairwiseJudge,
    items: Iterable[Mapping[str, Any]] | Any,
    *,
    probes: Sequence[str] = PROBES,
    reference: PairwiseJudge | None = None,
    own: Literal["a", "b"] | None = None,
    thresholds: Mapping[str, float] | None = None,
    pad_factor: float = 1.0,
    retries: int = 0,
    concurrency: int | None = None,
    level: float = 0.95,
    seed: int = 0,
    progress: bool = False,
) -> AuditReport:
    """Run the ``probes`` on ``items`` with ``judge`` (see the module docstring)."""
    unknown = [p for p in probes if p not in PROBES]
    if unknown:
        raise ConfigError(f"unknown probe {unknown[0]!r}; the probes are {list(PROBES)}")
    if own not in (None, "a", "b"):
        raise ConfigError(f"own must be 'a' or 'b', got {own!r}")
    limits = {p: DEFAULT_THRESHOLD for p in PROBES} | dict(thresholds or {})
    rows = as_item_dicts(items)
    if not rows:
        raise DataError("no items to audit")
    pairs: list[tuple[str, str, str]] = []  # (prompt, a, b) with both replies
    singles: list[tuple[str, str]] = []  # (prompt, reply) for the rewrite probes
    for i, row in enumerate(rows):
        prompt = _text(row, "prompt", i)
        a, b = _text(row, "response_a", i), _text(row, "response_b", i)
        if prompt is None or a is None:
            raise DataError(
                f"{item_name(i, row)} needs prompt and response_a (it has {sorted(row)})"
            )
        singles += [(prompt, a)] + ([(prompt, b)] if b is not None else [])
        if b is not None:
            pairs.append((prompt, a, b))

    both = judge.with_options(swap=True)  # every probe needs both orders
    plan: dict[str, list[dict[str, str]]] = {}
    if "position" in probes:
        plan["position"] = [{"prompt": p, "response_a": a, "response_b": b} for p, a, b in pairs]
    rewrites: dict[str, Callable[[str], str]] = {
        "verbosity": lambda t: pad(t, factor=pad_factor),
        "format": as_markdown,
    }
    for name, rewrite in rewrites.items():
        if name in probes:
            plan[name] = [
                {"prompt": p, "response_a": t, "response_b": rewrite(t)} for p, t in singles
            ]
    own_pairs = [
        {"prompt": p, "response_a": a if own == "a" else b, "response_b": b if own == "a" else a}
        for p, a, b in pairs
    ]
    skip_self = None
    if "self_preference" in probes:
        if reference is None or own is None:
            skip_self = "needs a reference judge and which side the judge's own model wrote (own)"
        elif not pairs:
            skip_self = "needs pairs with response_b"
        else:
            plan["self_preference"] = own_pairs

    flat = [item for name in plan for item in plan[name]]
    results = await both.judge_items(
        flat, retries=retries, concurrency=concurrency, progress=progress
    )
    ref_results: list[PairJudgment] = []
    if "self_preference" in plan and reference is not None:
        ref = reference.with_options(swap=True)
        ref_results = list(
            await ref.judge_items(own_pairs, retries=retries, concurrency=concurrency)
        )

    out: list[ProbeResult] = []
    start = 0
    judged: dict[str, list[PairJudgment]] = {}
    for name, its in plan.items():
        judged[name] = list(results[start : start + len(its)])
        start += len(its)
    for name in probes:
        threshold = limits.get(name, DEFAULT_THRESHOLD)
        if name == "self_preference" and skip_self is not None:
            out.append(ProbeResult.skip(name, skip_self, threshold=threshold))
            continue
        if name == "position" and not pairs:
            out.append(ProbeResult.skip(name, "needs pairs with response_b", threshold=threshold))
            continue
        effects: list[float] = []
        failed = 0
        for k, pj in enumerate(judged[name]):
            got = _orders(pj)
            other = _orders(ref_results[k]) if name == "self_preference" else (0.0, 0.0)
            if got is None or other is None:
                failed += 1
                continue
            f, s = got
            if name == "position":
                effects.append(f + s - 1.0)
            elif name == "self_preference":
                fr, sr = other
                effects.append((f - s) - (fr - sr))
            else:
                effects.append(s - f)
        out.append(
            ProbeResult.measured(
                name, effects, threshold=threshold, n_failed=failed, level=level, seed=seed
            )
        )
    return AuditReport(
        judge=judge.name,
        reference=reference.name if reference is not None else None,
        n_items=len(rows),
        probes=out,
    )


def audit_sync(
    judge: PairwiseJudge, items: Iterable[Mapping[str, Any]] | Any, **options: Any
) -> AuditReport:
    """Sync twin of :func:`audit`; works inside a running event loop too."""
    return run_sync(audit(judge, items, **options))
