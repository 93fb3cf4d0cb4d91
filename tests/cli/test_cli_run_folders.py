"""Run folders through the command line: a fixed option re-judges failures, Ctrl-C says how
to resume, outputs never overwrite the input or a user's files, two runs in one folder
never share a summary, and one process at a time works on a run folder."""

from __future__ import annotations

import asyncio
import json
import math
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from aiohttp import web

from jurist.cli import EXIT_OK, EXIT_USAGE, main
from tests._cli_run import stored
from tests._fault_server import Fault, FaultServer, status
from tests._forked import fork
from tests._kill_runs import cli as cli_run

ANSWER = Fault("ok", text="Correct")


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, " ".join(out.split()), " ".join(err.split())


def write_data(path: Path, n: int) -> Path:
    path.write_text(
        "".join(json.dumps({"prompt": f"q{i}", "response": f"a{i}"}) + "\n" for i in range(n))
    )
    return path


def openai_args(server: FaultServer, data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "judge",
        str(data),
        "--model",
        "openai:x",
        "--base-url",
        server.url,
        "--api-key",
        "x",
        "--no-cache",
        "--no-progress",
        "--max-retries",
        "0",
        "--retries",
        "0",
        "--out",
        str(out),
        *extra,
    ]


def test_a_fixed_json_mode_rejudges_the_failed_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_data(tmp_path / "d.jsonl", 3)
    out = tmp_path / "run"
    with FaultServer([status(500)] * 3) as server:
        code, text, _ = run(openai_args(server, data, out, "--json-mode", "json_schema"), capsys)
        assert code == 1 and server.requests == 3
        server.script(*[Fault("ok", text='{"verdict": "Correct"}')] * 3)
        code, text, _ = run(openai_args(server, data, out, "--json-mode", "json_object"), capsys)
        assert server.requests == 6  # the three failures were sent again
        assert code == EXIT_OK, text
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["judge_score"] for r in rows] == [1.0, 1.0, 1.0]


def test_no_retry_failed_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_data(tmp_path / "d.jsonl", 2)
    out = tmp_path / "run"
    with FaultServer([status(500)] * 2) as server:
        assert run(openai_args(server, data, out, "--output", "text"), capsys)[0] == 1
        code, _, _ = run(
            openai_args(server, data, out, "--output", "text", "--no-retry-failed"), capsys
        )
        assert code == 1 and server.requests == 2


def test_out_at_the_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_data(tmp_path / "d.jsonl", 2)
    before = data.read_text()
    code, _, err = run(["judge", str(data), "--model", "mock:j", "--out", str(data)], capsys)
    assert code == EXIT_USAGE and "input" in err
    assert data.read_text() == before


def test_out_folder_with_user_files_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_data(tmp_path / "d.jsonl", 2)
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "results.jsonl").write_text("my results\n")
    (folder / "summary.json").write_text("{}\n")
    args = ["judge", str(data), "--model", "mock:j", "--no-progress", "--out", str(folder)]
    code, _, err = run(args, capsys)
    assert code == EXIT_USAGE and "results.jsonl" in err and "--overwrite" in err
    assert (folder / "results.jsonl").read_text() == "my results\n"
    assert (folder / "summary.json").read_text() == "{}\n"
    code, _, _ = run([*args, "--overwrite"], capsys)
    assert code == EXIT_OK and len((folder / "results.jsonl").read_text().splitlines()) == 2


def test_out_file_that_is_not_ours_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_data(tmp_path / "d.jsonl", 2)
    target = tmp_path / "out.jsonl"
    target.write_text("someone else's\n")
    code, _, err = run(["judge", str(data), "--model", "mock:j", "--out", str(target)], capsys)
    assert code == EXIT_USAGE and "out.jsonl" in err
    assert target.read_text() == "someone else's\n"


def test_two_file_outputs_in_one_folder_keep_their_own_summaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_data(tmp_path / "d.jsonl", 2)
    for name, template in (("a", "true_false"), ("b", "likert")):
        args = ["judge", str(data), "--model", "mock:j", "--template", template, "--no-progress"]
        run([*args, "--out", str(tmp_path / "out" / f"{name}.jsonl")], capsys)
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == [
        *("a.jsonl", "a.report.html", "a.run", "a.summary.json"),
        *("b.jsonl", "b.report.html", "b.run", "b.summary.json"),
    ]
    a = json.loads((tmp_path / "out" / "a.summary.json").read_text())
    b = json.loads((tmp_path / "out" / "b.summary.json").read_text())
    assert a["template"] == "true_false" and b["template"] == "likert"
    assert "attempts" in a and "calls" in a


def cli(data: Path, out: Path, server: FaultServer, *extra: str) -> list[str]:
    return [sys.executable, "-m", "jurist", *openai_args(server, data, out, *extra)]


