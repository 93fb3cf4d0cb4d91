"""Selective judging and cascades on the Trust-or-Escalate paper's own calibration files.

Data: ``../shared/realdata/cascaded-selective-evaluation/result/*.calibration.jsonl``
(Jung et al., ICLR 2025): 500 Chatbot Arena pairs, each with a human preference
(``preferences.human``: 1 = A better, 2 = B better) and the probabilities Mistral-7B-instruct,
GPT-3.5-turbo and GPT-4-turbo gave A and B (their "simulated annotators"). Items are merged
across the three files on instruction and outputs, as the paper's code does. A judge's
verdict is its most probable answer, its confidence that probability.

For each judge alone and for the cascade mistral-7b -> gpt-3.5 -> gpt-4, over ``--splits``
random 50/50 calibration/test splits (``jurist.trust.guarantee_study``): fit the
thresholds on the calibration half at ``--target`` / ``--delta``, measure on the test half.
Reported per row: the share of splits that certified a threshold, the held-out coverage
(mean, 10th and 90th percentiles), the held-out agreement of the kept items, the raw share
of splits at or above the target, the test half's noise (mean standard error at the
target), the share within that noise, the raw share a judge exactly at the target would
show with these test sizes, and the noise-free population check; for cascades, each tier's
share of the decisions and of the calls.

Rows: each judge; the cascade with the whole ``delta`` split over its tiers (``union``, the
default: the guarantee holds for the whole cascade at ``delta``); the cascade with each tier
at ``delta`` as the paper's code does (``per_tier``); and the paper's own settings
(candidate thresholds on its 5000-point grid, ``per_tier``). Run::

    python benchmarks/selective.py                 # 200 splits, target 0.85, delta 0.1
    python benchmarks/selective.py --splits 1000 --figure benchmarks/results/selective.png

Results go to the terminal (a markdown table) and ``benchmarks/results/selective-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from jurist.metrics import confidence_from_probs
from jurist.trust import GuaranteeStudy, guarantee_study

HERE = Path(__file__).resolve().parent
JUDGES = ("mistral-7b-instruct", "gpt-3.5-turbo", "gpt-4-turbo")


def realdata() -> Path:
    """The paper's folder under ../shared/realdata (next to the checkout, or /work/shared)."""
    for root in (HERE.parents[1] / "shared" / "realdata", Path("/work/shared/realdata")):
        folder = root / "cascaded-selective-evaluation"
        if folder.is_dir():
            return folder
    raise FileNotFoundError("../shared/realdata/cascaded-selective-evaluation is absent")


def load(folder: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per judge: confidence and correctness on the items every judge rated."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for judge in JUDGES:
        path = folder / "result" / f"{judge}.calibration.jsonl"
        with path.open(encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        rows[judge] = {f"{r['instruction']}-{r['outputs']}": r for r in records}
    keys = [k for k in rows[JUDGES[0]] if all(k in rows[j] for j in JUDGES)]
    labels = np.array([rows[JUDGES[0]][k]["preferences"]["human"] - 1 for k in keys])
    conf, ok = {}, {}
    for judge in JUDGES:
        c = confidence_from_probs([rows[judge][k]["probs"] for k in keys])
        conf[judge] = c.confidence
        ok[judge] = np.array(c.verdict) == labels
    return conf, ok


ROWS: dict[str, dict[str, Any]] = {
    **{j: {"tiers": (j,)} for j in JUDGES},
    "cascade (union)": {"tiers": JUDGES, "delta_split": "union"},
    "cascade (per tier)": {"tiers": JUDGES, "delta_split": "per_tier"},
    "cascade (paper's grid, per tier)": {
        "tiers": JUDGES,
        "delta_split": "per_tier",
        "resolution": 1 / 4999,
    },
}


def study(
    conf: dict[str, np.ndarray],
    ok: dict[str, np.ndarray],
    row: dict[str, Any],
    target: float,
    delta: float,
    splits: int,
    seed: int,
) -> GuaranteeStudy:
    tiers = row["tiers"]
    return guarantee_study(
        [conf[t] for t in tiers],
        [ok[t] for t in tiers],
        target=target,
        delta=delta,
        splits=splits,
        seed=seed,
        resolution=row.get("resolution", 0.001),
        delta_split=row.get("delta_split", "union"),
    )


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def table(results: dict[str, GuaranteeStudy]) -> str:
    head = (
        "| judge | certified | coverage (q10-q90) | agreement | >= target | noise se "
        "| within noise | at-target raw | population | decided / calls per tier |"
    )
    lines = [head, "|" + "---|" * 10]
    for name, s in results.items():
        tiers = ""
        if len(s.tier_coverage) > 1:
            tiers = " / ".join(
                f"{pct(c)}:{pct(r)}" for c, r in zip(s.tier_coverage, s.tier_reached, strict=True)
            )
        lines.append(
            f"| {name} | {pct(s.certified)} | {pct(s.coverage)} ({pct(s.coverage_q10)}-"
            f"{pct(s.coverage_q90)}) | {pct(s.agreement)} | {pct(s.pass_raw)} | "
            f"{pct(s.noise_se)} | {pct(s.pass_within_noise)} | {pct(s.boundary_pass)} | "
            f"{pct(s.population_pass)} | {tiers} |"
        )
    return "\n".join(lines)


def figure(results: dict[str, GuaranteeStudy], path: Path, target: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    names = list(results)
    cov = [results[n].coverage for n in names]
    agr = [results[n].agreement or 0.0 for n in names]
    ax.scatter(cov, agr)
    for n, x, y in zip(names, cov, agr, strict=True):
        ax.annotate(n, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.axhline(target, linestyle="--", color="grey")
    ax.set_xlabel("held-out coverage (mean over splits)")
    ax.set_ylabel("held-out agreement of kept items")
    ax.set_title("Selective judging on the Trust-or-Escalate calibration files")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", type=float, default=0.85)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--figure", type=Path, default=None)
    args = parser.parse_args(argv)
    conf, ok = load(realdata())
    started = time.perf_counter()
    results = {
        name: study(conf, ok, row, args.target, args.delta, args.splits, args.seed)
        for name, row in ROWS.items()
    }
    seconds = time.perf_counter() - started
    accuracy = {j: float(ok[j].mean()) for j in JUDGES}
    print(f"{len(ok[JUDGES[0]])} items; agreement without abstaining: {accuracy}")
    print(f"target {args.target}, delta {args.delta}, {args.splits} splits, {seconds:.1f} s\n")
    print(table(results))
    report = {
        "target": args.target,
        "delta": args.delta,
        "splits": args.splits,
        "seed": args.seed,
        "items": len(ok[JUDGES[0]]),
        "accuracy": accuracy,
        "seconds": seconds,
        "results": {n: s.model_dump() for n, s in results.items()},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"selective-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"\n{out}")
    if args.figure is not None:
        figure(results, args.figure, args.target)
        print(args.figure)
    return report


if __name__ == "__main__":
    main()
