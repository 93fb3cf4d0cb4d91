"""The ``vllm:`` provider fails up front, naming the fix, where it cannot run.

These run everywhere. vLLM is not installed in jurist's CI (it would pull a CUDA torch), so
the missing-package error is tested for real; the GPU tests are in test_vllm_gpu.py.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import types

import pytest

import jurist
from jurist.errors import ConfigError, MissingDependencyError
from jurist.models import known_providers

needs_no_vllm = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here"
)


def test_vllm_is_a_known_provider() -> None:
    assert "vllm" in known_providers()


@needs_no_vllm
def test_missing_vllm_names_the_extra_and_the_gpu() -> None:
    with pytest.raises(MissingDependencyError) as info:
        jurist.get_model("vllm:Qwen/Qwen2.5-7B-Instruct")
    message = str(info.value)
    assert "pip install 'jurist[vllm]'" in message
    assert "CUDA GPU" in message
    assert info.value.extra == "vllm"


def test_no_gpu_points_to_hf_and_to_a_vllm_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM is made importable by an empty stub module in sys.modules, for this test only
    (monkeypatch removes it afterwards), and torch is made to see no CUDA GPU: the backend
    must stop before touching anything of vLLM's, naming both ways out."""
    import torch

    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError) as info:
        jurist.get_model("vllm:Qwen/Qwen2.5-7B-Instruct")
    message = str(info.value)
    assert "needs a CUDA GPU and torch sees none" in message
    assert "hf:MODEL" in message
    assert "openai:MODEL" in message and "--base-url" in message


def test_import_jurist_loads_nothing_of_vllm() -> None:
    code = (
        "import sys, jurist; jurist.get_model('mock:m', outputs=['x']); "
        "bad = [m for m in sys.modules if m == 'vllm' or m.startswith(('vllm.', "
        "'jurist.models._vllm'))]; print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_engine_loop_serves_every_callers_loop_and_cancels_on_timeout() -> None:
    """The engine lives on one loop in a daemon thread: callers on different event loops
    (``judge_sync`` makes a fresh one per call) reach the same loop, and a caller's timeout
    cancels the work there (vLLM's ``generate`` then aborts the request)."""
    import asyncio
    import threading

    from jurist.models._vllm import _engine_loop

    engine_loop = _engine_loop()
    seen: list[int] = []
    cancelled = threading.Event()

    async def where() -> int:
        return threading.get_ident()

    async def hang() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    for _ in range(2):  # two callers' loops, one after the other
        seen.append(asyncio.run(engine_loop.run(where())))
    assert seen[0] == seen[1] == engine_loop.thread.ident != threading.get_ident()
    assert _engine_loop() is engine_loop

    async def caller() -> None:
        with pytest.raises(TimeoutError):
            await engine_loop.run(hang(), timeout=0.05)

    asyncio.run(caller())
    assert cancelled.wait(5)


def test_a_catalog_entry_keeps_every_engine_option_but_the_token() -> None:
    """A judge rebuilt from its entry (a Ray actor, ``catalog add``) gets the engine
    options that make it fit its GPU, not only those in identity(). A VLLMModel cannot be
    built here (no vLLM, no GPU), so the object is assembled from its fields."""
    from jurist.catalog import entry_of
    from jurist.models._vllm import VLLMModel

    model = object.__new__(VLLMModel)
    model.name, model.max_tokens = "/models/judge", 64
    model.engine_kwargs = {
        "enable_prefix_caching": True,
        "disable_log_stats": True,
        "gpu_memory_utilization": 0.5,
        "max_model_len": 2048,
        "hf_token": "hf_secret",
    }
    model.max_logprobs = 20
    entry = entry_of(jurist.LLMJudge(model))
    assert entry["model"] == "vllm:/models/judge"
    assert entry["model_options"] == {
        "gpu_memory_utilization": 0.5,
        "max_model_len": 2048,
        "max_tokens": 64,
    }
    assert "hf_secret" not in repr(entry)
