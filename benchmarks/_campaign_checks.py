"""The checks of ``campaign.py``: what the run folder, the server and the files say.

Each item's fate is computable (:mod:`_campaign_server`'s plan), so the checks are exact:

- **lost**: ids of the data missing from ``results.jsonl`` or from ``run.sqlite``;
- **duplicated**: ids present twice in either;
- **made up**: a score for an item that fails on every attempt, for an item the server
  never answered readably, a score other than the item's own rating, or an explanation
  that names another item (answers crossed between items);
- **wrong failures**: an item that could be scored and is not, or a failure whose error
  category is not the fault's (an unreadable verdict must be ``parse:``, never a score);
- **attempts**: each stored row's ``attempts`` against the requests the server received
  for that item in the session that wrote the row (which session: the row's ``finished``
  time), and ``summary.json``'s total against the store's; the server's total is shown
  beside them, with what the store cannot hold (requests in flight at a kill); the
  attempts of failed rows that a resume judged again count from its ``superseded`` table;
- **re-sent**: requests for an item in a session after the one that stored its score;
- **sessions**: the kills done; the re-judge session asks only for the items still failed;
  the ``--no-retry-failed`` session sends nothing; each session's key reached the server;
- **keys**: hits of every planted key in every file the sessions wrote.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from _campaign_server import UNREADABLE, expected_rating, item_plan

SHOW = 8  # examples listed per failed check


def _read_results(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _read_store(path: Path) -> list[tuple[Any, ...]]:
    if not path.exists():
        return []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT idx, item, score, error, attempts, finished, cache_hits FROM results"
        ).fetchall()
    finally:
        con.close()
    return [(r[0], json.loads(r[1]), *r[2:]) for r in rows]


def _superseded_attempts(path: Path) -> int:
    """The attempts of rows that a later session replaced (a failure judged again), which
    run.sqlite keeps in its ``superseded`` table; 0 for a store without one."""
    if not path.exists():
        return 0
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "superseded" not in tables:
            return 0
        return int(con.execute("SELECT COALESCE(SUM(attempts), 0) FROM superseded").fetchone()[0])
    finally:
        con.close()


def _item_number(record_id: str) -> int:
    return int(record_id.lstrip("c"))


class _Checks:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, name: str, value: Any, ok: bool, examples: Any = None) -> None:
        row = {"check": name, "value": value, "ok": ok}
        if examples:
            row["examples"] = examples[:SHOW] if isinstance(examples, list) else examples
        self.rows.append(row)


def analyse(campaign: Any, stats: dict[str, Any], wall: float) -> dict[str, Any]:
    """Every figure and check of the campaign, as one JSON-ready dict."""
    seed, n = campaign.args.seed, campaign.args.rows
    results = _read_results(campaign.run_dir / "results.jsonl")
    store = _read_store(campaign.run_dir / "run.sqlite")
    summary_file = campaign.run_dir / "summary.json"
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else {}
    sessions = campaign.sessions
    checks = _Checks()

    # server log: per item, per session, the requests and their faults
    sent: dict[int, Counter[int]] = defaultdict(Counter)
    readable: set[int] = set()
    by_session: Counter[int] = Counter()
    for item, session, kind in zip(stats["item"], stats["session"], stats["fault"], strict=True):
        sent[item][session] += 1
        by_session[session] += 1
        if kind == "ok":
            readable.add(item)

    # lost and duplicated
    ids_out = Counter(_item_number(r["id"]) for r in results)
    ids_store = Counter(_item_number(r[1]["id"]) for r in store)
    expected_ids = set(range(n))
    lost = sorted((expected_ids - set(ids_out)) | (expected_ids - set(ids_store)))
    dup = sorted(
        {i for i, c in ids_out.items() if c > 1} | {i for i, c in ids_store.items() if c > 1}
    )
    checks.add("rows in", n, True)
    checks.add("results.jsonl lines", len(results), len(results) == n)
    checks.add("run.sqlite rows", len(store), len(store) == n)
    checks.add("lost", len(lost), not lost, lost)
    checks.add("duplicated", len(dup), not dup, dup)

    # made up, and wrong failures
    made_up: list[str] = []
    wrong_failures: list[str] = []
    always_total = 0
    for r in results:
        i = _item_number(r["id"])
        plan = item_plan(seed, i)
        score, error = r.get("judge_score"), r.get("judge_error") or ""
        always_total += plan.always is not None
        if score is not None:
            why = _made_up(i, plan.always, score, r.get("judge_explanation"), readable)
            if why:
                made_up.append(f"{r['id']}: {why}")
        elif plan.always is None:
            wrong_failures.append(f"{r['id']}: could be scored, failed with {error[:80]!r}")
        elif (plan.always in UNREADABLE) != error.startswith("parse:"):
            wrong_failures.append(f"{r['id']}: fault {plan.always}, error {error[:80]!r}")
    failed = sum(r.get("judge_score") is None for r in results)
    checks.add("scored", len(results) - failed, True)
    checks.add("failed (items that fail every attempt)", f"{failed} ({always_total})", True)
    checks.add("made up", len(made_up), not made_up, made_up)
    checks.add("wrong failures", len(wrong_failures), not wrong_failures, wrong_failures)

    # attempts: every row each session wrote (as it was when the session ended) against
    # the requests the server received for that item in that session
    main = [s for s in sessions if s.purpose != "probe"]
    mismatches: list[str] = []
    in_flight = recorded_all = most_in_flight = 0
    unrecorded: list[str] = []
    for s in main:
        wrote = campaign.written.get(s.number, {})
        for idx, (attempts, before) in wrote.items():
            got = sent[idx][s.number]
            replaced = before is not None and got != attempts  # a store that adds up
            recorded_all += attempts - before if replaced and before is not None else attempts
            # a replaced failed row counts its own session's requests, or (a store that
            # adds them up) those plus the replaced row's
            if got != attempts and (before is None or got != attempts - before):
                mismatches.append(f"item {idx}, session {s.number}: {attempts} vs server {got}")
        stray = {i: c[s.number] for i, c in sent.items() if c[s.number] and i not in wrote}
        if s.killed:
            in_flight += sum(stray.values())
            most_in_flight = max(most_in_flight, len(stray))
        elif stray:
            unrecorded += [
                f"session {s.number}: item {i} sent {c}, no row" for i, c in stray.items()
            ]
    resent: list[str] = []
    recorded = 0
    for idx, item, score, _error, attempts, _finished, _hits in store:
        recorded += attempts
        if idx != _item_number(item["id"]):
            mismatches.append(f"row {idx} holds item {item['id']}")
        scored_in = max((k for k, w in campaign.written.items() if idx in w), default=None)
        later = sum(c for k, c in sent[idx].items() if scored_in is not None and k > scored_in)
        if score is not None and later:
            resent.append(f"item {idx}: scored in session {scored_in}, sent {later} more time(s)")
    server_total = sum(by_session[s.number] for s in main)
    unmarked = stats.get("unmarked", 0)
    checks.add("server requests (all sessions)", server_total, unmarked == 0, [unmarked])
    checks.add("attempts jurist recorded (every session's rows)", recorded_all, True)
    checks.add("  + requests in flight at the kills", in_flight, True)
    limit = campaign.args.concurrency
    checks.add("  most items in flight at one kill", most_in_flight, most_in_flight <= limit)
    balance = server_total - recorded_all - in_flight
    checks.add("  server - recorded - in flight", balance, balance == 0, unrecorded)
    checks.add("rows whose attempts != the server's", len(mismatches), not mismatches, mismatches)
    summary_attempts = summary.get("attempts")
    superseded = _superseded_attempts(campaign.run_dir / "run.sqlite")
    kept = recorded + superseded
    checks.add("attempts in run.sqlite (final rows)", recorded, True)
    checks.add("  + rows replaced by a later session", superseded, True)
    checks.add("attempts in summary.json", summary_attempts, summary_attempts == kept)
    dropped = recorded_all - kept
    why = "a failed row judged again lost its first attempts: summary.json under-counts"
    checks.add("recorded attempts missing from run.sqlite", dropped, dropped == 0, [why])
    checks.add("items re-sent after their score was stored", len(resent), not resent, resent)

    # sessions
    kills = sum(s.killed for s in sessions)
    checks.add("kills", f"{kills} of {campaign.args.kills}", kills == campaign.args.kills)
    _session_checks(checks, seed, sessions, by_session, sent, stats, campaign.keys)
    status = summary.get("status")
    checks.add("summary status", status, status == "complete")

    # planted keys in every written file
    hits, files = _grep_keys(campaign.files_written(), campaign.keys)
    for route, count in hits.items():
        checks.add(f"hits of the {route} key", count, count == 0, files[route])
    checks.add("files searched", len(campaign.files_written()), True)
    checks.add("wall time (s)", round(wall, 1), True)
    first_tries = zip(stats["item"], stats["fault"], stats["attempt"], strict=True)
    faults = Counter(k for i, k, a in first_tries if a == 1 and i < n)
    first = sum(faults.values())
    return {
        "passed": all(c["ok"] for c in checks.rows),
        "rows": n,
        "checks": checks.rows,
        "first_attempt_faults": dict(faults),
        "first_attempt_fault_rate": round(1 - faults["ok"] / first, 4) if first else None,
        "server_requests_by_session": {str(k): v for k, v in sorted(by_session.items())},
        "summary": {k: summary.get(k) for k in ("items", "scored", "failed", "calls", "attempts")},
    }


def _made_up(i: int, always: str | None, score: float, expl: Any, readable: set[int]) -> str:
    if always is not None:
        return f"scored {score} but the server fails it every time ({always})"
    if i not in readable:
        return f"scored {score} but the server never answered it readably"
    want = (expected_rating(i) - 1) / 4
    if abs(score - want) > 1e-9:
        return f"scored {score}, the server's answer says {want}"
    if f"campaign item {i} " not in str(expl or ""):
        return f"explanation {str(expl)[:60]!r} is another item's"
    return ""


def _session_checks(
    checks: _Checks,
    seed: int,
    sessions: list[Any],
    by_session: Counter[int],
    sent: dict[int, Counter[int]],
    stats: dict[str, Any],
    keys: dict[str, str],
) -> None:
    def redact(text: str) -> str:
        for route, key in keys.items():
            text = text.replace(key, f"<{route} key>")
        return text

    refused = [
        f"session {s.number} ({s.route}, {s.purpose}): exit {s.rc}"
        + (" (timed out)" if s.timed_out else "")
        + f"; {s.stderr_tail}"
        for s in sessions
        if s.refused
    ]
    checks.add("sessions that crashed, hung or were refused", len(refused), not refused, refused)
    wrong_key: list[str] = []
    wrong_model: list[str] = []
    for s in sessions:
        seen = stats["keys"].get(str(s.number), {})
        others = {redact(k): c for k, c in seen.items() if k != keys[s.route]}
        if others:
            wrong_key.append(f"session {s.number} ({s.route}): the server got keys {others}")
        models = {redact(m): c for m, c in stats["models"].get(str(s.number), {}).items()}
        if set(models) - {"campaign"}:
            wrong_model.append(f"session {s.number} ({s.route}): the server got models {models}")
    checks.add(
        "sessions whose key did not reach the server", len(wrong_key), not wrong_key, wrong_key
    )
    checks.add(
        "sessions that sent another model name", len(wrong_model), not wrong_model, wrong_model
    )
    for s in sessions:
        count = by_session[s.number]
        if s.refused:
            continue
        if s.purpose == "rejudge":
            wrong = [
                i for i, c in sent.items() if c[s.number] and item_plan(seed, i).always is None
            ]
            checks.add(f"session {s.number} (re-judge) requests", count, not wrong, wrong)
        elif s.purpose == "no-retry":
            checks.add(f"session {s.number} (--no-retry-failed) requests", count, count == 0)
        elif s.purpose == "probe":
            checks.add(f"session {s.number} (fresh run, key in the spec) rows", s.rows_after, True)


def _grep_keys(
    files: list[Path], keys: dict[str, str]
) -> tuple[dict[str, int], dict[str, list[str]]]:
    hits = dict.fromkeys(keys, 0)
    where: dict[str, list[str]] = {r: [] for r in keys}
    needles = {r: k.encode() for r, k in keys.items()}
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        for route, needle in needles.items():
            count = data.count(needle)
            if count:
                hits[route] += count
                where[route].append(f"{path.name}: {count}")
    return hits, where


def print_report(report: dict[str, Any]) -> None:
    width = max(len(c["check"]) for c in report["checks"])
    print(f"\njurist judge fault-and-kill campaign, {report['rows']:,} rows")
    rate, faults = report["first_attempt_fault_rate"] or 0.0, report["first_attempt_faults"]
    print(f"first-attempt faults: {rate:.1%} {faults}")
    print(f"server requests by session: {report['server_requests_by_session']}")
    for s in report.get("sessions", []):
        state = "killed" if s["killed"] else f"exit {s['rc']}"
        print(
            f"  session {s['number']} {s['route']:<10} {s['purpose']:<8} {state:<8} "
            f"rows {s['rows_before']} -> {s['rows_after']}  {s['ended'] - s['started']:.1f} s"
        )
    print()
    for c in report["checks"]:
        mark = "ok" if c["ok"] else "FAIL"
        print(f"  {c['check']:<{width}}  {c['value']!s:>14}  {mark}")
        if not c["ok"]:
            for example in c.get("examples") or []:
                print(f"      {example}")
    print("\nPASS" if report["passed"] else "\nFAIL")
