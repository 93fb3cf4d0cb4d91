"""Smoke test for benchmarks/throughput.py and instructions.py: the stub server, small
jurist workloads, and the instruction count's client processes.

Correctness only (every verdict read, one request per judgment); timing belongs to the
benchmark itself, never to tests.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import throughput  # noqa: E402
from _stub_server import StubServer  # noqa: E402


@pytest.fixture(scope="module")
def stub_server() -> Iterator[StubServer]:
    with StubServer(latency=0.01) as server:
        yield server


@pytest.mark.slow
def test_stub_server_speaks_openai(stub_server: StubServer) -> None:
    import json
    import urllib.request

    stub_server.reset()
    body = json.dumps({"model": "stub", "messages": [{"role": "user", "content": "hi"}]})
    req = urllib.request.Request(
        stub_server.base_url + "/chat/completions",
        data=body.encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
    assert answer["choices"][0]["message"]["content"] == "Correct"
    assert answer["usage"]["total_tokens"] >= 2
    with urllib.request.urlopen(stub_server.base_url + "/models", timeout=10) as resp:
        assert json.loads(resp.read())["data"][0]["id"] == "stub"
    assert stub_server.count() == 1


@pytest.mark.slow
def test_jurist_workload_against_stub(stub_server: StubServer) -> None:
    prompts, responses = throughput.make_workload(50)
    run, arrivals = throughput.run_jurist(stub_server, "smoke", prompts, responses, 8)
    assert run.scores == {"1.0": 50}
    assert run.server_requests == 50
    assert len(arrivals) == 50


@pytest.mark.slow
def test_paced_workload_against_stub(stub_server: StubServer) -> None:
    prompts, responses = throughput.make_workload(12)
    run, arrivals = throughput.run_jurist(
        stub_server, "paced", prompts, responses, 12, max_calls_per_min=6000
    )
    assert run.scores == {"1.0": 12}
    assert len(arrivals) == 12


def test_pacing_stats() -> None:
    # 400 arrivals exactly 50 ms apart: 1200 per minute, 100 in every 5-second window.
    arrivals = [i * 0.05 for i in range(400)]
    stats = throughput.pacing_stats(arrivals, 1200)
    assert stats["prorated_share"] == pytest.approx(100.0)
    assert stats["max_in_window"] == 100
    assert stats["achieved_per_min"] == pytest.approx(1200.0)
    # A burst: all at once holds the whole batch in one window.
    burst = throughput.pacing_stats([1.0] * 400, 1200)
    assert burst["max_window_ratio"] == pytest.approx(4.0)


@pytest.mark.slow
@pytest.mark.parametrize("client", ["jurist", "floor"])
def test_the_instruction_counts_clients_judge_every_item(
    stub_server: StubServer, client: str, tmp_path: Path
) -> None:
    """``instructions.py``'s two client processes, run as it runs them but without
    callgrind: each judges (or posts) every item and exits 0, the floor from the bodies file
    it is given; one request per item reaches the server."""
    import subprocess

    import instructions

    bodies = tmp_path / "bodies.txt"
    instructions._write_bodies(bodies, 30)
    assert len(bodies.read_bytes().split(b"\n")) == 30
    stub_server.reset()
    command = [
        *(sys.executable, str(BENCHMARKS / "instructions.py"), "--client", client),
        *("--n", "30", "--port", str(stub_server.port), "--concurrency", "8"),
        *("--bodies", str(bodies)),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert stub_server.count() == 30


def test_the_instruction_count_says_when_valgrind_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import instructions

    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    assert instructions.main([]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err
