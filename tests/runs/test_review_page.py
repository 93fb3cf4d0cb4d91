"""The review page driven in a real headless Chromium (``jurist review RUN`` in a process of
its own): two annotators label at once with keys and clicks; the server is SIGKILLed in the
middle of writing a label and started again: no label lost, torn or written twice; hostile
item text and a hostile annotator name stay text. Screenshots go to
``$JURIST_SCREENSHOTS`` (see tests/_chromium.py)."""

from __future__ import annotations

import base64
import json
import os
import signal
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jurist
from tests._cdp import Browser, shared_browser
from tests._chromium import non_white_share, shots_dir
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
HOSTILE_NAME = 'eve"><img src=x onerror="window.__pwned=3">'
TOKEN = "test-token-0123456789abcdef"
SAVED = "document.getElementById('status').textContent === 'all labels saved'"


def shows(element: str, text: str) -> str:
    """A page expression: the element's text holds ``text``."""
    return f"document.getElementById({json.dumps(element)}).innerText.includes({json.dumps(text)})"


def _png(rgb: tuple[int, int, int], size: int = 24) -> str:
    raw = b"".join(b"\x00" + bytes(rgb) * size for _ in range(size))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    head = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(raw))
    png += chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(png).decode()


ITEMS: list[dict[str, Any]] = [
    {
        "id": HOSTILE,
        "prompt": HOSTILE,
        "response": f'" onmouseover="window.__pwned=4" x="{HOSTILE}',
    },
    {
        "id": "chat",
        "prompt": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What colour is this?"},
                    {"type": "image_url", "image_url": {"url": _png((200, 30, 30))}},
                ],
            },
        ],
        "response": "Red.",
    },
    *(
        {"id": f"q{i}", "prompt": f"What is {i} + {i}?", "response": str(2 * i + i % 2)}
        for i in range(2, 8)
    ),
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("review") / "run"
    verdicts = [str(1 + i % 5) for i in range(len(ITEMS))]
    judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=verdicts), template="likert")
    jurist.evaluate(ITEMS, judge, run_dir=folder, concurrency=1)
    return folder


class Server:
    """``jurist review`` (or the tearing script) in a process of its own."""

    def __init__(self, run: Path, port: int, *, tear: int | None = None) -> None:
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
        args = [str(run), "--port", str(port), "--token", TOKEN]
        if tear is None:
            cmd = [sys.executable, "-m", "jurist", "review", *args]
        else:
            env["JURIST_TEST_TEAR"] = str(tear)
            cmd = [sys.executable, str(ROOT / "tests/runs/review_torn_server.py"), *args]
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        assert first.startswith("review page: "), first + self.proc.stdout.read()
        self.url = first.split(": ", 1)[1].strip()
        self.base = self.url.split("?")[0]

    def wait_line(self, prefix: str) -> str:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, f"the server ended without printing {prefix!r}"
            if line.startswith(prefix):
                return line

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)


class Tab:
    """One page in its own browser context (its own storage: one annotator), kept open."""

    def __init__(self, browser: Browser, url: str, size: tuple[int, int] = (1300, 1000)) -> None:
        self.b = browser
        self.context = browser.send("Target.createBrowserContext")["browserContextId"]
        target = browser.send(
            "Target.createTarget", url="about:blank", browserContextId=self.context
        )["targetId"]
        self.s = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        browser.send("Page.enable", self.s)
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            self.s,
            width=size[0],
            height=size[1],
            deviceScaleFactor=1,
            mobile=False,
        )
        browser.send("Page.navigate", self.s, url=url)
        browser._wait_for("Page.loadEventFired", self.s)

    def eval(self, expression: str) -> Any:
        answer = self.b.send("Runtime.evaluate", self.s, expression=expression, returnByValue=True)
        assert "exceptionDetails" not in answer, answer
        return answer["result"].get("value")

    def wait(self, expression: str, what: str, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.05)  # polling the page for a condition, not racing it
        raise AssertionError(
            f"the page never showed {what}: {self.eval('document.body.innerText')}"
        )

    def key(self, key: str) -> None:
        codes = {"ArrowRight": 39, "ArrowLeft": 37, "Enter": 13}
        code = codes[key] if key in codes else ord(key.upper())
        params: dict[str, Any] = {"key": key, "code": key, "windowsVirtualKeyCode": code}
        if len(key) == 1:
            params["text"] = key
        self.b.send("Input.dispatchKeyEvent", self.s, type="keyDown", **params)
        self.b.send("Input.dispatchKeyEvent", self.s, type="keyUp", **params)

    def click(self, selector: str) -> None:
        box = self.eval(
            f"(function () {{ var r = document.querySelector({json.dumps(selector)})"
            ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }())"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.b.send(
                "Input.dispatchMouseEvent",
                self.s,
                type=kind,
                x=box[0],
                y=box[1],
                button="left",
                clickCount=1,
            )

    def type(self, selector: str, text: str) -> None:
        self.click(selector)
        self.b.send("Input.insertText", self.s, text=text)

    def item(self) -> int:
        return int(self.eval("document.body.dataset.item"))

    def screenshot(self, path: Path) -> Path:
        shot = self.b.send("Page.captureScreenshot", self.s, format="png")
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        self.b.send("Target.disposeBrowserContext", browserContextId=self.context)