class GatedServer(FaultServer):
    """Answers the first ``free`` requests, then holds every other one until :meth:`open`
    (or the server stops): a run that stays at work exactly as long as a test needs,
    however loaded the machine. A held request is counted in ``arrived`` at once and in
    ``requests`` only when it goes on; after :meth:`let_through` the requests that arrive
    go on at once, while those held before stay held (a killed client's calls, which must
    not be counted as the next run's)."""

    def __init__(self, free: int, script: list[Fault]) -> None:
        super().__init__(script)
        self.free = free
        self.arrived = 0
        self._open = threading.Event()

    def open(self) -> None:
        self._open.set()

    def let_through(self) -> None:
        self.free = math.inf  # read on the server's loop thread as each request arrives

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.arrived += 1  # on the server's one loop thread
        if self.arrived > self.free:
            while not self._open.is_set() and not self.stopping.is_set():
                await asyncio.sleep(0.01)
        return await super()._handle(request)


@pytest.mark.slow
def test_ctrl_c_marks_the_run_interrupted_and_says_how_to_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n, saved = 30, 4
    data = write_data(tmp_path / "d.jsonl", n)
    out = tmp_path / "run"
    # the first 4 calls are answered; the next ones are held, so the run cannot end
    # before the interrupt, and the interrupt finds 4 items saved and 2 calls in flight
    with GatedServer(free=saved, script=[ANSWER] * (2 * n)) as server:
        args = cli(data, out, server, "--output", "text", "--concurrency", "2")
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while stored(out / "run.sqlite") < saved or server.arrived < saved + 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 130, stderr
        said = " ".join((stdout + stderr).split())
        assert stored(out / "run.sqlite") == saved and server.arrived == saved + 2
        assert f"{saved} of {n} items saved" in said
        assert "jurist judge" in said and str(data) in said
        db = sqlite3.connect(out / "run.sqlite")
        (status_text,) = db.execute("SELECT value FROM meta WHERE key='status'").fetchone()
        db.close()
        assert json.loads(status_text) == "interrupted"
        assert server.requests == saved  # the two held calls never went on
        server.let_through()
        code, said, err = run(args[3:], capsys)  # the command it names, here in this process
        assert code == EXIT_OK, said + err
        assert stored(out / "run.sqlite") == n
        assert server.requests - saved == n - saved


@pytest.mark.slow
def test_sigterm_also_marks_the_run_interrupted(tmp_path: Path) -> None:
    data = write_data(tmp_path / "d.jsonl", 20)
    out = tmp_path / "run"
    with GatedServer(free=2, script=[ANSWER] * 40) as server:  # then holds: cannot finish
        args = cli(data, out, server, "--output", "text", "--concurrency", "2")
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while stored(out / "run.sqlite") < 2 or server.arrived < 4:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 143, stderr
        assert "2 of 20 items saved" in " ".join(stderr.split())
    db = sqlite3.connect(out / "run.sqlite")
    (status_text,) = db.execute("SELECT value FROM meta WHERE key='status'").fetchone()
    db.close()
    assert json.loads(status_text) == "interrupted"


@pytest.mark.slow
def test_two_processes_on_one_run_folder_pay_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = 20
    data = write_data(tmp_path / "d.jsonl", n)
    out = tmp_path / "run"
    with GatedServer(free=1, script=[ANSWER] * (2 * n)) as server:
        args = openai_args(server, data, out, "--output", "text", "--concurrency", "2")
        first = fork(cli_run, *args, log=tmp_path / "first.log")  # a process of its own
        deadline = time.monotonic() + 60
        # at work: one answer stored, its two requests since then held by the server
        while stored(out / "run.sqlite") < 1 or server.arrived < 3:
            assert first.poll() is None, first.output()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        arrived = server.arrived
        assert arrived == 3  # so any request from now on would be the second process's
        # a second process (this one) on the same folder stops at once, asking nothing
        code, _, said = run(args, capsys)
        assert code == EXIT_USAGE, said
        assert str(out) in said and f"pid {first.pid}" in said
        assert server.arrived == arrived and first.poll() is None
        server.open()
        assert first.wait(timeout=120) == 0, first.output()
        assert server.requests == n

    # a lock left by a killed process does not block the next run
    with GatedServer(free=1, script=[ANSWER] * (2 * n)) as server:
        args = openai_args(server, data, tmp_path / "k", "--output", "text")
        killed = fork(cli_run, *args, log=tmp_path / "killed.log")
        while stored(tmp_path / "k" / "run.sqlite") < 1:
            assert killed.poll() is None, killed.output()
            assert time.monotonic() < deadline + 60
            time.sleep(0.02)
        killed.kill()
        assert killed.wait(timeout=30) == -signal.SIGKILL
        server.open()
        code, said, err = run(args, capsys)
        assert code == EXIT_OK, said + err
        assert stored(tmp_path / "k" / "run.sqlite") == n


def test_eval_model_file_outputs_keep_their_own_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli.test_cli_catalog import mock_entry

    monkeypatch.setenv("JURIST_CATALOG", str(tmp_path / "catalog"))
    mock_entry(tmp_path / "catalog", "judges.mine.lk", ["Score: 4"])
    data = write_data(tmp_path / "d.jsonl", 2)
    for name in ("a", "b"):
        args = ["eval-model", str(data), "--model", "mock:model", "--judge", "judges.mine.lk"]
        run([*args, "--no-progress", "--out", str(tmp_path / "out" / f"{name}.jsonl")], capsys)
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == [
        *("a.jsonl", "a.report.html", "a.run", "a.summary.json"),
        *("b.jsonl", "b.report.html", "b.run", "b.summary.json"),
    ]
