"""What ``calibrate``, ``align``, ``agreement`` and ``gate`` accept (issue 31): the key a run
was judged with, the labels, the run's state, the baseline's kind and a damaged store.

Every case is driven through the CLI as a user runs it; the runs are judged for real (a
scripted OpenAI-compatible server on 127.0.0.1, or the mock model), and a killed run is
killed with a real SIGKILL.
"""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import jurist
import jurist.models  # tests._kill_runs reads jurist.models as it is imported
from jurist.cli import EXIT_OK, EXIT_USAGE
from jurist.types import Request
from tests._cli_run import run as cli
from tests._cli_run import stored, write
from tests._fault_server import _completion
from tests._forked import fork
from tests._kill_runs import cli as cli_run
from tests._loopback import Loopback

KEY = "jk-issue31-the-run-key-0123456789"


class KeyServer(Loopback):
    """A likert judge on 127.0.0.1: the item tagged ``[i]`` gets ``verdicts[i]``; every
    request's ``Authorization`` header is kept (``""`` when there is none)."""

    def __init__(self, verdicts: list[int]) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.verdicts = verdicts
        self.auth: list[str] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.auth.append(request.headers.get("Authorization", ""))
        body: dict[str, Any] = await request.json()
        text = str(body["messages"][-1]["content"])
        tags = re.findall(r"\[(\d+)\]", text)
        return web.json_response(_completion(body, str(self.verdicts[int(tags[-1])])))


def labelled(path: Path, labels: list[Any]) -> Path:
    """Items ``[i]`` with their ``human`` labels, as a JSONL file."""
    rows = [
        {"id": f"item-{i}", "prompt": "q", "response": f"[{i}] a", "human": y}
        for i, y in enumerate(labels)
    ]
    return write(path, rows)


# -- 1. align calls the run's model with the run's key (the shared model options) ------------


def test_align_sends_the_key_the_run_was_judged_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    labels = [1 + i % 5 for i in range(24)]
    verdicts = [min(5, y + 1) for y in labels]  # a judge one star too generous
    monkeypatch.setenv("JURIST_API_KEY", KEY)  # the key route of the issue; no $OPENAI_API_KEY
    with KeyServer(verdicts) as server:
        data = labelled(tmp_path / "d.jsonl", labels)
        run = tmp_path / "run"
        judge = ["judge", str(data), "--template", "likert", "--model", "openai:judge"]
        judge += ["--base-url", server.url, "--json-mode", "none", "--out", str(run)]
        code, out = cli([*judge, "--no-progress"], capsys)
        assert code == EXIT_OK, out
        judged = len(server.auth)
        assert judged == 24 and set(server.auth) == {f"Bearer {KEY}"}
        align = ["align", str(run), "--labels", "human", "--max-examples", "1", "--pool", "2"]
        code, out = cli([*align, "--score-items", "8"], capsys)
        assert code in (0, 1), out  # a gain or none: the calls are what is checked here
        assert len(server.auth) > judged
        assert set(server.auth) == {f"Bearer {KEY}"}  # every call of align carried the key
        # --api-key wins over $JURIST_API_KEY, for the judge and for the proposer alike
        before = len(server.auth)
        proposer = ["--proposer", "openai:judge", "--base-url", server.url]
        code, out = cli(
            [*align, "--score-items", "4", "--api-key", "other-key-abcdef", *proposer], capsys
        )
        assert code in (0, 1), out
        assert set(server.auth[before:]) == {"Bearer other-key-abcdef"}
    assert KEY not in out


def test_a_catalog_judge_is_called_with_the_command_lines_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JURIST_API_KEY", KEY)
    with KeyServer([1 + i % 5 for i in range(6)]) as server:
        entry = tmp_path / "catalog" / "judges" / "mine" / "served.yaml"
        entry.parent.mkdir(parents=True)
        entry.write_text(
            "kind: judge\nmodel: 'openai:judge'\n"
            f"model_options: {{base_url: '{server.url}', json_mode: null}}\ntemplate: likert\n"
        )
        monkeypatch.setenv("JURIST_CATALOG", str(tmp_path / "catalog"))
        data = labelled(tmp_path / "d.jsonl", [1, 2, 3, 4, 5, 1])
        args = ["judge", str(data), "--judge", "judges.mine.served", "--no-progress"]
        code, out = cli([*args, "--out", str(tmp_path / "r1")], capsys)
        assert code == EXIT_OK, out
        assert server.auth == [f"Bearer {KEY}"] * 6  # the entry's server, the run's key
        again = [*args, "--out", str(tmp_path / "r2"), "--api-key", "flag-key-0123"]
        code, out = cli([*again, "--no-cache"], capsys)  # the answers are cached now
        assert code == EXIT_OK, out
        assert server.auth[6:] == ["Bearer flag-key-0123"] * 6