def _lines(run: Path) -> list[dict[str, Any]]:
    data = (run / "labels.jsonl").read_bytes()
    assert data == b"" or data.endswith(b"\n"), "the file ends with a torn line"
    return [json.loads(line) for line in data.splitlines()]


@pytest.fixture
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    yield shared_browser(tmp_path_factory)


def _fresh(run: Path) -> None:
    for name in ("labels.jsonl", "labels.jsonl.torn"):
        (run / name).unlink(missing_ok=True)


def test_two_annotators_label_at_once_with_keys_and_clicks(
    run_dir: Path, browser: Browser, tmp_path: Path
) -> None:
    _fresh(run_dir)
    server = Server(run_dir, free_port())
    shots = shots_dir(tmp_path)
    try:
        ana = Tab(browser, server.url + "&annotator=ana")
        eve = Tab(browser, server.url + "&annotator=" + urllib.request.quote(HOSTILE_NAME))
        try:
            for tab in (ana, eve):
                tab.wait(
                    "document.getElementById('status').textContent === 'all labels saved'", "ready"
                )
                # hostile item text is text: no script ran, no element came from the data
                assert tab.eval("window.__pwned") is None
                assert tab.eval("document.querySelectorAll('#item img').length") == 0
                assert HOSTILE in tab.eval("document.getElementById('item').innerText")
                assert "Hidden until you give your label" in tab.eval(
                    "document.getElementById('verdict').innerText"
                )
            ana.screenshot(shots / "review-hostile-item.png")
            # ana labels with number keys, undoes one, skips one; eve with clicks on the scale
            ana.key("4")
            ana.wait(
                "document.getElementById('verdict').innerText.includes('score')", "the verdict"
            )
            ana.key("n")
            ana.key("2")
            ana.key("u")
            ana.wait(
                "document.getElementById('mine').innerText.includes('Not labelled')", "the undo"
            )
            ana.key("3")
            ana.key("s")
            ana.key("5")
            eve.click("#scale button[data-point='3']")
            eve.wait(
                "document.getElementById('verdict').innerText.includes('score')", "the verdict"
            )
            eve.key("ArrowRight")
            eve.type("#note", "colour is right; " + HOSTILE)
            eve.key("Enter")  # in the note: a newline, not a shortcut
            eve.click("#scale button[data-point='2']")
            for tab in (ana, eve):
                tab.wait(
                    "document.getElementById('status').textContent === 'all labels saved'", "saved"
                )
            ana.wait("document.getElementById('agreement-table') !== null", "the agreement table")
            ana.key("ArrowLeft")
            ana.key("ArrowLeft")
            ana.wait(shows("others", "eve"), "eve's label")
            assert ana.eval("window.__pwned") is None
            assert HOSTILE_NAME in ana.eval("document.getElementById('others').innerText")
            assert ana.eval("document.querySelectorAll('#side img').length") == 0
            png = ana.screenshot(shots / "review-two-annotators.png")
            assert non_white_share(png) > 0.02
            eve.screenshot(shots / "review-conversation.png")
            assert eve.eval("document.querySelectorAll('#item img.item-image').length") == 1
            eve.wait(
                "document.querySelector('#item img.item-image').naturalWidth === 24", "the image"
            )
        finally:
            ana.close()
            eve.close()
    finally:
        server.stop()
    lines = _lines(run_dir)
    latest: dict[tuple[int, str], Any] = {}
    for line in lines:
        latest[(line["item"], line["annotator"])] = line["label"]
    ids = [item["id"] for item in ITEMS]
    assert {k: v for k, v in latest.items() if v is not None} == {
        (0, "ana"): 4,
        (1, "ana"): 3,
        (2, "ana"): 5,
        (0, HOSTILE_NAME): 4,
        (1, HOSTILE_NAME): 3,
    }, ids
    assert [ln["label"] for ln in lines if ln["annotator"] == "ana" and ln["item"] == 1] == [
        2,
        None,
        3,
    ]
    noted = [ln for ln in lines if ln["note"]]
    assert len(noted) == 1 and noted[0]["note"] == "colour is right; " + HOSTILE
    assert len({(ln["item"], ln["annotator"], ln["at"]) for ln in lines}) == len(lines)


