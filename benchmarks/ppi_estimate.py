"""Coverage and width of PPI++ intervals from few labels, on real judge data.

Two public sets with a judge on every item and people's labels on every item (read from
../shared/realdata, never copied): Trust-or-Escalate's 500 Chatbot Arena pairs (human
preference; GPT-4-turbo's probability that A is better) and PandaLM's 999 pairs (three
annotators, their majority as A's win: 1, 0, or 0.5 for a tie; GPT-3.5's verdict, with
PandaLM-7B's beside it for disagreement). The truth is the mean of every item's label.

For each label budget (50, 100, 200) the labels are drawn ``--resamples`` times (4,000 by
default), and every draw gives a 95% interval; the table says how often it covered the
truth and its mean width, for:

- ``labels only``: the mean of the drawn labels (normal interval);
- ``PPI++``: the judge on every item corrected by the drawn labels (uniform draw);
- ``chosen``: the items drawn with probabilities from the judge alone (its uncertainty,
  or the two judges' disagreement), weighted estimate;
- ``pilot+chosen``: half the budget drawn uniformly, the other half with probabilities
  from the residuals of that half (the plan ``jurist review RUN --plan N`` makes once
  labels exist); the two batches' estimates weighted by their share of the labels. Not
  run where a batch would hold fewer than 30 labels: ``jurist estimate`` refuses that.

Run: ``python benchmarks/ppi_estimate.py [--resamples 4000] [--seed 0]``.
tests/metrics/test_ppi_golden.py runs the same functions with fewer resamples.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np

from jurist.metrics._ppi_core import combine_batches, uniform_ppi, weighted_ppi
from jurist.metrics._ppi_plan import inclusion_probabilities, residual_spread

HERE = Path(__file__).resolve().parent
BUDGETS = (50, 100, 200)
LEAST_BATCH = 30
"""The fewest labels ``jurist estimate`` accepts in a batch (its ``min_labels``)."""
Data = tuple[np.ndarray, np.ndarray, np.ndarray, bool]
"""(labels, judge, spread from the judge alone, whether that spread is two judges'
disagreement) for every item."""


def realdata() -> Path:
    """../shared/realdata (next to the checkout, or /work/shared)."""
    for root in (HERE.parents[1] / "shared" / "realdata", Path("/work/shared/realdata")):
        if (root / "MANIFEST.md").is_file():
            return root
    raise FileNotFoundError("../shared/realdata is absent")


def trust_or_escalate(root: Path) -> Data:
    """Human preference for A (1 or 0) and GPT-4-turbo's P(A better), per pair."""
    path = root / "cascaded-selective-evaluation" / "result" / "gpt-4-turbo.calibration.jsonl"
    y, f = [], []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            r = json.loads(line)
            a, b = r["probs"]
            y.append(1.0 if r["preferences"]["human"] == 1 else 0.0)
            f.append(a / (a + b))
    fa = np.array(f)
    return np.array(y), fa, np.sqrt(fa * (1 - fa)) + 0.05, False


_WIN = {"1": 1.0, "2": 0.0, "0": 0.5, "tie": 0.5}


def pandalm(root: Path) -> Data:
    """The annotators' majority as A's win, GPT-3.5's verdict (its 25 unreadable ones
    predicted by its mean) and |GPT-3.5 - PandaLM-7B| as the spread."""
    folder = root / "PandaLM" / "data"
    test = json.loads((folder / "testset-v1.json").read_text(encoding="utf-8"))
    gpt = json.loads((folder / "gpt-3.5-turbo-testset-v1.json").read_text(encoding="utf-8"))
    panda = json.loads((folder / "pandalm-7b-testset-v1.json").read_text(encoding="utf-8"))
    y, f, g = [], [], []
    for t, a, b in zip(test, gpt, panda, strict=True):
        votes = [t[f"annotator{k}"] for k in (1, 2, 3)]
        top = max(set(votes), key=votes.count)
        y.append(_WIN[str(top)] if votes.count(top) >= 2 else 0.5)
        f.append(_WIN.get(str(a["gpt_result"]).lower(), np.nan))
        g.append(_WIN[str(b["pandalm_result"])])
    fa, ga = np.array(f), np.array(g)
    fa = np.where(np.isnan(fa), np.nanmean(fa), fa)
    return np.array(y), fa, np.abs(fa - ga), True


def _uniform_draws(rng: np.random.Generator, reps: int, big_n: int, n: int) -> np.ndarray:
    return np.argsort(rng.random((reps, big_n)), axis=1)[:, :n]