def test_every_command_that_calls_a_model_takes_the_shared_model_options() -> None:
    import typer

    from jurist.cli import app
    from jurist.cli._model_options import SHARED_OPTIONS

    group = typer.main.get_command(app)
    shared = {"--" + name.replace("_", "-") for name in SHARED_OPTIONS}
    for command in ("judge", "compare", "grade", "eval-model", "audit", "serve-reward", "align"):
        cmd = group.commands[command]  # type: ignore[attr-defined]
        flags = {opt for param in cmd.params for opt in param.opts}
        assert shared <= flags, (command, sorted(shared - flags))


# -- 4. labels: finite numbers, two classes at least, checked before any call ----------------


def mock_run(folder: Path, labels: list[Any], verdicts: list[int] | None = None) -> Path:
    """A finished likert run of the mock judge (item ``[i]`` gets ``verdicts[i]``, default
    the label itself), its items labelled ``human``."""
    said = verdicts or [int(y) if isinstance(y, int | float) else 3 for y in labels]

    def answer(request: Request) -> str:
        tag = re.findall(r"\[(\d+)\]", str(request.messages[-1].content))
        return str(said[int(tag[-1])])

    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=answer), template="likert")
    items = [
        {"id": f"item-{i}", "prompt": "q", "response": f"[{i}] a", "human": y}
        for i, y in enumerate(labels)
    ]
    jurist.evaluate(items, judge, run_dir=folder)
    return folder


