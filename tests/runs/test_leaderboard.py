"""``jurist.runs.leaderboard`` and ``jurist leaderboard``: Bradley-Terry scores with intervals
and raw and length-controlled win rates against a baseline, from one or more pairwise runs.

The runs are real: a :class:`~jurist.PairwiseJudge` over a scripted mock judge through
:func:`jurist.evaluate`, or ``jurist compare`` against a judge server on 127.0.0.1.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.cli import EXIT_OK, EXIT_USAGE
from jurist.errors import ConfigError, DataError
from jurist.metrics import fit_length_controlled, length_controlled_win_rate
from jurist.runs import Leaderboard, leaderboard
from jurist.types import Request
from tests._chromium import dump_dom, non_white_share, screenshot, shots_dir
from tests._cli_run import run, write
from tests._pair_server import LongerWins

N = 20


def verdict(a: str, b: str) -> str:
    """BAD loses to anything else, GOOD beats anything else, else the longer answer wins."""
    for mark, first_wins in (("BAD", False), ("GOOD", True)):
        if (mark in a) != (mark in b):
            return "[[A]]" if (mark in a) == first_wins else "[[B]]"
    return "[[A]]" if len(a) > len(b) else "[[B]]" if len(b) > len(a) else "[[C]]"


def judge_text(request: Request) -> str:
    text = request.messages[-1].content
    a = text.split("<answer_a>\n")[1].split("\n</answer_a>")[0]
    b = text.split("<answer_b>\n")[1].split("\n</answer_b>")[0]
    return verdict(a, b)


def answer(system: str, i: int) -> str:
    """base: 50 characters (GOOD on item 0). padder: long on even items, short on odd (GOOD
    on item 1), so it wins when it is longer. solid: BAD and long on even items (but item 2),
    GOOD and short on odd ones (but item 3), so it wins when it is shorter."""
    if system == "base":
        return ("GOOD" if i == 0 else "").ljust(50, "b")
    long = i % 2 == 0
    mark = ""
    if system == "padder" and i == 1:
        mark = "GOOD"
    if system == "solid":
        mark = ("BAD" if i != 2 else "") if long else ("GOOD" if i != 3 else "")
    return mark.ljust(100 if long else 20, system[0])


def preference(system: str, i: int) -> float:
    return 1.0 if verdict(answer(system, i), answer("base", i)) == "[[A]]" else 0.0


def pairs(systems: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "prompt": f"Q{i}",
            "response_a": answer(s, i),
            "response_b": answer("base", i),
            "system_a": s,
            "system_b": "base",
        }
        for i in range(N)
        for s in systems
    ]


def judged(items: list[dict[str, Any]], folder: Path, **options: Any) -> jurist.Run:
    judge = jurist.PairwiseJudge(jurist.get_model("mock:p", outputs=judge_text), **options)
    return jurist.evaluate(items, judge, run_dir=folder, progress=False)


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Leaderboard:
    folder = tmp_path_factory.mktemp("lb")
    return leaderboard([judged(pairs(["padder", "solid"]), folder / "run")], bootstrap=200)


def test_win_rates_from_the_systems_side_and_length_control(board: Leaderboard) -> None:
    assert board.baseline == "base" and board.baseline_from == "every battle"
    rows = {r.system: r for r in board.rows}
    padder, solid, base = rows["padder"], rows["solid"], rows["base"]
    # by hand: each wins 10 of its 20 pairs against the baseline and loses the others
    for r in (padder, solid):
        assert (r.wins, r.ties, r.losses, r.pairs_vs_baseline) == (10, 0, 10, 20)
        assert r.win_rate == pytest.approx(50.0)
        assert r.win_rate_se == pytest.approx(100 * (0.25 * 20 / 19) ** 0.5 / 20**0.5)
    # the length-controlled rates are the joint fit (instruction difficulty shared by the
    # systems) over each system's preferences and the two answers' lengths in characters,
    # read from the system's side, the items named by their prompts
    expected = fit_length_controlled(
        {name: [preference(name, i) for i in range(N)] for name in ("padder", "solid")},
        {name: [len(answer(name, i)) for i in range(N)] for name in ("padder", "solid")},
        {name: [50] * N for name in ("padder", "solid")},
        items={name: [f"Q{i}" for i in range(N)] for name in ("padder", "solid")},
    )
    assert board.lc_difficulty == "joint" and not board.notes
    assert padder.lc_win_rate == pytest.approx(expected["padder"].value)
    assert solid.lc_win_rate == pytest.approx(expected["solid"].value)
    # AlpacaEval's point: the same raw rate counts less when the wins were bought by length
    assert padder.lc_win_rate is not None and solid.lc_win_rate is not None
    assert padder.lc_win_rate < solid.lc_win_rate and padder.lc_win_rate < 50.0
    # Bradley-Terry against one baseline: each score is the system's win rate against it,
    # inside its bootstrap interval; the baseline scores 50
    assert padder.score == pytest.approx(50.0, abs=0.01) and solid.score == pytest.approx(
        50.0, abs=0.01
    )
    assert padder.lower < padder.score < padder.upper
    assert base.score == pytest.approx(50.0) and base.win_rate is None
    assert padder.mean_length == pytest.approx(60.0) and base.mean_length == pytest.approx(50.0)
    assert [r.rank for r in board.rows] == [1, 2, 3]


def test_csv_and_pandas_hold_the_same_table(board: Leaderboard, tmp_path: Path) -> None:
    path = board.to_csv(tmp_path / "lb.csv")
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert [r["system"] for r in rows] == [r.system for r in board.rows]
    for got, row in zip(rows, board.rows, strict=True):
        assert float(got["score"]) == pytest.approx(row.score)
        assert got["win_rate"] == ("" if row.win_rate is None else str(row.win_rate))
    frame = board.to_pandas()
    assert list(frame["system"]) == [r.system for r in board.rows]


def test_several_runs_make_one_leaderboard(tmp_path: Path) -> None:
    first = judged(pairs(["padder"]), tmp_path / "one")
    second = judged(pairs(["solid"]), tmp_path / "two")
    board = leaderboard([first.run_dir, second.run_dir], bootstrap=50)
    assert {r.system for r in board.rows} == {"padder", "solid", "base"}
    assert [r.battles for r in board.runs] == [20, 20] and board.battles == 40
    alone = leaderboard([first], bootstrap=50)
    padder = next(r for r in alone.rows if r.system == "padder")
    assert padder.win_rate == next(r.win_rate for r in board.rows if r.system == "padder")
    # one system against the baseline: its length control has no difficulty to share
    assert alone.lc_difficulty == "none"
    expected = length_controlled_win_rate(
        [preference("padder", i) for i in range(N)],
        [len(answer("padder", i)) for i in range(N)],
        [50] * N,
    )
    assert padder.lc_win_rate == pytest.approx(expected.value)
    # the same pairs read twice: an instruction meets the baseline twice; said, and fitted
    # per system
    both = judged(pairs(["padder", "solid"]), tmp_path / "both").run_dir
    twice = leaderboard([both, both], bootstrap=0)
    assert twice.lc_difficulty == "none" and "more than once" in twice.notes[0]


def test_failed_and_inconsistent_pairs_are_left_out_and_counted(tmp_path: Path) -> None:
    items = pairs(["padder"])
    items[0] = {**items[0], "prompt": "Q0 biased"}

    def biased(request: Request) -> str:  # the first shown wins: the two orders disagree
        return "[[A]]" if "biased" in request.messages[-1].content else judge_text(request)

    judge = jurist.PairwiseJudge(
        jurist.get_model("mock:p", outputs=biased), consistency="inconsistent"
    )
    folder = jurist.evaluate(items, judge, run_dir=tmp_path / "r", progress=False).run_dir
    board = leaderboard([folder], bootstrap=20)
    assert (board.runs[0].pairs, board.runs[0].battles, board.runs[0].inconsistent) == (20, 19, 1)
    assert next(r for r in board.rows if r.system == "padder").pairs_vs_baseline == 19


def test_runs_a_leaderboard_cannot_read_are_named(tmp_path: Path) -> None:
    plain = jurist.evaluate(
        [{"prompt": "q", "response": "a"}],
        jurist.LLMJudge(jurist.get_model("mock:j", outputs=["Correct"], cycle=True)),
        run_dir=tmp_path / "plain",
        progress=False,
    )
    with pytest.raises(ConfigError, match="not a pairwise run"):
        leaderboard([plain])
    unnamed = [{k: v for k, v in p.items() if k != "system_a"} for p in pairs(["padder"])]
    with pytest.raises(DataError, match=r"item 0: the pair names no system_a"):
        leaderboard([judged(unnamed, tmp_path / "unnamed")])
    with pytest.raises(ConfigError, match="baseline 'gpt' is in no judged pair"):
        leaderboard([judged(pairs(["padder"]), tmp_path / "p")], baseline="gpt")


@pytest.fixture
def server() -> Iterator[LongerWins]:
    with LongerWins() as s:
        yield s


def test_leaderboard_command_on_a_round_robin_comparison(
    tmp_path: Path, server: LongerWins, capsys: pytest.CaptureFixture[str]
) -> None:
    lengths = {"tiny": 2, "mid": 6, "big": 12, "huge": 20}
    data = write(
        tmp_path / "answers.jsonl",
        [
            {"prompt": f"Q{i}", "response": "x" * (size + i % 3), "model": name}
            for i in range(8)
            for name, size in lengths.items()
        ],
    )
    out = tmp_path / "rr"
    flags = ["--model", "judge", "--base-url", server.base_url, "--api-key", "x", "--no-cache"]
    code, text = run(
        [
            "compare",
            str(data),
            "--system-column",
            "model",
            "--no-progress",
            "--out",
            str(out),
            *flags,
        ],
        capsys,
    )
    assert code == EXIT_OK, text
    assert "win rate of A" not in text  # A is a different system from pair to pair
    table = tmp_path / "lb.csv"
    code, text = run(["leaderboard", str(out), "--csv", str(table), "--bootstrap", "100"], capsys)
    assert code == EXIT_OK, text
    with table.open() as f:
        rows = list(csv.DictReader(f))
    assert [r["system"] for r in rows] == ["huge", "big", "mid", "tiny"]  # the longer, the better
    assert "no system is in every pair" in text and "--baseline" in text
    assert (out / "leaderboard.html").exists() and "huge" in text
    code, text = run(["leaderboard", str(out), "--baseline", "tiny", "--bootstrap", "0"], capsys)
    assert code == EXIT_OK and "baseline tiny" in text
    code, text = run(["leaderboard", str(tmp_path / "nowhere")], capsys)
    assert code == EXIT_USAGE and "not a jurist run folder" in text


def quality_judge(request: Request) -> str:
    """Systems named q<k>: the higher k, the likelier to win; a fixed draw per item and order."""
    text = request.messages[-1].content
    a = text.split("<answer_a>\n")[1].split("\n</answer_a>")[0]
    b = text.split("<answer_b>\n")[1].split("\n</answer_b>")[0]
    qa, qb = int(a.split(":")[0][1:]), int(b.split(":")[0][1:])
    draw = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 16**8
    p_a = 1 / (1 + 10 ** ((qb - qa) / 4))
    return "[[A]]" if draw < p_a - 0.05 else "[[B]]" if draw > p_a + 0.05 else "[[C]]"


@pytest.mark.slow
def test_leaderboard_page_in_chromium(tmp_path: Path) -> None:
    systems = {f"model-{k}": k for k in (0, 1, 2, 4, 6, 8)}  # model-2 is the baseline
    items = [
        {
            "prompt": f"Q{i}",
            "response_a": f"q{k}: answer {i} " + "more " * (k + i % 4),
            "response_b": f"q2: answer {i} " + "more " * (2 + i % 3),
            "system_a": name,
            "system_b": "model-2",
        }
        for i in range(40)
        for name, k in systems.items()
        if name != "model-2"
    ]
    judge = jurist.PairwiseJudge(jurist.get_model("mock:q", outputs=quality_judge))
    folder = jurist.evaluate(items, judge, run_dir=tmp_path / "run", progress=False).run_dir
    page = leaderboard([folder], bootstrap=300).report(tmp_path / "leaderboard.html")
    html = page.read_text()
    assert "<script" not in html and "script-src 'none'" in html  # nothing to run, nothing allowed
    dom = dump_dom(page.as_uri(), tmp_path / "p1")
    ranked = re.findall(r'<tr(?: class="baseline")? data-system="([^"]+)"', dom)
    assert ranked[0] == "model-8" and ranked[-1] == "model-0" and len(ranked) == 6
    assert dom.count('<line class="interval"') == 6 and "model-2</b>" in dom
    png = screenshot(
        page.as_uri(), shots_dir(tmp_path) / "leaderboard.png", tmp_path / "p2", size=(1200, 1300)
    )
    assert non_white_share(png) > 0.02


def test_two_system_comparison_agrees_with_its_summary(
    tmp_path: Path, server: LongerWins, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write(
        tmp_path / "a.jsonl", [{"prompt": f"Q{i}", "response": "x" * (i % 4)} for i in range(9)]
    )
    b = write(tmp_path / "b.jsonl", [{"prompt": f"Q{i}", "response": "yy"} for i in range(9)])
    out = tmp_path / "ab"
    flags = ["--model", "judge", "--base-url", server.base_url, "--api-key", "x", "--no-cache"]
    code, text = run(
        ["compare", str(a), str(b), "--no-progress", "--out", str(out), *flags], capsys
    )
    assert code == EXIT_OK, text
    summary = json.loads((out / "summary.json").read_text())
    board = leaderboard([out], bootstrap=0)
    assert board.baseline == "b" and board.baseline_from == "every battle"
    row = next(r for r in board.rows if r.system == "a")
    assert row.win_rate == pytest.approx(100 * summary["win_rate_a"])
    assert (row.wins, row.ties, row.losses) == (
        summary["wins"]["A"],
        summary["wins"]["tie"],
        summary["wins"]["B"],
    )


def styled(system: str, i: int) -> str:
    """base: 8 words, GOOD on every seventh item. verbose: 16 words on four items of five,
    else 4 (it wins when longer, unless base says GOOD); sharp: 8 words, GOOD on every third
    item and item 1 (it wins then, unless base says GOOD too: a tie)."""
    if system == "verbose":
        return "word " * (16 if i % 5 else 4)
    if system == "sharp":
        return ("GOOD " if i % 3 == 0 or i == 1 else "") + "word " * (
            7 if i % 3 == 0 or i == 1 else 8
        )
    return ("GOOD " if i % 7 == 3 else "") + "base " * (7 if i % 7 == 3 else 8)


def test_style_control_takes_the_length_advantage_out(tmp_path: Path) -> None:
    items = [
        {
            "prompt": f"Q{i}",
            "response_a": styled(system, i).strip(),
            "response_b": styled("base", i).strip(),
            "system_a": system,
            "system_b": "base",
        }
        for i in range(30)
        for system in ("verbose", "sharp")
    ]
    folder = judged(items, tmp_path / "styled").run_dir
    plain = leaderboard([folder], bootstrap=100)
    controlled = leaderboard([folder], bootstrap=100, style_control=True)
    before = {r.system: r.score for r in plain.rows}
    after = {r.system: r.score for r in controlled.rows}
    assert before["verbose"] > before["sharp"]  # most won by length, a third by GOOD
    assert after["verbose"] < before["verbose"]  # the length advantage taken out:
    assert after["sharp"] > after["verbose"]  # the ranking turns
    length = next(c for c in controlled.style if c.name == "length")
    assert controlled.style_control and length.value > 0 and length.lower > 0
    # no answer has a header, a list or bold: those features are left out, and said
    assert [c.name for c in controlled.style] == ["length"]
    assert "style control without bold, header, list" in controlled.notes[0]
    html = controlled.report(tmp_path / "styled.html").read_text()
    assert 'id="style-note"' in html and "<td>length</td>" in html
    assert 'id="style-note"' not in plain.report(tmp_path / "plain.html").read_text()
