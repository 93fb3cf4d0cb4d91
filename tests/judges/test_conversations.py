"""Conversation items and images: checks at the boundary, rendering, turns, inputs of every
kind, the engine and its store, the cache key, the CLI."""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist._local_files import LocalFiles
from jurist._sync import run_sync
from jurist.errors import DataError
from jurist.models import CachedModel, MockModel
from jurist.models._cache import cache_key
from jurist.templates import get_template, render_conversation
from jurist.types import Message, Request
from tests._chat_server import ChatServer, image_parts, user_text
from tests._cli_run import run as run_cli

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
DATA_URI = "data:image/png;base64," + base64.b64encode(PNG).decode()

AGENT: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "weather", "arguments": {"city": "Paris"}},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 18}'},
    {"role": "assistant", "content": "18 C."},
    {"role": "user", "content": "And tomorrow?"},
    {"role": "assistant", "content": "20 C."},
]


# -- checks at the boundary ------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ("not json", "d.csv:3: field 'messages' is not valid JSON"),
        ([], "d.csv:3: field 'messages' must be a non-empty list of messages, got an empty list"),
        ([{"role": "robot", "content": "x"}], "d.csv:3: messages[0].role: Input should be"),
        ([{"role": "user"}], "d.csv:3: messages[0]: a user message needs content"),
        (
            [{"role": "user", "content": [{"type": "audio", "data": "x"}]}],
            "d.csv:3: messages[0].content: part 0: unknown part type 'audio'",
        ),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{x"}}],
                }
            ],
            "d.csv:3: messages[0].tool_calls[0].function.arguments: not valid JSON",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}],
            "d.csv:3: messages[0].tool_calls[0].function.name: Field required",
        ),
        (
            [
                {"role": "user", "content": "q"},
                {"role": "tool", "tool_call_id": "zz", "content": "r"},
            ],
            "d.csv:3: messages[1].tool_call_id: 'zz' answers no earlier tool call",
        ),
        (
            [{"role": "user", "content": "q", "tool_calls": [{"function": {"name": "f"}}]}],
            "d.csv:3: messages[0]: only an assistant message makes tool_calls",
        ),
    ],
)
def test_bad_messages_are_named_by_item_message_and_field(messages: Any, expected: str) -> None:
    from jurist.templates import check_item

    with pytest.raises(DataError) as info:
        check_item({"messages": messages}, where="d.csv:3")
    assert str(info.value).startswith(expected), str(info.value)


