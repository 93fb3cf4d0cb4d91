"""Reasoning in the books: a thinking judge's reasoning tokens and their cost in the run
store, the summary (library and CLI) and the report, its traces folded per item; the
``--reasoning`` and ``--no-keep-reasoning`` flags end to end on a loopback server."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.runs._store import RunStore
from tests._cdp import Browser, shared_browser
from tests._cli_run import run as run_cli
from tests._cli_run import write
from tests._thinking_server import ThinkingServer

N = 10
PRICE = {"prompt": 1.0, "completion": 10.0}  # dollars per million tokens
THOUGHT = 7 * 40 + 3 * 1056  # 7 short thoughts, 3 cut at max_tokens=1056 (reasoning="low")


def _items() -> list[dict[str, str]]:
    return [
        {
            "prompt": f"Q{i}: what is {i} + {i}?",
            "response": f"{2 * i} RIGHT" if i % 2 else "0 WRONG",
        }
        for i in range(N)
    ]


@pytest.fixture(scope="module")
def thinking_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("thinking")
    with ThinkingServer("reasoning_content", cut_share=0.3, long_thought=1500) as server:
        model = jurist.get_model("openai:thinker", base_url=server.base_url, api_key="k")
        judge = jurist.LLMJudge(model, reasoning="low", concurrency=4)
        run = jurist.evaluate(
            _items(), judge, run_dir=folder / "run", prices={"openai:thinker": PRICE}
        )
        assert len(server.bodies) == N + 3
    return run


def test_summary_counts_reasoning_tokens_and_their_cost(thinking_run: Any) -> None:
    summary = thinking_run.summary()
    assert summary.scored == N and summary.failed == 0
    assert summary.reasoning_tokens == THOUGHT
    assert summary.completion_tokens == THOUGHT + N
    assert summary.attempts == N + 3
    assert summary.reasoning_cost == pytest.approx(THOUGHT * PRICE["completion"] / 1e6)
    expected = (summary.prompt_tokens * PRICE["prompt"] + (THOUGHT + N) * 10.0) / 1e6
    assert summary.cost == pytest.approx(expected)
    # each stored judgment keeps its trace and what its thinking cost
    rows = list(thinking_run.rows())
    assert sum(r["usage"].reasoning_tokens for r in rows) == THOUGHT
    assert all(r["outcome"]["reasoning"].startswith("The proposed answer") for r in rows)
    assert sum(1 for r in rows if r["outcome"].get("thinking_note")) == 3


def test_a_reasoning_price_of_its_own_bills_the_thinking_at_it(tmp_path: Path) -> None:
    with ThinkingServer("think_tag", cut_share=0.0) as server:
        model = jurist.get_model("openai:thinker", base_url=server.base_url, api_key="k")
        judge = jurist.LLMJudge(model, reasoning="low")
        price = {**PRICE, "reasoning": 20.0}
        run = jurist.evaluate(
            _items()[:2], judge, run_dir=tmp_path / "run", prices={"openai:thinker": price}
        )
    summary = run.summary()
    assert summary.reasoning_tokens == 80
    assert summary.reasoning_cost == pytest.approx(80 * 20.0 / 1e6)
    expected = (summary.prompt_tokens * 1.0 + 2 * 10.0 + 80 * 20.0) / 1e6
    assert summary.cost == pytest.approx(expected)


def test_report_shows_reasoning_rows_and_the_trace_folded(
    thinking_run: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    page = thinking_run.report()
    html = page.read_text()
    assert "reasoning tokens" in html and "reasoning cost" in html
    browser: Browser = shared_browser(tmp_path_factory)
    png = tmp_path_factory.mktemp("shots") / "thinking-report.png"
    # item 4 (index 3) was cut inside its thinking and recovered by a continuation
    loaded = browser.load(page.as_uri() + "#item=4", png=png, size=(1200, 2400))
    drawn = re.sub(r"<script.*?</script>", "", loaded.dom, flags=re.S)  # not the data blocks
    assert "Item 4" in drawn
    # the item's thinking is there, folded (a <details> not open), with its note
    assert '<details class="thinking"><summary>Thinking (' in drawn
    assert "cut in its thinking at max_tokens=1056: verdict from a continuation" in drawn
    assert "reasoning tokens" in drawn
    keep = os.environ.get("JURIST_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(keep) / png.name)


def test_cli_reasoning_flag_and_no_keep_reasoning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write(tmp_path / "data.jsonl", _items())
    with ThinkingServer("think_tag", cut_share=0.3, long_thought=1500) as server:
        code, out = run_cli(
            [
                "judge",
                str(data),
                "--model",
                "openai:thinker",
                "--base-url",
                server.base_url,
                "--api-key",
                "k",
                "--reasoning",
                "low",
                "--no-keep-reasoning",
                "--no-cache",
                "--out",
                str(tmp_path / "run"),
            ],
            capsys,
        )
        bodies = list(server.bodies)
    assert code == 0, out
    assert len(bodies) == N + 3
    thinking = [b for b in bodies if b["chat_template_kwargs"] == {"enable_thinking": True}]
    closing = [b for b in bodies if b["chat_template_kwargs"] == {"enable_thinking": False}]
    assert len(thinking) == N and len(closing) == 3  # the continuations think no more
    assert {b["max_tokens"] for b in thinking} == {1056}
    assert "reasoning tokens" in out and "reasoning cost" in out
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").open()]
    assert [r["judge_score"] for r in rows] == [1.0 if i % 2 else 0.0 for i in range(N)]
    assert all(r.get("judge_reasoning") is None for r in rows)  # dropped: never stored
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judge"]["reasoning"] == "low"


def test_cli_refuses_a_bad_reasoning_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write(tmp_path / "data.jsonl", _items()[:1])
    code, out = run_cli(
        [
            "judge",
            str(data),
            "--model",
            "mock:j",
            "--reasoning",
            "lots",
            "--out",
            str(tmp_path / "r"),
        ],
        capsys,
    )
    assert code != 0
    assert "--reasoning: 'lots' is not none, low, medium, high or a number of tokens" in out


def test_an_older_store_gets_the_reasoning_column(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    RunStore(path).close()
    db = sqlite3.connect(path)
    for table in ("results", "superseded"):
        db.execute(f"ALTER TABLE {table} DROP COLUMN reasoning_tokens")
    db.commit()
    db.close()
    old = RunStore(path, readonly=True)  # read as it is: no reasoning tokens, no error
    assert old.totals().usage.reasoning_tokens == 0
    old.close()
    store = RunStore(path)  # opened to write: the column is added
    store.close()
    db = sqlite3.connect(path)
    for table in ("results", "superseded"):
        columns = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
        assert "reasoning_tokens" in columns
    db.close()
