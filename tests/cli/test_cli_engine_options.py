"""The engine flags of ``jurist judge|compare|grade``: refused combinations, and what
reaches the engine (Ray and batch-API options; rate limits applied once, in one place)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import jurist.cli._run as cli_run
from jurist.cli import EXIT_USAGE, main
from jurist.cli._engine_options import EngineOptions
from jurist.engines import BatchAPIEngine, BatchAPIOptions, LocalEngine, RayEngine, RayOptions
from jurist.errors import ConfigError
from jurist.models import LimitedModel, Model, WrapperModel
from tests._fault_server import FaultServer


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    _, err = capsys.readouterr()
    return code, " ".join(err.split())


def write_data(folder: Path) -> Path:
    path = folder / "d.jsonl"
    path.write_text(json.dumps({"prompt": "2+2?", "response": "4"}) + "\n")
    return path


def command_line(command: str, folder: Path) -> list[str]:
    data = write_data(folder)
    if command == "judge":
        return ["judge", str(data)]
    if command == "compare":
        return ["compare", str(data), str(data)]
    rubric = folder / "r.yaml"
    rubric.write_text("criteria:\n  - name: correct\n    requirement: The answer is right\n")
    return ["grade", str(data), "--rubric", str(rubric)]


REFUSED = [
    (["--engine", "spark"], "--engine must be local or ray, not 'spark'"),
    (["--actors", "3"], "--actors only applies with --engine ray"),
    (["--ray-address", "auto"], "--ray-address only applies with --engine ray"),
    (["--gpus-per-actor", "1"], "--gpus-per-actor only applies with --engine ray"),
    (["--batch-followup", "live"], "--batch-followup only applies with --batch-api"),
    (["--batch-poll", "5"], "--batch-poll only applies with --batch-api"),
    (["--batch-api", "--batch-expired", "retry"], "--batch-expired must be resubmit or error"),
    (["--batch-api", "--batch-followup", "later"], "--batch-followup must be batch or live"),
    (["--batch-api", "--engine", "ray"], "--batch-api and --engine ray do not combine"),
    (
        ["--batch-api"],
        "--batch-api needs an OpenAI-compatible model: 'mock:judge' cannot take batch "
        "files; use openai:NAME",
    ),
]


@pytest.mark.parametrize("command", ["judge", "compare", "grade"])
@pytest.mark.parametrize(("flags", "message"), REFUSED)
def test_flags_that_do_not_combine_are_usage_errors_before_any_work(
    command: str,
    flags: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    args = [*command_line(command, tmp_path), "--model", "mock:judge", "--out", str(out), *flags]
    code, err = run(args, capsys)
    assert code == EXIT_USAGE and message in err, err
    assert not out.exists()  # refused before the run folder was made


def test_batch_file_out_is_batch_mode_and_names_every_model_that_cannot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = command_line("grade", tmp_path)
    args += ["--model", "openai:gpt-4o-mini", "--model", "hf:tiny", "--model", "mock:m"]
    code, err = run([*args, "--batch-file-out", str(tmp_path / "req.jsonl")], capsys)
    assert code == EXIT_USAGE
    assert "--batch-file-out needs an OpenAI-compatible model: 'hf:tiny', 'mock:m'" in err


def test_a_bare_name_with_base_url_is_openai_compatible() -> None:
    EngineOptions(batch_api_flag=True).check(["openai:tiny"])
    assert EngineOptions(batch_file_out=Path("f.jsonl")).batch


def test_anthropic_models_take_the_batch_api_but_not_a_file_for_an_offline_engine() -> None:
    EngineOptions(batch_api_flag=True).check(["anthropic:claude-haiku-4-5", "openai:tiny"])
    with pytest.raises(ConfigError, match="'anthropic:claude-haiku-4-5' cannot take batch"):
        EngineOptions(batch_file_out=Path("f.jsonl")).check(["anthropic:claude-haiku-4-5"])


def test_mapping_to_ray_options() -> None:
    assert EngineOptions().ray(rpm=60, tpm=None) is None
    ray = EngineOptions(engine="ray").ray(rpm=None, tpm=None)
    assert ray == RayOptions()  # the engine's own defaults where no flag was given
    ray = EngineOptions(
        engine="ray", ray_address="ray://10.0.0.1:10001", actors=8, gpus_per_actor=0.5
    ).ray(rpm=600, tpm=90_000)
    assert ray == RayOptions(
        address="ray://10.0.0.1:10001", actors=8, num_gpus=0.5, rpm=600, tpm=90_000
    )


def test_mapping_to_batch_api_options(tmp_path: Path) -> None:
    assert EngineOptions().batch_api() is None
    assert EngineOptions(batch_api_flag=True).batch_api() == BatchAPIOptions()
    given = EngineOptions(
        batch_api_flag=True,
        batch_followup="live",
        batch_expired="error",
        batch_poll=2.5,
        batch_file_out=tmp_path / "req.jsonl",
    ).batch_api()
    assert given == BatchAPIOptions(
        followup="live", on_expired="error", poll_interval=2.5, file_out=tmp_path / "req.jsonl"
    )


def test_option_errors_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="--batch-api and --engine ray"):
        EngineOptions(engine="ray", batch_api_flag=True).check(["openai:x"])


def _wrappers(model: Model) -> list[type[Model]]:
    kinds: list[type[Model]] = []
    while isinstance(model, WrapperModel):
        kinds.append(type(model))
        model = model.wrapped
    return kinds


class Recorded(BaseException):
    pass


@pytest.mark.parametrize(
    ("flags", "engine", "limited"),
    [
        ([], "local", True),
        (["--engine", "ray", "--actors", "3"], "ray", False),
        (["--batch-api", "--batch-poll", "0.5"], "batch", False),
    ],
)
def test_rate_limits_are_applied_once_by_the_engine_that_runs(
    flags: list[str],
    engine: str,
    limited: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--rpm/--tpm wrap the model in process only for the local engine; on Ray they go to
    RayOptions (cluster-wide), and through a batch API nothing paces the files. The
    --api-key stays in the model (the Ray engine hands it to the actors in memory): this
    process's environment is not changed."""
    seen: dict[str, Any] = {}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")

    async def recording(data: Any, judge: Any, options: Any, *, engine: Any, announce: Any) -> Any:
        seen.update(engine=engine, model=judge.model)
        raise Recorded

    monkeypatch.setattr(cli_run, "aevaluate", recording)
    with FaultServer() as server:  # the local engine checks the server before it starts
        args = [
            "judge",
            str(write_data(tmp_path)),
            "--model",
            "openai:tiny",
            "--base-url",
            server.url,
            "--rpm",
            "120",
            "--tpm",
            "5000",
            "--api-key",
            "sk-given-on-the-command-line",
            "--no-progress",
            "--out",
            str(tmp_path / "out"),
            *flags,
        ]
        with pytest.raises(Recorded):
            main(args)
    capsys.readouterr()
    assert (LimitedModel in _wrappers(seen["model"])) is limited
    shared = os.environ["OPENAI_API_KEY"]
    if engine == "ray":
        assert seen["engine"] == RayEngine(RayOptions(actors=3, rpm=120, tpm=5000))
    elif engine == "batch":
        assert seen["engine"] == BatchAPIEngine(BatchAPIOptions(poll_interval=0.5))
    else:
        assert seen["engine"] == LocalEngine()
    assert shared == "sk-from-the-environment"
