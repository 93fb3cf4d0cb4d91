"""No API key in any file, log line or printed output, whatever route it took.

A tiny OpenAI-compatible server on 127.0.0.1 stands in for the provider: it records the
``Authorization`` header of every call (so each test shows the key did reach the server),
answers ``5`` (a likert verdict, as JSON when a schema is asked), and for a prompt holding
``ECHO429`` / ``ECHO401`` answers an error whose message echoes the caller's key, as some
proxies do.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import jurist
from jurist._secrets import (
    REDACTED,
    ScrubFilter,
    get_logger,
    is_secret_key,
    scrub,
    secrets_in,
)
from jurist.cli import main
from jurist.models import RetryModel
from tests._loopback import Loopback

KEYS = {
    "flag": "flag-KEY-6f1d2c3b4a",
    "env_jurist": "envj-KEY-8e7d6c5b4a",
    "env_openai": "envo-KEY-1a2b3c4d5e",
    "override": "override-KEY-9a8b7c6d",
    "under_test": "mut-KEY-2b3c4d5e6f",
    "entry": "entry-KEY-3c4d5e6f7a",
    "header": "header-KEY-4d5e6f7a8b",
    "python": "python-KEY-5e6f7a8b9c",
    "echo": "echo-KEY-6f7a8b9c0d",
}


class KeyServer(Loopback):
    """A minimal chat-completions server in its own thread, recording Authorization."""

    def __init__(self) -> None:
        super().__init__(self._handle)
        self.auth: list[str] = []
        self._echoed: set[str] = set()

    async def _handle(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        self.auth.append(auth)
        body = await request.json()
        prompt = body["messages"][-1]["content"]
        if "ECHO429" in prompt and prompt not in self._echoed:
            self._echoed.add(prompt)
            error = {"message": f"rate limited for {auth}", "type": "rate_limit"}
            return web.json_response({"error": error}, status=429, headers={"Retry-After": "0"})
        if "ECHO401" in prompt:
            error = {"message": f"key {auth.removeprefix('Bearer ')} was revoked"}
            return web.json_response({"error": error}, status=401)
        text = '{"verdict": 5}' if "response_format" in body else "5"
        usage = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
        return web.json_response(
            {
                "id": "x",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            }
        )


@pytest.fixture
def server() -> Iterator[KeyServer]:
    with KeyServer() as s:
        yield s


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def hits(folder: Path, texts: list[str], *keys: str) -> list[str]:
    """Where any key occurs: every file under ``folder`` (bytes) and the given texts."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.relative_to(folder)}: {k}" for k in keys if k.encode() in data]
    for i, text in enumerate(texts):
        found += [f"text {i}: {k}" for k in keys if k in text]
    return found


ITEMS = [{"prompt": "What is 2+2?", "response": "4"}, {"prompt": "Capital?", "response": "x"}]


