"""The cache key names the weights, not only the model's name (issue 19, item 1).

Other weights in the same ``hf:`` folder, or an OpenAI-compatible server restarted on other
weights under the same model name, must not be answered with the old model's verdicts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from jurist.cli import EXIT_OK, main
from jurist.models import CachedModel, MockModel
from jurist.models._cache import cache_key
from jurist.models._fingerprint import engine_fingerprint, folder_fingerprint, source_fingerprint
from jurist.models._openai import OpenAIModel
from jurist.models._server_identity import served_identity
from jurist.types import Message, Request
from tests._llama_fixtures import llama_server, tiny_gguf  # noqa: F401

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "qa.jsonl"
REQ = Request(messages=(Message(role="user", content="Is 2+2=4?"),), temperature=0)
NOW = 1_800_000_000.0

# -- hf: a folder whose weights were replaced -----------------------------------------------


@pytest.fixture(scope="module")
def other_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second tiny model: the same architecture and tokenizer, other weights (seed 1)."""
    from jurist.testing import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("other-model"), seed=1)


def _judge(model_dir: Path, out: Path, *extra: str) -> list[float]:
    args = ["judge", str(EXAMPLES), "--model", f"hf:{model_dir}", "--template", "likert"]
    args += ["--scoring", "logprobs", "--low-coverage", "flag"]
    args += ["--out", str(out), "--no-progress", *extra]
    assert main(args) == EXIT_OK
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return [float(r["judge_score"]) for r in rows]


def _cache_hits(out: Path) -> int:
    return int(json.loads((out / "summary.json").read_text())["cache_hits"])


@pytest.mark.slow
def test_swapped_hf_folder_is_not_answered_from_the_cache(
    tiny_model_dir: Path,
    other_model_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``jurist judge`` with ``hf:DIR``, DIR replaced by another model, judge again: the
    scores are the new model's (as with ``--no-cache``), none comes from the cache."""
    model_dir = tmp_path / "judge-model"
    shutil.copytree(tiny_model_dir, model_dir)
    first = _judge(model_dir, tmp_path / "run1")
    assert _judge(model_dir, tmp_path / "run1-again") == first  # unchanged: the cache answers
    assert _cache_hits(tmp_path / "run1-again") == len(first)

    shutil.rmtree(model_dir)
    shutil.copytree(other_model_dir, model_dir)
    cached = _judge(model_dir, tmp_path / "run2")
    fresh = _judge(model_dir, tmp_path / "run2-fresh", "--no-cache")
    capsys.readouterr()
    assert fresh != first  # the two models judge differently, so the check means something
    assert _cache_hits(tmp_path / "run2") == 0
    assert cached == fresh


async def test_hf_fingerprint_is_taken_once_per_load(tiny_model_dir: Path, tmp_path: Path) -> None:
    from jurist.models._hf import HFModel

    model_dir = tmp_path / "m"
    shutil.copytree(tiny_model_dir, model_dir)
    model = HFModel(str(model_dir))
    first = await model.fingerprint()
    assert first == folder_fingerprint(model_dir) and not model.loaded  # no load needed
    assert await HFModel(str(model_dir)).fingerprint() == first  # another object, same key
    config = model_dir / "config.json"
    config.write_text(config.read_text() + "\n")
    assert await model.fingerprint() == first  # kept while these weights are held
    await model.aclose()  # frees the weights: the next use loads, and fingerprints, again
    assert await model.fingerprint() not in (None, first)


# -- the folder fingerprint -----------------------------------------------------------------


def _safetensors(path: Path, data: bytes, header: bytes = b'{"w":{"dtype":"F32"}}') -> None:
    path.write_bytes(len(header).to_bytes(8, "little") + header + data)


def test_large_files_are_sampled_with_header_size_and_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jurist.models import _fingerprint

    monkeypatch.setattr(_fingerprint, "_WHOLE_MAX", 1024)  # 300 KiB then counts as weights
    monkeypatch.setattr(_fingerprint, "_BLOCK", 4096)
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / ".hidden").write_text("not part of the model")
    data = bytearray(os.urandom(300 * 1024))
    weights = folder / "model.safetensors"
    _safetensors(weights, bytes(data))
    os.utime(weights, ns=(1, 10**18))
    base = folder_fingerprint(folder)
    assert base["files"] == 2

    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)  # copy2: bytes and times kept, so the same fingerprint
    assert folder_fingerprint(copy) == base
    (folder / ".hidden").write_text("changed")
    assert folder_fingerprint(folder) == base

    data[-1] ^= 0xFF  # the last block is always sampled; same size, same time
    _safetensors(weights, bytes(data))
    os.utime(weights, ns=(1, 10**18))
    assert folder_fingerprint(folder) != base
    _safetensors(copy / "model.safetensors", bytes(data[:-1]) + bytes([data[-1] ^ 0xFF]))
    os.utime(copy / "model.safetensors", ns=(1, 10**18 + 1))  # same bytes, rewritten later
    assert folder_fingerprint(copy) != base
    _safetensors(copy / "model.safetensors", bytes(data), header=b'{"w":{"dtype":"F16"}}')
    os.utime(copy / "model.safetensors", ns=(1, 10**18))
    assert folder_fingerprint(copy) != folder_fingerprint(folder)


