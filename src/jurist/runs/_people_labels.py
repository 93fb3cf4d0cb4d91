"""A run's own ``labels.jsonl`` (the labels people gave on the review page) where the
commands take a label field: ``--labels labels.jsonl`` (every annotator: each item's most
given label) or ``--labels labels.jsonl:NAME`` (one annotator's).

:func:`open_run` opens the run as :class:`~jurist.runs.Run` does; with such a ``--labels``
its rows carry the people's label in an item field of that name (``None`` where no one
labelled the item, or where the annotators are split with no label given most often:
those items are left out, as any missing label is). A label given for an item whose hash
is no longer the run's (the run was started over on other data) stops the command,
naming the item; so does a line that cannot be read.

>>> is_people("labels.jsonl"), is_people("labels.jsonl:ana"), is_people("human_score")
(True, True, False)
>>> most_given([4, 4, 5]), most_given([4, 5]), most_given(["yes"])
(4, None, 'yes')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from jurist.errors import DataError
from jurist.runs._label_writer import LABELS_NAME, read_labels
from jurist.runs._run import Run

__all__ = ["LabelledRun", "is_people", "most_given", "open_run", "people_labels"]


def is_people(spec: str | None) -> bool:
    """Whether a ``--labels`` value names the run's ``labels.jsonl``."""
    return spec is not None and (spec == LABELS_NAME or spec.startswith(LABELS_NAME + ":"))


def most_given(labels: Sequence[Any]) -> Any:
    """The label given most often, or ``None`` when two or more tie for most."""
    counts = Counter(labels).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def people_labels(run: Run, spec: str) -> dict[int, Any]:
    """Each labelled item's label (by the run store's key) from ``run``'s labels file."""
    path = run.run_dir / LABELS_NAME
    annotator = spec.partition(":")[2].strip() or None
    if not path.exists():
        raise DataError(f"{path}: no labels yet (give some with `jurist review {run.run_dir}`)")
    found = read_labels(path)
    if found.problems:
        n, why = found.problems[0]
        raise DataError(f"{path}:{n}: not a label line: {why}")
    latest = found.latest()
    hashes = _hashes(run, {item for item, _ in latest})
    for (item, _who), line in latest.items():
        if hashes.get(item) != line.item_hash:
            raise DataError(
                f"{path}: item {item} was labelled as another item (hash {line.item_hash}, "
                f"the run's is {hashes.get(item)}): the run was started over on other data"
            )
    if annotator is not None:
        mine = {item: line.label for (item, who), line in latest.items() if who == annotator}
        if not mine:
            names = sorted({who for _, who in latest})
            raise DataError(f"{path}: no labels by {annotator!r}; the annotators are {names}")
        return mine
    by_item: dict[int, list[Any]] = {}
    for (item, _who), line in latest.items():
        by_item.setdefault(item, []).append(line.label)
    return {item: most_given(given) for item, given in by_item.items()}


def _hashes(run: Run, items: set[int]) -> dict[int, str | None]:
    store = run._store()
    try:
        return {item: store.hash_of(item) for item in items}
    finally:
        store.close()


class LabelledRun(Run):
    """A :class:`~jurist.runs.Run` whose rows carry the people's labels in an item field
    named as ``--labels`` names the file (see the module docs)."""

    def __init__(self, run_dir: str | Path, spec: str) -> None:
        super().__init__(run_dir)
        self.field = spec
        self.labels = people_labels(self, spec)

    def rows(
        self, *, failed_only: bool = False, limit: int | None = None
    ) -> Iterator[dict[str, Any]]:
        for row in super().rows(failed_only=failed_only, limit=limit):
            row["item"] = {**row["item"], self.field: self.labels.get(int(row["idx"]))}
            yield row


def open_run(run_dir: str | Path, labels: str | None) -> Run:
    """``Run(run_dir)``, or a :class:`LabelledRun` when ``labels`` names ``labels.jsonl``."""
    return (
        LabelledRun(run_dir, labels) if labels is not None and is_people(labels) else Run(run_dir)
    )