def test_cli_judge_key_from_flag_and_environment(
    server: KeyServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", ITEMS)
    base = ["judge", str(data), "--model", "openai:j", "--base-url", server.url]
    base += ["--template", "likert", "--no-progress", "--no-cache"]
    assert main([*base, "--api-key", KEYS["flag"], "--out", str(tmp_path / "flag")]) == 0
    monkeypatch.setenv("JURIST_API_KEY", KEYS["env_jurist"])
    assert main([*base, "--out", str(tmp_path / "envj")]) == 0
    monkeypatch.delenv("JURIST_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", KEYS["env_openai"])
    assert main([*base, "--out", str(tmp_path / "envo")]) == 0
    for name in ("flag", "envj", "envo"):
        assert main(["report", str(tmp_path / name)]) == 0
    out, err = capsys.readouterr()
    keys = (KEYS["flag"], KEYS["env_jurist"], KEYS["env_openai"])
    assert {f"Bearer {k}" for k in keys} <= set(server.auth)  # the keys were used
    assert (tmp_path / "flag" / "report.html").is_file()
    assert hits(tmp_path, [out, err], *keys) == []


def catalog_entry(root: Path, name: str, text: str) -> None:
    path = root / Path(*name.split(".")[:-1]) / f"{name.split('.')[-1]}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cli_eval_model_catalog_override_entry_key_and_header(
    server: KeyServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "catalog"
    catalog_entry(
        root,
        "judges.team.plain",
        f"kind: judge\nmodel: 'openai:j'\nmodel_options: {{base_url: '{server.url}'}}\n"
        "template: likert\n",
    )
    catalog_entry(
        root,
        "judges.team.keyed",
        f"kind: judge\nmodel: 'openai:j'\ntemplate: likert\nmodel_options:\n"
        f"  base_url: '{server.url}'\n  api_key: '{KEYS['entry']}'\n"
        f"  headers: {{Authorization: 'Bearer {KEYS['header']}', X-Team: blue}}\n",
    )
    data = write_jsonl(tmp_path / "d.jsonl", [{"prompt": "q1"}, {"prompt": "q2"}])
    runs = tmp_path / "runs"
    base = ["eval-model", str(data), "--model", "openai:m", "--base-url", server.url]
    base += ["--api-key", KEYS["under_test"], "--catalog", str(root), "--no-progress"]
    override = f"judges.team.plain[model_options.api_key={KEYS['override']},temperature=0]"
    assert main([*base, "--judge", override, "--out", str(runs / "override")]) == 0
    assert main([*base, "--judge", "judges.team.keyed", "--out", str(runs / "entry")]) == 0
    out, err = capsys.readouterr()
    assert f"Bearer {KEYS['override']}" in server.auth
    assert f"Bearer {KEYS['under_test']}" in server.auth
    assert f"Bearer {KEYS['header']}" in server.auth  # the header wins over api_key
    summary = json.loads((runs / "override" / "summary.json").read_text())
    assert summary["judge"] == f"judges.team.plain[model_options.api_key={REDACTED},temperature=0]"
    assert summary["n_scored"] == 2  # the run itself is intact
    keys = (KEYS["override"], KEYS["under_test"], KEYS["entry"], KEYS["header"])
    assert hits(runs, [out, err], *keys) == []


def test_python_evaluate_report_and_exports(server: KeyServer, tmp_path: Path) -> None:
    model = jurist.get_model("openai:j", base_url=server.url, api_key=KEYS["python"])
    judge = jurist.LLMJudge(model, template="likert")
    run = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "run")
    run.report()
    run.to_jsonl(tmp_path / "run" / "export.jsonl")
    res = jurist.JudgeMetric(judge).compute(["4", "5"], task_data=ITEMS)
    (tmp_path / "run" / "metric.json").write_text(res.model_dump_json())
    assert f"Bearer {KEYS['python']}" in server.auth
    assert run.summary().scored == 2 and res.global_scores.n_scored == 2
    summary = run.summary().model_dump()
    assert scrub(summary) == summary  # token counts and the rest pass untouched
    assert scrub(list(run.records())) == list(run.records())
    assert hits(tmp_path / "run", [repr(run.manifest), repr(judge)], KEYS["python"]) == []


