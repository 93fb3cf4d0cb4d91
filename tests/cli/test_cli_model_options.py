"""One set of model options for every engine command, and spec strings with model options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer

from jurist.cli import EXIT_FAILED_ITEMS, EXIT_OK, EXIT_USAGE, app, main
from jurist.errors import ConfigError
from tests._fault_server import FaultServer

ENGINE_COMMANDS = ("judge", "compare", "grade", "eval-model")
SHARED_FLAGS = (
    "--model",
    "--base-url",
    "--api-key",
    "--timeout",
    "--max-retries",
    "--rpm",
    "--tpm",
    "--cache",
    "--no-cache",
    "--cache-path",
    "--json-mode",
    "--prompt-cache",
    "--no-prompt-cache",
    "--concurrency",
    "--temperature",
    "--model-option",
)
SECRET = "sk-h4-very-secret-key-123"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _flags(command: str) -> set[str]:
    group = typer.main.get_command(app)
    cmd = group.commands[command]  # type: ignore[attr-defined]
    names: set[str] = set()
    for param in cmd.params:
        names.update(param.opts)
        names.update(getattr(param, "secondary_opts", []))
    return names


@pytest.mark.parametrize("command", ENGINE_COMMANDS)
def test_every_engine_command_takes_every_shared_model_option(command: str) -> None:
    from jurist.cli._model_options import SHARED_OPTIONS

    declared = {"--" + name.replace("_", "-") for name in SHARED_OPTIONS}
    assert declared <= set(SHARED_FLAGS)  # the list below names every shared option
    missing = [f for f in SHARED_FLAGS if f not in _flags(command)]
    assert missing == [], f"jurist {command} lacks {missing}"


RUN_COMMANDS = ("judge", "compare", "grade")  # the commands that run a dataset through an engine
ENGINE_FLAGS = (
    "--engine",
    "--ray-address",
    "--actors",
    "--gpus-per-actor",
    "--batch-api",
    "--batch-followup",
    "--batch-expired",
    "--batch-file-out",
    "--batch-poll",
    "--batch-adopt",
    "--batch-resubmit",
)


@pytest.mark.parametrize("command", RUN_COMMANDS)
def test_every_run_command_takes_every_engine_option(command: str) -> None:
    from jurist.cli._engine_options import ENGINE_FLAGS as DECLARED

    declared = {flag for decls, *_ in DECLARED.values() for flag in decls}
    assert declared == set(ENGINE_FLAGS)  # the list above names every engine option
    missing = [f for f in ENGINE_FLAGS if f not in _flags(command)]
    assert missing == [], f"jurist {command} lacks {missing}"


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _secret_nowhere(out: str, err: str, folder: Path) -> None:
    assert SECRET not in out and SECRET not in err
    for f in folder.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_compare_takes_json_mode_for_llama_cpp_python_servers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _write(tmp_path / "a.jsonl", [{"prompt": "2+2?", "response": "4"}])
    b = _write(tmp_path / "b.jsonl", [{"prompt": "2+2?", "response": "5"}])
    out_dir = tmp_path / "cmp"
    with FaultServer() as server:
        code, out, err = run(
            [
                "compare",
                str(a),
                str(b),
                "--model",
                "tiny",
                "--base-url",
                server.url,
                "--api-key",
                SECRET,
                "--json-mode",
                "json_object",
                "--no-cache",
                "--retries",
                "0",
                "--temperature",
                "0.5",
                "--out",
                str(out_dir),
                "--no-progress",
            ],
            capsys,
        )
    assert code == EXIT_FAILED_ITEMS, err  # the echo server gives no verdict
    assert server.bodies and all(
        body["response_format"]["type"] == "json_object" for body in server.bodies
    )
    assert all(body["temperature"] == 0.5 for body in server.bodies)
    _secret_nowhere(out, err, tmp_path)


def test_grade_takes_json_mode_and_several_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rubric = tmp_path / "r.yaml"
    rubric.write_text("criteria:\n  - name: correct\n    requirement: The answer is right\n")
    data = _write(tmp_path / "d.jsonl", [{"prompt": "2+2?", "response": "4"}])
    with FaultServer() as server:
        code, _, err = run(
            [
                "grade",
                str(data),
                "--rubric",
                str(rubric),
                "--model",
                "a",
                "--model",
                "b",
                "--base-url",
                server.url,
                "--json-mode",
                "json_object",
                "--no-cache",
                "--out",
                str(tmp_path / "g"),
                "--no-progress",
                "--retries",
                "0",
            ],
            capsys,
        )
    assert code == EXIT_FAILED_ITEMS, err
    assert {body["model"] for body in server.bodies} == {"a", "b"}
    assert all(body["response_format"]["type"] == "json_object" for body in server.bodies)


def test_eval_model_takes_a_bare_name_with_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "catalog"
    monkeypatch.setenv("JURIST_CATALOG", str(root))
    entry = root / "judges" / "mine" / "j.yaml"
    entry.parent.mkdir(parents=True)
    entry.write_text(
        "kind: judge\ndescription: scripted\nmodel: 'mock:judge'\n"
        "model_options: {outputs: ['4'], cycle: true}\ntemplate: likert\n"
    )
    data = _write(tmp_path / "d.jsonl", [{"prompt": "2+2?"}])
    with FaultServer() as server:
        code, out, err = run(
            [
                "eval-model",
                str(data),
                "--model",
                "tiny",
                "--base-url",
                server.url,
                "--api-key",
                SECRET,
                "--judge",
                "judges.mine.j",
                "--no-progress",
                "--out",
                str(tmp_path / "e"),
            ],
            capsys,
        )
    assert code == EXIT_OK, err
    assert server.bodies[0]["model"] == "tiny"
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["model"] == "openai:tiny"
    _secret_nowhere(out, err, tmp_path)


def test_eval_model_still_requires_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write(tmp_path / "d.jsonl", [{"prompt": "2+2?"}])
    code, _, err = run(["eval-model", str(data), "--judge", "judges.x.y"], capsys)
    assert code == EXIT_USAGE and "--model" in err


def test_bad_json_mode_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _write(tmp_path / "d.jsonl", [{"prompt": "q", "response": "a"}])
    code, _, err = run(
        [
            "judge",
            str(data),
            "--model",
            "openai:x",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--json-mode",
            "grammar",
            "--no-progress",
            "--out",
            str(tmp_path / "o"),
        ],
        capsys,
    )
    assert code == EXIT_USAGE and "--json-mode must be" in err


def test_help_never_shows_the_api_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JURIST_API_KEY", SECRET)
    for command in ENGINE_COMMANDS:
        code, out, err = run([command, "--help"], capsys)
        assert code == EXIT_OK and "--api-key" in out
        assert SECRET not in out + err


def test_llm_judge_spec_string_with_model_options() -> None:
    import jurist

    with FaultServer() as server:
        judge = jurist.LLMJudge("openai:tiny", base_url=server.url, api_key=SECRET, timeout=5.0)
        assert judge.model.spec == "openai:tiny"
        pair = jurist.PairwiseJudge("openai:tiny", base_url=server.url, api_key="x")
        assert pair.llm_judge.model.spec == "openai:tiny"
        out = judge.judge_responses_sync(["2+2?"], ["4"], retries=0)
    assert server.bodies[0]["model"] == "tiny"
    assert out["scores"] == [None]  # the echo server gives no verdict
    assert SECRET not in repr(judge.model)


def test_model_options_on_a_model_object_or_unknown_option_are_config_errors() -> None:
    import jurist

    model = jurist.get_model("mock:judge", outputs=["Correct"])
    with pytest.raises(ConfigError, match="base_url"):
        jurist.LLMJudge(model, base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="explanation"):
        jurist.LLMJudge("mock:judge", explanation=True)


def test_model_options_reach_the_backend_and_flags_keep_their_own(tmp_path: Path) -> None:
    from jurist.cli._model_options import build_model, parse_backend_options
    from jurist.errors import ConfigError
    from jurist.models import WrapperModel

    model = build_model(
        "openai:tiny",
        base_url="http://127.0.0.1:9/v1",
        api_key=None,
        timeout=5.0,
        max_retries=0,
        cache=False,
        backend_options=parse_backend_options(["max_connections=7", "logprobs=false"]),
    )
    inner = model.innermost if isinstance(model, WrapperModel) else model
    assert inner._max_connections == 7 and inner.capabilities.logprobs is False
    with pytest.raises(ConfigError, match="set it with --timeout instead"):
        build_model(
            "openai:tiny",
            base_url=None,
            api_key="k",
            timeout=5.0,
            max_retries=0,
            cache=False,
            backend_options={"timeout": 9},
        )
    for bad in (["max_model_len"], ["=3"], ["a=1", "a=2"]):
        with pytest.raises(ConfigError, match="--model-option"):
            parse_backend_options(bad)


def test_an_unknown_model_option_is_the_backends_error_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write(tmp_path / "d.jsonl", [{"prompt": "2+2?", "response": "4"}])
    code, _, err = run(
        [
            "judge",
            str(data),
            "--model",
            "mock:judge",
            "--model-option",
            "no_such_option=1",
            "--out",
            str(tmp_path / "out"),
        ],
        capsys,
    )
    assert code == 2 and "no_such_option" in err


@pytest.mark.parametrize("command", ["judge", "compare", "grade"])
def test_max_tokens_reaches_every_request_of_every_run_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """``--max-tokens`` (issue 21): the judge's answer size on judge, compare and grade,
    where an answer cut at the template's size could only be fixed in a YAML file before."""
    a = _write(tmp_path / "a.jsonl", [{"prompt": "2+2?", "response": "4"}])
    head = {
        "judge": ["judge", str(a)],
        "compare": [
            "compare",
            str(a),
            str(_write(tmp_path / "b.jsonl", [{"prompt": "2+2?", "response": "5"}])),
        ],
        "grade": ["grade", str(a), "--rubric", str(tmp_path / "r.yaml")],
    }[command]
    (tmp_path / "r.yaml").write_text("criteria:\n  - name: c1\n    requirement: Right\n")
    with FaultServer() as server:
        code, _out, err = run(
            [
                *head,
                "--model",
                "tiny",
                "--base-url",
                server.url,
                "--api-key",
                SECRET,
                "--max-tokens",
                "77",
                "--no-cache",
                "--retries",
                "0",
                "--out",
                str(tmp_path / "run"),
                "--no-progress",
            ],
            capsys,
        )
    assert code == EXIT_FAILED_ITEMS, err  # the echo server gives no verdict
    assert server.bodies and all(body["max_tokens"] == 77 for body in server.bodies)
