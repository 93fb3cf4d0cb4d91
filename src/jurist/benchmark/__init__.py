"""Benchmark judge setups on labelled data: ``jurist bench`` and :func:`jurist.bench`.

Several judge setups (any judge kind, or a replay of outputs recorded in the data) judge
one or more labelled datasets (pairwise in both orders, or pointwise) in one resumable
folder; the figures (accuracy with intervals, position consistency, bias probes, cost per
correct decision, per-source breakdowns, cascades) come back as a :class:`BenchResult`,
a JSON file and one HTML page. See docs/bench.md.

>>> from jurist.benchmark import bench_dataset
>>> bench_dataset([{"prompt": "q", "response": "a", "label": 4}]).kind
'pointwise'
"""

from jurist.benchmark._bench import abench, bench
from jurist.benchmark._cascades import CascadeFigures, cascade_figures
from jurist.benchmark._data import BenchDataset, bench_dataset, order_items
from jurist.benchmark._figures import (
    CostFigures,
    PairOutcome,
    SourceFigures,
    TableFigures,
    pair_outcomes,
    table_figures,
)
from jurist.benchmark._page import front_plot, write_bench_page
from jurist.benchmark._readers import (
    READERS,
    read_judge_bench,
    read_judgebench,
    read_llmbar,
    read_mtbench_human,
    read_pandalm,
    read_rewardbench2,
)
from jurist.benchmark._replay import RecordedJudge, ScoresJudge
from jurist.benchmark._result import BenchResult
from jurist.benchmark._setups import Setup, setup_of, setups_of

__all__ = [
    "READERS",
    "BenchDataset",
    "BenchResult",
    "CascadeFigures",
    "CostFigures",
    "PairOutcome",
    "RecordedJudge",
    "ScoresJudge",
    "Setup",
    "SourceFigures",
    "TableFigures",
    "abench",
    "bench",
    "bench_dataset",
    "cascade_figures",
    "front_plot",
    "order_items",
    "pair_outcomes",
    "read_judge_bench",
    "read_judgebench",
    "read_llmbar",
    "read_mtbench_human",
    "read_pandalm",
    "read_rewardbench2",
    "setup_of",
    "setups_of",
    "table_figures",
    "write_bench_page",
]
