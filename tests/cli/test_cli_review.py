"""``jurist review``: the offline page (``--export``) labelled in headless Chromium, its
download added to the run (``--import``, once however often); a cascade's ``review.jsonl``
opened as the queue; scales from the run or ``--scale``, and the refusals."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.runs.review import load_items
from tests._cdp import Browser, shared_browser
from tests._chromium import shots_dir
from tests._cli_run import run
from tests.runs.test_review_page import Tab
from tests.trust.test_cascade import items as cascade_items
from tests.trust.test_cascade import tiers

ITEMS = [{"id": f"q{i}", "prompt": f"What is {i} + {i}?", "response": str(2 * i)} for i in range(5)]


@pytest.fixture(scope="module")
def likert_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli-review") / "run"
    model = jurist.get_model("mock:judge", outputs=["4"] * len(ITEMS))
    jurist.evaluate(ITEMS, jurist.LLMJudge(model, template="likert"), run_dir=folder)
    return folder


def _download_to(browser: Browser, tab: Tab, folder: Path) -> None:
    browser.send(
        "Browser.setDownloadBehavior",
        behavior="allow",
        downloadPath=str(folder),
        browserContextId=tab.context,
    )


def test_an_exported_page_works_offline_and_its_download_imports_once(
    likert_run: Path,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = tmp_path / "review.html"
    code, out = run(["review", str(likert_run), "--export", str(page)], capsys)
    assert code == 0, out
    html = page.read_text()
    assert "connect-src 'none'" in html and "http://" not in html.split("<style>")[0]
    browser = shared_browser(tmp_path_factory)
    tab = Tab(browser, page.as_uri() + "?annotator=kim")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    try:
        _download_to(browser, tab, downloads)
        tab.key("5")
        tab.wait("document.getElementById('verdict').innerText.includes('score')", "the verdict")
        tab.key("n")
        tab.key("2")
        tab.key("u")
        tab.key("3")
        tab.key("s")
        tab.click("#scale button[data-point='0']")
        tab.screenshot(shots_dir(tmp_path) / "review-export.png")
        tab.click("#download")
        deadline = time.monotonic() + 60
        while not list(downloads.glob("*.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.05)  # waiting for the browser to finish the download
    finally:
        tab.close()
    (got,) = downloads.glob("*.jsonl")
    lines = [json.loads(x) for x in got.read_text().splitlines()]
    assert [(x["item"], x["label"]) for x in lines] == [(0, 5), (1, 2), (1, None), (1, 3), (2, 1)]
    assert all(x["annotator"] == "kim" and len(x["item_hash"]) > 8 for x in lines)
    code, out = run(["review", str(likert_run), "--import", str(got)], capsys)
    assert code == 0 and "5 added" in out, out
    code, out = run(["review", str(likert_run), "--import", str(got)], capsys)
    assert code == 0 and "0 added" in out and "5 already there" in out, out
    assert len((likert_run / "labels.jsonl").read_text().splitlines()) == 5
    (likert_run / "labels.jsonl").unlink()


def test_an_import_with_a_foreign_hash_or_label_is_refused_whole(
    likert_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good: dict[str, Any] = {
        "item": 0,
        "item_hash": load_items(likert_run).hashes[0],
        "label": 4,
        "annotator": "kim",
        "at": "2026-12-02T03:00:00Z",
        "note": None,
    }
    for bad, why in (({"item_hash": "other"}, "hash"), ({"label": 7}, "not on the scale")):
        f = tmp_path / "in.jsonl"
        f.write_text(json.dumps(good) + "\n" + json.dumps({**good, **bad}) + "\n")
        code, out = run(["review", str(likert_run), "--import", str(f)], capsys)
        assert code == 2 and f"{f}:2" in out and why in out, out
        assert (
            not (likert_run / "labels.jsonl").exists()
            or not (likert_run / "labels.jsonl").read_text()
        )


def test_a_cascades_review_file_opens_as_the_queue(tmp_path: Path) -> None:
    _, _, judges = tiers()
    cascade = jurist.trust.CascadeJudge(judges, thresholds=[0.9, 0.95])
    jurist.evaluate(cascade_items(40), cascade, run_dir=tmp_path / "run")
    review = tmp_path / "run" / "review.jsonl"
    left = [json.loads(x) for x in review.read_text().splitlines()]
    found = load_items(review.parent, queue=review)
    assert [it["fields"]["prompt"] for it in found.items] == [x["prompt"] for x in left]
    assert len(found.items) == 5 and all(it["reason"] for it in found.items)
    assert found.scale.points == ["Correct", "Incorrect"]  # the tiers' shared scale
    assert all("tiers" in found.verdicts[it["idx"]] for it in found.items)


def test_scales_from_the_run_or_the_flag_and_the_refusals(
    likert_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load_items(likert_run).scale.points == [1, 2, 3, 4, 5]
    assert load_items(likert_run, scale="good, bad").scale.points == ["good", "bad"]
    model = jurist.get_model("mock:judge", outputs=["0.7"])
    jurist.evaluate(
        ITEMS[:1], jurist.LLMJudge(model, template="continuous"), run_dir=tmp_path / "c"
    )
    code, out = run(["review", str(tmp_path / "c"), "--export", str(tmp_path / "x.html")], capsys)
    assert code == 2 and "no short scale" in out and "--scale" in out, out
    code, out = run(["review", str(likert_run), "--scale", "1-40"], capsys)
    assert code == 2 and "--scale '1-40'" in out, out
    code, out = run(["review", str(likert_run), "--token", "short"], capsys)
    assert code == 2 and "--token" in out, out
    pair = jurist.PairwiseJudge(jurist.get_model("mock:judge", outputs=["[[A]]"] * 2))
    jurist.evaluate(
        [{"prompt": "q", "response_a": "a", "response_b": "b"}], pair, run_dir=tmp_path / "p"
    )
    assert load_items(tmp_path / "p").scale.points == ["A", "B", "tie"]


def test_agreement_and_calibrate_read_the_runs_labels_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jurist.runs._label_writer import LabelLine, LabelWriter

    items = [{"id": f"q{i}", "prompt": f"q{i}", "response": f"a{i}"} for i in range(30)]
    verdicts = [str(1 + i % 5) for i in range(30)]
    model = jurist.get_model("mock:judge", outputs=verdicts)
    folder = tmp_path / "run"
    jurist.evaluate(items, jurist.LLMJudge(model, template="likert"), run_dir=folder, concurrency=1)
    hashes = load_items(folder).hashes
    writer = LabelWriter(folder / "labels.jsonl")
    for i in range(30):
        for who, label in (("ana", 1 + i % 5), ("bo", 1 + i % 5 if i % 3 else 1 + (i + 1) % 5)):
            at = f"2026-12-02T03:00:{i:02d}Z"
            writer.write(LabelLine(item=i, item_hash=hashes[i], label=label, annotator=who, at=at))
    writer.close()
    code, out = run(["agreement", str(folder), "--labels", "labels.jsonl:ana"], capsys)
    assert code == 0 and "30 pairs" in out and "accuracy │ 1.0000" in out, out
    code, out = run(["agreement", str(folder), "--labels", "labels.jsonl"], capsys)
    assert code == 0 and "20 pairs; 10 left out" in out, out  # split items: no label
    code, out = run(["agreement", str(folder), "--labels", "labels.jsonl:zed"], capsys)
    assert code == 2 and "no labels by 'zed'" in out and "['ana', 'bo']" in out, out
    stale = LabelWriter(folder / "labels.jsonl")  # a label given before the data changed
    stale.write(
        LabelLine(item=0, item_hash="f00", label=2, annotator="cy", at="2026-12-02T04:00:00Z")
    )
    stale.close()
    code, out = run(["agreement", str(folder), "--labels", "labels.jsonl:ana"], capsys)
    assert code == 2 and "item 0 was labelled as another item" in out, out
    with (folder / "labels.jsonl").open("a") as f:  # cy takes it back: the file reads again
        f.write(
            json.dumps(
                {
                    "item": 0,
                    "item_hash": hashes[0],
                    "label": None,
                    "annotator": "cy",
                    "at": "2026-12-02T04:00:01Z",
                    "note": None,
                }
            )
            + "\n"
        )
    code, out = run(["calibrate", str(folder), "--labels", "labels.jsonl:bo"], capsys)
    # bo's labels read: fitted and tested (exit 1: the gain's interval does not clear zero)
    assert "fitted on 15 items, tested on 15 held-out items (ordinal labels)" in out, out


def test_pairs_show_side_by_side_and_a_graders_rubric_under_the_item(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from jurist.runs.review import write_export

    pair = jurist.PairwiseJudge(jurist.get_model("mock:judge", outputs=["[[A]]"] * 2))
    poem = "Rain taps the window\nsoft grey hours folding inward\nthe kettle answers"
    item = {"prompt": "A haiku about rain.", "response_a": poem, "response_b": "Rain is wet."}
    jurist.evaluate([item], pair, run_dir=tmp_path / "p")
    rubric = jurist.Rubric.from_dict(
        [
            {"name": "correct", "requirement": "Says that 2 + 2 is 4", "weight": 10},
            {"name": "rude", "requirement": "Is rude to the user", "weight": -5},
        ]
    )
    answer = json.dumps(
        {
            "c1": {"explanation": "Says 4.", "verdict": "MET"},
            "c2": {"explanation": "Kind.", "verdict": "UNMET"},
        }
    )
    grader = jurist.CriterionGrader(
        judges=[jurist.get_model("mock:judge", outputs=[answer], cycle=True)], shuffle_options=False
    )
    graded = grader.for_rubric(rubric, submission_field="response", query_field="prompt")
    jurist.evaluate([{"prompt": "2 + 2?", "response": "4, buddy"}], graded, run_dir=tmp_path / "g")
    browser = shared_browser(tmp_path_factory)
    shots = shots_dir(tmp_path)
    pairs = write_export(load_items(tmp_path / "p"), tmp_path / "p.html")
    dom = browser.load(pairs.as_uri() + "?annotator=kim", png=shots / "review-pair.png").dom
    a, b = dom.split('class="side-a"')[1].split('class="side-b"')
    assert "Rain taps the window" in a and "Rain is wet." in b and "Rain is wet." not in a
    assert "A is better" in dom and "B is better" in dom
    graded_page = write_export(load_items(tmp_path / "g", scale="1-5"), tmp_path / "g.html")
    dom = browser.load(graded_page.as_uri(), png=shots / "review-rubric.png").dom
    rubric_box = dom.split('id="rubric"')[1]
    assert "requirement: Says that 2 + 2 is 4" in rubric_box and "weight: -5" in rubric_box


def test_a_queue_with_inclusion_probabilities_carries_them_into_each_label(
    likert_run: Path, tmp_path: Path
) -> None:
    import asyncio

    from aiohttp.test_utils import TestClient, TestServer

    from jurist.runs.review import ReviewApp

    plan = tmp_path / "plan.jsonl"
    plan.write_text(
        '{"item": 3, "inclusion_probability": 0.25}\n{"item": 1, "inclusion_probability": 1}\n'
    )
    found = load_items(likert_run, queue=plan)
    assert [it["idx"] for it in found.items] == [3, 1]
    state = ReviewApp(found, token="t" * 20)

    async def label(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        async with TestClient(TestServer(state.app(), host="127.0.0.1")) as client:
            r = await client.post("/api/label?token=" + "t" * 20, json=body)
            return r.status, await r.json()

    given = {"item": 3, "label": 2, "annotator": "kim", "at": "2026-12-02T03:00:00Z"}
    status, body = asyncio.run(label(given))
    assert status == 200 and body["new"] and body["verdict"]["verdict"] == "4"
    status, body = asyncio.run(label({**given, "item": 0}))  # not in the queue
    assert status == 400 and "not one of the items" in body["error"]
    status, body = asyncio.run(label({**given, "label": 9}))
    assert status == 400 and "not on the scale" in body["error"]
    state.close()
    (line,) = [json.loads(x) for x in (likert_run / "labels.jsonl").read_text().splitlines()]
    assert line["inclusion_probability"] == 0.25 and line["item_hash"] == found.hashes[3]
    (likert_run / "labels.jsonl").unlink()


def test_a_plan_names_items_by_their_label_with_their_hash(
    likert_run: Path, tmp_path: Path
) -> None:
    hashes = load_items(likert_run).hashes
    plan = tmp_path / "plan.jsonl"
    entry = {"inclusion_probability": 0.5, "rank": 1, "planned_at": "2026-12-02T04:10:00Z"}
    plan.write_text(
        json.dumps({"item": "q4", "item_hash": hashes[4], **entry})
        + "\n"
        + json.dumps({"item": "q2", "item_hash": hashes[2], **entry, "rank": 2})
        + "\n"
    )
    found = load_items(likert_run, queue=plan)
    assert [it["idx"] for it in found.items] == [4, 2] and found.probabilities == {4: 0.5, 2: 0.5}
    plan.write_text(json.dumps({"item": "q4", "item_hash": "other", **entry}) + "\n")
    with pytest.raises(jurist.errors.DataError, match=r"plan\.jsonl:1: item 'q4' is not the item"):
        load_items(likert_run, queue=plan)


def test_review_plan_writes_a_plan_the_page_opens_as_its_queue(
    likert_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(likert_run, folder)
    (folder / "labels.jsonl").unlink(missing_ok=True)
    code, out = run(
        ["review", str(folder), "--plan", "3", "--by", "uniform", "--seed", "1"], capsys
    )
    assert code == 0, out
    plan = folder / "plan.jsonl"
    lines = [json.loads(x) for x in plan.read_text().splitlines()]
    assert len(lines) == 3 and all(0 < x["inclusion_probability"] <= 1 for x in lines)
    found = load_items(folder, queue=plan)
    assert len(found.items) == 3
    assert set(found.probabilities) == {it["idx"] for it in found.items}
    # RUN given as the plan file itself opens the same queue
    assert [it["idx"] for it in load_items(plan.parent, queue=plan).items] == [
        it["idx"] for it in found.items
    ]