def _systematic(rng: np.random.Generator, pi: np.ndarray) -> np.ndarray:
    """One draw per row of ``pi`` (systematic over a random order): a 0/1 matrix."""
    reps, big_n = pi.shape
    order = np.argsort(rng.random((reps, big_n)), axis=1)
    cum = np.cumsum(np.take_along_axis(pi, order, axis=1), axis=1)
    u = rng.random((reps, 1))
    prev = np.concatenate([np.zeros((reps, 1)), cum[:, :-1]], axis=1)
    hits = (np.floor(cum - u) - np.floor(prev - u) > 0).astype(float)
    xi = np.zeros_like(pi)
    np.put_along_axis(xi, order, hits, axis=1)
    return xi


def _summary(est: np.ndarray, var: np.ndarray, truth: float, z: float) -> dict[str, float]:
    half = z * np.sqrt(var)
    return {
        "coverage": float(np.mean(np.abs(est - truth) <= half)),
        "width": float(np.mean(2 * half)),
    }


def study(
    data: Data, n: int, reps: int, seed: int = 0, level: float = 0.95, pilot_reps: int | None = None
) -> dict[str, dict]:
    """Coverage and mean width of each method at ``n`` labels over ``reps`` draws
    (``pilot_reps``: draws of the pilot+chosen method, default ``reps``)."""
    y, f, raw, disagreement = data
    spread, _ = residual_spread(f.tolist(), disagreement=raw.tolist() if disagreement else None)
    big_n, truth = y.size, float(y.mean())
    z = NormalDist().inv_cdf(0.5 + level / 2)
    rng = np.random.default_rng(seed)
    out: dict[str, dict] = {}
    idx = _uniform_draws(rng, reps, big_n, n)
    yl = y[idx]
    out["labels only"] = _summary(yl.mean(axis=1), yl.var(axis=1, ddof=1) / n, truth, z)
    est, var, _ = uniform_ppi(yl, f[idx], f)
    out["PPI++"] = _summary(est, var, truth, z)
    pi = inclusion_probabilities(spread, n)
    xi = _systematic(rng, np.broadcast_to(pi, (reps, big_n)))
    est, var, _ = weighted_ppi(y, f, xi, pi)
    out["chosen"] = _summary(est, var, truth, z)
    half, reps = n // 2, pilot_reps or reps
    if half < LEAST_BATCH:  # jurist estimate refuses a batch this small (min_labels)
        return out
    pilot = _uniform_draws(rng, reps, big_n, half)
    first = uniform_ppi(y[pilot], f[pilot], f)
    pis = np.empty((reps, big_n))
    for r in range(reps):
        labels = np.full(big_n, np.nan)
        labels[pilot[r]] = y[pilot[r]]
        s, _ = residual_spread(
            f.tolist(), labels.tolist(), disagreement=raw.tolist() if disagreement else None
        )
        pis[r] = inclusion_probabilities(s, n - half)
    xi = _systematic(rng, pis)
    second = weighted_ppi(y, f, xi, pis)
    est, var = combine_batches(
        (first[0], second[0]),
        (first[1], second[1]),
        (first[2], second[2]),
        float(f.var(ddof=1)) / big_n,
        half / n,
    )
    out["pilot+chosen"] = _summary(est, var, truth, z)
    return out


def oracle_gain(data: Data, n: int) -> float:
    """The most a plan that sets probabilities from the judge's score could narrow the
    interval against a uniform draw, if it knew every item's label: the true residual
    spread within the plan's bins of judge score, probabilities proportional to it (no
    uniform share). A bound on what any plan of this kind can buy on these data."""
    y, f, _, _ = data
    labels = y.tolist()
    spread, _ = residual_spread(f.tolist(), labels)
    pi = inclusion_probabilities(spread, n, uniform_share=0.0)
    s2 = spread**2
    return 1 - float(np.sqrt((s2 / pi).sum() / (s2 / (n / y.size)).sum()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    root = realdata()
    for name, load in (("Trust-or-Escalate", trust_or_escalate), ("PandaLM", pandalm)):
        data = load(root)
        print(
            f"\n{name}: {data[0].size} items, truth {data[0].mean():.4f}, "
            f"judge mean {data[1].mean():.4f}, {args.resamples} draws per budget"
        )
        print(f"{'labels':>6} {'method':>14} {'coverage':>9} {'width':>7} {'vs labels':>10}")
        for n in BUDGETS:
            res = study(data, n, args.resamples, seed=args.seed)
            base = res["labels only"]["width"]
            for method, r in res.items():
                print(
                    f"{n:>6} {method:>14} {r['coverage']:>9.4f} {r['width']:>7.4f} "
                    f"{1 - r['width'] / base:>9.1%}"
                )
            print(
                f"{n:>6} {'(bound)':>14} a plan knowing every label: at most "
                f"{oracle_gain(data, n):.1%} narrower than a uniform draw"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
