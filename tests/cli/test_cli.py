"""``jurist judge``: the main job, its errors and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jurist.cli import EXIT_FAILED_ITEMS, EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, main
from tests.conftest import free_port

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "qa.jsonl"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_main_job_on_mock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        ["judge", str(EXAMPLES), "--model", "mock:judge", "--out", str(tmp_path), "--no-progress"],
        capsys,
    )
    assert code == EXIT_OK
    assert "mean score" in out and "1.0000" in out
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(r["judge_score"] == 1.0 for r in rows)
    assert rows[0]["response"] == "Paris is the capital of France."
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["items"] == 8 and summary["calls"] == 8


def test_rerun_resumes_and_no_resume_hits_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "judge",
        str(EXAMPLES),
        "--model",
        "mock:judge",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert run(args, capsys)[0] == EXIT_OK
    # the same command again resumes the finished run: nothing is sent
    assert run(args, capsys)[0] == EXIT_OK
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["calls"] == 8 and summary["sessions"] == 2 and summary["items"] == 8
    # starting over answers from the cache
    assert run([*args, "--no-resume"], capsys)[0] == EXIT_OK
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cache_hits"] == 8 and summary["calls"] == 0 and summary["cost"] == 0.0
    assert run([*args, "--no-resume", "--no-cache"], capsys)[0] == EXIT_OK
    assert json.loads((tmp_path / "summary.json").read_text())["calls"] == 8


def test_changed_template_on_resume_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["judge", str(EXAMPLES), "--model", "mock:judge", "--out", str(tmp_path)]
    assert run([*args, "--no-progress"], capsys)[0] == EXIT_OK
    code, _, err = run([*args, "--no-progress", "--temperature", "0.5"], capsys)
    assert code == EXIT_USAGE
    assert "cannot resume" in err and "judge.temperature: 0.0 -> 0.5" in err


def test_csv_with_field_mapping(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.csv"
    data.write_text('question,answer\n"2+2?",4\n"Capital of Italy?",Rome\n')
    code, _, _ = run(
        [
            "judge",
            str(data),
            "--model",
            "mock:judge",
            "--prompt-field",
            "question",
            "--response-field",
            "answer",
            "--out",
            str(tmp_path / "o.jsonl"),
            "--no-progress",
            "--no-cache",
        ],
        capsys,
    )
    assert code == EXIT_OK
    rows = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [r["answer"] for r in rows] == ["4", "Rome"]


def test_malformed_line_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"prompt": "q", "response": "a"}\n\n{"prompt": "q", "response": \n')
    code, _, err = run(["judge", str(data), "--model", "mock:judge"], capsys)
    assert code == EXIT_USAGE
    assert f"{data}:3: not valid JSON" in err


def test_missing_field_names_it_and_the_fields_that_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "q", "response": "a"}\n{"prompt": "q", "answer": "a"}\n')
    code, _, err = run(["judge", str(data), "--model", "mock:judge"], capsys)
    assert code == EXIT_USAGE
    assert "d.jsonl:2: missing field 'response'" in err and "['answer', 'prompt']" in err


def test_unknown_template_lists_the_known(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        ["judge", str(EXAMPLES), "--template", "likret", "--model", "mock:judge"], capsys
    )
    assert code == EXIT_USAGE
    assert "unknown template 'likret'" in err and "likert" in err


def test_unknown_provider_lists_the_known(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["judge", str(EXAMPLES), "--model", "opnai:gpt"], capsys)
    assert code == EXIT_USAGE
    assert "unknown model provider 'opnai'" in err and "openai" in err


def test_unreachable_server_names_the_url(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    code, _, err = run(
        ["judge", str(EXAMPLES), "--model", "openai:tiny", "--base-url", url, "--no-progress"],
        capsys,
    )
    assert code == EXIT_RUNTIME
    assert url in err.replace("\n", "")


def test_usage_error_exit_code_for_bad_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(["judge", str(EXAMPLES), "--concurrency", "0"], capsys)
    assert code == EXIT_USAGE


def test_templates_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["templates"], capsys)
    assert code == EXIT_OK
    for name in ("true_false_uncertain", "true_false", "continuous", "likert"):
        assert name in out


def test_missing_default_model_says_how_to_fix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from jurist.models import _default

    monkeypatch.delenv("JURIST_MODEL", raising=False)
    # without the demonstration model installed (tests/models/test_smollm2_real.py runs
    # the offline default with it)
    monkeypatch.setattr(_default, "demo_gguf", lambda: None)
    _default.choose_default_model.cache_clear()
    try:
        code, _, err = run(["judge", str(EXAMPLES), "--no-progress"], capsys)
    finally:
        _default.choose_default_model.cache_clear()
    text = " ".join(err.split())
    assert code == EXIT_RUNTIME
    assert "Qwen/Qwen2.5-0.5B-Instruct" in text and "hf:/path/to/model" in text


@pytest.mark.slow
def test_logprob_scoring_on_tiny_hf_model(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--scoring logprobs on hf: one forward pass per item, every item weighed and scored
    (flagged: a random model puts little mass on the verdicts)."""
    args = ["judge", str(EXAMPLES), "--model", f"hf:{tiny_model_dir}", "--template", "likert"]
    args += ["--scoring", "logprobs", "--low-coverage", "flag"]
    args += ["--out", str(tmp_path), "--no-progress"]
    code, _, _ = run(args, capsys)
    assert code == EXIT_OK
    rows = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 8
    for r in rows:
        assert r["judge_scoring"] == "logprobs" and 0.0 <= r["judge_score"] <= 1.0
        assert sum(r["judge_distribution"].values()) == pytest.approx(1.0)
    code, _, err = run([*args[:-3], "--scoring", "sometimes", "--no-progress"], capsys)
    assert code == EXIT_USAGE and "--scoring" in err


def test_main_job_on_tiny_hf_model(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        [
            "judge",
            str(EXAMPLES),
            "--model",
            f"hf:{tiny_model_dir}",
            "--out",
            str(tmp_path),
            "--no-progress",
            "--retries",
            "0",
        ],
        capsys,
    )
    assert code in (EXIT_OK, EXIT_FAILED_ITEMS)
    assert "items" in out and "results" in out
    rows = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 8
    for r in rows:
        assert (r["judge_score"] is None) == (r["judge_error"] is not None)
        assert r["judge_response"] is not None