def test_bad_images_are_named() -> None:
    from jurist.templates import check_item

    # a plain path was permitted by no local files policy: refused, nothing read
    with pytest.raises(DataError, match=r"item 2: field 'images': image 'nope.png': a local"):
        check_item({"images": ["nope.png"]}, where="item 2")
    with pytest.raises(DataError, match="base64 data is not valid"):
        check_item({"images": "data:image/png;base64,@@@"}, where="item 2")
    with pytest.raises(DataError, match=r"messages\[0\].content: part 0: an image_url part"):
        check_item({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, where="x")


# -- rendering and turns ---------------------------------------------------------------


def test_a_two_message_conversation_renders_as_a_plain_item() -> None:
    t = get_template("likert")
    conv = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
    assert t.render_item({"messages": conv}) == t.render_item({"prompt": "2+2?", "response": "4"})


def test_turns_last_index_and_all() -> None:
    t = get_template("likert")
    last = t.expand({"messages": AGENT})
    assert last["response"] == "20 C." and "And tomorrow?" in last["prompt"]
    first = t.with_turn(0).expand({"messages": AGENT})
    assert first["prompt"] == "Weather in Paris?"
    assert 'c1: weather({"city":"Paris"})' in first["response"] and "18 C." in first["response"]
    assert "20 C." not in first["response"]  # later turns are dropped
    whole = t.with_turn("all").expand({"messages": AGENT})
    assert whole["prompt"] == "Weather in Paris?" and whole["response"].endswith(
        "20 C.\n</assistant>"
    )
    with pytest.raises(DataError, match="turn 5 is out of range: field 'messages' has 2"):
        t.with_turn(5).expand({"messages": AGENT}, where="item 7")
    with pytest.raises(DataError, match="item 0: field 'messages' has no assistant message"):
        t.expand({"messages": AGENT[:1]}, where="item 0")


def test_a_given_response_makes_the_messages_context() -> None:
    out = get_template("reward").expand(
        {"messages": AGENT[:4], "response": "18", "reference": "18"}
    )
    assert out["response"] == "18" and out["prompt"].startswith("<user>\nWeather in Paris?")


def test_tool_output_is_truncated_with_a_marker_and_options_reach_the_judge() -> None:
    conv = [*AGENT[:2], {"role": "tool", "tool_call_id": "c1", "content": "x" * 50}, AGENT[3]]
    text = render_conversation(conv, max_tool_chars=10)
    assert "x" * 10 + " [... 40 more characters truncated]" in text and "x" * 11 not in text
    assert "x" * 50 in render_conversation(conv, max_tool_chars=None)
    model = MockModel("j", outputs=["4"], cycle=True)
    judge = jurist.LLMJudge(model, template="likert", turn=0, max_tool_chars=10)
    assert judge.judge_one_sync({"messages": conv}).score == 0.75
    assert "[... 40 more characters truncated]" in model.requests[-1].messages[-1].content
    assert judge.describe()["template"]["turn"] == 0  # in the manifest: a resume checks it
    assert "turn" not in jurist.LLMJudge(model, template="likert").describe()["template"]


def test_pairwise_contexts_must_match() -> None:
    other = [{"role": "user", "content": "Weather in Rome?"}, {"role": "assistant", "content": "x"}]
    with pytest.raises(DataError, match="messages_a and messages_b differ before the turn"):
        get_template("mt_bench_pair").expand({"messages_a": AGENT, "messages_b": other})
    whole = get_template("mt_bench_pair").with_turn("all")
    with pytest.raises(DataError, match="differ before the turn"):
        whole.expand({"messages_a": AGENT, "messages_b": other})


def test_render_conversation_is_public_and_checks_its_input() -> None:
    assert jurist.templates.render_conversation is render_conversation
    with pytest.raises(DataError, match=r"messages\[0\]: a tool message needs the tool_call_id"):
        render_conversation([{"role": "tool", "content": "x"}])


# -- inputs of every kind ----------------------------------------------------------------


def _rows() -> list[dict[str, Any]]:
    return [{"id": i, "messages": AGENT[: 4 + 2 * (i % 2)]} for i in range(4)]


def _write(kind: str, tmp_path: Path) -> Any:
    rows = _rows()
    if kind == "jsonl":
        path = tmp_path / "d.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path
    if kind == "csv":
        import csv

        path = tmp_path / "d.csv"
        with path.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["id", "messages"])
            w.writeheader()
            w.writerows({"id": r["id"], "messages": json.dumps(r["messages"])} for r in rows)
        return path
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        # a list<struct> column: Arrow fills the fields a message lacks with nulls
        def flat(m: dict[str, Any]) -> dict[str, Any]:
            calls = [
                {
                    **c,
                    "function": {
                        **c["function"],
                        "arguments": json.dumps(c["function"]["arguments"]),
                    },
                }
                for c in m.get("tool_calls", [])
            ]
            return {**m, "tool_calls": calls or None}

        plain = [{**r, "messages": [flat(m) for m in r["messages"]]} for r in rows]
        path = tmp_path / "d.parquet"
        pq.write_table(pa.Table.from_pylist(plain), path)
        return path
    if kind == "pandas":
        import pandas as pd

        return pd.read_parquet(_write("parquet", tmp_path))  # numpy arrays of dicts
    if kind == "dataset":
        import datasets

        return datasets.Dataset.from_list(
            [{"id": r["id"], "messages": json.dumps(r["messages"])} for r in rows]
        )
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet", "pandas", "dataset"])
def test_every_input_kind_takes_conversations(kind: str, tmp_path: Path) -> None:
    data = _write(kind, tmp_path)
    model = MockModel("j", outputs=lambda r: "5" if "20 C." in r.messages[-1].content else "2")
    judge = jurist.LLMJudge(model, template="likert")
    run = jurist.evaluate(data, judge, run_dir=tmp_path / "run")
    assert [r["judge_score"] for r in run.records()] == [0.25, 1.0, 0.25, 1.0]
    sent = model.requests[0].messages[-1].content
    assert 'c1: weather({"city":"Paris"})' in sent and "c1 (weather): " in sent


def test_a_bad_row_stops_the_run_before_any_call_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    bad = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{"}}]},
    ]
    path.write_text(
        json.dumps({"messages": AGENT[:4]}) + "\n" + json.dumps({"messages": bad}) + "\n"
    )
    model = MockModel("j", outputs=["4"], cycle=True)
    with pytest.raises(
        DataError, match=r"d.jsonl:2: messages\[1\].tool_calls\[0\].function.arguments"
    ):
        jurist.evaluate(path, jurist.LLMJudge(model, template="likert"), run_dir=tmp_path / "run")
    assert model.calls == 0


def _user_with_image(text: str) -> dict[str, Any]:
    image = {"type": "image_url", "image_url": {"url": DATA_URI}}
    return {"role": "user", "content": [{"type": "text", "text": text}, image]}