def test_a_server_killed_mid_write_loses_tears_and_doubles_nothing(
    run_dir: Path, browser: Browser, tmp_path: Path
) -> None:
    _fresh(run_dir)
    port = free_port()
    server = Server(run_dir, port, tear=3)  # the third label written is torn
    shots = shots_dir(tmp_path)
    ana = Tab(browser, server.url + "&annotator=ana")
    bob = Tab(browser, server.url + "&annotator=bob")
    try:
        for tab in (ana, bob):
            tab.wait(
                "document.getElementById('status').textContent === 'all labels saved'", "ready"
            )
        ana.key("1")
        bob.key("2")
        for tab in (ana, bob):
            tab.wait(
                "document.getElementById('status').textContent === 'all labels saved'", "saved"
            )
        ana.key("n")
        ana.key("3")  # the write the server is killed in
        server.wait_line("TORN")
        torn = (run_dir / "labels.jsonl").read_bytes()
        assert not torn.endswith(b"\n")  # the half line really is in the file
        server.kill()
        bob.key("n")
        bob.key("4")  # given while the server is down
        for tab in (ana, bob):
            tab.wait("document.getElementById('status').className === 'bad'", "the server is down")
        ana.screenshot(shots / "review-server-down.png")
        server = Server(run_dir, port)
        for tab in (ana, bob):
            tab.wait(
                "document.getElementById('status').textContent === 'all labels saved'",
                "saved again",
                90,
            )
        ana.key("n")
        ana.key("5")
        ana.wait(SAVED, "saved")
        # the page follows the restarted server's file: both annotators, counted
        ana.wait(shows("agreement", "ana: 3, bob: 2"), "the counts after the restart")
        ana.screenshot(shots / "review-after-restart.png")
    finally:
        ana.close()
        bob.close()
        server.stop()
    lines = _lines(run_dir)
    given = sorted((ln["annotator"], ln["item"], ln["label"]) for ln in lines)
    assert given == [("ana", 0, 1), ("ana", 1, 3), ("ana", 2, 5), ("bob", 0, 2), ("bob", 1, 4)]
    assert len({(ln["item"], ln["annotator"], ln["at"]) for ln in lines}) == len(lines)
    kept = (run_dir / "labels.jsonl.torn").read_bytes()
    assert kept.startswith(b'{"item":1') and kept.count(b"\n") == 1


def test_every_route_needs_the_token(run_dir: Path) -> None:
    server = Server(run_dir, free_port())
    try:
        for path in (
            "/",
            "/api/state?since=0",
            "/api/verdict?item=0&annotator=a",
            "/image/" + "0" * 64,
        ):
            for query in ("", "&token=wrong" if "?" in path else "?token=wrong"):
                with pytest.raises(urllib.error.HTTPError) as e:
                    urllib.request.urlopen(server.base.rstrip("/") + path + query, timeout=30)
                assert e.value.code == 403
        request = urllib.request.Request(
            server.base + "api/label?token=x", data=b"{}", method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(request, timeout=30)
        assert e.value.code == 403
        page = urllib.request.urlopen(server.url, timeout=30)
        html = page.read().decode()
        assert page.headers["Referrer-Policy"] == "no-referrer"
        assert "window.__pwned = 1</script>" not in html and "<img src=x" not in html
        asked = f"{server.base}api/verdict?token={TOKEN}&item=0&annotator=nobody"
        verdict = json.load(urllib.request.urlopen(asked, timeout=30))
        assert verdict["verdict"] is None  # hidden until that annotator labels the item
    finally:
        server.stop()
