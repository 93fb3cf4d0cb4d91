"""``jurist compare`` of many systems: N files or one file with a system column, against a
baseline or round robin with a budget of pairs, judged in both orders into one resumable run
folder, each record naming its two systems.

The judge is a real OpenAI-compatible server on 127.0.0.1 that prefers the longer answer
(``[[C]]`` on equal lengths) and counts the calls it answers, by the item's prompt.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jurist.cli import EXIT_OK, EXIT_USAGE
from jurist.cli._compare_pairs import Answer, Systems, plan_pairs, read_systems, write_pairs
from jurist.errors import DataError
from tests._cli_run import run, stored, write
from tests._pair_server import LongerWins

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def server() -> Iterator[LongerWins]:
    with LongerWins() as s:
        yield s


def judge_flags(server: LongerWins, out: Path) -> list[str]:
    return [
        "--model",
        "judge",
        "--base-url",
        server.base_url,
        "--api-key",
        "x",
        "--no-cache",
        "--no-progress",
        "--retries",
        "0",
        "--out",
        str(out),
    ]


def results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


# system -> answer length: the judge ranks them z > y > x; "base" sits in the middle
LENGTHS = {"x": 1, "y": 5, "base": 3, "z": 9}


def answer_files(tmp_path: Path, n_items: int) -> list[Path]:
    return [
        write(
            tmp_path / f"{name}.jsonl",
            [{"prompt": f"Q{i}", "response": name[0] * size} for i in range(n_items)],
        )
        for name, size in LENGTHS.items()
    ]


def test_three_systems_against_a_baseline_in_one_run(
    tmp_path: Path, server: LongerWins, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    files = answer_files(tmp_path, 4)
    code, text = run(
        ["compare", *map(str, files), "--baseline", "base", *judge_flags(server, out)], capsys
    )
    assert code == EXIT_OK, text
    rows = results(out)
    assert len(rows) == 3 * 4  # each system on each item, against the baseline
    assert sum(server.calls.values()) == 2 * 12  # both orders of every pair
    assert {(r["system_a"], r["system_b"]) for r in rows} == {
        ("x", "base"),
        ("y", "base"),
        ("z", "base"),
    }
    for r in rows:  # each record names its systems and carries their answers
        assert r["response_a"] == r["system_a"][0] * LENGTHS[r["system_a"]]
        assert r["response_b"] == "b" * 3 and r["prompt"] == f"Q{r['item']}"
        expected = "A" if LENGTHS[r["system_a"]] > 3 else "B"
        assert r["judge_winner"] == expected and r["judge_consistent"] is True
    summary = json.loads((out / "summary.json").read_text())
    assert summary["systems"] == ["x", "y", "base", "z"] and summary["baseline"] == "base"


def test_one_file_with_a_system_column_round_robin_within_a_budget(
    tmp_path: Path, server: LongerWins, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ["s1", "s2", "s3", "s4"]
    rows = [
        {"prompt": f"Q{i}", "response": "r" * (k + 1), "model": name}
        for i in range(6)
        for k, name in enumerate(names)
    ]
    data = write(tmp_path / "all.jsonl", rows)
    out = tmp_path / "rr"
    args = ["compare", str(data), "--system-column", "model", "--pairs-budget", "12"]
    code, text = run([*args, *judge_flags(server, out)], capsys)
    assert code == EXIT_OK, text
    judged = results(out)
    assert len(judged) == 12 and sum(server.calls.values()) == 24
    matchups = collections.Counter(frozenset((r["system_a"], r["system_b"])) for r in judged)
    assert len(matchups) == 6 and set(matchups.values()) == {2}  # 6 pairs of systems, 2 each
    plays = collections.Counter(s for r in judged for s in (r["system_a"], r["system_b"]))
    assert set(plays.values()) == {6}
    shown_first = collections.Counter(r["system_a"] for r in judged)
    assert max(shown_first.values()) - min(shown_first.values()) <= 2
    for r in judged:  # the longer answer (the later system) wins, whichever side it is on
        assert r["judge_winner"] == ("A" if r["system_a"] > r["system_b"] else "B")
    # the same flags give the same pairs: a second run resumes and judges nothing new
    server.calls.clear()
    code, text = run([*args, *judge_flags(server, out)], capsys)
    assert code == EXIT_OK and sum(server.calls.values()) == 0, text


def test_budgeted_plans_are_balanced_and_fixed_by_the_seed() -> None:
    names = [f"m{i}" for i in range(5)]
    s = Systems([], [])
    for name in names:
        s.names.append(name)
        for key in range(40):
            s.add(name, key, Answer(f"q{key}", name, f"{name}:{key}"))
    s.keys.extend(range(40))
    plan = plan_pairs(s, pairs_budget=53, seed=1)
    assert len(plan) == 53 and len(set(plan)) == 53
    per_matchup = collections.Counter(frozenset((a, b)) for _, a, b in plan)
    assert len(per_matchup) == 10 and max(per_matchup.values()) - min(per_matchup.values()) <= 1
    assert plan_pairs(s, pairs_budget=53, seed=1) == plan
    assert plan_pairs(s, pairs_budget=53, seed=2) != plan
    versus = plan_pairs(s, baseline="m0", pairs_budget=10)
    assert collections.Counter(a for _, a, _ in versus) == {
        f"m{i}": 10 // 4 + (i <= 10 % 4) for i in range(1, 5)
    }
    assert {b for _, _, b in versus} == {"m0"}
    assert len(plan_pairs(s, pairs_budget=10**6)) == 10 * 40  # a budget over all: all of them


def test_bad_systems_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = answer_files(tmp_path, 2)
    out = ["--model", "mock:judge", "--out", str(tmp_path / "o")]
    code, text = run(["compare", *map(str, files), "--baseline", "gpt", *out], capsys)
    assert code == EXIT_USAGE and "--baseline 'gpt' is not one of the systems" in text
    code, text = run(["compare", str(files[0]), *out], capsys)
    assert code == EXIT_USAGE and "--system-column" in text
    gaps = write(
        tmp_path / "gaps.jsonl",
        [
            {"prompt": "Q0", "response": "a", "sys": "p"},
            {"prompt": "Q1", "response": "a", "sys": "p"},
            {"prompt": "Q0", "response": "b", "sys": "q"},
        ],
    )
    code, text = run(["compare", str(gaps), "--system-column", "sys", *out], capsys)
    assert code == EXIT_USAGE
    assert "system 'q' has no answer for the item of" in text and "gaps.jsonl:2" in text
    twice = write(
        tmp_path / "twice.jsonl",
        [
            {"prompt": "Q0", "response": "a", "sys": "p"},
            {"prompt": "Q0", "response": "b", "sys": "p"},
        ],
    )
    code, text = run(["compare", str(twice), "--system-column", "sys", *out], capsys)
    assert code == EXIT_USAGE and "twice.jsonl:2: system 'p' already answered" in text


def test_id_field_matches_items_whatever_their_order(
    tmp_path: Path, server: LongerWins, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write(
        tmp_path / "a.jsonl", [{"id": i, "prompt": f"Q{i}", "response": "aa"} for i in range(3)]
    )
    b = write(
        tmp_path / "b.jsonl", [{"id": i, "prompt": f"Q{i}", "response": "b"} for i in (2, 0, 1)]
    )
    out = tmp_path / "ids"
    code, text = run(
        ["compare", str(a), str(b), "--id-field", "id", *judge_flags(server, out)], capsys
    )
    assert code == EXIT_OK, text
    assert [(r["id"], r["prompt"], r["judge_winner"]) for r in results(out)] == [
        (0, "Q0", "A"),
        (1, "Q1", "A"),
        (2, "Q2", "A"),
    ]


@pytest.mark.slow
def test_killed_comparison_resumes_judging_only_the_missing_pairs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = answer_files(tmp_path, 10)
    out = tmp_path / "killed"
    # the pairs of Q8 and Q9 are never answered in the killed process: it cannot end first
    with LongerWins(latency=0.05, hold_from=8) as server:
        flags = [*judge_flags(server, out), "--concurrency", "2"]
        args = ["compare", *map(str, files), "--baseline", "base", *flags]
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        proc = subprocess.Popen([sys.executable, "-m", "jurist", *args], env=env)
        try:
            deadline = time.monotonic() + 120
            while stored(out / "run.sqlite") < 6:
                assert proc.poll() is None, "the comparison ended before it could be killed"
                assert time.monotonic() < deadline, "the comparison made no progress"
                time.sleep(0.02)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
        done = stored(out / "run.sqlite")
        assert 6 <= done <= 24
        server.hold_from = None
        # resumed with another API key, which tells its calls from any call of the killed
        # process still on its way to the server
        resumed = [*args]
        resumed[resumed.index("--api-key") + 1] = "resumed"
        code, text = run(resumed, capsys)
        assert code == EXIT_OK, text
        assert server.keys["Bearer resumed"] == 2 * (30 - done)  # only the missing pairs
    judged = results(out)
    assert len(judged) == 30
    assert len({(r["item"], r["system_a"]) for r in judged}) == 30  # each pair once


def test_conversation_answers_pair_as_messages(tmp_path: Path) -> None:
    def conversation(reply: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": reply}]

    files = [
        write(
            tmp_path / f"{name}.jsonl",
            [{"messages": conversation(f"{name} says {i}")} for i in range(2)],
        )
        for name in ("p", "q", "base")
    ]
    systems = read_systems(
        files, prompt_field="prompt", response_field="response", id_field=None, system_column=None
    )
    out = tmp_path / "pairs.jsonl"
    write_pairs(systems, plan_pairs(systems, baseline="base"), out, id_field=None)
    pairs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(p["system_a"], p["system_b"], p["item"]) for p in pairs] == [
        ("p", "base", 0),
        ("q", "base", 0),
        ("p", "base", 1),
        ("q", "base", 1),
    ]
    assert pairs[0]["messages_a"][-1]["content"] == "p says 0"
    assert pairs[0]["messages_b"][-1]["content"] == "base says 0" and "prompt" not in pairs[0]
    plain = write(tmp_path / "plain.jsonl", [{"prompt": "Weather?", "response": "x"}] * 2)
    with pytest.raises(DataError, match=r"plain\.jsonl:1: no messages, while the answer at"):
        read_systems(
            [files[0], plain],
            prompt_field="prompt",
            response_field="response",
            id_field=None,
            system_column=None,
        )
