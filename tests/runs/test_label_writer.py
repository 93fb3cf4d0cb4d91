"""labels.jsonl: every label written whole under a lock, by threads and processes at once;
a torn last line cut off (and kept aside) before anything else is written; the same label
sent twice written once; the reader's last-line-wins and undo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from pydantic import ValidationError

from jurist.runs._label_writer import LabelLine, LabelWriter, read_labels

ROOT = Path(__file__).resolve().parents[2]
AT = "2026-12-02T03:41:14.123Z"


def line(item: int, who: str = "ana", label: int | str | None = 1, at: str = AT) -> LabelLine:
    return LabelLine(item=item, item_hash=f"h{item}", label=label, annotator=who, at=at)


_WRITER = """
import sys
from jurist.runs._label_writer import LabelLine, LabelWriter
path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
w = LabelWriter(path)
for i in range(n):
    note = who * (i % 50)  # lines of different lengths
    w.write(LabelLine(item=i, item_hash="h", label=i % 5, annotator=who,
                      at=f"2026-12-02T03:00:{i % 60:02d}.{i:06d}Z", note=note or None))
w.close()
"""


def test_processes_and_threads_writing_at_once_never_tear_or_interleave(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), who, "300"], env=env)
        for who in ("p1", "p2", "p3")
    ]
    writer = LabelWriter(path)
    threads = [
        threading.Thread(
            target=lambda who=who: [
                writer.write(line(i, who, at=f"2026-12-02T03:00:00.{i:06d}Z")) for i in range(300)
            ]
        )
        for who in ("t1", "t2")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        assert p.wait(timeout=300) == 0
    writer.close()
    data = path.read_bytes()
    assert data.endswith(b"\n")
    rows = [json.loads(raw) for raw in data.splitlines()]
    assert len(rows) == 5 * 300
    for who in ("p1", "p2", "p3", "t1", "t2"):
        assert sorted(r["item"] for r in rows if r["annotator"] == who) == list(range(300))
    assert read_labels(path).problems == []


def test_a_torn_last_line_is_cut_off_kept_aside_and_never_doubled(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    first = LabelWriter(path)
    assert first.write(line(0))
    whole = line(1, label=3).to_bytes()
    with path.open("ab") as f:  # a writer killed in the middle of this line
        f.write(whole[:25])
    assert read_labels(path).offset == len(line(0).to_bytes())  # a reader waits for the rest
    again = LabelWriter(path)  # a restart
    assert again.torn_bytes == 25
    assert (tmp_path / "labels.jsonl.torn").read_bytes() == whole[:25] + b"\n"
    assert path.read_bytes() == line(0).to_bytes()
    assert again.write(line(1, label=3))  # the page sends it again: written once, whole
    assert not again.write(line(1, label=3))
    assert not first.write(line(0))  # a writer that ran before sees the file as it is
    assert path.read_bytes() == line(0).to_bytes() + whole


def test_a_torn_line_left_by_another_process_is_cut_before_the_next_append(
    tmp_path: Path,
) -> None:
    path = tmp_path / "labels.jsonl"
    writer = LabelWriter(path)
    with path.open("ab") as f:
        f.write(b'{"item": 7, "la')
    assert writer.write(line(2))
    assert [x.item for x in read_labels(path).lines] == [2]
    assert writer.torn_bytes == 15


def test_the_last_line_wins_and_null_takes_a_label_back(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    w = LabelWriter(path)
    w.write(line(0, label=2, at="2026-12-02T03:00:00Z"))
    w.write(line(0, label=4, at="2026-12-02T03:00:01Z"))
    w.write(line(1, label=5, at="2026-12-02T03:00:02Z"))
    w.write(line(1, label=None, at="2026-12-02T03:00:03Z"))
    w.write(line(1, "bo", label=1, at="2026-12-02T03:00:04Z"))
    with path.open("ab") as f:
        f.write(b'{"item": "x"}\nnot json\n')
    found = read_labels(path)
    assert {k: v.label for k, v in found.latest().items()} == {(0, "ana"): 4, (1, "bo"): 1}
    assert [n for n, _ in found.problems] == [6, 7]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("annotator", "ana\nbo"),
        ("annotator", "   "),
        ("at", "2026-12-02T03:00:00"),
        ("at", "2026-12-02T03:00:00+02:00"),
        ("label", float("nan")),
        ("item", -1),
    ],
)
def test_a_line_that_cannot_be_right_is_refused(field: str, value: object) -> None:
    good = {"item": 0, "item_hash": "h", "label": 1, "annotator": "ana", "at": AT}
    with pytest.raises(ValidationError):
        LabelLine.model_validate({**good, field: value})