def _fake_hub_cache(root: Path, repo: str, commit: str, files: dict[str, bytes]) -> Path:
    """The Hugging Face cache layout: blobs named by content hash, a snapshot of links."""
    import hashlib

    storage = root / ("models--" + repo.replace("/", "--"))
    snapshot = storage / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (storage / "blobs").mkdir(exist_ok=True)
    (storage / "refs").mkdir(exist_ok=True)
    (storage / "refs" / "main").write_text(commit)
    for name, content in files.items():
        blob = storage / "blobs" / hashlib.sha256(content).hexdigest()
        blob.write_bytes(content)
        (snapshot / name).symlink_to(os.path.relpath(blob, snapshot))
    return snapshot


def test_hub_id_uses_its_snapshot_commit_and_blob_names(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    _fake_hub_cache(cache, "org/judge", "a" * 40, {"config.json": b"{}", "model.bin": b"A"})
    first = source_fingerprint("org/judge", cache_dir=cache)
    assert first is not None and (first["repo"], first["commit"]) == ("org/judge", "a" * 40)
    assert source_fingerprint("org/judge", revision="a" * 40, cache_dir=cache) == first
    _fake_hub_cache(cache / "2", "org/judge", "b" * 40, {"config.json": b"{}", "model.bin": b"B"})
    second = source_fingerprint("org/judge", cache_dir=cache / "2")
    assert second is not None and second["digest"] != first["digest"]
    assert source_fingerprint("org/not-downloaded", cache_dir=cache) is None


_HUB_SCRIPT = """
import asyncio, json, os, pathlib
from jurist.models._hf import HFModel
seen = []
for commit in ("a" * 40, "b" * 40):  # main moves from a to b between the two loads
    pathlib.Path(os.environ["MAIN_REF"]).write_text(commit)
    model = HFModel("org/tiny")
    seen.append({"fingerprint": asyncio.run(model.fingerprint()), "loaded": model.loaded})
print(json.dumps(seen))
"""


@pytest.mark.slow
def test_hf_hub_id_is_fingerprinted_by_the_snapshot_it_loads(
    tiny_model_dir: Path, other_model_dir: Path, tmp_path: Path
) -> None:
    """``hf:org/tiny`` from the Hugging Face cache: the snapshot's commit and files, after
    the load; main moved to another commit gives another fingerprint."""
    import subprocess
    import sys

    cache = tmp_path / "hub"
    for commit, folder in (("a" * 40, tiny_model_dir), ("b" * 40, other_model_dir)):
        files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
        _fake_hub_cache(cache, "org/tiny", commit, files)
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    env["MAIN_REF"] = str(cache / "models--org--tiny" / "refs" / "main")
    env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")])
    # one process for both loads: importing torch and transformers twice costs seconds
    done = subprocess.run(
        [sys.executable, "-c", _HUB_SCRIPT], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outs = json.loads(done.stdout.strip().splitlines()[-1])
    seen = []
    for commit, out in zip(("a" * 40, "b" * 40), outs, strict=True):
        assert out["loaded"] and out["fingerprint"]["commit"] == commit
        assert out["fingerprint"]["repo"] == "org/tiny"
        seen.append(out["fingerprint"]["digest"])
    assert seen[0] != seen[1]


def test_vllm_engine_fingerprint_covers_a_separate_tokenizer(tmp_path: Path) -> None:
    model, tok = tmp_path / "model", tmp_path / "tok"
    for folder, text in ((model, "{}"), (tok, '{"tok": 1}')):
        folder.mkdir()
        (folder / "config.json").write_text(text)
    plain = engine_fingerprint(str(model), {"dtype": "bfloat16"})
    assert plain == {"model": folder_fingerprint(model)}
    both = engine_fingerprint(str(model), {"tokenizer": str(tok)})
    assert both == {"model": folder_fingerprint(model), "tokenizer": folder_fingerprint(tok)}
    cache = tmp_path / "downloads"
    _fake_hub_cache(cache, "org/m", "c" * 40, {"config.json": b"{}"})
    hub = engine_fingerprint("org/m", {"download_dir": str(cache)})
    assert hub is not None and hub["model"]["commit"] == "c" * 40
    assert engine_fingerprint("org/m", {}) is None  # not downloaded: the engine starts first


# -- what a server reports in GET /models ---------------------------------------------------

VLLM = {"id": "tiny", "object": "model", "created": int(NOW), "owned_by": "vllm",
        "root": "/models/qwen-a", "parent": None, "max_model_len": 4096}  # fmt: skip
META = {"n_params": 1000, "size": 4000, "ftype": 0}
LLAMA_SERVER = {"id": "tiny.gguf", "aliases": ["tiny"], "object": "model", "created": int(NOW),
                "owned_by": "llamacpp", "meta": META}  # fmt: skip
OPENAI = {"id": "tiny", "object": "model", "created": 1721172741, "owned_by": "system"}
OLLAMA_TODAY = {"id": "tiny", "object": "model", "created": int(NOW) - 60, "owned_by": "library"}
LLAMA_CPP_PYTHON = {"id": "tiny", "object": "model", "owned_by": "me", "permissions": []}


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (VLLM, {"root": "/models/qwen-a", "max_model_len": 4096, "owned_by": "vllm"}),
        (LLAMA_SERVER, {"meta": LLAMA_SERVER["meta"], "owned_by": "llamacpp"}),
        (OPENAI, {"created": 1721172741, "owned_by": "system"}),
        (OLLAMA_TODAY, None),  # a creation time within a day of now may be the request's
        (LLAMA_CPP_PYTHON, None),
    ],
    ids=["vllm", "llama-server", "openai", "created-today", "llama-cpp-python"],
)
def test_served_identity_keeps_the_stable_weight_fields(
    entry: dict[str, Any], expected: dict[str, Any] | None
) -> None:
    other = {"id": "other", "root": "/elsewhere", "owned_by": "x"}
    raw = json.dumps({"object": "list", "data": [other, entry]}).encode()
    found, why = served_identity(raw, 200, "tiny", now=NOW)
    assert found == expected
    assert (why == "") == (expected is not None)