@pytest.mark.parametrize("command", ["calibrate", "align", "agreement"])
def test_a_label_that_is_not_finite_is_refused_naming_the_field_and_item(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels: list[Any] = [1 + i % 5 for i in range(30)]
    labels[7] = "inf"  # text that reads as a number, as a CSV or a hand-made JSONL holds it
    labels[9] = "-Infinity"
    run = mock_run(tmp_path / "run", labels)
    code, out = cli([command, str(run), "--labels", "human"], capsys)
    assert code == EXIT_USAGE, out
    assert "labels 'human'" in out and "item item-7:" in out
    assert re.search(r"label '?inf'? is not a finite number", out), out
    assert "nan" not in out.lower().replace("'inf'", "")  # no table of NaN


@pytest.mark.parametrize("command", ["calibrate", "agreement"])
def test_one_class_labels_are_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = mock_run(tmp_path / "run", [3] * 24, verdicts=[1 + i % 5 for i in range(24)])
    code, out = cli([command, str(run), "--labels", "human"], capsys)
    assert code == EXIT_USAGE, out
    assert "labels 'human': every label is 3.0 (24 labelled items)" in out
    assert "at least two different labels" in out and "nan" not in out


def test_align_refuses_one_class_labels_before_any_judge_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with KeyServer([1 + i % 5 for i in range(24)]) as server:
        data = labelled(tmp_path / "d.jsonl", [4] * 24)
        run = tmp_path / "run"
        judge = ["judge", str(data), "--template", "likert", "--model", "openai:judge"]
        judge += ["--base-url", server.url, "--json-mode", "none", "--out", str(run)]
        code, out = cli([*judge, "--no-progress"], capsys)
        assert code == EXIT_OK, out
        calls = len(server.auth)
        code, out = cli(["align", str(run), "--labels", "human"], capsys)
        assert code == EXIT_USAGE, out
        assert "every label is 4.0 (24 labelled items)" in out
        assert len(server.auth) == calls  # not one judge call was spent


def test_too_few_labelled_items_are_refused_by_the_same_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels: list[Any] = [None] * 20
    labels[:4] = [1, 2, 3, 4]
    run = mock_run(tmp_path / "run", labels)
    for command in ("calibrate", "align"):
        code, out = cli([command, str(run), "--labels", "human"], capsys)
        assert code == EXIT_USAGE, out
        assert "labels 'human': 4 of 20 items have a label; at least 10 are needed" in out


def test_the_python_api_checks_the_labels_the_same_way() -> None:
    from jurist.errors import DataError
    from jurist.trust import align_sync, fit_calibration

    scores = [i / 19 for i in range(20)]
    with pytest.raises(DataError, match=r"labels 'label': item 3: label inf is not a finite"):
        fit_calibration(scores, [1, 2, float("inf"), *[3] * 17])
    with pytest.raises(DataError, match=r"every label is 2\.0"):
        fit_calibration(scores, [2] * 20)
    judge = jurist.LLMJudge(
        jurist.get_model("mock:j", outputs=["3"], cycle=True), template="likert"
    )
    items = [{"prompt": "q", "response": f"a{i}"} for i in range(20)]
    with pytest.raises(DataError, match=r"item 4: label -inf is not a finite number"):
        align_sync(judge, items, [1, 2, 3, float("-inf"), *[5] * 16])


# -- 5 and 13. a run that did not finish: one check, and a killed run is named so -------------


def test_a_killed_run_is_interrupted_for_gate_calibrate_align_and_agreement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = 400
    data = labelled(tmp_path / "d.jsonl", ["Correct", "Incorrect"] * (n // 2))
    run = tmp_path / "run"
    args = ["judge", str(data), "--template", "true_false", "--model", "mock:judge"]
    args += ["--model-option", "latency=0.02", "--concurrency", "1", "--no-progress"]
    args += ["--out", str(run)]
    killed = fork(cli_run, *args, log=tmp_path / "killed.log")
    deadline = time.monotonic() + 60
    while stored(run / "run.sqlite") < 5:
        assert killed.poll() is None, killed.output()
        assert time.monotonic() < deadline, killed.output()
        time.sleep(0.02)
    # while it works, the run is running, and the live process is named
    code, out = cli(["gate", str(run), "--min-score", "0.5"], capsys)
    assert code == EXIT_USAGE, out
    assert "the run is running" in out and f"pid {killed.pid}" in out
    killed.kill()
    assert killed.wait(timeout=30) == -signal.SIGKILL
    judged = stored(run / "run.sqlite")
    assert 5 <= judged < n
    for command in (
        ["gate", str(run), "--min-score", "0.5"],
        ["calibrate", str(run)],
        ["align", str(run)],
    ):
        if command[0] != "gate":
            command += ["--labels", "human"]
        code, out = cli(command, capsys)
        assert code == EXIT_USAGE, (command, out)
        assert f"the run is interrupted ({judged} of {n} items judged" in out, out
        assert f"pid {killed.pid}" in out and "was killed and is gone" in out
        assert f"--out {run}" in out and "resumes where it stopped" in out
        assert "is running" not in out
    # agreement reads the partial run as it is, and says so
    code, out = cli(["agreement", str(run), "--labels", "human"], capsys)
    assert code == EXIT_OK, out
    assert f"warning: {run}: the run is interrupted ({judged} of {n} items judged" in out
    assert f"{judged} pairs" in out
    # the store's summary says interrupted too, not running, and the state names the process
    assert jurist.Run(run).summary().status == "interrupted"
    state = jurist.Run(run).state()
    assert (state.status, state.items, state.expected) == ("interrupted", judged, n)
    assert state.owner is not None and f"pid {killed.pid}" in state.owner


def test_an_interrupted_run_is_refused_by_calibrate_and_align(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = mock_run(tmp_path / "run", [1 + i % 5 for i in range(30)])
    db = sqlite3.connect(run / "run.sqlite")
    db.execute("DELETE FROM results WHERE idx >= 12")
    db.execute("UPDATE meta SET value = ? WHERE key = 'status'", (json.dumps("interrupted"),))
    db.commit()
    db.close()
    for command in ("calibrate", "align"):
        code, out = cli([command, str(run), "--labels", "human"], capsys)
        assert code == EXIT_USAGE, out
        assert "the run is interrupted (12 of 30 items judged)" in out
        assert "run the command that started it again" in out and "killed" not in out


# -- 6. a baseline of another kind --------------------------------------------------------------


def test_gate_refuses_a_baseline_of_another_kind_or_scale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [
        {"prompt": f"q{i}", "response": "a", "response_a": "x", "response_b": "y"}
        for i in range(12)
    ]
    likert = jurist.LLMJudge(
        jurist.get_model("mock:j", outputs=["4"], cycle=True), template="likert"
    )
    jurist.evaluate(items, likert, run_dir=tmp_path / "likert")
    pair_model = jurist.get_model("mock:p", outputs=["[[A]]"], cycle=True)
    jurist.evaluate(items, jurist.PairwiseJudge(pair_model), run_dir=tmp_path / "pair")
    plain = jurist.LLMJudge(jurist.get_model("mock:t", outputs=["Correct"], cycle=True))
    jurist.evaluate(items, plain, run_dir=tmp_path / "tf")
    gate = ["gate", str(tmp_path / "likert"), "--max-drop", "0.05", "--baseline"]
    code, out = cli([*gate, str(tmp_path / "pair")], capsys)
    assert code == EXIT_USAGE, out
    assert f"the baseline {tmp_path / 'pair'} (judge kind 'pairwise')" in out
    assert "template 'likert'" in out and "cannot be compared" in out and "change" not in out
    code, out = cli([*gate, str(tmp_path / "tf")], capsys)
    assert code == EXIT_USAGE and "'true_false_uncertain'" in out and "'likert'" in out, out
    likert2 = tmp_path / "likert2"
    jurist.evaluate(items, likert, run_dir=likert2)
    code, out = cli([*gate, str(likert2)], capsys)
    assert code == EXIT_OK, out  # the same kind and scale: compared


# -- 7. a damaged store is named as such --------------------------------------------------------


@pytest.mark.parametrize("damage", ["header", "pages"])
def test_a_damaged_run_store_is_named_not_a_full_disk(
    damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = mock_run(tmp_path / "run", [1 + i % 5 for i in range(200)])
    store = run / "run.sqlite"
    db = sqlite3.connect(store)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    raw = bytearray(store.read_bytes())
    if damage == "header":
        raw[:100] = b"\x07" * 100  # "file is not a database"
    else:
        page = int.from_bytes(raw[16:18], "big")
        for start in range(page, len(raw), page):  # every page after the first
            raw[start : start + 8] = b"\xff" * 8  # "database disk image is malformed"
    store.write_bytes(bytes(raw))
    for command in (
        ["gate", str(run), "--min-score", "0.5"],
        ["calibrate", str(run), "--labels", "human"],
    ):
        code, out = cli(command, capsys)
        assert code == EXIT_USAGE, (command, out)
        assert f"{store}: the run store is damaged" in out, out
        assert "free some space" not in out and "internal error" not in out


# -- 8 and 11. calibrate: the CLI flag in its messages, and align's exit status -----------------


def test_calibrate_save_onto_an_existing_name_names_the_cli_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = [1 + i % 5 for i in range(60)]
    run = mock_run(tmp_path / "run", labels, verdicts=[min(5, y + 2) for y in labels])
    save = ["calibrate", str(run), "--labels", "human", "--catalog", str(tmp_path / "cat")]
    save += ["--save", "judges.cal.mine"]
    code, out = cli(save, capsys)
    assert code == EXIT_OK and "saved judges.cal.mine" in out, out
    code, out = cli(save, capsys)
    assert code == EXIT_USAGE, out
    assert "already exists" in out and "pass --overwrite to replace it" in out
    assert "overwrite=True" not in out
    code, out = cli([*save, "--overwrite"], capsys)
    assert code == EXIT_OK and "saved judges.cal.mine" in out, out


def test_calibrate_exits_1_when_no_gain_is_supported_as_align_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = [1 + i % 5 for i in range(60)]
    run = mock_run(tmp_path / "run", labels)  # the judge already says the labels
    cat = ["--catalog", str(tmp_path / "cat"), "--save", "judges.cal.same"]
    code, out = cli(["calibrate", str(run), "--labels", "human", *cat], capsys)
    assert code == 1, out
    assert "does not clear zero" in out and "not saved: no supported gain" in out
    assert not (tmp_path / "cat").exists() or not list((tmp_path / "cat").rglob("*.yaml"))
    code, out = cli(["calibrate", str(run), "--labels", "human", *cat, "--save-anyway"], capsys)
    assert code == 1 and "saved judges.cal.same" in out, out
    code, out = cli(["calibrate", "--help"], capsys)
    assert "Exit status: 0 a supported gain; 1 no supported gain" in out
