"""The test harness's llama-cpp-python server and ports taken by other processes.

A free port chosen for the server can be taken in the seconds before the server binds it
(on a busy machine a Ray worker's gRPC port once was, and the readiness probe read a binary
frame as an HTTP status line). The harness then chooses another port; a port the caller
gave is reported as held, at once, whatever the other service answers (not HTTP, or an
HTTP 200 that is no model list). Each holder here is a real socket on 127.0.0.1.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jurist.testing import llama_server as harness
from tests._llama_fixtures import tiny_gguf  # noqa: F401

pytestmark = pytest.mark.skipif(
    not harness.llama_cpp_available(), reason="llama-cpp-python[server] is not installed"
)


# what the service holding the port answers every connection with
ANSWERS = {
    "not-http": b"\x00\x00\x12\x04\x00\x00\x00\x00\x00@@@\xfe?\r\n\r\n",  # a gRPC frame
    "http-json-list": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]",
    "http-not-json": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
}


@pytest.fixture(params=sorted(ANSWERS))
def foreign_port(request: pytest.FixtureRequest) -> Iterator[int]:
    """A port held by another service: one that answers every connection with bytes that
    are not HTTP (as a gRPC server does), or with an HTTP 200 that is no model list."""
    answer_bytes = ANSWERS[request.param]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    stop = threading.Event()

    def answer() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(answer_bytes)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    yield int(sock.getsockname()[1])
    stop.set()
    thread.join()
    sock.close()


def test_a_chosen_port_taken_meanwhile_is_replaced_by_another(
    tiny_gguf: Path,  # noqa: F811
    foreign_port: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    offered = iter([foreign_port])
    real = harness._free_port
    monkeypatch.setattr(harness, "_free_port", lambda: next(offered, None) or real())
    with harness.start_llama_server(tiny_gguf, alias="tiny", n_ctx=512) as server:
        assert server.port != foreign_port
        assert server.process.poll() is None


def test_a_port_the_caller_gave_that_is_held_is_said_so(
    tiny_gguf: Path,  # noqa: F811
    foreign_port: int,
) -> None:
    with pytest.raises(RuntimeError, match="could not bind port") as caught:
        harness.start_llama_server(tiny_gguf, alias="tiny", n_ctx=512, port=foreign_port)
    assert f"port {foreign_port}:" in str(caught.value)
