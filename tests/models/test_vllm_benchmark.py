"""benchmarks/vllm_throughput.py checks its arguments and computes its bound without a GPU.

The benchmark itself runs only on a GPU machine; here: ``--help``, ``--dry-run`` on the tiny
model, the parameter count read from safetensors headers, and the prefill bound's arithmetic.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import vllm_throughput as bench  # noqa: E402


def test_help_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "vllm_throughput.py"), "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--server-url" in done.stdout and "--peak-tflops" in done.stdout


def test_params_are_counted_from_safetensors_headers(tiny_model_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert bench.count_params(tiny_model_dir) == sum(p.numel() for p in model.parameters())


def test_prefill_bound() -> None:
    # 7e9 parameters at 989 TFLOP/s: 989e12 / (2 * 7e9) prompt tokens per second
    assert bench.prefill_bound(7e9, 989.0) == pytest.approx(70_642.857, rel=1e-6)


def test_dry_run_checks_arguments(tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model", str(tiny_model_dir), "--items", "8", "--dry-run"]
    argv += ["--engine-arg", "max_model_len=2048", "--engine-arg", "enforce_eager=true"]
    assert bench.main(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["engine"] == {"max_model_len": 2048, "enforce_eager": True}
    assert plan["params"] == bench.count_params(tiny_model_dir)
    command = plan["server_command"]
    assert command[command.index("serve") + 1] == str(tiny_model_dir)
    assert "--enforce-eager" in command and "2048" in command


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--items", "0"], "--items must be at least 1"),
        (["--engine-arg", "oops"], "write KEY=VALUE"),
        (["--skip-server", "--skip-inprocess"], "leave nothing to run"),
    ],
)
def test_bad_arguments_are_named(
    tiny_model_dir: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(["--model", str(tiny_model_dir), *argv])
    assert message in capsys.readouterr().err


def test_a_hub_id_needs_params(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(["--model", "Qwen/Qwen2.5-7B-Instruct", "--dry-run"])
    assert "pass --params" in capsys.readouterr().err
    args = bench.parse_args(["--model", "Qwen/Qwen2.5-7B-Instruct", "--params", "7.6e9"])
    assert args.params == 7.6e9
