"""Readers for public judge benchmarks' own file layouts, each giving bench datasets.

Each reader takes the folder as the benchmark publishes it (a clone of its repository,
or its Hugging Face dataset folder) and reads only the files its layout names, inside that
folder. A folder without them raises a :class:`~jurist.errors.DataError` naming what was
looked for; an optional part that is absent (JudgeBench without ``outputs/``) is skipped.

- :func:`read_judgebench` (``ScalerLab/JudgeBench``): ``data/dataset=judgebench,
  response_model=M.jsonl``, one pairwise dataset per response model (labels ``A>B`` /
  ``B>A``, ``source`` the category: mmlu-pro, livebench-reasoning, livebench-math,
  livecodebench); its ``outputs/`` files as replay columns: reward models' ``scores``
  (both orders) under their model name, other judges' raw texts as ``recorded`` under
  ``JUDGE_NAME:JUDGE_MODEL`` (an order whose call failed is ``null``).
- :func:`read_llmbar` (``princeton-nlp/LLMBar``): ``Dataset/LLMBar/**/dataset.json``
  (``input``, ``output_1``, ``output_2``, ``label`` 1 / 2), one dataset, ``source`` the
  subset (``Natural``, ``Adversarial/Neighbor``...).
- :func:`read_rewardbench2` (``allenai/reward-bench-2`` on Hugging Face):
  ``data/*.parquet`` (``prompt``, ``chosen`` and ``rejected`` lists, ``subset``): each
  first chosen response against each rejected one, the chosen one shown first in every
  other pair; ``source`` the subset.
- :func:`read_mtbench_human` (``lmsys/mt_bench_human_judgments`` on Hugging Face):
  ``data/human-*.parquet``; each expert vote a pair (``winner`` model_a / model_b / tie),
  the prompt the user turns up to the judged one; ``source`` ``turn 1`` / ``turn 2``.
- :func:`read_pandalm` (``WeOpenML/PandaLM``): ``data/testset-v1.json``, the three
  annotators' majority (0 tie, 1, 2) as label; ``source`` the ``motivation_app``.
- :func:`read_judge_bench` (``dmg-illc/JUDGE-BENCH``): ``data/*/*.json``, one pointwise
  dataset per file and annotated criterion: the criterion's prompt (its
  ``{{ instance }}`` left out) as prompt, the instance as response, ``mean_human``
  (``majority_human`` for categorical criteria) as label.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from jurist.benchmark._data import BenchDataset, bench_dataset
from jurist.errors import DataError

__all__ = [
    "READERS",
    "read_judge_bench",
    "read_judgebench",
    "read_llmbar",
    "read_mtbench_human",
    "read_pandalm",
    "read_rewardbench2",
]

_JB_SOURCES = ("mmlu-pro", "livebench-reasoning", "livebench-math", "livecodebench")


def _found(folder: str | Path, pattern: str, what: str) -> list[Path]:
    root = Path(folder)
    files = sorted(p for p in root.glob(pattern) if p.is_file())
    if not files:
        raise DataError(f"{root}: no {what} ({pattern}) here")
    return files


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{n}: not JSON ({e.msg})") from e
    return rows


def _parts(name: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in name.split(",") if "=" in p)


def _jb_source(source: str) -> str:
    return next((s for s in _JB_SOURCES if source.startswith(s)), source)


def read_judgebench(folder: str | Path) -> list[BenchDataset]:
    """JudgeBench's pairs with its judges' outputs as replay columns (module doc)."""
    out = []
    for path in _found(folder, "data/dataset=*.jsonl", "JudgeBench pairs"):
        meta = _parts(path.stem)
        rows: dict[str, dict[str, Any]] = {}
        for r in _jsonl(path):
            rows[r["pair_id"]] = {
                "id": r["pair_id"],
                "prompt": r["question"],
                "response_a": r["response_A"],
                "response_b": r["response_B"],
                "label": r["label"],
                "source": _jb_source(str(r.get("source", ""))),
                "recorded": {},
                "scores": {},
            }
        for judged in sorted(Path(folder).glob(f"outputs/{path.stem},judge_name=*.jsonl")):
            _attach(rows, judged)
        name = f"judgebench-{meta.get('response_model', path.stem)}"
        out.append(bench_dataset(list(rows.values()), name=name, origin=str(path)))
    return out


def _attach(rows: dict[str, dict[str, Any]], path: Path) -> None:
    meta = _parts(path.stem)
    judge, model = meta.get("judge_name", "judge"), meta.get("judge_model", "model")
    for n, r in enumerate(_jsonl(path), 1):
        row = rows.get(str(r.get("pair_id")))
        if row is None:
            raise DataError(f"{path}:{n}: pair {r.get('pair_id')!r} is not in the data file")
        judgments = list(r.get("judgments") or [])
        if judge == "reward_model":
            row["scores"][model] = [j["judgment"]["scores"] for j in judgments if j]
        else:
            texts = [j["judgment"]["response"] if j else None for j in judgments]
            row["recorded"][f"{judge}:{model}"] = [*texts, None, None][:2]


def read_llmbar(folder: str | Path) -> list[BenchDataset]:
    """LLMBar's pairs, one dataset (module doc)."""
    root = Path(folder)
    rows = []
    for path in _found(root, "Dataset/LLMBar/**/dataset.json", "LLMBar dataset.json files"):
        subset = str(path.parent.relative_to(root / "Dataset" / "LLMBar"))
        for i, r in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            rows.append(
                {
                    "id": f"{subset}/{i}",
                    "prompt": r["input"],
                    "response_a": r["output_1"],
                    "response_b": r["output_2"],
                    "label": {1: "A", 2: "B"}.get(int(r["label"]), r["label"]),
                    "source": subset,
                }
            )
    return [bench_dataset(rows, name="llmbar", origin=str(root))]


