"""The runs the SIGKILL tests kill, one function each: the test starts one in a process of its
own (``tests._forked.fork``), kills it, and resumes it by calling the same function in its
own process (the resume needs no fresh interpreter: it only has to be a process other than
the killed one, reading what that one stored).

- ``logged DATA RUN_DIR LOG``: a mock judge with latency; each answered call appends the
  item's number to LOG (tests/test_evaluate_kill.py).
- ``repeats DATA RUN_DIR LOG``: 4 repeats, later repeats answering later; each answered call
  appends ``item repeat`` to LOG (tests/test_repeats_kill.py).
- ``openai DATA RUN_DIR URL``: an ``openai:`` judge on the server at URL
  (tests/test_run_decisions.py).
- ``batch URL RUN_DIR DATA``: the same through the Batch API, re-asking unreadable verdicts
  twice (tests/test_run_decisions.py).
- ``cli ARG...``: ``jurist ARG...``, exiting with its status (tests/test_cli_run_folders.py).
"""

from __future__ import annotations

import asyncio
import re
import sys

import jurist
from jurist.types import Completion, Request, Usage

REPEATS = 4


def logged(data: str, run_dir: str, log: str) -> None:
    def answer(request: Request) -> str:
        found = re.search(r"ITEM-(\d+)-END", request.messages[-1].content)
        assert found is not None
        with open(log, "a") as f:
            f.write(found.group(1) + "\n")
        return "Correct"

    model = jurist.get_model("mock:judge", outputs=answer, latency=0.02)
    jurist.evaluate(data, jurist.LLMJudge(model), run_dir=run_dir, concurrency=4)


class Staggered(jurist.models.Model):
    """A repeat's answer takes longer the later the repeat: items finish one repeat at a
    time; each answered call is logged."""

    provider, name = "mock", "staggered"

    def __init__(self, log: str) -> None:
        super().__init__()
        self.log = log

    async def complete(self, request: Request) -> Completion:
        found = re.search(r"ITEM-(\d+)-END", request.messages[-1].content)
        assert found is not None
        item = int(found.group(1))
        await asyncio.sleep(0.004 * (1 + 2 * request.repeat))
        with open(self.log, "a") as f:
            f.write(f"{item} {request.repeat}\n")
        text = "Correct" if (item + request.repeat) % 3 else "Incorrect"
        return Completion(text=text, usage=Usage(calls=1, attempts=1))


def repeats(data: str, run_dir: str, log: str) -> None:
    judge = jurist.LLMJudge(Staggered(log))
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