# -- images: the store keeps them once, the cache keys on their content ------------------


@pytest.mark.parametrize("repeats", [1, 3])  # a run with repeats writes its items apart
def test_inline_images_are_stored_once_by_hash(tmp_path: Path, repeats: int) -> None:
    conv = [_user_with_image("What?"), {"role": "assistant", "content": "A pixel."}]
    rows = [{"messages": conv, "images": [DATA_URI]} for _ in range(3)]
    model = MockModel("j", outputs=["4"], cycle=True, images=True)
    judge = jurist.LLMJudge(model, template="likert")
    run = jurist.evaluate(rows, judge, run_dir=tmp_path / "run", repeats=repeats)
    assert [r["judge_score"] for r in run.records()] == [0.75] * 3
    assert len(model.requests[0].images) == 2  # the part and the field: both sent
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    blobs = db.execute("SELECT sha256, media_type, data FROM images").fetchall()
    assert len(blobs) == 1 and blobs[0][1] == "image/png" and blobs[0][2] == PNG
    encoded = DATA_URI.split(",", 1)[1]
    for item, outcome in db.execute("SELECT item, outcome FROM results"):
        assert encoded.encode() not in item and encoded.encode() not in outcome
        assert f"sha256:{blobs[0][0]}".encode() in item
    db.close()
    from jurist.runs._store import RunStore

    store = RunStore(tmp_path / "run" / "run.sqlite", readonly=True)
    assert store.image(f"sha256:{blobs[0][0]}") == ("image/png", PNG)
    store.close()


def test_the_cache_key_covers_image_content_by_hash(tmp_path: Path) -> None:
    path = tmp_path / "a.png"
    path.write_bytes(PNG)
    other = tmp_path / "b.png"
    other.write_bytes(PNG + b"\x00")
    t = get_template("likert")
    model = MockModel("j", images=True)
    files = LocalFiles((tmp_path.resolve(),))  # the folder allowed

    def key(images: list[Any]) -> str:
        msgs = t.render({"prompt": "q", "response": "a", "images": images})
        return cache_key(model, Request(messages=msgs, temperature=0))

    def local(p: Path) -> str:
        return files.permit(str(p), where="item", field="images")

    # the same bytes by path or inline: one key; other bytes: another; none: another
    assert key([local(path)]) == key([DATA_URI])
    assert key([local(path)]) != key([local(other)])
    assert key([local(path)]) != key([])
    fields = Request(
        messages=t.render({"prompt": "q", "response": "a", "images": [DATA_URI]})
    ).cache_fields()
    assert DATA_URI.split(",", 1)[1] not in json.dumps(fields)  # hashed, never the data
    text_only = Request(messages=(Message(role="user", content="q"),)).cache_fields()
    assert "images" not in text_only["messages"][0]  # text requests key as before


def test_a_cached_image_request_is_answered_from_the_cache(tmp_path: Path) -> None:
    model = CachedModel(
        MockModel("j", outputs=["4"], cycle=True, images=True), tmp_path / "c.sqlite"
    )
    judge = jurist.LLMJudge(model, template="likert", output="text")
    item = {"prompt": "q", "response": "a", "images": [DATA_URI]}
    first, again = judge.judge_one_sync(item), judge.judge_one_sync(item)
    assert (first.cached, again.cached, again.score) == (False, True, 0.75)
    model.close()


def test_text_only_backends_refuse_images() -> None:
    judge = jurist.LLMJudge(MockModel("plain", outputs=["4"], cycle=True), template="likert")
    out = judge.judge_one_sync({"prompt": "q", "response": "a", "images": [DATA_URI]})
    assert out.score is None and out.error is not None
    assert out.error.startswith("capability: mock:plain takes no image input")
    assert judge.model.calls == 0  # type: ignore[attr-defined]


# -- the CLI -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    def answer(body: dict[str, Any]) -> str:
        if body["model"] == "pair":  # prefers the reply that gives tomorrow's weather
            better = "A" if "20 C." in user_text(body).split("<answer_b>")[0] else "B"
            return f'{{"verdict": "{better}"}}' if "response_format" in body else f"[[{better}]]"
        if body["model"] == "grader":
            return '{"c1": {"verdict": "MET"}}'
        return "5" if "20 C." in user_text(body) else "2"

    with ChatServer(answer) as s:
        yield s


