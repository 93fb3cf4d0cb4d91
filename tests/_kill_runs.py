"""The runs the SIGKILL tests kill, one function each: the test starts one in a process of its
own (``tests._forked.fork``), kills it, and resumes it by calling the same function in its
own process (the resume needs no fresh interpreter: it only has to be a process other than
the killed one, reading what that one stored).

- ``logged DATA RUN_DIR LOG [HOLD_FROM]``: a mock judge with latency; each answered call
  appends the item's number to LOG (tests/engines/test_evaluate_kill.py).
- ``repeats DATA RUN_DIR LOG [HOLD_FROM]``: 4 repeats, later repeats answering later; each
  answered call appends ``item repeat`` to LOG (tests/trust/test_repeats_kill.py).

With ``HOLD_FROM`` (the run the test kills), the calls of the items from that number on
(for ``repeats``: their repeats from the third on) are never answered: the run cannot end
before the test kills it, however slow the machine, and the process it kills is still at
work (its other calls in flight) when it does.
- ``openai DATA RUN_DIR URL``: an ``openai:`` judge on the server at URL
  (tests/runs/test_run_decisions.py).
- ``batch URL RUN_DIR DATA``: the same through the Batch API, re-asking unreadable verdicts
  twice (tests/runs/test_run_decisions.py).
- ``cli ARG...``: ``jurist ARG...``, exiting with its status (tests/cli/test_cli_run_folders.py).
"""

from __future__ import annotations

import asyncio
import re
import sys

import jurist
from jurist.models import Model
from jurist.types import Completion, Request, Usage

REPEATS = 4


async def never() -> None:
    """Wait for an answer that never comes (the process is killed meanwhile)."""
    await asyncio.Event().wait()


def logged(data: str, run_dir: str, log: str, hold_from: str = "") -> None:
    async def answer(request: Request) -> str:
        found = re.search(r"ITEM-(\d+)-END", request.messages[-1].content)
        assert found is not None
        if hold_from and int(found.group(1)) >= int(hold_from):
            await never()
        with open(log, "a") as f:
            f.write(found.group(1) + "\n")
        return "Correct"

    model = jurist.get_model("mock:judge", outputs=answer, latency=0.02)
    jurist.evaluate(data, jurist.LLMJudge(model), run_dir=run_dir, concurrency=4)


class Staggered(Model):
    """A repeat's answer takes longer the later the repeat: items finish one repeat at a
    time; each answered call is logged."""

    provider, name = "mock", "staggered"

    def __init__(self, log: str, hold_from: int | None = None) -> None:
        super().__init__()
        self.log = log
        self.hold_from = hold_from

    async def complete(self, request: Request) -> Completion:
        found = re.search(r"ITEM-(\d+)-END", request.messages[-1].content)
        assert found is not None
        item = int(found.group(1))
        await asyncio.sleep(0.004 * (1 + 2 * request.repeat))
        if self.hold_from is not None and item >= self.hold_from and request.repeat >= 2:
            await never()  # the item stays cut: two repeats stored, two never answered
        with open(self.log, "a") as f:
            f.write(f"{item} {request.repeat}\n")
        text = "Correct" if (item + request.repeat) % 3 else "Incorrect"
        return Completion(text=text, usage=Usage(calls=1, attempts=1))


def repeats(data: str, run_dir: str, log: str, hold_from: str = "") -> None:
    judge = jurist.LLMJudge(Staggered(log, int(hold_from) if hold_from else None))
    jurist.evaluate(data, judge, run_dir=run_dir, concurrency=4, repeats=REPEATS)


def openai(data: str, run_dir: str, url: str) -> None:
    model = jurist.get_model("openai:tiny", base_url=url, api_key="x", timeout=20)
    jurist.evaluate(data, jurist.LLMJudge(model), run_dir=run_dir, concurrency=2)


def batch(base_url: str, run_dir: str, data: str) -> None:
    from jurist.engines import BatchAPIEngine, BatchAPIOptions

    model = jurist.get_model("openai:judge", base_url=base_url, api_key="k")
    engine = BatchAPIEngine(BatchAPIOptions(poll_interval=0.02))
    jurist.evaluate(data, jurist.LLMJudge(model), run_dir=run_dir, retries=2, engine=engine)


def cli(*args: str) -> None:
    from jurist.cli import main

    sys.exit(main(list(args)))