def test_an_echoed_key_reaches_no_log_no_error_and_no_file(
    server: KeyServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = jurist.get_model("openai:j", base_url=server.url, api_key=KEYS["echo"])
    judge = jurist.LLMJudge(RetryModel(model, max_retries=2, backoff_base=0.0), "likert")
    items = [{"prompt": "ECHO429 please", "response": "a"}, {"prompt": "ECHO401", "response": "b"}]
    with caplog.at_level(logging.DEBUG, logger="jurist"):
        run = jurist.evaluate(items, judge, run_dir=tmp_path / "run")
        run.report()
    assert f"Bearer {KEYS['echo']}" in server.auth
    assert any("retry 1/2" in r.getMessage() for r in caplog.records)  # the retry was logged
    failed = run.failures()
    assert len(failed) == 1 and failed[0][1].startswith("api: ")
    assert "revoked" in failed[0][1]  # the server's message is kept, less the key
    logged = "\n".join(r.getMessage() for r in caplog.records) + caplog.text
    assert hits(tmp_path / "run", [logged, failed[0][1]], KEYS["echo"]) == []


def test_scrub_leaves_ordinary_data_alone() -> None:
    record = {
        "max_tokens": 256,
        "tokens": 17,
        "prompt_tokens": 3,
        "token": "Paris",
        "logprobs": [{"token": "Yes", "logprob": -0.1, "top": [{"token": "No"}]}],
        "eos_token": "</s>",
        "response": "Each token costs money; the bearer of this note owes nothing.",
        "text": "token: 5, tokens=7, max_tokens=9, top_logprobs: 20",
        "url": "http://127.0.0.1:8000/v1",
        "keyword": "sklearn-compatible task-1234",
    }
    assert scrub(record) == record
    for key in ("max_tokens", "tokens", "token", "eos_token", "top_logprobs", "key_field"):
        assert not is_secret_key(key), key


def test_a_path_ending_in_a_secret_word_is_not_a_key() -> None:
    """A path's last segment (``/etc/passwd``) is a file's name, not a secret's key, and
    the prose after it (``: not an image``) no value (issue 31, defect 10); a quoted key
    (``'password': 'x'``) still is one."""
    for text in (
        "d.jsonl:3: field 'images': image '/etc/passwd': not an image by its content",
        "cannot open /etc/passwd: permission denied",
        r"C:\\keys\\api_key: no such file",
        "image '../secrets/token.txt': outside the data file's folder",
    ):
        assert scrub(text) == text
        assert secrets_in(text) == []
    assert scrub("{'password': 'hunter22'}") == f"{{'password': '{REDACTED}'}}"
    assert scrub("password: hunter22") == f"password: {REDACTED}"


def test_scrub_catches_each_shape() -> None:
    assert scrub({"Authorization": "Bearer abcdef123", "X-Api-Key": "k" * 10}) == {
        "Authorization": REDACTED,
        "X-Api-Key": REDACTED,
    }
    assert scrub({"api_key": None, "password": ""}) == {"api_key": None, "password": ""}
    assert scrub("http://me:pw-1234@host/v1") == f"http://me:{REDACTED}@host/v1"
    assert scrub("GET /v1?api_key=abc123&x=1") == f"GET /v1?api_key={REDACTED}&x=1"
    assert scrub('{"api_key": "abc"}') == f'{{"api_key": "{REDACTED}"}}'
    assert scrub("Authorization: Bearer sk-abc.123") == f"Authorization: Bearer {REDACTED}"
    assert scrub("authorization=Basic abc") == f"authorization=Basic {REDACTED}"
    assert scrub("sk-proj-abcdefghij1234567890") == REDACTED
    assert scrub(("hf_token=abc", 3)) == [f"hf_token={REDACTED}", 3]
    assert scrub("jurist judge d.jsonl --api-key abc --max-tokens 5") == (
        f"jurist judge d.jsonl --api-key {REDACTED} --max-tokens 5"
    )
    assert scrub("--api-key --base-url x") == "--api-key --base-url x"  # no value to hide


def test_log_filter_scrubs_arguments_and_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    log = get_logger("jurist.h5test")
    assert sum(isinstance(f, ScrubFilter) for f in get_logger("jurist.h5test").filters) == 1
    with caplog.at_level(logging.INFO, logger="jurist.h5test"):
        log.info("calling %s with %s", "http://h/v1", "api_key=secret-value-1")
        try:
            raise RuntimeError("Bearer tok-12345-secret rejected")
        except RuntimeError:
            log.exception("failed")
    assert "secret-value-1" not in caplog.text and "tok-12345-secret" not in caplog.text
    assert "calling http://h/v1 with api_key=***" in caplog.text


def test_a_model_identity_never_holds_a_key() -> None:
    url = "https://me:url-KEY-7a8b9c0d1e@proxy.example/v1?api-key=query-KEY-8b9c0d1e2f"
    # the URL's user:password@ is the Basic auth (an api_key as well would be refused)
    model = jurist.get_model("openai:j", base_url=url, headers={"X-Api-Key": KEYS["python"]})
    text = json.dumps(model.identity()) + json.dumps(jurist.LLMJudge(model).describe())
    assert "url-KEY-7a8b9c0d1e" not in text and "query-KEY-8b9c0d1e2f" not in text
    assert KEYS["python"] not in text and "proxy.example/v1" in text


def test_a_langchain_model_bound_with_a_key_keeps_it_out_of_its_identity() -> None:
    fake = pytest.importorskip("langchain_core.language_models.fake_chat_models")
    llm = fake.FakeListChatModel(responses=["5"]).bind(api_key="bound-KEY-9c0d1e2f3a", seed=3)
    identity = jurist.get_model(llm).identity()
    assert "bound-KEY-9c0d1e2f3a" not in json.dumps(identity)
    assert identity["bound"] == {"seed": 3}


def test_a_key_in_the_judge_configuration_is_in_no_manifest_copy_and_resume_works(
    server: KeyServer, tmp_path: Path
) -> None:
    # some proxies take the key in the request body: extra_body is part of describe()
    key = "body-KEY-0d1e2f3a4b"
    model = jurist.get_model("openai:j", base_url=server.url, api_key="not-needed")
    judge = jurist.LLMJudge(model, template="likert", extra_body={"api_key": key})
    run = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "run")
    calls = len(server.auth)
    again = jurist.evaluate(ITEMS, judge, run_dir=tmp_path / "run")  # resumes: same judge
    assert len(server.auth) == calls and again.summary().scored == 2
    assert run.manifest.judge["extra_body"] == {"api_key": REDACTED}
    assert hits(tmp_path / "run", [], key) == []
