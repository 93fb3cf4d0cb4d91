"""A fault-and-kill campaign through ``jurist judge``, self-checking (issue 19).

50,000 rows (``--rows``) are judged by ``jurist judge`` (a subprocess, the real command
line) against the fault server of :mod:`_campaign_server` (its own process, 127.0.0.1
only), where about 30% of the first attempts fail (429, 5xx, dropped connections, hangs
past the client's timeout, unreadable verdicts) and about 2% of the items fail on every
attempt. The judge is SIGKILLed ``--kills`` times (after a random number of newly stored
results each time) and resumed with the same command each time; then it runs to the end,
resumes once more (re-judging the failures), and once with ``--no-retry-failed`` (which
must send nothing).

The API key travels a different route in each session (``--api-key``,
``$OPENAI_API_KEY``, a model spec ``openai:campaign[api_key=...]``, ``$JURIST_API_KEY``),
each a distinct planted key; every file the sessions wrote (run folder, cache folder,
home and temporary folders, stdout and stderr) is then searched for every key.

Then it checks (``_campaign_checks.py``) and prints a table: rows in and out, lost,
duplicated, made up (a score the server never gave), the server's attempts against the
attempts jurist recorded, kills, key hits, wall time; ``--json-out`` writes it all as
JSON. The exit status is 1 when a check fails.

    python benchmarks/campaign.py                      # 50,000 rows, a few minutes
    python benchmarks/campaign.py --rows 2000          # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _campaign_checks import analyse, print_report
from _campaign_server import CampaignServer

ROUTES = ("flag", "env_openai", "spec", "env_jurist")
KEY_ENV = ("OPENAI_API_KEY", "JURIST_API_KEY", "JURIST_MODEL")
POLL = 0.05
PROBE_ITEMS = 20


@dataclass
class Session:
    """One ``jurist judge`` process of the campaign."""

    number: int
    route: str
    purpose: str  # kill | finish | rejudge | no-retry | probe
    run_dir: str
    data: str
    kill_after: int | None = None
    rows_before: int = 0
    rows_after: int = 0
    rc: int | None = None
    killed: bool = False
    timed_out: bool = False
    started: float = 0.0
    ended: float = 0.0
    stderr_tail: str = ""
    extra: list[str] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        """Ended by itself with neither a finished run (0) nor failed items (1)."""
        return not self.killed and (self.timed_out or self.rc not in (0, 1))


def planted_keys(seed: int) -> dict[str, str]:
    """One distinct fake key per route."""
    rng = random.Random(f"keys:{seed}")
    return {r: f"sk-campaign-{r.replace('_', '-')}-{rng.getrandbits(64):016x}" for r in ROUTES}


def write_data(path: Path, items: range, seed: int) -> None:
    rng = random.Random(f"data:{seed}:{items.start}")
    with path.open("w") as f:
        for i in items:
            a, b = rng.randrange(100), rng.randrange(100)
            answer = a + b + rng.choice((0, 0, 1, -1))
            row = {"id": f"c{i:06d}", "prompt": f"[campaign item {i}] What is {a} + {b}?"}
            row["response"] = f"It is {answer}."
            f.write(json.dumps(row) + "\n")


def stored_rows(run_dir: Path) -> int:
    """Results stored so far (read-only; 0 before the store exists)."""
    db = run_dir / "run.sqlite"
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return int(con.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


class Campaign:
    def __init__(self, args: argparse.Namespace, work: Path, server: CampaignServer) -> None:
        self.args = args
        self.work = work
        self.server = server
        self.keys = planted_keys(args.seed)
        self.data = work / "data.jsonl"
        self.run_dir = work / "run"
        self.probe_data = work / "probe.jsonl"
        self.probe_dir = work / "probe-run"
        self.logs = work / "logs"
        self.env_dirs = {n: work / n for n in ("cache", "home", "tmp", "cwd")}
        self.sessions: list[Session] = []
        self.written: dict[int, dict[int, tuple[int, int | None]]] = {}
        self.last_attempts: dict[int, int] = {}
        self.rng = random.Random(f"kills:{args.seed}")

    def command(self, session: Session) -> tuple[list[str], dict[str, str]]:
        a = self.args
        model = "openai:campaign"
        env = {k: v for k, v in os.environ.items() if k not in KEY_ENV}
        env |= {
            "JURIST_CACHE_DIR": str(self.env_dirs["cache"]),
            "TMPDIR": str(self.env_dirs["tmp"]),
        }
        env |= {"HOME": str(self.env_dirs["home"]), "XDG_CACHE_HOME": str(self.env_dirs["home"])}
        key_args: list[str] = []
        key = self.keys[session.route]
        if session.route == "flag":
            key_args = ["--api-key", key]
        elif session.route == "env_openai":
            env["OPENAI_API_KEY"] = key
        elif session.route == "env_jurist":
            env["JURIST_API_KEY"] = key
        else:
            model = f"openai:campaign[api_key={key}]"
        cmd = [sys.executable, "-m", "jurist", "judge", session.data, "--template", "likert"]
        cmd += ["--explanations", "--model", model, "--base-url", self.server.base_url]
        cmd += ["--out", session.run_dir, "--concurrency", str(a.concurrency)]
        cmd += ["--max-retries", str(a.max_retries), "--timeout", str(a.timeout)]
        cmd += ["--retries", "2", "--no-progress", "--resume", *key_args, *session.extra]
        return cmd, env

    def run(self, session: Session) -> Session:
        self.sessions.append(session)
        self.server.set_session(session.number)
        cmd, env = self.command(session)
        run_dir = Path(session.run_dir)
        session.rows_before = stored_rows(run_dir)
        out = (self.logs / f"session{session.number}.stdout").open("wb")
        err_path = self.logs / f"session{session.number}.stderr"
        err = err_path.open("wb")
        session.started = time.time()
        deadline = time.monotonic() + self.args.session_timeout
        proc = subprocess.Popen(cmd, env=env, cwd=self.env_dirs["cwd"], stdout=out, stderr=err)
        try:
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    session.timed_out = True
                    proc.kill()
                    break
                target = session.rows_before + (session.kill_after or 0)
                if session.kill_after is not None and stored_rows(run_dir) >= target:
                    proc.send_signal(signal.SIGKILL)
                    session.killed = True
                    break
                time.sleep(POLL)
        finally:
            if proc.poll() is None and not (session.killed or session.timed_out):
                proc.kill()
            session.rc = proc.wait()
            session.ended = time.time()
            out.close()
            err.close()
        session.rows_after = stored_rows(run_dir)
        if session.purpose != "probe":
            self.snapshot(session)
        tail = err_path.read_text(errors="replace").strip().splitlines()[-4:]
        session.stderr_tail = self.redact(" | ".join(line.strip() for line in tail))
        return session

    def snapshot(self, session: Session) -> None:
        """The rows ``session`` wrote, as they are when it has ended: item -> (attempts,
        the attempts of the row it replaced or None)."""
        db = Path(session.run_dir) / "run.sqlite"
        if not db.exists():
            return
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            rows = con.execute(
                "SELECT idx, attempts FROM results WHERE finished BETWEEN ? AND ?",
                (session.started, session.ended),
            ).fetchall()
        finally:
            con.close()
        mine = {int(idx): (int(n), self.last_attempts.get(int(idx))) for idx, n in rows}
        self.written[session.number] = mine
        self.last_attempts.update({idx: n for idx, (n, _) in mine.items()})

    def redact(self, text: str) -> str:
        for route, key in self.keys.items():
            text = text.replace(key, f"<{route} key>")
        return text

    def drive(self) -> None:
        """The kills, then to the end, a re-judge of the failures, a no-retry run; the
        routes take turns. A route whose session is refused (or crashes) is recorded and
        not used again, and that step is done again with the next route."""
        rows, kills = self.args.rows, self.args.kills
        turn = 0
        broken: set[str] = set()

        def session(
            purpose: str, kill_after: int | None = None, extra: list[str] | None = None
        ) -> Session | None:
            nonlocal turn
            usable = [r for r in self.args.routes if r not in broken]
            if not usable:
                return None
            route = usable[turn % len(usable)]
            turn += 1
            number = len(self.sessions) + 1
            s = self.run(
                Session(
                    number,
                    route,
                    purpose,
                    run_dir=str(self.run_dir),
                    data=str(self.data),
                    kill_after=kill_after,
                    extra=list(extra or []),
                )
            )
            if s.refused:
                broken.add(route)
            return s

        done = 0
        for _ in range(kills + len(self.args.routes)):
            if done == kills:
                break
            delta = max(1, int(rows * self.rng.uniform(0.08, 0.22)))
            s = session("kill", kill_after=delta)
            if s is None or (not s.killed and not s.refused):
                break  # finished before its kill: no more kills to make
            done += s.killed
        for purpose, extra in (
            ("finish", []),
            ("rejudge", []),
            ("no-retry", ["--no-retry-failed"]),
        ):
            for _ in self.args.routes:
                s = session(purpose, extra=list(extra))
                if s is None or not s.refused:
                    break
        if "spec" in self.args.routes:
            self.probe()

    def probe(self) -> None:
        """A fresh small run with the key in the model spec (resuming the main run with it
        may be refused: the spec is part of the judge's identity)."""
        n = self.args.rows
        write_data(self.probe_data, range(n, n + PROBE_ITEMS), self.args.seed)
        number = len(self.sessions) + 1
        self.run(Session(number, "spec", "probe", str(self.probe_dir), str(self.probe_data)))

    def files_written(self) -> list[Path]:
        """Every file the sessions could have written: all but the data files."""
        ours = (self.data, self.probe_data)
        return sorted(p for p in self.work.rglob("*") if p.is_file() and p not in ours)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="A fault-and-kill campaign through jurist judge.")
    p.add_argument("--rows", type=int, default=50_000)
    p.add_argument("--kills", type=int, default=3)
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--concurrency", type=int, default=128)
    p.add_argument("--timeout", type=float, default=2.0, help="jurist's --timeout (s)")
    p.add_argument("--max-retries", type=int, default=3)
    p.add_argument("--hang", type=float, default=3.0, help="how long a hang lasts (s)")
    p.add_argument("--session-timeout", type=float, default=None, help="s; default by --rows")
    p.add_argument(
        "--routes",
        type=lambda v: [r.strip() for r in v.split(",")],
        default=list(ROUTES),
        help=f"API key routes, taking turns (default {','.join(ROUTES)})",
    )
    p.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="an empty folder, kept; default a temp dir, removed when every check passes",
    )
    p.add_argument("--json-out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.session_timeout is None:
        args.session_timeout = 120.0 + args.rows * 0.03
    if not args.routes or set(args.routes) - set(ROUTES):
        p.error(f"--routes takes some of {', '.join(ROUTES)}")
    if args.hang <= args.timeout:
        p.error("--hang must be longer than --timeout (a hang is a call that times out)")
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="jurist-campaign-"))
    work.mkdir(parents=True, exist_ok=True)
    if any(work.iterdir()):
        p.error(f"--work-dir {work} is not empty")
    started = time.monotonic()
    passed = False
    try:
        with CampaignServer(args.seed, hang=args.hang) as server:
            campaign = Campaign(args, work, server)
            for d in (campaign.logs, *campaign.env_dirs.values()):
                d.mkdir()
            write_data(campaign.data, range(args.rows), args.seed)
            campaign.drive()
            stats = server.stats()
        wall = time.monotonic() - started
        report = analyse(campaign, stats, wall)
        passed = bool(report["passed"])
    finally:
        if args.work_dir is None and passed:
            shutil.rmtree(work, ignore_errors=True)
    report["sessions"] = [asdict(s) for s in campaign.sessions]
    print_report(report)
    if not passed:
        print(f"the campaign's files are kept in {work}")
    if args.json_out is not None:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
