"""Exit codes and one-line errors: crashes, unreadable files, a full disk, markup in names."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from jurist.cli import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, main
from jurist.cli._app import EXIT_CRASH

LATIN1 = "café".encode("latin-1")


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def judge_args(data: Path, tmp_path: Path) -> list[str]:
    return [
        "judge",
        str(data),
        "--model",
        "mock:judge",
        "--out",
        str(tmp_path / "o"),
        "--no-progress",
    ]


def test_a_crash_exits_70_with_the_exception_not_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import jurist.cli._templates as templates

    def boom() -> dict[str, object]:
        raise ZeroDivisionError("division by zero [/]")

    monkeypatch.setattr(templates, "list_templates", boom)
    code, _, err = run(["templates"], capsys)
    assert code == EXIT_CRASH == 70
    assert "internal error: ZeroDivisionError: division by zero [/]" in err
    assert "JURIST_DEBUG=1" in err and "Traceback" not in err
    monkeypatch.setenv("JURIST_DEBUG", "1")
    code, _, err = run(["templates"], capsys)
    assert code == 70 and "Traceback" in err


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        ("d.jsonl", b'{"prompt": "q", "response": "a"}\n{"prompt": "' + LATIN1 + b'"}\n', ":2:"),
        ("d.json", b'[{"prompt": "q",\n "response": "' + LATIN1 + b'"}]', ":2:"),
        ("d.csv", b"prompt,response\nq,a\nq," + LATIN1 + b"\n", ":3:"),
    ],
)
def test_non_utf8_data_is_one_line_naming_file_and_line(
    name: str, content: bytes, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / name
    data.write_bytes(content)
    code, _, err = run(judge_args(data, tmp_path), capsys)
    assert code == EXIT_USAGE
    line = one_line(err)
    assert f"{data}{where}" in line and "not UTF-8" in line


def test_non_utf8_rubric_template_and_catalog_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "q", "response": "a"}\n')
    rubric = tmp_path / "r.yaml"
    rubric.write_bytes(b"criteria:\n  - name: c\n    requirement: " + LATIN1 + b"\n")
    code, _, err = run(["grade", str(data), "--rubric", str(rubric), "--model", "mock:j"], capsys)
    assert code == EXIT_USAGE and f"{rubric}:3:" in one_line(err)
    template = tmp_path / "t.yaml"
    template.write_bytes(b"name: t\ninstructions: " + LATIN1 + b"\n")
    code, _, err = run([*judge_args(data, tmp_path), "--template", str(template)], capsys)
    assert code == EXIT_USAGE and f"{template}:2:" in one_line(err)
    root = tmp_path / "catalog"
    entry = root / "judges" / "mine" / "bad.yaml"
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"kind: judge\ndescription: " + LATIN1 + b"\n")
    code, _, err = run(["catalog", "show", "judges.mine.bad", "--catalog", str(root)], capsys)
    assert code == EXIT_USAGE and f"{entry}:2:" in one_line(err)


def test_a_csv_field_over_128k_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "long.csv"
    long = "word " * 40_000  # 200 KB, over the csv module's default 131072
    data.write_text(f'prompt,response\nq,"{long}"\n', encoding="utf-8")
    code, _, err = run(judge_args(data, tmp_path), capsys)
    assert code == EXIT_OK, err
    row = json.loads((tmp_path / "o" / "results.jsonl").read_text().splitlines()[0])
    assert len(row["response"]) == len(long)


def test_corrupt_parquet_and_a_folder_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "d.parquet"
    bad.write_bytes(b"PAR1 this is not parquet at all PAR1")
    code, _, err = run(judge_args(bad, tmp_path), capsys)
    assert code == EXIT_USAGE and str(bad) in one_line(err) and "Parquet" in err
    folder = tmp_path / "data.jsonl"
    folder.mkdir()
    code, _, err = run(judge_args(folder, tmp_path), capsys)
    assert code == EXIT_USAGE and f"{folder}: is a folder" in one_line(err)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_disk_is_a_runtime_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "catalog"
    entry = root / "judges" / "mine" / "j.yaml"
    entry.parent.mkdir(parents=True)
    entry.write_text(
        "kind: judge\ndescription: x\nmodel: 'mock:judge'\n"
        "model_options: {outputs: ['4'], cycle: true}\ntemplate: likert\n"
    )
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "q"}\n')
    out = tmp_path / "full" / "results.jsonl"
    out.parent.mkdir()
    # every write to it fails with ENOSPC (--overwrite: a folder jurist did not make)
    (out.parent / "summary.json").symlink_to("/dev/full")
    code, _, err = run(
        [
            "eval-model",
            str(data),
            "--model",
            "mock:m",
            "--judge",
            "judges.mine.j",
            "--catalog",
            str(root),
            "--out",
            str(out),
            "--no-progress",
            "--overwrite",
        ],
        capsys,
    )
    assert code == EXIT_RUNTIME
    line = one_line(err)
    assert "No space left on device" in line and "summary.json" in line


def test_an_os_error_escaping_a_command_names_its_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import jurist.cli._templates as templates

    def full() -> dict[str, object]:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/runs/x/results.jsonl")

    monkeypatch.setattr(templates, "list_templates", full)
    code, _, err = run(["templates"], capsys)
    assert code == EXIT_RUNTIME
    assert "/runs/x/results.jsonl: No space left on device" in one_line(err)


@pytest.mark.parametrize("name", ["x[/]", "[bold]x", "x[/red]"])
def test_brackets_in_names_do_not_break_the_error_printer(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "q", "response": "a"}\n')
    code, _, err = run([*judge_args(data, tmp_path), "--template", name], capsys)
    assert code == EXIT_USAGE and name in one_line(err)
    code, _, err = run(judge_args(tmp_path / f"{name}.jsonl", tmp_path), capsys)
    assert code == EXIT_USAGE and name in one_line(err)
    code, _, err = run([*judge_args(data, tmp_path), "--field", name], capsys)
    assert code == EXIT_USAGE and name in one_line(err)


def test_brackets_in_model_and_file_names_in_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # a long temporary path must not wrap the names
    data = tmp_path / "[red]d.jsonl"
    data.write_text('{"prompt": "q", "response": "a"}\n')
    code, out, err = run(
        [
            "judge",
            str(data),
            "--model",
            "mock:a[/]",
            "--out",
            str(tmp_path / "o[b]"),
            "--no-progress",
        ],
        capsys,
    )
    assert code == EXIT_OK, err
    assert "mock:a[/]" in out and "[red]d.jsonl" in out


def test_a_full_sqlite_disk_is_a_runtime_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    import jurist.cli._templates as templates

    def full() -> dict[str, object]:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(templates, "list_templates", full)
    code, _, err = run(["templates"], capsys)
    assert code == EXIT_RUNTIME and "database or disk is full" in one_line(err)
