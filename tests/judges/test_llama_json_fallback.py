"""``jurist judge`` with the default ``--json-mode`` against the real llama-cpp-python
server (issue 19.3).

That server answers OpenAI's ``json_schema`` response format with an HTTP 500 naming it.
Every item used to fail, each retried 4 times. A tap on 127.0.0.1 in front of the real
server records the form and the answer status of every request it forwards.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from jurist.cli import EXIT_FAILED_ITEMS, EXIT_OK, main
from tests._llama_fixtures import llama_server, tiny_gguf  # noqa: F401
from tests._loopback import Loopback

ITEMS = [{"prompt": f"What is {i}+{i}?", "response": str(2 * i)} for i in range(6)]


class Tap(Loopback):
    """Forwards ``POST /v1/chat/completions`` to ``target`` as it is; ``seen`` holds the
    ``response_format`` type (``"text"``: none) and the answer status of each request."""

    def __init__(self, target: str) -> None:
        super().__init__(self._handle, shutdown_timeout=5.0)
        self.target = f"{target}/chat/completions"
        self.seen: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        fmt = json.loads(raw).get("response_format")
        headers = {"Content-Type": "application/json"}
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.target, data=raw, headers=headers) as resp,
        ):
            answer, code = await resp.read(), resp.status
        with self._lock:
            self.seen.append((fmt["type"] if fmt else "text", code))
        return web.Response(body=answer, status=code, content_type="application/json")


def test_the_default_json_mode_scores_every_item_on_llama_cpp_python(
    llama_server: str,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the calls wait for the probe's refusal however loaded the machine (the default
    # wait is short, so that a slow first request holds no one for long)
    monkeypatch.setattr("jurist.models._json_form.PROBE_WAIT_S", 60.0)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    out = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="jurist"), Tap(llama_server) as tap:
        code = main(
            [
                "judge",
                str(data),
                "--model",
                "tiny",
                "--base-url",
                tap.url,
                "--no-cache",
                "--no-progress",
                "--retries",
                "0",
                "--concurrency",
                "3",
                "--out",
                str(out),
            ]
        )
    printed = " ".join(capsys.readouterr().out.split())
    # one refused request (the server's HTTP 500), never retried; then one request per item
    assert tap.seen.count(("json_schema", 500)) == 1
    assert [s for s in tap.seen if s[0] == "json_schema"] == [("json_schema", 500)]
    assert tap.seen.count(("json_object", 200)) == len(ITEMS) == len(tap.seen) - 1
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert code in (EXIT_OK, EXIT_FAILED_ITEMS)  # a random tiny model may write no verdict
    for row in rows:
        assert row["judge_score"] is not None or row["judge_error"].startswith("parse:"), row
    summary = json.loads((out / "summary.json").read_text())
    assert summary["attempts"] == len(ITEMS) + 1
    (note,) = summary["notes"]
    assert summary["notes"][note] == len(ITEMS)
    assert "refuses response_format json_schema" in note and "json_object" in note
    assert " ".join(note.split()) in printed and "Traceback" not in printed
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "--json-mode json_object" in warnings[0]