def test_cli_judge_and_compare_take_conversations(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conv = [_user_with_image("See"), *AGENT[1:]]
    data = tmp_path / "a.jsonl"
    data.write_text(json.dumps({"messages": conv}) + "\n")
    flags = ["--base-url", server.base_url, "--api-key", "x", "--no-progress"]
    judge = ["judge", str(data), "--template", "likert", "--model", "judge", "--output", "text"]
    code, out = run_cli([*judge, "--out", str(tmp_path / "r1"), *flags], capsys)
    assert code == 0, out
    body = server.bodies[-1]
    assert len(image_parts(body)) == 1 and "20 C." in user_text(body)
    code, out = run_cli([*judge, "--turn", "0", "--out", str(tmp_path / "r2"), *flags], capsys)
    assert code == 0, out
    assert "20 C." not in user_text(server.bodies[-1])  # the first reply, not the last
    assert json.loads((tmp_path / "r2" / "results.jsonl").read_text())["judge_score"] == 0.25
    other = tmp_path / "b.jsonl"
    other.write_text(
        json.dumps({"messages": [*conv[:-1], {"role": "assistant", "content": "No."}]}) + "\n"
    )
    compare = ["compare", str(data), str(other), "--model", "pair"]
    code, out = run_cli([*compare, "--out", str(tmp_path / "r3"), *flags], capsys)
    assert code == 0, out
    assert json.loads((tmp_path / "r3" / "results.jsonl").read_text())["judge_score"] == 1.0
    assert len(image_parts(server.bodies[-1])) == 1
    rubric = tmp_path / "r.yaml"
    rubric.write_text("criteria:\n  - name: answers\n    requirement: Gives the weather\n")
    grade = ["grade", str(data), "--rubric", str(rubric), "--model", "grader"]
    code, out = run_cli([*grade, "--out", str(tmp_path / "r4"), *flags], capsys)
    assert code == 0, out
    assert json.loads((tmp_path / "r4" / "results.jsonl").read_text())["judge_score"] == 1.0
    assert len(image_parts(server.bodies[-1])) == 1
    assert not server.rejected


def test_a_local_hf_model_refuses_images_naming_model_and_item(tiny_model_dir: Path) -> None:
    pytest.importorskip("transformers")
    model = jurist.get_model(f"hf:{tiny_model_dir}")
    assert model.capabilities.images is False
    judge = jurist.LLMJudge(model, template="likert", max_tokens=2)
    item = {"prompt": "q", "response": "a", "images": [DATA_URI]}
    (out,) = judge.judge_sync([item])
    assert out.error is not None and out.error.startswith(f"capability: {model.spec} takes no")
    assert "sha256:" in out.error
    msgs = judge.messages(item)
    with pytest.raises(jurist.errors.CapabilityError, match="takes no image input"):
        run_sync(model.complete(Request(messages=msgs)))  # the backend itself refuses too
    assert judge.judge_sync([{"messages": AGENT}])[0].judge_prompt.startswith("<question>")


def test_rubric_per_criterion_calls_carry_the_images_and_context() -> None:
    rubric = jurist.Rubric.from_dict(
        [{"name": "a", "requirement": "Says 20 C"}, {"name": "b", "requirement": "Is polite"}]
    )
    model = MockModel("g", outputs=['{"verdict": "MET"}'], cycle=True, images=True)
    grader = jurist.CriterionGrader(judges=[model], calls="per_criterion", turn="last")
    conv = [_user_with_image("Weather?"), *AGENT[1:]]
    judge = grader.for_rubric(rubric)
    assert judge.judge_sync({"messages": conv}).score == 1.0
    assert len(model.requests) == 2
    for request in model.requests:
        (image,) = request.images
        assert image.ref.startswith("sha256:")
        text = request.messages[-1].content
        assert "Weather? [image 1]" in text and "<submission>\n20 C.\n</submission>" in text
    # a submission of its own: the whole conversation is the query
    model.requests.clear()
    judge.judge_sync({"messages": AGENT[:4], "response": "Sunny."})
    text = model.requests[0].messages[-1].content
    assert "<submission>\nSunny.\n</submission>" in text and "18 C." in text


def test_a_panel_and_a_custom_template_over_the_whole_conversation() -> None:
    from jurist.templates import Label, LabelScale, Template

    whole = Template(
        name="helpful_agent",
        instructions="Was the agent helpful over the whole conversation?",
        item="<transcript>\n{conversation}\n</transcript>",
        fields=("conversation",),
        scale=LabelScale(labels=(Label(name="Yes", score=1.0), Label(name="No", score=0.0))),
    )
    model = MockModel("j", outputs=["Yes"], cycle=True)
    panel = jurist.Panel(
        [jurist.LLMJudge(model, template=whole), jurist.LLMJudge(model, template=whole)]
    )
    out = panel.judge_sync([{"messages": AGENT}])
    assert out.scores == [1.0]
    sent = model.requests[-1].messages[-1].content
    assert sent.startswith("<transcript>\n<user>\nWeather in Paris?") and "20 C." in sent
