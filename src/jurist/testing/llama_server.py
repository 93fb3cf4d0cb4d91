"""Start and stop llama-cpp-python's OpenAI-compatible server on 127.0.0.1, for tests.

>>> from jurist.testing.llama_server import start_llama_server  # doctest: +SKIP
>>> with start_llama_server("tiny.gguf", alias="tiny") as server:  # doctest: +SKIP
...     model = get_model("openai:tiny", base_url=server.base_url, json_mode="json_object")

The server runs as ``python -m llama_cpp.server`` in a child process on a free port; the
helper waits until ``GET /v1/models`` answers and always stops the process (SIGTERM, then
SIGKILL). Needs ``llama-cpp-python[server]`` (the ``dev`` extra); turn a tiny transformers
model into a GGUF with :func:`jurist.testing.gguf.convert_tiny_to_gguf`.
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["LlamaServer", "llama_cpp_available", "start_llama_server"]


def llama_cpp_available() -> bool:
    """Whether ``llama_cpp.server`` and its web dependencies can be imported."""
    return all(
        importlib.util.find_spec(mod) is not None
        for mod in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette")
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LlamaServer:
    """A running ``llama_cpp.server`` child process; a context manager that stops it."""

    process: subprocess.Popen[bytes]
    port: int
    alias: str
    log_path: Path
    startup_seconds: float = 0.0
    remove_log: bool = False
    started_at: float = 0.0

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def log(self) -> str:
        """What the server wrote to stdout and stderr so far."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the server: SIGTERM, then SIGKILL after ``timeout`` seconds."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.remove_log:
            self.log_path.unlink(missing_ok=True)


def start_llama_server(
    model_path: str | Path,
    *,
    alias: str = "tiny",
    port: int | None = None,
    n_ctx: int = 2048,
    n_threads: int = 1,
    extra_args: Sequence[str] = (),
    startup_timeout: float = 60.0,
    log_path: str | Path | None = None,
) -> LlamaServer:
    """Start the server on 127.0.0.1 and return once it answers; stop it on failure.

    The server's output goes to ``log_path`` (by default a temporary file, removed on stop).
    Raises ``RuntimeError`` with the server's log when it exits or does not answer within
    ``startup_timeout`` seconds. Without ``port``, a free one is chosen, and another when
    that one was taken before the server could bind it (or another service answers there).
    The caller stops it: ``with start_llama_server(...) as s:`` or :meth:`LlamaServer.stop`.
    """
    chosen = port
    for attempt in range(_PORT_ATTEMPTS):
        server = _start(
            model_path, alias, chosen or _free_port(), n_ctx, n_threads, extra_args, log_path
        )
        try:
            _wait_ready(server, startup_timeout)
        except _PortTaken:
            said = server.log()[-3000:]
            server.stop()
            if chosen is not None or attempt == _PORT_ATTEMPTS - 1:
                raise RuntimeError(
                    f"llama_cpp.server could not bind port {server.port}: another process "
                    f"holds it:\n{said}"
                ) from None
            continue  # the free port was taken before the server bound it: another one
        except BaseException:
            server.stop()
            raise
        return server
    raise AssertionError("unreachable")  # pragma: no cover


_PORT_ATTEMPTS = 3
"""Ports tried when none is given: a port free when chosen can be taken (by any process
on the machine) in the seconds before the server binds it."""


class _PortTaken(Exception):
    """The server could not bind its port, or another service answered on it."""


def _start(
    model_path: str | Path,
    alias: str,
    port: int,
    n_ctx: int,
    n_threads: int,
    extra_args: Sequence[str],
    log_path: str | Path | None,
) -> LlamaServer:
    remove_log = log_path is None
    if log_path is None:
        fd, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        os.close(fd)
        log_path = name
    log = Path(log_path)
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--model_alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(n_threads),
        "--n_threads_batch",
        str(n_threads),
        *extra_args,
    ]
    start = time.perf_counter()
    with log.open("wb") as out:
        process = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    server = LlamaServer(process, port, alias, log, remove_log=remove_log)
    server.started_at = start
    return server


def _model_ids(body: bytes) -> list[Any]:
    """The model ids of an OpenAI-style ``GET /v1/models`` answer; ``[]`` for anything
    else (not JSON, not an object, no list of objects under ``data``)."""
    try:
        data = json.loads(body)
    except ValueError:
        return []
    models = data.get("data") if isinstance(data, dict) else None
    if not isinstance(models, list):
        return []
    return [m.get("id") for m in models if isinstance(m, dict)]


def _wait_ready(server: LlamaServer, timeout: float) -> None:
    """Return once this server (its alias in ``GET /v1/models``) answers; :class:`_PortTaken`
    when it could not bind its port or something else answers there."""
    deadline = time.monotonic() + timeout
    url = f"{server.base_url}/models"
    while True:
        code = server.process.poll()
        if code is not None:
            if "address already in use" in server.log().lower():
                raise _PortTaken(server.port)
            raise RuntimeError(
                f"llama_cpp.server exited with code {code} before answering on {url}:\n"
                f"{server.log()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(url, timeout=1.0) as resp:
                body, status = resp.read(), resp.status
        except http.client.HTTPException:
            raise _PortTaken(server.port) from None  # not HTTP: another service's port
        except (urllib.error.URLError, OSError):
            pass  # not listening yet (or an error status while it starts)
        else:
            if status == 200:
                if server.alias not in _model_ids(body):
                    raise _PortTaken(server.port)  # another server's models, or not a list
                server.startup_seconds = time.perf_counter() - server.started_at
                return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"llama_cpp.server did not answer on {url} within {timeout:g} s:\n"
                f"{server.log()[-3000:]}"
            )
        time.sleep(0.05)
