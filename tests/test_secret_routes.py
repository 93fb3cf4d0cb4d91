"""A key reaches the server whatever route it took, and no file or printed line holds it.

The routes: an option inside the model spec (``openai:j[api_key=...]``), a key pasted
where the model's name goes (``openai:sk-...``), credentials in the base URL
(``http://user:KEY@host/v1``, sent as Basic auth), ``--api-key``, ``$JURIST_API_KEY`` and
``$OPENAI_API_KEY``. Each run goes through ``jurist judge`` against a loopback server that
answers in text although JSON is asked (so every judgment carries an ``output_note``
naming the model), then ``jurist report``; every file under the run folders and the cache
folder, and everything printed, is searched for every key.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from jurist.cli import main
from jurist.cli._resume import resume_command
from jurist.models import get_model
from tests._loopback import Loopback

KEYS = {
    "spec": "sk-spec0KEY1a2b3c4d5e6f7a8b",
    "name": "sk-name0KEY9f8e7d6c5b4a3f2e",
    "url": "url0KEY-7c6b5a4d3e2f1a0b",
    "flag": "flag0KEY-1f2e3d4c5b6a7f8e",
    "env_jurist": "envj0KEY-2a3b4c5d6e7f8a9b",
    "env_openai": "envo0KEY-3b4c5d6e7f8a9b0c",
}


class TextServer(Loopback):
    """Answers ``5`` in text to every call (JSON asked or not); records each call's
    Authorization header and model name."""

    def __init__(self) -> None:
        super().__init__(self._handle)
        self.calls: list[tuple[str, str]] = []

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls.append((request.headers.get("Authorization", ""), body["model"]))
        usage = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
        choice = {"index": 0, "message": {"role": "assistant", "content": "5"}}
        return web.json_response(
            {"id": "x", "model": body["model"], "choices": [choice], "usage": usage}
        )


@pytest.fixture
def server() -> Iterator[TextServer]:
    with TextServer() as s:
        yield s


def hits(folder: Path, texts: list[str]) -> list[str]:
    """Every ``file: key`` (bytes, any file under ``folder``) and ``text i: key`` found."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.relative_to(folder)}: {k}" for k in KEYS.values() if k.encode() in data]
    for i, text in enumerate(texts):
        found += [f"text {i}: {k}" for k in KEYS.values() if k in text]
    return found


def test_no_key_from_any_route_in_run_cache_report_or_output(
    server: TextServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("JURIST_API_KEY", raising=False)
    data = tmp_path / "d.jsonl"
    rows = [{"prompt": f"q{i}", "response": "a"} for i in range(4)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    runs = tmp_path / "runs"
    cache = tmp_path / "cache" / "cache.sqlite"
    host = server.url.removeprefix("http://")
    routes: dict[str, tuple[list[str], dict[str, str]]] = {
        "spec": (["--model", f"openai:j1[api_key={KEYS['spec']}]"], {}),
        "name": (["--model", f"openai:{KEYS['name']}", "--api-key", "x-other-key-42"], {}),
        "url": (["--model", "openai:j3", "--base-url", f"http://me:{KEYS['url']}@{host}"], {}),
        "flag": (["--model", "openai:j4", "--api-key", KEYS["flag"]], {}),
        "env_jurist": (["--model", "openai:j5"], {"JURIST_API_KEY": KEYS["env_jurist"]}),
        "env_openai": (["--model", "openai:j6"], {"OPENAI_API_KEY": KEYS["env_openai"]}),
    }
    for route, (args, env) in routes.items():
        base = [] if "--base-url" in args else ["--base-url", server.url]
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        out = runs / route
        argv = ["judge", str(data), *args, *base, "--template", "likert", "--no-progress"]
        argv += ["--cache-path", str(cache), "--out", str(out)]
        assert main(argv) == 0, (route, capsys.readouterr())
        assert main(["report", str(out)]) == 0
        for name in env:
            monkeypatch.delenv(name)
        lines = (out / "results.jsonl").read_text().splitlines()
        notes = [json.loads(line)["judge_output_note"] for line in lines]
        assert all(notes), route  # the model's spec is in every judgment's note
    said = capsys.readouterr()
    basic = "Basic " + base64.b64encode(f"me:{KEYS['url']}".encode()).decode()
    sent = set(server.calls)
    assert (f"Bearer {KEYS['spec']}", "j1") in sent  # the spec's option is the key, not a name
    assert ("Bearer x-other-key-42", KEYS["name"]) in sent  # the name still reaches the server
    assert (basic, "j3") in sent
    assert (f"Bearer {KEYS['flag']}", "j4") in sent
    assert (f"Bearer {KEYS['env_jurist']}", "j5") in sent
    assert (f"Bearer {KEYS['env_openai']}", "j6") in sent
    assert (runs / "url" / "report.html").is_file() and cache.is_file()
    assert hits(tmp_path, [said.out, said.err]) == []


def test_a_spec_option_and_a_key_like_name_never_enter_the_model_spec() -> None:
    model = get_model("openai:j[api_key=sk-live-0123456789abcdef,timeout=7]", max_retries=0)
    assert model.spec == "openai:j" and model.name == "j"
    assert model.timeout == 7.0  # type: ignore[attr-defined]
    pasted = get_model("openai:sk-proj-0a1b2c3d4e5f6a7b8c9d", api_key="k", max_retries=0)
    assert pasted.spec == "openai:***" and pasted.name == "sk-proj-0a1b2c3d4e5f6a7b8c9d"
    with pytest.raises(Exception, match=r"sets api_key.*give each once") as caught:
        get_model("openai:j[api_key=sk-live-0123456789abcdef]", api_key="other")
    assert "0123456789abcdef" not in str(caught.value)


def test_url_credentials_with_an_api_key_too_are_refused_without_showing_them() -> None:
    with pytest.raises(Exception, match="give one") as caught:
        get_model("openai:j", base_url="http://me:pw-0123456789@h/v1", api_key="sk-real-key-1")
    assert "pw-0123456789" not in str(caught.value)


def test_the_resume_command_runs_with_the_keys_set_as_variables(tmp_path: Path) -> None:
    """The printed command, run by a shell with the variables it names set, gives the
    very arguments of the interrupted run; it never holds a key nor ``***``."""
    argv = [
        "judge",
        "d ata.jsonl",
        "--api-key",
        KEYS["flag"],
        "--model",
        f"openai:j[api_key={KEYS['spec']},timeout=5]",
        "--base-url",
        f"http://me:{KEYS['url']}@127.0.0.1:9/v1",
        "--out",
        "runs/$HOME`x`",
    ]
    get_model(argv[5], max_retries=0)  # the CLI built it: its key is known
    hint = resume_command(argv)
    text = hint.say()
    assert "***" not in text and not [k for k in KEYS.values() if k in text]
    assert set(hint.variables) == {"JURIST_API_KEY", "JURIST_SECRET_1", "JURIST_SECRET_2"}
    env = {
        **os.environ,
        "JURIST_API_KEY": KEYS["flag"],
        "JURIST_SECRET_1": KEYS["spec"],
        "JURIST_SECRET_2": KEYS["url"],
    }
    script = f"printf '%s\\n' {hint.command.removeprefix('jurist ')}"
    shown = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True)
    expected = [a for a in argv if a not in ("--api-key", KEYS["flag"])]
    assert shown.stdout.splitlines() == expected, (hint.command, shown.stderr)
    assert shlex.split(hint.command)[0] == "jurist"
