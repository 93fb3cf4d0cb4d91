"""``jurist catalog`` and ``jurist eval-model``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jurist.cli import EXIT_FAILED_ITEMS, EXIT_OK, EXIT_USAGE, main

DATA = [
    {"question": "What is the capital of Texas?", "gold": "Austin"},
    {"question": "What color is the sky on a clear day?", "gold": "Blue"},
]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def user_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "catalog"
    monkeypatch.setenv("JURIST_CATALOG", str(root))
    return root


def mock_entry(root: Path, name: str, outputs: list[str], template: str = "likert") -> Path:
    path = root / Path(*name.split(".")[:-1]) / f"{name.split('.')[-1]}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"kind: judge\ndescription: a scripted judge\nmodel: 'mock:judge'\n"
        f"model_options: {{outputs: {json.dumps(outputs)}, cycle: true}}\ntemplate: {template}\n"
    )
    return path


def first_column(out: str) -> set[str]:
    return {line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")} - {""}


def test_catalog_lists_builtin_and_user_entries(
    user_catalog: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["catalog"], capsys)
    assert code == EXIT_OK
    assert "judges.mt_bench.hf_qwen2_5_0_5b_instruct" in out
    assert "MT-Bench single-answer grading" in out
    assert str(user_catalog) in out
    mock_entry(user_catalog, "judges.mine.likert", ["4"])
    (user_catalog / "judges" / "mine" / "broken.yaml").write_text("kind: judge\nbogus: 1\n")
    code, out, _ = run(["catalog", "--section", "judges"], capsys)
    assert code == EXIT_OK
    assert "judges.mine.likert" in out and "a scripted judge" in out
    assert "judges.mine.broken" in out and "unreadable" in out
    assert all(n.startswith("judges.") for n in first_column(out))
    code, out, _ = run(["catalog", "--section", "templates"], capsys)
    assert first_column(out) == {"templates.helpful_yes_no"}


def test_catalog_show_with_overrides(
    user_catalog: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        ["catalog", "show", "judges.likert.hf_qwen2_5_0_5b_instruct[temperature=0.3]"], capsys
    )
    assert code == EXIT_OK
    assert "template: likert" in out
    assert '"temperature": 0.3' in out
    assert "fields: prompt, response" in out


def test_catalog_add_refuses_overwrite_and_remove(
    user_catalog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = mock_entry(tmp_path / "elsewhere", "judges.x.y", ["5"])
    code, out, _ = run(["catalog", "add", "judges.team.likert", str(src)], capsys)
    assert code == EXIT_OK and "added judges.team.likert" in out
    assert (user_catalog / "judges" / "team" / "likert.yaml").is_file()
    code, _, err = run(["catalog", "add", "judges.team.likert", str(src)], capsys)
    assert code == EXIT_USAGE and "already exists" in err and "--overwrite" in err
    assert run(["catalog", "add", "judges.team.likert", str(src), "--overwrite"], capsys)[0] == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: judge\nmodel: 'mock:x'\ntemplate: likret\n")
    code, _, err = run(["catalog", "add", "judges.team.bad", str(bad)], capsys)
    assert code == EXIT_USAGE and f"{bad}:3" in err and "likret" in err
    assert not (user_catalog / "judges" / "team" / "bad.yaml").exists()
    code, out, _ = run(["catalog", "remove", "judges.team.likert"], capsys)
    assert code == EXIT_OK and not (user_catalog / "judges" / "team" / "likert.yaml").exists()


def _write_data(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_eval_model_with_tiny_hf_model_and_catalog_judge(
    user_catalog: Path, tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mock_entry(user_catalog, "judges.mine.likert", ["4"])
    data = _write_data(tmp_path, DATA)
    out_dir = tmp_path / "out"
    args = ["eval-model", str(data), "--model", f"hf:{tiny_model_dir}"]
    args += ["--judge", "judges.mine.likert", "--prompt-field", "question"]
    args += ["--max-tokens", "5", "--out", str(out_dir), "--no-progress"]
    code, out, _ = run(args, capsys)
    assert code == EXIT_OK
    assert "mean score" in out and "0.7500" in out
    rows = [json.loads(x) for x in (out_dir / "results.jsonl").read_text().splitlines()]
    assert [r["score"] for r in rows] == [0.75, 0.75]
    assert rows[0]["gold"] == "Austin" and isinstance(rows[0]["prediction"], str)
    assert rows[0]["model_prompt"] == DATA[0]["question"]
    assert DATA[0]["question"] in rows[0]["judge_input"]
    summary = json.loads((out_dir / "summary.json").read_text())
    assert (summary["n"], summary["n_scored"], summary["n_failed"]) == (2, 2, 0)
    assert summary["judge"] == "judges.mine.likert"
    assert summary["inference_usage"]["completion_tokens"] > 0


def test_eval_model_missing_field_and_failures(
    user_catalog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mock_entry(user_catalog, "judges.mine.ref", ["[[8]]", "nonsense"], "mt_bench_reference")
    data = _write_data(tmp_path, DATA)
    base = ["eval-model", str(data), "--model", "mock:model", "--judge", "judges.mine.ref"]
    base += ["--prompt-field", "question", "--no-progress"]
    code, _, err = run([*base, "--out", str(tmp_path / "o1")], capsys)
    assert code == EXIT_USAGE
    assert "needs field 'reference'" in err and "['gold', 'question']" in err
    assert not (tmp_path / "o1").exists()
    code, out, _ = run(
        [*base, "--reference-field", "gold", "--retries", "0", "--out", str(tmp_path / "o2")],
        capsys,
    )
    assert code == EXIT_FAILED_ITEMS
    rows = [json.loads(x) for x in (tmp_path / "o2" / "results.jsonl").read_text().splitlines()]
    assert rows[0]["score"] == 0.8
    assert rows[1]["score"] is None and rows[1]["error"].startswith("parse: ")
    assert "1 instance(s) got no score" in out
    code, _, err = run([*base[:5], "judges.mine.rf", *base[6:]], capsys)
    assert code == EXIT_USAGE and "Did you mean 'judges.mine.ref'" in err