def _records(path: Path) -> list[dict[str, Any]]:
    from jurist.data._readers import read_records

    return list(read_records(path))


def read_rewardbench2(folder: str | Path) -> list[BenchDataset]:
    """RewardBench 2 as pairs: first chosen against each rejected (module doc)."""
    rows: list[dict[str, Any]] = []
    for path in _found(folder, "data/*.parquet", "RewardBench 2 parquet files"):
        for r in _records(path):
            chosen, rejected = list(r["chosen"]), list(r["rejected"])
            for j, worse in enumerate(rejected):
                first = (len(rows) % 2) == 0
                rows.append(
                    {
                        "id": f"{r['id']}/{j}",
                        "prompt": r["prompt"],
                        "response_a": chosen[0] if first else worse,
                        "response_b": worse if first else chosen[0],
                        "label": "A" if first else "B",
                        "source": r.get("subset"),
                    }
                )
    return [bench_dataset(rows, name="rewardbench2", origin=str(folder))]


def _turns(conversation: Any, turn: int) -> tuple[str, str]:
    messages = list(conversation)
    users = [m["content"] for m in messages if m["role"] == "user"][:turn]
    answers = [m["content"] for m in messages if m["role"] == "assistant"]
    return "\n\n".join(users), answers[turn - 1]


def read_mtbench_human(folder: str | Path) -> list[BenchDataset]:
    """MT-Bench's expert votes as pairs (module doc)."""
    rows: list[dict[str, Any]] = []
    for path in _found(folder, "data/human-*.parquet", "MT-Bench human judgment parquet files"):
        for r in _records(path):
            turn = int(r["turn"])
            prompt, a = _turns(r["conversation_a"], turn)
            _, b = _turns(r["conversation_b"], turn)
            winner = str(r["winner"])
            rows.append(
                {
                    "id": f"{r['question_id']}-{r['model_a']}-{r['model_b']}-{turn}-{r['judge']}",
                    "prompt": prompt,
                    "response_a": a,
                    "response_b": b,
                    "label": {"model_a": "A", "model_b": "B"}.get(winner, "tie"),
                    "source": f"turn {turn}",
                }
            )
    return [bench_dataset(rows, name="mtbench-human", origin=str(folder))]


def read_pandalm(folder: str | Path) -> list[BenchDataset]:
    """PandaLM's test set with the annotators' majority label (module doc)."""
    (path,) = _found(folder, "data/testset-v1.json", "PandaLM test set")
    rows = []
    for r in json.loads(path.read_text(encoding="utf-8")):
        votes = Counter(str(r[f"annotator{k}"]) for k in (1, 2, 3)).most_common()
        top, count = votes[0]
        if count < 2:
            continue  # three different votes: no majority, no label
        prompt = r["instruction"] + (f"\n\n{r['input']}" if r.get("input") else "")
        rows.append(
            {
                "id": str(r["idx"]),
                "prompt": prompt,
                "response_a": str(r["response1"]),
                "response_b": str(r["response2"]),
                "label": top,
                "source": r.get("motivation_app"),
            }
        )
    return [bench_dataset(rows, name="pandalm", origin=str(path))]


def read_judge_bench(folder: str | Path) -> list[BenchDataset]:
    """JUDGE-BENCH's human ratings, one pointwise dataset per file and criterion."""
    out = []
    for path in _found(folder, "data/*/*.json", "JUDGE-BENCH dataset files"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or "instances" not in doc:
            continue  # another JSON file in the folder (a schema, an example)
        for criterion in doc.get("annotations", []):
            metric = criterion["metric"]
            key = "majority_human" if criterion.get("category") == "categorical" else "mean_human"
            question = str(criterion.get("prompt", metric)).replace("{{ instance }}", "").strip()
            rows = []
            for inst in doc["instances"]:
                label = (inst.get("annotations") or {}).get(metric, {}).get(key)
                if label is None:
                    continue
                text = inst["instance"]
                rows.append(
                    {
                        "id": str(inst["id"]),
                        "prompt": question,
                        "response": text if isinstance(text, str) else json.dumps(text),
                        "label": label,
                    }
                )
            if rows:
                name = f"{doc.get('dataset', path.stem)}:{metric}"
                out.append(bench_dataset(rows, name=name, origin=str(path)))
    if not out:
        raise DataError(f"{folder}: no JUDGE-BENCH instances with human labels")
    return out


READERS = {
    "judgebench": read_judgebench,
    "llmbar": read_llmbar,
    "rewardbench2": read_rewardbench2,
    "mtbench-human": read_mtbench_human,
    "pandalm": read_pandalm,
    "judge-bench": read_judge_bench,
}
"""Each public layout's reader by the name ``jurist bench LAYOUT:FOLDER`` gives it."""
