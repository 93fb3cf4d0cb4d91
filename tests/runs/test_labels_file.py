"""The reader of a run's ``labels.jsonl`` (jurist.runs._labels): each line checked and named
by ``file:line``, the last line per item and annotator winning, annotators combined, and
labels matched to a real run's items (by id or position) with their hashes checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.errors import DataError
from jurist.runs import Run
from jurist.runs._folder import STORE_NAME
from jurist.runs._labels import LABELS_NAME, combine, read_labels, run_labels
from jurist.runs._store import RunStore


def _line(item: Any, label: Any, who: str = "ana", digest: str = "h", **more: Any) -> str:
    rec = {
        "item": item,
        "item_hash": digest,
        "label": label,
        "annotator": who,
        "at": "2026-12-02T04:00:00Z",
        "note": None,
        **more,
    }
    return json.dumps(rec) + "\n"


def test_the_last_line_per_item_and_annotator_wins_and_a_torn_tail_is_counted(
    tmp_path: Path,
) -> None:
    path = tmp_path / LABELS_NAME
    path.write_text(
        _line("a", "A")
        + _line("a", "B", "bo")
        + _line("a", "b", "cy")
        + _line("a", "A", "bo")
        + '{"item": "b", "label": "A", "annot'
    )
    book = read_labels(path)
    assert book.torn == 1 and len(book.lines) == 4 and book.annotators == ["ana", "bo", "cy"]
    per = book.latest()[("a", "h")]
    assert per["bo"].label == "A" and per["bo"].line == 4
    got = combine(per)
    assert got.value == "A" and got.agreeing == 2 and got.annotators == 3


def test_a_null_label_takes_the_annotators_label_back(tmp_path: Path) -> None:
    path = tmp_path / LABELS_NAME
    path.write_text(
        _line(0, 4) + _line(0, None) + _line(1, 2) + _line(1, 3, "bo") + _line(1, None, "bo")
    )
    latest = read_labels(path).latest()
    assert list(latest) == [(1, "h")] and list(latest[(1, "h")]) == ["ana"]


def test_a_tie_between_annotators_gives_no_label_and_numbers_average() -> None:
    from jurist.runs._labels import LabelLine

    def rec(label: Any, who: str) -> LabelLine:
        return LabelLine(
            item="a", item_hash="h", label=label, annotator=who, at="2026-12-02T04:00:00Z"
        )  # type: ignore[arg-type]

    assert combine({"x": rec("A", "x"), "y": rec("B", "y")}).value is None
    assert combine({"x": rec(2, "x"), "y": rec(5, "y")}).value == 3.5
    with pytest.raises(DataError, match="both numbers and text"):
        combine({"x": rec(2, "x"), "y": rec("B", "y")})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json\n" + _line("a", 1), r"labels.jsonl:1: not a JSON object"),
        (_line("a", 1) + "[1, 2]\n", r"labels.jsonl:2: a label line must be a JSON object"),
        (_line("a", 1) + _line("b", 1, who=""), r"labels.jsonl:2: annotator: "),
        (_line("a", True), r"labels.jsonl:1: item and label cannot be true/false"),
        (_line("a", 1, inclusion_probability=0), r"labels.jsonl:1: .*inclusion_probability"),
        (
            _line("a", 1).replace('"at": "2026-12-02T04:00:00Z"', '"at": "soon"'),
            r"labels.jsonl:1: at: ",
        ),
    ],
)
def test_a_bad_line_is_refused_naming_the_file_and_line(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / LABELS_NAME
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        read_labels(path)


def test_labels_match_a_runs_items_by_id_or_position_and_their_hash(tmp_path: Path) -> None:
    items = [{"id": f"q{i}", "prompt": f"p{i}", "response": "x"} for i in range(5)]
    judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=["Correct"]))
    folder = tmp_path / "run"
    jurist.evaluate(items, judge, run_dir=folder)
    store = RunStore(folder / STORE_NAME, readonly=True)
    hashes = [store.hash_of(i) for i in range(5)]
    store.close()
    path = folder / LABELS_NAME
    path.write_text(
        _line("q1", 1, digest=hashes[1])
        + _line(3, 0, digest=hashes[3])
        + _line("q1", 0, who="bo", digest=hashes[1])
    )
    got = run_labels(Run(folder))
    assert got.values == [None, 0.5, None, 0.0, None]
    assert got.annotators == [0, 2, 0, 1, 0] and got.labelled == 2
    path.write_text(_line("q2", 1, digest=hashes[1]))
    with pytest.raises(DataError, match=r"labels.jsonl:1: item 'q2' has changed since"):
        run_labels(Run(folder))
    path.write_text(_line("q2", 1, digest=hashes[2]) + _line("q9", 1, digest="x"))
    with pytest.raises(DataError, match=r"labels.jsonl:2: item 'q9' is not an item of"):
        run_labels(Run(folder))
