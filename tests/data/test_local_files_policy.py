"""Local files only where the user said so (issue 31): an item's image references are read
from the data file's folder (on the real path) and the folders given with ``--files-root``
/ ``files_root=``, only when the bytes are an image, only from regular files of bounded
size; a refusal names the item, the field and the path, and nothing of a refused file
reaches the model server.

Each hostile reference is planted in a data file (in ``images`` and in an ``image_url``
part of ``messages``) and judged against a loopback OpenAI-compatible server that records
every request body as raw bytes: the planted contents, raw and base64, are searched for in
them.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import jurist
from jurist.errors import DataError
from tests._cli_run import run as run_cli
from tests._fault_server import _completion
from tests._loopback import Loopback
from tests._ray_cluster import ray_session  # noqa: F401  (the ray_cluster fixture)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
GIB = 1 << 30


class Recorder(Loopback):
    """An OpenAI-compatible chat server that keeps every request body as it came."""

    def __init__(self) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.bodies: list[bytes] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.bodies.append(raw)
        return web.json_response(_completion(json.loads(raw), "4"))

    def received(self, secret: bytes) -> bool:
        """Whether ``secret`` (raw, or base64 at any of the three alignments) reached it."""
        forms = [secret] + [
            base64.b64encode(secret[i:])[4:-4] for i in range(3) if len(secret[i:]) > 8
        ]
        return any(form in body for body in self.bodies for form in forms)


@pytest.fixture
def server() -> Iterator[Recorder]:
    with Recorder() as s:
        yield s


class Plants:
    """The tree of a test: ``data/`` (the data file's folder), ``outside/``, ``home/``
    ($HOME), the hostile references and the secrets they point at."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.data = tmp / "data"
        self.outside = tmp / "outside"
        self.home = tmp / "home"
        for folder in (self.data, self.outside, self.home):
            folder.mkdir()
        monkeypatch.setenv("HOME", str(self.home))
        self.secrets: dict[str, bytes] = {}
        # the hostile references, by name: what the item writes
        self.refs = {
            "absolute": str(self._secret(self.outside / "abs.png", "absolute")),
            "dotdot": "../outside/" + self._secret(self.outside / "up.png", "dotdot").name,
            "tilde": "~/" + self._secret(self.home / "home.png", "tilde").name,
            "symlink": self._link(),
            "text named .png": self._secret(self.data / "fake.png", "text named .png").name,
            "fifo": self._fifo(),
            "sparse 1 GB .jpg": self._sparse(),
        }
        # real images outside the folder: sent only with the opt-in
        (self.outside / "real.png").write_bytes(PNG)
        (self.home / "real.png").write_bytes(PNG)
        (self.data / "dot.png").write_bytes(PNG)

    def _secret(self, path: Path, name: str) -> Path:
        content = f"root:x:0:0:{name}:secret-{len(self.secrets)}-planted-content\n".encode() * 4
        path.write_bytes(content)
        self.secrets[name] = content
        return path

    def _link(self) -> str:
        target = self._secret(self.outside / "passwd", "symlink")
        (self.data / "cat.png").symlink_to(target)
        return "cat.png"

    def _fifo(self) -> str:
        os.mkfifo(self.data / "pipe.png")
        return "pipe.png"

    def _sparse(self) -> str:
        path = self.data / "huge.jpg"
        with path.open("wb") as f:
            f.write(b"\xff\xd8\xff\xe0")  # a JPEG's first bytes: only its size is wrong
        os.truncate(path, GIB)
        return "huge.jpg"

    def item(self, ref: str, where: str) -> dict[str, Any]:
        """An item naming ``ref`` in its ``images`` field or in an ``image_url`` part (its
        text names ``ref``: items are not one cached request)."""
        if where == "images":
            return {"prompt": f"Describe {ref}.", "response": "A dot.", "images": [ref]}
        picture = {"type": "image_url", "image_url": {"url": ref}}
        user = {"role": "user", "content": [{"type": "text", "text": f"What is {ref}?"}, picture]}
        return {"messages": [user, {"role": "assistant", "content": "A dot."}]}

    def write(self, items: list[dict[str, Any]], name: str = "d.jsonl") -> Path:
        path = self.data / name
        path.write_text("".join(json.dumps(i) + "\n" for i in items))
        return path


@pytest.fixture
def plants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Plants:
    monkeypatch.chdir(tmp_path)
    return Plants(tmp_path, monkeypatch)


def _flags(server: Recorder) -> list[str]:
    return ["--base-url", server.base_url, "--api-key", "x", "--no-progress", "--model", "j",
            "--template", "likert", "--output", "text"]  # fmt: skip


_WHY = {
    "absolute": "outside the data file's folder",
    "dotdot": "outside the data file's folder",
    "tilde": "outside the data file's folder",
    "symlink": "outside the data file's folder",
    "text named .png": "not an image by its content",
    "fifo": "not a regular file",
    "sparse 1 GB .jpg": f"is {GIB} bytes, over the",
}
_WHY_WIDENED = {**_WHY, "absolute": "not an image by its content",
                "dotdot": "not an image by its content", "tilde": "not an image by its content",
                "symlink": "not an image by its content"}  # fmt: skip
FIELDS = ("images", "messages")


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("name", list(_WHY))
def test_cli_judge_refuses_each_plant_and_sends_nothing(
    name: str, field: str, plants: Plants, server: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    path = plants.write([plants.item(plants.refs[name], field)])
    code, out = run_cli(["judge", str(path), "--out", "run", *_flags(server)], capsys)
    assert code != 0
    assert f"{path}:1: field '{field}': image {plants.refs[name]!r}: {_WHY[name]}" in out, out
    assert server.bodies == []  # refused at the check, before any call
    # with the user's folders allowed, a file that is not an image is still refused
    widened = ["--files-root", str(plants.outside), "--files-root", str(plants.home)]
    code, out = run_cli(["judge", str(path), "--out", "run2", *widened, *_flags(server)], capsys)
    assert code != 0
    assert f"{path}:1: field '{field}': image" in out and _WHY_WIDENED[name] in out, out
    assert server.bodies == []
    assert not any(server.received(secret) for secret in plants.secrets.values())


def test_only_real_images_are_sent_and_only_with_the_opt_in(
    plants: Plants, server: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = [str(plants.outside / "real.png"), "../outside/real.png", "~/real.png"]
    items = [plants.item(ref, field) for ref in outside for field in FIELDS]
    path = plants.write(items)
    code, out = run_cli(["judge", str(path), "--out", "run", *_flags(server)], capsys)
    assert code != 0 and "outside the data file's folder" in out and "--files-root" in out, out
    assert server.bodies == []
    widened = ["--files-root", str(plants.outside), "--files-root", str(plants.home)]
    code, out = run_cli(["judge", str(path), "--out", "run2", *widened, *_flags(server)], capsys)
    assert code == 0, out
    assert len(server.bodies) == len(items)
    sent = base64.b64encode(PNG)
    assert all(b"data:image/png;base64," + sent in body for body in server.bodies)
    assert not any(server.received(secret) for secret in plants.secrets.values())


def test_the_data_files_own_images_need_no_opt_in(
    plants: Plants, server: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    path = plants.write([plants.item("dot.png", field) for field in FIELDS])
    code, out = run_cli(["judge", str(path), "--out", "run", *_flags(server)], capsys)
    assert code == 0, out
    assert len(server.bodies) == 2
    assert all(base64.b64encode(PNG) in body for body in server.bodies)


def _judge(server: Recorder) -> jurist.LLMJudge:
    model = jurist.get_model("openai:j", base_url=server.base_url, api_key="x")
    return jurist.LLMJudge(model, template="likert", output="text")


@pytest.mark.parametrize("field", FIELDS)
def test_python_api_refuses_plants_and_items_in_memory_read_nothing(
    field: str, plants: Plants, server: Recorder
) -> None:
    judge = _judge(server)
    for name, ref in plants.refs.items():
        path = plants.write([plants.item(ref, field)], f"{len(ref)}.jsonl")
        with pytest.raises(DataError, match=f"field '{field}': image"):
            jurist.evaluate(path, judge, run_dir=plants.data.parent / f"run-{field}-{len(ref)}",
                            files_root=[plants.outside, plants.home])  # fmt: skip
        item = plants.item(ref, field)
        for call in (judge.judge_sync, lambda items: jurist.evaluate(items, judge)):
            with pytest.raises(DataError) as e:
                call([item])
            assert f"item 1: field '{field}': image {ref!r}: a local file is not read" in str(
                e.value
            )
            assert "files_root=" in str(e.value)
        assert server.bodies == [], name
    # items in memory: the opt-in reads real images from the folders allowed, nothing else
    real = plants.item(str(plants.outside / "real.png"), field)
    results = judge.judge_sync([real], files_root=plants.outside)
    assert results.scores == [0.75]
    run = jurist.evaluate([real], judge, files_root=[plants.outside])
    assert [r["judge_score"] for r in run.records()] == [0.75]
    assert len(server.bodies) == 2
    assert not any(server.received(secret) for secret in plants.secrets.values())


def test_a_direct_judge_call_reads_no_local_file(plants: Plants, server: Recorder) -> None:
    judge = _judge(server)
    for field in FIELDS:
        item = plants.item(str(plants.outside / "real.png"), field)
        with pytest.raises(DataError, match="a local file is not read"):
            judge.judge_one_sync(item)
    assert server.bodies == []


def test_a_data_uri_must_be_an_image_by_its_bytes(plants: Plants, server: Recorder) -> None:
    judge = _judge(server)
    secret = plants.secrets["absolute"]
    fake = "data:image/png;base64," + base64.b64encode(secret).decode()
    with pytest.raises(DataError, match="its data is not an image by its content"):
        judge.judge_sync([plants.item(fake, "images")])
    # a real image declared as another type is sent as what its bytes are
    mislabelled = "data:image/jpeg;base64," + base64.b64encode(PNG).decode()
    assert judge.judge_sync([plants.item(mislabelled, "images")]).scores == [0.75]
    assert b"data:image/png;base64," in server.bodies[-1]
    assert not server.received(secret)


def test_a_refused_file_is_never_read_for_the_item_hash(plants: Plants) -> None:
    from jurist.data import open_source
    from jurist.data._source import item_hash

    path = plants.write([plants.item(plants.refs["fifo"], "images")])
    source = open_source(path)
    (_, where, row), = list(source)  # fmt: skip
    # a FIFO would block a reader with no writer: the hash names it refused, unread
    assert len(item_hash(row, files=source.files, where=where)) == 32


def test_rewards_refuse_local_files_unless_allowed(plants: Plants, server: Recorder) -> None:
    from jurist.rewards import llm_as_judge_reward
    from jurist.rewards._backend import RewardBackend

    model = jurist.get_model("openai:j", base_url=server.base_url, api_key="x")
    backend = RewardBackend(model)
    for ref in [*plants.refs.values(), str(plants.outside / "real.png")]:
        with pytest.raises(DataError, match="image"):
            llm_as_judge_reward("a", "b", backend, images=[ref])
    assert server.bodies == []
    real = str(plants.outside / "real.png")
    llm_as_judge_reward("a", "b", backend, images=[real], files_root=plants.outside)
    assert len(server.bodies) == 1 and base64.b64encode(PNG) in server.bodies[0]
    with pytest.raises(DataError, match="not an image by its content"):
        llm_as_judge_reward(
            "a", "b", backend, images=[plants.refs["absolute"]], files_root=plants.outside
        )
    assert not any(server.received(secret) for secret in plants.secrets.values())


async def test_serve_reward_bodies_cannot_name_local_files(plants: Plants) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from jurist.judges import LLMJudge
    from jurist.models import MockModel
    from jurist.rewards._reward_judge import RewardJudge
    from jurist.rewards._server import RewardService
    from jurist.rewards._server_app import make_app

    model = MockModel("j", outputs=["Score: 0.5"], cycle=True, images=True)
    service = RewardService(RewardJudge(LLMJudge(model, template="reward")), concurrency=1)
    picture = {"type": "image_url", "image_url": {"url": plants.refs["absolute"]}}
    bodies = [
        ("/v1/rewards", {"items": [{"response": "a", "images": [plants.refs["absolute"]]}]}),
        ("/v1/rewards", {"items": [{"response": "a", "prompt": [picture]}]}),
        ("/slime", {"response": "a", "prompt": [{"role": "user", "content": [picture]}]}),
        ("/slime", {"response": "a", "prompt": plants.refs["absolute"]}),
    ]
    async with TestClient(TestServer(make_app(service), host="127.0.0.1")) as client:
        statuses = [(await client.post(url, json=body)).status for url, body in bodies]
    await service.aclose()
    assert statuses[:3] == [400, 400, 400]  # no body field carries an image
    assert statuses[3] == 200  # a path given as text is text: judged, never opened
    assert all(not m.images for r in model.requests for m in r.messages)
    assert not any(
        secret.decode() in m.content for r in model.requests for m in r.messages
        for secret in plants.secrets.values()
    )  # fmt: skip


def test_item_errors_found_while_judging_name_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31, defect 9: an error found only when the item is rendered (no reply at the
    turn judged) names the row's file and line, not a bare ``item``."""
    path = tmp_path / "d.jsonl"
    asked = {"role": "user", "content": "hi"}
    rows = [{"messages": [asked, {"role": "assistant", "content": "a"}]}, {"messages": [asked]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["judge", str(path), "--model", "mock:j", "--out", str(tmp_path / "run")]
    code, out = run_cli([*args, "--no-progress"], capsys)
    assert code == 2
    assert f"error: {path}:2: field 'messages' has no assistant message to judge" in out, out


def test_the_ray_engine_permits_again_what_travelled_as_json(
    ray_cluster: Any, plants: Plants
) -> None:
    """Values travel to Ray actors as JSON text, where a permitted file is a plain path
    again: the actor checks it against the run's policy before reading it."""
    from jurist.engines import RayEngine, RayOptions
    from jurist.models import MockModel

    path = plants.write([plants.item("dot.png", field) for field in FIELDS])
    model = MockModel("vision", outputs=["4"], cycle=True, images=True)
    judge = jurist.LLMJudge(model, template="likert")
    engine = RayEngine(RayOptions(actors=1, batch_size=2))
    run = jurist.evaluate(path, judge, run_dir=plants.data.parent / "run", engine=engine)
    assert [r["judge_score"] for r in run.records()] == [0.75, 0.75]
