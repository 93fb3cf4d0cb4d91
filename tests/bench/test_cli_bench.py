"""``jurist bench`` on the command line: files and layouts, setups by spec, cascades, the
JSON and the page; usage errors exit 2 before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli_run import run, write


def _rows(n: int = 40) -> list[dict]:
    rows = []
    for i in range(n):
        label = "A" if i % 2 == 0 else "B"
        good = 2.0 if i % 5 else -1.0  # the reward model is wrong on every fifth pair
        sa, sb = (good, 0.0) if label == "A" else (0.0, good)
        right = "[[A]]" if label == "A" else "[[B]]"
        swapped = "[[B]]" if label == "A" else "[[A]]"
        rows.append(
            {
                "id": f"q{i}",
                "prompt": f"question {i}",
                "response_a": f"answer a {i}",
                "response_b": f"answer b {i}",
                "label": label,
                "source": "s1" if i < n // 2 else "s2",
                "scores": {"rm": [sa, sb]},
                "recorded": {"gpt": [right, swapped]},
            }
        )
    return rows


def test_bench_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write(tmp_path / "pairs.jsonl", _rows())
    out, figures, page = tmp_path / "bench", tmp_path / "f.json", tmp_path / "page.html"
    code, text = run(
        [
            "bench",
            str(data),
            "--setup",
            "scores:rm",
            "--setup",
            "strong=recorded:gpt",
            "--cascade",
            "scores:rm>strong",
            "--cascade-splits",
            "20",
            "--out",
            str(out),
            "--json",
            str(figures),
            "--page",
            str(page),
            "--bootstrap",
            "200",
        ],
        capsys,
    )
    assert code == 0, text
    assert "strong" in text and "100.0" in text and "cascade scores:rm -> strong" in text
    got = json.loads(figures.read_text())
    tables = {t["setup"]: t for t in got["tables"]}
    assert tables["strong"]["value"]["value"] == 1.0
    assert tables["scores:rm"]["value"]["value"] == pytest.approx(32 / 40)
    assert got["cascades"][0]["splits"] == 20
    assert page.read_text() == (out / "bench.html").read_text()
    # again on the same folder: resumed, the same figures
    code, _ = run(
        [
            "bench",
            str(data),
            "--setup",
            "scores:rm",
            "--setup",
            "strong=recorded:gpt",
            "--out",
            str(out),
            "--json",
            str(figures),
        ],
        capsys,
    )
    assert code == 0 and json.loads(figures.read_text())["tables"][0] == got["tables"][0]


def test_bench_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write(tmp_path / "pairs.jsonl", _rows(4))
    code, text = run(
        ["bench", str(data), "--setup", "nonsense", "--out", str(tmp_path / "o")], capsys
    )
    assert code == 2 and "is none of recorded:" in text
    code, text = run(["bench", "nolayout:x", "--setup", "scores:rm"], capsys)
    assert code == 2 and "no layout 'nolayout'" in text
    code, text = run(["bench", str(data), "--setup", "scores:rm", "--cascade", "a-b"], capsys)
    assert code == 2 and "CHEAP>STRONG" in text
    code, text = run(
        ["bench", "judgebench:" + str(tmp_path / "none"), "--setup", "scores:rm"], capsys
    )
    assert code == 2 and "no JudgeBench pairs" in text
    assert not (tmp_path / "o").exists()
