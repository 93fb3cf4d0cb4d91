"""jurist.bench end to end through the batch engine: live judges (mock models answering
from the request, so the real template, engine and run store are used), the two-order
rule and its figures, panels and pairwise judges as setups, cost per correct decision,
the resumable folder, the JSON and the page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import jurist
from jurist.benchmark import bench_dataset
from jurist.errors import ConfigError, DataError
from jurist.types import Request


def _pairs(n: int = 6) -> list[dict]:
    """``n`` pairs whose right response says RIGHT; the label alternates A and B."""
    rows = []
    for i in range(n):
        right_first = i % 2 == 0
        right, wrong = f"RIGHT {i}", f"wrong {i} and much longer than the right one"
        rows.append(
            {
                "id": f"p{i}",
                "prompt": f"question {i}",
                "response_a": right if right_first else wrong,
                "response_b": wrong if right_first else right,
                "label": "A" if right_first else "B",
                "source": "odd" if i % 2 else "even",
            }
        )
    return rows


def _shown(request: Request) -> tuple[str, str]:
    text = str(request.messages[-1].content)
    a = text.split("<answer_a>")[1].split("</answer_a>")[0]
    b = text.split("<answer_b>")[1].split("</answer_b>")[0]
    return a, b


def _right(request: Request) -> str:
    a, _ = _shown(request)
    return "[[A]]" if "RIGHT" in a else "[[B]]"


def _always_a(request: Request) -> str:
    return "[[A]]"


def _judge(fn, name: str = "judge") -> jurist.LLMJudge:
    return jurist.LLMJudge(jurist.get_model(f"mock:{name}", outputs=fn), template="mt_bench_pair")


def test_a_right_judge_and_a_position_biased_one(tmp_path: Path) -> None:
    result = jurist.bench(
        {"toy": _pairs()},
        {"right": _judge(_right), "first": _judge(_always_a)},
        out=tmp_path / "b",
    )
    right, first = result.table("right", "toy"), result.table("first", "toy")
    assert (right.value.value, right.first_order_accuracy.value) == (1.0, 1.0)
    assert right.position_consistency == 1.0 and right.first_position_wins == 0.5
    # always "A": the two orders name different responses, so every pair nets a tie:
    # wrong by the two-order rule, right in the first order exactly when the label is A
    assert first.value.value == 0.0 and first.first_order_accuracy.value == 0.5
    assert first.position_consistency == 0.0 and first.first_position_wins == 1.0
    assert first.first_position_p < 0.001
    # the audit's position probe on the same two orders
    assert (first.position_probe.effect, first.position_probe.verdict) == (1.0, "fail")
    assert (right.position_probe.effect, right.position_probe.verdict) == (0.0, "pass")
    assert [t.setup for t in result.ranked("toy")] == ["right", "first"]
    # the right judge prefers the shorter response every time
    assert right.longer_wins == 0.0
    assert {s.source: s.value.value for s in right.sources} == {"even": 1.0, "odd": 1.0}
    assert right.abstained == 0 and right.cost.calls == 12


def test_the_two_order_rule_on_mixed_decisions(tmp_path: Path) -> None:
    # label A everywhere; per pair the two orders' answers (first shown wins = [[A]])
    script = {
        "p0": ("[[A]]", "[[B]]"),  # A, A: right
        "p1": ("[[A]]", "[[C]]"),  # A, tie: right
        "p2": ("[[A]]", "[[A]]"),  # A, B: net tie, wrong
        "p3": ("no verdict", "[[B]]"),  # abstain, A: right
        "p4": ("no verdict", "nothing"),  # abstains in both: wrong, counted
        "p5": ("[[B]]", "[[A]]"),  # B, B: wrong
    }
    rows = [
        {"id": k, "prompt": k, "response_a": f"{k} one", "response_b": f"{k} two", "label": "A"}
        for k in script
    ]

    def answer(request: Request) -> str:
        a, _ = _shown(request)
        pid, which = a.strip().split()
        return script[pid][0 if which == "one" else 1]

    t = jurist.bench({"mixed": rows}, {"s": _judge(answer)}, out=tmp_path / "b").table("s", "mixed")
    assert t.value.value == pytest.approx(3 / 6)
    assert t.first_order_accuracy.value == pytest.approx(3 / 6)  # p0, p1, p2
    assert t.abstained == 1 and t.abstained_items == 3 and t.errors == {"parse": 3}
    # decided in both orders: p0, p1, p2, p5; the same side in p0 and p5
    assert (t.consistent_pairs, t.position_consistency) == (4, 0.5)


def test_any_judge_kind_is_a_setup(tmp_path: Path) -> None:
    pair = jurist.PairwiseJudge(jurist.get_model("mock:pj", outputs=_right))  # swap=True
    panel = jurist.Panel([_judge(_right, "p1"), _judge(_always_a, "p2")], aggregation="mean")
    result = jurist.bench({"toy": _pairs(4)}, {"pair": pair, "panel": panel}, out=tmp_path / "b")
    # the bench asks the two orders itself: a PairwiseJudge runs with swap=False
    assert result.table("pair", "toy").cost.calls == 8
    assert result.table("pair", "toy").value.value == 1.0
    # the panel: mean of a right judge and an always-A one; A-first pairs go A, others tie
    panel_t = result.table("panel", "toy")
    assert panel_t.cost.calls == 16 and panel_t.first_position_wins == 1.0


def test_cost_and_latency_per_correct_decision(tmp_path: Path) -> None:
    prices = {"mock:judge": {"prompt": 1000.0, "completion": 1000.0}}
    result = jurist.bench(
        {"toy": _pairs()}, {"s": _judge(_right)}, out=tmp_path / "b", prices=prices
    )
    t = result.table("s", "toy")
    run = jurist.Run(tmp_path / "b" / "runs" / "s" / "toy")
    summary = run.summary()
    assert t.cost.cost == pytest.approx(summary.cost)
    assert t.cost.cost_per_correct == pytest.approx(summary.cost / 6)
    tokens = summary.prompt_tokens + summary.completion_tokens
    assert t.cost.tokens_per_item == pytest.approx(tokens / 6) and tokens > 0


def test_resume_judges_nothing_twice(tmp_path: Path) -> None:
    calls: list[str] = []
    fail_once = {"p2": True}

    def answer(request: Request) -> str:
        a, _ = _shown(request)
        calls.append(a)
        if "2" in a.split()[1] and fail_once.pop("p2", False):
            raise jurist.JuristError("boom")  # not an API error: the call fails, is stored
        return _right(request)

    out = tmp_path / "b"
    first = jurist.bench({"toy": _pairs()}, {"s": _judge(answer)}, out=out)
    assert len(calls) == 12
    assert first.table("s", "toy").abstained_items == 1
    calls.clear()
    again = jurist.bench({"toy": _pairs()}, {"s": _judge(answer)}, out=out)
    assert len(calls) == 1  # only the failed order is asked again
    assert again.table("s", "toy").value.value == 1.0


def test_json_and_page_hold_every_figure(tmp_path: Path) -> None:
    rows = [
        {**r, "scores": {"rm": [1.0, 0.0] if r["label"] == "A" else [0.0, 1.0]}} for r in _pairs()
    ]
    result = jurist.bench({"toy <b>": rows}, ["scores:rm", "s=scores:rm"], out=tmp_path / "b")
    data = json.loads((tmp_path / "b" / "figures.json").read_text())
    assert data == json.loads(result.model_dump_json())
    table = data["tables"][0]
    assert {"value", "first_order_accuracy", "position_consistency", "cost", "sources"} <= set(
        table
    )
    page = (tmp_path / "b" / "bench.html").read_text()
    assert "toy &lt;b&gt;" in page and "toy <b>" not in page
    assert page.count("class='ranked'") == 1 and "<script" not in page


def test_pointwise_figures(tmp_path: Path) -> None:
    rows = [
        {"id": str(i), "prompt": "2+2?", "response": r, "label": lab}
        for i, (r, lab) in enumerate([("4", "Correct"), ("5", "Incorrect"), ("4", "Correct")])
    ]
    judge = jurist.LLMJudge(
        jurist.get_model(
            "mock:pt",
            outputs=lambda req: (
                "Correct" if "<answer>\n4" in req.messages[-1].content else "Incorrect"
            ),
        ),
        template="true_false",
    )
    numeric = [{**r, "label": 1.0 if r["label"] == "Correct" else 0.0} for r in rows]
    result = jurist.bench({"names": rows, "numbers": numeric}, {"j": judge}, out=tmp_path / "b")
    assert result.table("j", "names").value.value == 1.0
    assert result.table("j", "numbers").headline == "accuracy"
    graded = [{**r, "label": float(i)} for i, r in enumerate(numeric)]
    spear = jurist.bench({"graded": graded}, {"j": judge}, out=tmp_path / "c").table("j", "graded")
    assert spear.headline == "spearman" and spear.agreement is not None


def test_setups_are_checked_before_anything_runs(tmp_path: Path) -> None:
    single = jurist.LLMJudge(jurist.get_model("mock:x"), template="likert")
    with pytest.raises(ConfigError, match="pairwise data needs a pairwise judge"):
        jurist.bench({"toy": _pairs()}, {"s": single}, out=tmp_path / "b")
    with pytest.raises(ConfigError, match="setup names repeat"):
        jurist.bench({"toy": _pairs()}, ["scores:rm", "scores:rm"], out=tmp_path / "b")
    some = _pairs()
    some[0]["scores"] = {"rm": [1, 0]}
    with pytest.raises(DataError, match=r"item 'p1:ab': no 'scores' object"):
        jurist.bench({"toy": some}, ["scores:rm"], out=tmp_path / "b")
    with pytest.raises(ConfigError, match=r"setup 'scores:typo' replays a column no dataset"):
        jurist.bench({"toy": some}, ["scores:typo"], out=tmp_path / "b")
    every = [{**r, "scores": {"rm": [1, 0]}} for r in _pairs()]
    with pytest.raises(ConfigError, match="no setup named"):
        jurist.bench(
            {"toy": every}, ["scores:rm"], out=tmp_path / "b", cascades=[("scores:rm", "x")]
        )
    assert not (tmp_path / "b").exists()


def test_a_dataset_object_and_a_file(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    rows = [{**r, "scores": {"rm": [1.0, 0.0]}} for r in _pairs(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = jurist.bench(
        [path, bench_dataset(rows, name="mem")], ["scores:rm"], out=tmp_path / "b"
    )
    assert [d["name"] for d in result.datasets] == ["pairs", "mem"]
    assert result.table("scores:rm", "pairs").value.value == 0.5  # always A; labels A, B
