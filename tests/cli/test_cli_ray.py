"""``--engine ray`` on the command line: the same run folder and scores as the local engine
(judge, compare, grade), the API key reaching the actors and nowhere else, and a run
interrupted with Ctrl-C that resumes judging only the items without a result.

The session's local Ray instance (``tests/_ray_cluster.py``, ``num_cpus=2``) serves the
in-process runs; the Ctrl-C test runs the command in a subprocess, which starts its own
local Ray (no ``--ray-address``) and must stop it on the way out, then resumes in another
subprocess that joins the session's instance with ``--ray-address``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests._cli_run import run, stored, write
from tests._fault_server import status
from tests._loopback import Loopback
from tests._marked_server import MarkedServer
from tests._ray_cluster import ray_session  # noqa: F401  (the ray_cluster fixture)

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")  # comes with Ray

SECRET = "sk-ray-cli-secret-4242"
RESUMED = "sk-ray-cli-resumed-77"
N = 12


class JudgeServer(Loopback):
    """An OpenAI-compatible chat server whose answer is a function of the item in the
    prompt (``answer N`` / ``reply N``): verdicts, pair winners and rubric grades that vary
    by item, and some unreadable answers. Items from ``hold_from`` on get no answer until
    the server stops (``None``: every item is answered at once). It counts requests and
    keeps the Authorization headers it saw."""

    def __init__(self, hold_from: int | None = None) -> None:
        super().__init__(self._answer, shutdown_timeout=0.5)
        self.hold_from = hold_from
        self.requests = 0
        self.log: list[tuple[float, int]] = []
        self.asked: list[tuple[str, int]] = []  # (Authorization, item), in arrival order
        self.keys: set[str] = set()
        self._lock = threading.Lock()

    async def _answer(self, request: web.Request) -> web.Response:
        body = await request.json()
        text = json.dumps(body["messages"])
        found = re.search(r"answer (\d+)", text)  # the first "answer N" in the prompt
        i = int(found.group(1)) if found else 0
        with self._lock:
            self.requests += 1
            self.keys.add(request.headers.get("Authorization", ""))
            self.log.append((time.monotonic(), i))  # (arrival, item)
            self.asked.append((request.headers.get("Authorization", ""), i))
        if self.hold_from is not None and i >= self.hold_from:
            await self.stopping.wait()
        if "[[A]]" in text:  # a pairwise template: A wins when it holds the "answer"
            reply = re.search(r"reply \d+", text)
            first_is_answer = reply is None or found is None or found.start() < reply.start()
            winner_is_answer = i % 3 != 0
            content = "[[A]]" if first_is_answer == winner_is_answer else "[[B]]"
        elif "c1" in text:  # a rubric grade
            content = json.dumps({"c1": {"verdict": "MET" if i % 2 else "UNMET"}})
        else:
            content = ("Correct", "Incorrect", "I cannot tell")[zlib.crc32(text.encode()) % 3]
        return web.json_response(
            {
                "id": "chatcmpl-x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
            }
        )


def items(folder: Path, tag: str = "answer", n: int = N) -> Path:
    rows = [{"prompt": f"question {i}?", "response": f"{tag} {i}"} for i in range(n)]
    return write(folder / f"{tag}.jsonl", rows)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def outcome(path: Path) -> list[tuple[Any, ...]]:
    return [(r["judge_score"], r["judge_error"]) for r in rows(path)]


def model_args(server: Loopback, out: Path) -> list[str]:
    return [
        "--model",
        "judge",
        "--base-url",
        server.base_url,
        "--api-key",
        SECRET,
        "--no-cache",
        "--no-progress",
        "--json-mode",
        "none",
        "--retries",
        "0",
        "--out",
        str(out),
    ]


def command(kind: str, folder: Path, server: JudgeServer, out: Path) -> list[str]:
    if kind == "judge":
        head = ["judge", str(items(folder))]
    elif kind == "compare":
        head = ["compare", str(items(folder)), str(items(folder, "reply"))]
    else:
        rubric = folder / "r.yaml"
        rubric.write_text("criteria:\n  - name: correct\n    requirement: The answer is right\n")
        head = ["grade", str(items(folder)), "--rubric", str(rubric)]
    return [*head, *model_args(server, out)]


def secret_nowhere(folder: Path) -> None:
    for f in folder.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["compare", "grade"])  # judge: in the --max-retries test
def test_engine_ray_writes_the_run_folder_of_the_local_engine(
    kind: str,
    ray_cluster: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the key comes from --api-key and travels to the actors' models in memory: no
    # environment gets it (monkeypatch would take it back: set first, so it is recorded)
    monkeypatch.setenv("OPENAI_API_KEY", "unset")
    monkeypatch.delenv("OPENAI_API_KEY")
    with JudgeServer() as server:
        code_local, said = run(command(kind, tmp_path, server, tmp_path / "local"), capsys)
        assert code_local in (0, 1), said
        local_requests = server.requests
        server.keys.clear()
        args = command(kind, tmp_path, server, tmp_path / "ray")
        code, said = run([*args, "--engine", "ray", "--actors", "2"], capsys)
        assert code == code_local, said
        assert server.requests == 2 * local_requests  # as many calls again, no more
        assert server.keys == {f"Bearer {SECRET}"}  # the actors had the key
        assert "OPENAI_API_KEY" not in os.environ
    same_run_folders(tmp_path / "local", tmp_path / "ray")


def saved_items(run_dir: Path) -> set[int]:
    """The items (item N holds ``answer N``) that have a result in the run store."""
    db = sqlite3.connect(f"file:{run_dir / 'run.sqlite'}?mode=ro", uri=True, timeout=10)
    try:
        return {int(idx) for (idx,) in db.execute("SELECT idx FROM results")}
    finally:
        db.close()


def ray_processes(pid: int) -> list[Any]:
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [p for p in children if _named(p, ("raylet", "gcs_server"))]


def alive(process: Any) -> bool:
    try:
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _named(process: Any, names: tuple[str, ...]) -> bool:
    try:
        return any(n in " ".join(process.cmdline()) for n in names)
    except psutil.Error:
        return False


@pytest.mark.slow
def test_ctrl_c_on_ray_then_resume_judges_only_the_rest(ray_cluster: Any, tmp_path: Path) -> None:
    n = 160  # ten Ray blocks of one 16-item batch each
    data = items(tmp_path, n=n)
    out = tmp_path / "run"
    # the first two batches (items 0-31) are answered; the others wait until the server
    # stops, so the run cannot end before the interrupt, which comes once the server holds
    # calls of the run (however slow the machine: Ray takes minutes to start at load 30)
    with JudgeServer(hold_from=32) as server:
        args = ["judge", str(data), *model_args(server, out)]
        args += ["--engine", "ray", "--actors", "1"]
        # a subprocess of its own: no Ray in it, so it starts a local instance
        proc = subprocess.Popen(
            [sys.executable, "-m", "jurist", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started: list[Any] = []
        deadline = time.monotonic() + 600
        while stored(out / "run.sqlite") < 4 or not any(i >= 32 for _, i in server.log):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no result stored in time"
            started = started or ray_processes(proc.pid)
            time.sleep(0.05)
        assert started, "the command started no local Ray instance"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=600)
        said = " ".join((stdout + stderr).split())
        assert proc.returncode == 130, said
        saved = stored(out / "run.sqlite")
        assert 4 <= saved < n
        assert f"interrupted: {saved} of {n} items saved in {out}" in said
        assert "--engine ray" in said and SECRET not in said
        gone = time.monotonic() + 120
        while any(alive(p) for p in started):
            assert time.monotonic() < gone, "the local Ray instance was left running"
            time.sleep(0.1)
        db = sqlite3.connect(out / "run.sqlite")
        (status,) = db.execute("SELECT value FROM meta WHERE key='status'").fetchone()
        db.close()
        assert json.loads(status) == "interrupted"

        kept = saved_items(out)
        assert len(kept) == saved
        server.hold_from = None
        # resumed on the module's Ray instance, joined by its address; the saved failures
        # (unreadable verdicts) are kept, so exactly the items without a result are sent
        address = ray.get_runtime_context().gcs_address
        # with a key of its own, which tells its calls from any of the stopped run's
        again = [RESUMED if a == SECRET else a for a in args]
        again += ["--no-retry-failed", "--ray-address", address]
        done = subprocess.run(
            [sys.executable, "-m", "jurist", *again], capture_output=True, text=True, timeout=600
        )
        assert done.returncode in (0, 1), done.stderr
        assert ray.is_initialized() and ray.cluster_resources()  # the cluster it joined lives
        resumed = [i for key, i in server.asked if key == f"Bearer {RESUMED}"]
        assert len(resumed) == n - saved  # only the items without a result, once each
        assert set(resumed) == set(range(n)) - kept
    assert [r["prompt"] for r in rows(out / "results.jsonl")] == [
        f"question {i}?" for i in range(n)
    ]
    assert stored(out / "run.sqlite") == n


def same_run_folders(local: Path, on_ray: Path) -> None:
    """The Ray run's folder holds the local run's results and summary, and no secret
    (nor do Ray's own files: its runtime-env agent logs env_vars, keys must not go there)."""
    assert outcome(on_ray / "results.jsonl") == outcome(local / "results.jsonl")
    assert len({s for s, _ in outcome(on_ray / "results.jsonl")}) > 1  # the scores vary
    a = json.loads((local / "summary.json").read_text())
    b = json.loads((on_ray / "summary.json").read_text())
    same = ("items", "scored", "failed", "mean_score", "verdicts", "calls", "status")
    assert {k: b[k] for k in same} == {k: a[k] for k in same}
    if "win_rate_a" in a:
        assert b["win_rate_a"] == a["win_rate_a"]
    assert json.loads((on_ray / "manifest.json").read_text())["settings"]["engine"] == "ray"
    secret_nowhere(on_ray)
    secret_nowhere(Path(ray._private.worker._global_node.get_session_dir_path()) / "logs")


@pytest.mark.slow
def test_max_retries_5_on_ray_makes_6_attempts_and_the_four_429_items_score(
    ray_cluster: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # items 0-2: four 429s each, then an answer (5 attempts); item 3: seven 429s, so its
    # 6th attempt (1 + 5 retries) is the last and it fails. Before the actors rebuilt the
    # CLI's stack they had get_model's 2 retries: 3 attempts, and every item failed.
    # It is also `jurist judge`'s case of the run folder test above: the same folder as
    # the local engine, the key from --api-key reaching the actors and nowhere else
    monkeypatch.setenv("OPENAI_API_KEY", "unset")  # (set first, so monkeypatch records it)
    monkeypatch.delenv("OPENAI_API_KEY")
    rows = [{"prompt": f"question {i}?", "response": f"ans-{i}"} for i in range(4)]
    data = write(tmp_path / "marked.jsonl", rows)
    many = status(429, retry_after_ms=1)
    scripts = {f"judge|ans-{i}": [many] * (7 if i == 3 else 4) for i in range(4)}
    seen: dict[str, Any] = {}
    verdicts = ("Correct", "Incorrect")  # item 1 scores 0, items 0 and 2 score 1
    with MarkedServer(lambda text, item: verdicts[item % 2]) as server:
        for engine in ("local", "ray"):
            server.reset(scripts)
            out = tmp_path / engine
            args = [*model_args(server, out), "--max-retries", "5", "--engine", engine]
            if engine == "ray":
                args += ["--actors", "2"]
            code, said = run(["judge", str(data), *args], capsys)
            assert code == 1, said  # one item failed
            seen[engine] = dict(server.attempts), outcome(out / "results.jsonl")
            assert server.keys == {f"Bearer {SECRET}"}  # the actors had the key
            assert "OPENAI_API_KEY" not in os.environ
    attempts, results = seen["ray"]
    assert attempts == {"judge|ans-0": 5, "judge|ans-1": 5, "judge|ans-2": 5, "judge|ans-3": 6}
    assert [score for score, _ in results[:3]] == [1.0, 0.0, 1.0]
    assert results[3][0] is None and results[3][1].startswith("rate_limit:")
    assert seen["ray"] == seen["local"]
    same_run_folders(tmp_path / "local", tmp_path / "ray")
