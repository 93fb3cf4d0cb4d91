"""Shared fixtures. Tests never leave 127.0.0.1; model weights are built locally."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Ray starts its workers at nice 15, below everything else on the machine: on a busy one
# (a CPU-bound job beside the suite) the Ray tests' actors then get a few percent of a core
# and a test takes minutes. The suite's local instances run them at the suite's own level;
# the CLI tests' `--engine ray` subprocesses inherit it.
os.environ.setdefault("RAY_worker_niceness", "0")

# A suite started in the background of a script (`cmd &`, nohup) inherits SIGINT ignored,
# and so would every command a test starts: the tests that press Ctrl-C on a run would wait
# for an exit that never comes. Python's own handler here means SIGINT's default action in
# the commands the tests start (an exec resets a handled signal, never an ignored one).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
for _var in ("JURIST_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
    os.environ.pop(_var, None)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random transformers model with a local tokenizer, built once per session."""
    from jurist.testing import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own jurist cache folder, never the user's."""
    monkeypatch.setenv("JURIST_CACHE_DIR", str(tmp_path / "jurist-cache"))