def test_served_identity_says_why_there_is_none() -> None:
    assert served_identity(b"{}", 404, "tiny", now=NOW) == (None, "answered HTTP 404")
    assert served_identity(b"<html>", 200, "tiny", now=NOW)[1].endswith("not JSON")
    absent = json.dumps({"data": [VLLM]}).encode()
    assert served_identity(absent, 200, "big", now=NOW) == (None, "lists no model named big")
    only = json.dumps({"data": [LLAMA_CPP_PYTHON]}).encode()
    assert served_identity(only, 200, "tiny", now=NOW)[1] == (
        "reports nothing that identifies the weights of model tiny (only id, object, owned_by)"
    )


class _Server:
    """A loopback OpenAI-compatible server whose ``/v1/models`` answer a test sets."""

    def __init__(self) -> None:
        self.models: Callable[[], web.Response] = lambda: web.json_response({"data": [VLLM]})
        self.gets = 0
        self.posts = 0
        self.auth: list[str | None] = []
        self.port = 0

    async def _models(self, request: web.Request) -> web.Response:
        self.gets += 1
        self.auth.append(request.headers.get("Authorization"))
        await asyncio.sleep(0.01)  # concurrent first lookups overlap
        return self.models()

    async def _chat(self, request: web.Request) -> web.Response:
        self.posts += 1
        body = {"choices": [{"message": {"content": f"answer {self.posts}"}}], "usage": {}}
        return web.json_response(body)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@pytest.fixture
