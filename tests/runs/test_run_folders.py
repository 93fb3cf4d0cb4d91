"""Run folders through the Python API: failed items re-judged on resume, foreign folders and
files left alone, one manifest per store, costs never a made-up $0, clashing input columns
kept, attempts stored, a full disk reported in one line."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.engines import evaluate
from jurist.errors import ConfigError, JuristError, status_error
from jurist.runs import PriceTable, Run
from jurist.runs._store import RunStore

ITEMS = [{"prompt": f"q{i}", "response": f"a{i}"} for i in range(3)]


def judge_with(outputs: list[Any], **kw: Any) -> jurist.LLMJudge:
    return jurist.LLMJudge(jurist.get_model("mock:judge", outputs=outputs), **kw)


def rows_of(folder: Path) -> list[tuple[int, float | None]]:
    db = sqlite3.connect(folder / "run.sqlite")
    try:
        return [(int(i), s) for i, s in db.execute("SELECT idx, score FROM results ORDER BY idx")]
    finally:
        db.close()


# -- 14.2: resume retries what failed ---------------------------------------------------------


def test_resume_rejudges_failed_items_and_keeps_scored_ones(tmp_path: Path) -> None:
    boom = status_error(500, "scripted 500")
    first = judge_with(["Correct", boom, boom])
    run = evaluate(ITEMS, first, run_dir=tmp_path)
    assert [s for _, s in rows_of(tmp_path)] == [1.0, None, None]
    assert run.summary().failed == 2

    fixed = judge_with(["Incorrect", "Correct"])
    run = evaluate(ITEMS, fixed, run_dir=tmp_path)
    assert fixed.model.calls == 2  # type: ignore[attr-defined]
    assert rows_of(tmp_path) == [(0, 1.0), (1, 0.0), (2, 1.0)]  # one row each, first kept
    s = run.summary()
    assert (s.items, s.scored, s.failed, s.status) == (3, 3, 0, "complete")


def test_no_retry_failed_keeps_failures(tmp_path: Path) -> None:
    boom = status_error(500, "scripted 500")
    evaluate(ITEMS, judge_with(["Correct", boom, boom]), run_dir=tmp_path)
    again = judge_with(["Correct"])
    evaluate(ITEMS, again, run_dir=tmp_path, retry_failed=False)
    assert again.model.calls == 0  # type: ignore[attr-defined]
    assert [s for _, s in rows_of(tmp_path)] == [1.0, None, None]


def test_result_relevant_change_still_refused_with_failed_items(tmp_path: Path) -> None:
    boom = status_error(500, "scripted 500")
    evaluate(ITEMS, judge_with(["Correct", boom, boom]), run_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"judge\.temperature: 0\.0 -> 0\.7"):
        evaluate(ITEMS, judge_with(["Correct"], temperature=0.7), run_dir=tmp_path)
    assert [s for _, s in rows_of(tmp_path)] == [1.0, None, None]


def test_operational_settings_do_not_block_a_resume(tmp_path: Path) -> None:
    evaluate(ITEMS, judge_with(["Correct"], concurrency=4), run_dir=tmp_path, concurrency=2)
    run = evaluate(ITEMS, judge_with(["Correct"], concurrency=8), run_dir=tmp_path, concurrency=1)
    assert run.summary().sessions == 2


# -- 15.2: output folders never eat user files ------------------------------------------------


def test_a_foreign_sqlite_file_is_never_touched(tmp_path: Path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir()
    db = sqlite3.connect(folder / "run.sqlite")
    db.execute("CREATE TABLE results (id INTEGER, value TEXT)")
    db.executemany("INSERT INTO results VALUES (?, ?)", [(i, "x") for i in range(100)])
    db.commit()
    db.close()
    before = (folder / "run.sqlite").read_bytes()
    for resume in (True, False):
        with pytest.raises(ConfigError, match=r"not a jurist run folder.*run\.sqlite"):
            evaluate(ITEMS, judge_with(["Correct"]), run_dir=folder, resume=resume)
    assert (folder / "run.sqlite").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["run.sqlite"]
    run = evaluate(ITEMS, judge_with(["Correct"]), run_dir=folder, overwrite=True)
    assert len(run) == 3


def test_a_folder_of_other_files_is_refused_naming_them(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "results.jsonl").write_text('{"mine": 1}\n')
    with pytest.raises(ConfigError, match=r"notes\.txt.*results\.jsonl|results\.jsonl.*notes"):
        evaluate(ITEMS, judge_with(["Correct"]), run_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "results.jsonl"]


def test_start_over_never_mixes_judges(tmp_path: Path) -> None:
    run_a = evaluate(ITEMS, jurist.LLMJudge("mock:a"), run_dir=tmp_path)
    evaluate(
        ITEMS, jurist.LLMJudge("mock:b", template="true_false"), run_dir=tmp_path, resume=False
    )
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["judge"]["model"]["name"] == "b"
    assert Run(tmp_path).summary().judge.endswith("mock:b")
    # a Run opened on the first run does not read the second run's rows as its own
    with pytest.raises(ConfigError, match="started over"):
        run_a.summary()


def test_store_and_manifest_file_disagreeing_trusts_the_store(tmp_path: Path) -> None:
    evaluate(ITEMS, jurist.LLMJudge("mock:a"), run_dir=tmp_path)
    # a crash between the store's start-over and the manifest file's rewrite leaves the old file
    old = (tmp_path / "manifest.json").read_text()
    evaluate(ITEMS, jurist.LLMJudge("mock:b"), run_dir=tmp_path, resume=False)
    (tmp_path / "manifest.json").write_text(old)
    assert Run(tmp_path).manifest.judge["model"]["name"] == "b"
    with pytest.raises(ConfigError, match=r"judge\.model\.name"):
        evaluate(ITEMS, jurist.LLMJudge("mock:a"), run_dir=tmp_path)


def test_temp_files_are_unique_per_process(tmp_path: Path) -> None:
    run = evaluate(ITEMS, judge_with(["Correct"]), run_dir=tmp_path / "run")
    out = tmp_path / "out.jsonl"
    other = out.with_name(out.name + ".tmp")
    other.write_text("another process's half-written file")
    run.to_jsonl(out)
    assert other.read_text() == "another process's half-written file"
    assert len(out.read_text().splitlines()) == 3
    parquet = tmp_path / "out.parquet"
    ptmp = parquet.with_name(parquet.name + ".tmp")
    ptmp.write_text("theirs")
    run.to_parquet(parquet)
    assert ptmp.read_text() == "theirs"
    mtmp = tmp_path / "run" / "manifest.json.tmp"
    mtmp.write_text("theirs")
    evaluate(ITEMS, judge_with(["Correct"]), run_dir=tmp_path / "run", resume=False)
    assert mtmp.read_text() == "theirs"


# -- 15.5: costs, clashing columns, attempts, a full disk ------------------------------------


def test_unpriced_model_with_failed_rows_has_unknown_cost(tmp_path: Path) -> None:
    boom = status_error(500, "scripted 500")
    run = evaluate(
        ITEMS[:2], judge_with(["Correct", boom]), run_dir=tmp_path, prices=PriceTable(prices={})
    )
    s = run.summary()
    assert s.cost is None and s.cost_unknown_items == 2


def test_partly_unpriced_total_is_unknown(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    evaluate(ITEMS, judge_with(["Correct"]), run_dir=folder)
    db = sqlite3.connect(folder / "run.sqlite")
    db.execute("UPDATE results SET cost = 0.5 WHERE idx = 0")
    db.execute("UPDATE results SET cost = NULL WHERE idx = 1")
    db.commit()
    db.close()
    s = Run(folder).summary()
    assert s.cost is None and s.cost_unknown_items == 1 and s.cost_of_priced_items == 0.5


def test_input_columns_named_like_judge_fields_are_kept(tmp_path: Path) -> None:
    items = [{"prompt": "q", "response": "a", "judge_score": 5, "judge_calls": "x"}]
    run = evaluate(items, judge_with(["Incorrect"]), run_dir=tmp_path)
    (record,) = run.records()
    assert record["input_judge_score"] == 5 and record["input_judge_calls"] == "x"
    assert record["judge_score"] == 0.0 and record["judge_calls"] == 1


def test_attempts_are_stored_and_summed(tmp_path: Path) -> None:
    boom = status_error(500, "scripted 500")
    run = evaluate(ITEMS, judge_with(["Correct", boom, "Correct"]), run_dir=tmp_path)
    s = run.summary()
    assert s.calls == 2
    assert s.attempts >= 3  # the failed request was sent too
    assert all("judge_attempts" in r for r in run.records())


OLD_SCHEMA = """
CREATE TABLE results (
    idx INTEGER PRIMARY KEY, item_hash TEXT NOT NULL, item BLOB NOT NULL, score REAL,
    error TEXT, outcome BLOB NOT NULL, prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0, cached_tokens INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0, cache_hits INTEGER NOT NULL DEFAULT 0, cost REAL,
    cost_estimated INTEGER NOT NULL DEFAULT 0, latency REAL NOT NULL DEFAULT 0,
    finished REAL NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def test_a_store_without_the_attempts_column_opens_and_resumes(tmp_path: Path) -> None:
    boom = status_error(500, "scripted 500")
    evaluate(ITEMS, judge_with(["Correct", boom, boom]), run_dir=tmp_path)
    # rebuild the store as an older jurist wrote it: no attempts column, no format marker
    db = sqlite3.connect(tmp_path / "run.sqlite")
    rows = db.execute(
        "SELECT idx, item_hash, item, score, error, outcome, prompt_tokens, completion_tokens, "
        "cached_tokens, calls, cache_hits, cost, cost_estimated, latency, finished FROM results"
    ).fetchall()
    meta = db.execute("SELECT key, value FROM meta WHERE key IN ('status','sessions')").fetchall()
    db.close()
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"run.sqlite{suffix}").unlink(missing_ok=True)
    db = sqlite3.connect(tmp_path / "run.sqlite")
    db.executescript(OLD_SCHEMA)
    db.executemany(f"INSERT INTO results VALUES ({','.join('?' * 15)})", rows)
    db.executemany("INSERT INTO meta VALUES (?, ?)", meta)
    db.commit()
    db.close()
    assert Run(tmp_path).summary().attempts == 0
    fixed = judge_with(["Correct", "Correct"])
    run = evaluate(ITEMS, fixed, run_dir=tmp_path)
    assert rows_of(tmp_path) == [(0, 1.0), (1, 1.0), (2, 1.0)]
    assert run.summary().attempts >= 2


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Any:
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_one_line_naming_the_file(tiny_fs: Path) -> None:
    big = [{"prompt": f"q{i}" + "x" * 500, "response": "a"} for i in range(400)]
    folder = tiny_fs / "run"
    with pytest.raises(JuristError, match=r"run\.sqlite.*(full|space)") as info:
        evaluate(big, judge_with(["Correct"]), run_dir=folder, concurrency=1)
    assert "\n" not in str(info.value)
    saved = RunStore(folder / "run.sqlite", readonly=True)
    try:
        assert 0 < saved.count() < 400  # the rows finished before the disk filled stay
    finally:
        saved.close()


def test_a_full_disk_while_exporting_is_one_line_and_leaves_no_temp_file(
    tiny_fs: Path, tmp_path: Path
) -> None:
    big = [{"prompt": f"q{i}" + "x" * 2000, "response": "a"} for i in range(200)]
    run = evaluate(big, judge_with(["Correct"] * 200), run_dir=tmp_path / "run")
    with pytest.raises(JuristError, match=r"out\.jsonl: cannot write the results") as info:
        run.to_jsonl(tiny_fs / "out.jsonl")
    assert "\n" not in str(info.value)
    assert list(tiny_fs.iterdir()) == []
