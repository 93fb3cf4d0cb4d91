"""Session fixtures for a real llama.cpp server (llama-cpp-python) serving the tiny model.

Import the fixtures into a test module to use them::

    from tests._llama_fixtures import llama_server, tiny_gguf  # noqa: F401

``llama_server`` yields the server's OpenAI base URL (``http://127.0.0.1:PORT/v1``, model
alias ``"tiny"``); the tests that use it skip when llama-cpp-python is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

LLAMA_ALIAS = "tiny"
N_CTX = 2048


@pytest.fixture(scope="session")
def tiny_gguf(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's tiny model as a float32 GGUF file, written without any download."""
    pytest.importorskip("gguf")
    from jurist.testing.gguf import convert_tiny_to_gguf

    return convert_tiny_to_gguf(tiny_model_dir, tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture(scope="session")
def llama_server(tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama-cpp-python server on 127.0.0.1 serving ``tiny_gguf``; yields its base URL."""
    from jurist.testing.llama_server import llama_cpp_available, start_llama_server

    if not llama_cpp_available():
        pytest.skip("llama-cpp-python[server] is not installed")
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    # the tiny model's whole context (max_position_embeddings): the built-in templates'
    # prompts (a rubric's is about 600 tokens) and their max_tokens fit, so a test reaches
    # the server's answer, not an HTTP 400 for a context overflow
    with start_llama_server(tiny_gguf, alias=LLAMA_ALIAS, n_ctx=N_CTX, log_path=log) as server:
        yield server.base_url
