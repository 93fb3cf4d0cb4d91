"""One headless Chromium for many page loads, driven over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: no port, no network). Each :meth:`Browser.load` opens the
address in a fresh browser context (its own storage, as a fresh profile would give), waits
for the page's load event (the report's script has drawn by then: it runs at the end of the
body), and returns what ``--dump-dom`` and ``--screenshot`` would: the DOM's HTML and, if
asked, a PNG of the first ``size`` pixels. Starting Chromium costs about a second; a page
load in a started one, a tenth of that: the report tests share one (``shared_browser``).
Tests skip without Chromium."""

from __future__ import annotations

import atexit
import base64
import contextlib
import fcntl
import json
import os
import select
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests._chromium import HEADLESS, chromium

__all__ = ["Browser", "Loaded", "shared_browser"]

_TIMEOUT = 60.0


@dataclass(frozen=True)
class Loaded:
    """A loaded page: its DOM as HTML (what ``--dump-dom`` prints) and its screenshot."""

    dom: str
    png: Path | None


class Browser:
    """A started headless Chromium; :meth:`close` ends it."""

    def __init__(self, profile: Path) -> None:
        found = chromium()  # or skip the test
        profile.mkdir(parents=True, exist_ok=True)
        to_child, self._to_browser = os.pipe()  # Chromium reads commands on its fd 3
        self._from_browser, from_child = os.pipe()  # and writes answers on its fd 4
        # above fd 4, so that the dup2 to 3 and 4 below never lands on itself
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_child, from_child)]
        for fd in (to_child, from_child):
            os.close(fd)
        self._log = profile / "chromium.log"
        args = [
            found,
            *HEADLESS,
            f"--user-data-dir={profile}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, str(self._log), os.O_WRONLY | os.O_CREAT, 0o644),
            (os.POSIX_SPAWN_DUP2, 1, 2),
            (os.POSIX_SPAWN_DUP2, high[0], 3),
            (os.POSIX_SPAWN_DUP2, high[1], 4),
        ]
        self.pid = os.posix_spawn(found, args, dict(os.environ), file_actions=actions)
        for fd in high:
            os.close(fd)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._closed = False

    # -- the protocol ---------------------------------------------------------------------

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_browser], [], [], max(0.0, left))
            if not ready:
                raise AssertionError(f"Chromium did not answer in time; its log:\n{self.log()}")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise AssertionError(f"Chromium closed its pipe; its log:\n{self.log()}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its answer (events that come first are kept)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + _TIMEOUT
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next_id:
                assert "error" not in answer, (method, answer["error"])
                result: dict[str, Any] = answer.get("result", {})
                return result
            if "method" in answer:
                self._events.append(answer)

    def _wait_for(self, method: str, session: str) -> None:
        deadline = time.monotonic() + _TIMEOUT
        while True:
            for event in self._events:
                if event["method"] == method and event.get("sessionId") == session:
                    self._events.remove(event)
                    return
            event = self._read(deadline)
            if "method" in event:
                self._events.append(event)

    # -- pages ----------------------------------------------------------------------------

    def load(
        self, url: str, *, png: Path | None = None, size: tuple[int, int] = (1200, 1500)
    ) -> Loaded:
        """``url`` freshly loaded (a new context, never a same-page address change); its DOM,
        and with ``png`` a screenshot of the first ``size`` pixels written there."""
        context = self.send("Target.createBrowserContext")["browserContextId"]
        try:
            target = self.send("Target.createTarget", url="about:blank", browserContextId=context)[
                "targetId"
            ]
            session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            self.send("Page.enable", session)
            width, height = size
            self.send(
                "Emulation.setDeviceMetricsOverride",
                session,
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=False,
            )
            self._events = [e for e in self._events if e.get("sessionId") != session]
            navigated = self.send("Page.navigate", session, url=url)
            assert "errorText" not in navigated, (url, navigated)
            self._wait_for("Page.loadEventFired", session)
            dom = self.send(
                "Runtime.evaluate",
                session,
                expression="document.documentElement.outerHTML",
                returnByValue=True,
            )["result"]["value"]
            if png is not None:
                shot = self.send("Page.captureScreenshot", session, format="png")
                png.write_bytes(base64.b64decode(shot["data"]))
            return Loaded(dom=str(dom), png=png)
        finally:
            self.send("Target.disposeBrowserContext", browserContextId=context)
            self._events = []

    def alive(self) -> bool:
        """Whether Chromium still runs (one that ended is reaped and closed)."""
        if self._closed:
            return False
        if os.waitpid(self.pid, os.WNOHANG)[0] == 0:
            return True
        self._closed = True
        os.close(self._to_browser)
        os.close(self._from_browser)
        return False

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return self._log.read_text(errors="replace")[-2000:]
        return ""

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError, AssertionError):
            self.send("Browser.close")
        for _ in range(100):
            done, _status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self._to_browser)
        os.close(self._from_browser)


_SHARED: list[Browser] = []


def shared_browser(tmp_path_factory: pytest.TempPathFactory) -> Browser:
    """This process's one Chromium, started on first use and shared by the report tests'
    modules (each page still loads fresh, in its own context); it ends with the process
    (Chromium quits when its pipe closes, and at exit it is closed first)."""
    if _SHARED and _SHARED[0].alive():
        return _SHARED[0]
    started = Browser(tmp_path_factory.mktemp("chromium"))
    atexit.register(started.close)
    _SHARED[:] = [started]
    return started