async def server() -> AsyncIterator[_Server]:
    srv = _Server()
    app = web.Application()
    app.router.add_get("/v1/models", srv._models)
    app.router.add_post("/v1/chat/completions", srv._chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    srv.port = int(runner.addresses[0][1])
    yield srv
    await runner.cleanup()


async def test_server_identity_is_asked_once_and_keys_the_cache(
    server: _Server, tmp_path: Path
) -> None:
    path = tmp_path / "c.sqlite"

    def stack() -> CachedModel:
        return CachedModel(OpenAIModel("tiny", base_url=server.base_url, api_key="sk-1"), path)

    first = stack()
    outs = await asyncio.gather(*(first.complete(REQ) for _ in range(5)))
    assert server.gets == 1 and server.posts == 1  # one identity request, one call
    assert [o.text for o in outs] == ["answer 1"] * 5
    assert server.auth == ["Bearer sk-1"]  # the model's own headers, to its own server
    assert await first.fingerprint() == {
        "max_model_len": 4096,
        "owned_by": "vllm",
        "root": "/models/qwen-a",
    }
    again = stack()  # a new process, the same weights: answered from the cache
    assert (await again.complete(REQ)).cached and server.posts == 1

    server.models = lambda: web.json_response({"data": [{**VLLM, "root": "/models/qwen-b"}]})
    restarted = stack()  # the server now serves other weights under the same name
    out = await restarted.complete(REQ)
    assert (out.cached, out.text, server.posts) == (False, "answer 2", 2)
    for model in (first, again, restarted):
        await model.aclose()


@pytest.mark.parametrize(
    "answer",
    [
        lambda: web.json_response({"error": "not found"}, status=404),
        lambda: web.json_response({"data": [LLAMA_CPP_PYTHON]}),
        lambda: web.json_response({"data": [{**VLLM, "id": "another"}]}),
        lambda: web.Response(text="<html>", content_type="text/html"),
    ],
    ids=["404", "nothing-reported", "model-absent", "not-json"],
)
async def test_no_server_identity_warns_once_and_keys_on_name_and_url(
    server: _Server,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    answer: Callable[[], web.Response],
) -> None:
    server.models = answer
    backend = OpenAIModel("tiny", base_url=server.base_url, api_key="sk-secret-key-123")
    model = CachedModel(backend, tmp_path / "c.sqlite")
    with caplog.at_level(logging.WARNING, logger="jurist.models"):
        assert (await model.complete(REQ)).text == "answer 1"
        assert (await model.complete(REQ)).cached
        other = REQ.model_copy(update={"max_tokens": 5})
        assert not (await model.complete(other)).cached
    warnings = [r.getMessage() for r in caplog.records if "cache key" in r.getMessage()]
    assert len(warnings) == 1 and server.gets == 1
    assert "covers only the provider, the model name and the base URL" in warnings[0]
    assert f"GET {server.base_url}/models" in warnings[0] and "sk-secret" not in warnings[0]
    assert await backend.fingerprint() is None
    stored = model._get(cache_key(backend, REQ))  # the key of provider, name and base URL
    assert stored is not None and json.loads(stored)["text"] == "answer 1"
    await model.aclose()


async def test_an_unreachable_identity_never_fails_a_call(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.conftest import free_port

    backend = OpenAIModel("tiny", base_url=f"http://127.0.0.1:{free_port()}/v1")
    with caplog.at_level(logging.WARNING, logger="jurist.models"):
        assert await backend.fingerprint() is None
        assert await backend.fingerprint() is None
    warnings = [r.getMessage() for r in caplog.records if "cache key" in r.getMessage()]
    assert len(warnings) == 1 and "could not be asked (ClientConnectorError" in warnings[0]
    await backend.aclose()


async def test_models_without_a_fingerprint_keep_their_keys(tmp_path: Path) -> None:
    mock = MockModel("judge", outputs=["A"], cycle=True)
    assert await mock.fingerprint() is None
    model = CachedModel(mock, tmp_path / "c.sqlite")
    await model.complete(REQ)
    assert model._get(cache_key(mock, REQ)) is not None  # the key as before the fingerprint
    assert cache_key(mock, REQ, fingerprint={"digest": "x"}) != cache_key(mock, REQ)
    model.close()


@pytest.mark.slow
async def test_llama_cpp_python_server_reports_no_weights_and_the_warning_says_so(
    llama_server: str,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    """llama-cpp-python's real server lists the alias with ``owned_by: "me"`` only: the key
    cannot tell its GGUFs apart, and the one warning says what it covers instead."""
    backend = OpenAIModel("tiny", base_url=llama_server, json_mode="json_object")
    with caplog.at_level(logging.WARNING, logger="jurist.models"):
        assert await backend.fingerprint() is None
        assert await backend.fingerprint() is None
    warnings = [r.getMessage() for r in caplog.records if "cache key" in r.getMessage()]
    assert len(warnings) == 1
    assert "reports nothing that identifies the weights of model tiny" in warnings[0]
    assert "(only id, object, owned_by)" in warnings[0]
    await backend.aclose()
