"""Images given by path in a data file (issue 25 seams): a relative path is read from the
data file's folder, wherever the run starts, with a clear error naming the item and the
path when the file is missing; and the item hash a resumed run checks covers the image's
bytes, so a picture changed under the same path is a changed item."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.data import open_source
from jurist.errors import DataError, JuristError
from jurist.models import MockModel
from tests._chat_server import ChatServer, image_parts
from tests._cli_run import run as run_cli

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
OTHER_PNG = PNG[:-12] + b"\x00" * 12  # other bytes, same name


def _rows() -> list[dict[str, Any]]:
    picture = {"type": "image_url", "image_url": {"url": "img/dot.png"}}
    seen = {"role": "user", "content": [{"type": "text", "text": "What is it?"}, picture]}
    return [
        {"prompt": "Describe it.", "response": "A dot.", "images": ["img/dot.png"]},
        {"messages": [seen, {"role": "assistant", "content": "A green pixel."}]},
    ]


def _data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str = "jsonl") -> Path:
    """The data file in data/ with its picture in data/img/; the run starts elsewhere."""
    folder = tmp_path / "data"
    (folder / "img").mkdir(parents=True)
    (folder / "img" / "dot.png").write_bytes(PNG)
    if kind == "jsonl":
        path = folder / "d.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    else:  # CSV cells hold the lists as JSON text
        import csv

        plain = [{"role": "user", "content": "Describe it."},
                 {"role": "assistant", "content": "A dot."}]  # fmt: skip
        path = folder / "d.csv"
        with path.open("w", newline="") as f:
            w = csv.DictWriter(f, ["messages", "images"])
            w.writeheader()
            w.writerow({"messages": json.dumps(plain), "images": '["img/dot.png"]'})
            w.writerow({"messages": json.dumps(_rows()[1]["messages"]), "images": ""})
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    return path


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_relative_image_paths_are_read_from_the_data_files_folder(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _data(tmp_path, monkeypatch, kind)
    model = MockModel("vision", outputs=["4"], cycle=True, images=True)
    run = jurist.evaluate(path, jurist.LLMJudge(model, template="likert"), run_dir="run")
    assert [r["judge_score"] for r in run.records()] == [0.75, 0.75]
    digest = hashlib.sha256(PNG).hexdigest()
    assert [[i.sha256 for i in r.messages[-1].images] for r in model.requests] == [[digest]] * 2
    stored = next(iter(run.records()))
    assert "img/dot.png" in json.dumps(stored)  # the row is kept as written


def test_a_missing_relative_image_names_the_item_and_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _data(tmp_path, monkeypatch)
    (path.parent / "img" / "dot.png").unlink()
    model = MockModel("vision", outputs=["4"], cycle=True, images=True)
    where = str(tmp_path / "data" / "img" / "dot.png")
    with pytest.raises(DataError) as e:
        jurist.evaluate(path, jurist.LLMJudge(model, template="likert"), run_dir="run")
    assert str(e.value).startswith(
        f"{path}:1: field 'images': image 'img/dot.png': no such file {where}"
    )
    assert model.requests == []


def test_items_in_memory_read_local_files_only_from_the_folders_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _data(tmp_path, monkeypatch)
    assert open_source(_rows()).base is None
    model = MockModel("vision", outputs=["4"], cycle=True, images=True)
    judge = jurist.LLMJudge(model, template="likert")
    monkeypatch.chdir(tmp_path / "data")
    # no folder: nothing is read, even a file in the working folder
    with pytest.raises(DataError, match=r"item 1: field 'images': image 'img/dot\.png': a local"):
        jurist.evaluate(_rows(), judge, run_dir="run")
    # the caller's say: relative paths are read from the working folder, inside the root
    run = jurist.evaluate(_rows(), judge, run_dir=tmp_path / "r2", files_root=".")
    assert [r["judge_score"] for r in run.records()] == [0.75, 0.75]
    assert model.requests and all(r.messages[-1].images for r in model.requests)


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    with ChatServer(lambda body: '{"verdict": "A"}' if "response_format" in body else "4") as s:
        yield s


def test_cli_judge_and_compare_read_images_beside_the_data(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    path = _data(tmp_path, monkeypatch)
    flags = ["--base-url", server.base_url, "--api-key", "x", "--no-progress"]
    args = ["judge", str(path), "--template", "likert", "--model", "judge", "--output", "text"]
    code, out = run_cli([*args, "--out", "r1", *flags], capsys)
    assert code == 0, out
    assert len(image_parts(server.bodies[-1])) == 1
    other = tmp_path / "data" / "b.jsonl"
    conv = _rows()[1]["messages"]
    other.write_text(json.dumps({"messages": [conv[0], {"role": "assistant", "content": "?"}]}))
    a = tmp_path / "data" / "a.jsonl"
    a.write_text(json.dumps(_rows()[1]) + "\n")
    code, out = run_cli(["compare", str(a), str(other), "--model", "pair", "--out", "r2",
                         *flags], capsys)  # fmt: skip
    assert code == 0, out
    assert len(image_parts(server.bodies[-1])) == 1  # the shared context's picture
    assert not server.rejected


def test_a_changed_image_under_the_same_path_is_refused_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _data(tmp_path, monkeypatch)
    model = MockModel("vision", outputs=["4"], cycle=True, images=True)
    judge = jurist.LLMJudge(model, template="likert")
    jurist.evaluate(path, judge, run_dir="run")
    jurist.evaluate(path, judge, run_dir="run", resume=True)  # the same bytes: resumes
    (path.parent / "img" / "dot.png").write_bytes(OTHER_PNG)
    with pytest.raises(JuristError, match=r"dataset: .* -> "):
        jurist.evaluate(path, judge, run_dir="run", resume=True)


def test_a_changed_image_is_caught_item_by_item_in_a_one_shot_source(tmp_path: Path) -> None:
    (tmp_path / "dot.png").write_bytes(PNG)
    rows = [{"prompt": "p", "response": "r", "images": str(tmp_path / "dot.png")}]
    model = MockModel("vision", outputs=["4"], cycle=True, images=True)
    judge = jurist.LLMJudge(model, template="likert")
    jurist.evaluate(iter(rows), judge, run_dir=tmp_path / "run", files_root=tmp_path)
    (tmp_path / "dot.png").write_bytes(OTHER_PNG)
    with pytest.raises(DataError, match="item 1: this item differs from item 1 of the run"):
        jurist.evaluate(
            iter(rows), judge, run_dir=tmp_path / "run", resume=True, files_root=tmp_path
        )
