"""The bench the SIGKILL test kills (tests/bench/test_bench_kill.py): two setups of mock
judges with latency over the pairs in DATA; each answered call appends ``setup item`` to
LOG. With HOLD (the run the test kills), setup ``second`` never answers the pairs from
number HOLD on, so the bench cannot end before the test kills it."""

from __future__ import annotations

import asyncio
import re

import jurist
from jurist.types import Request


def _judge(setup: str, log: str, hold: int | None) -> jurist.LLMJudge:
    async def answer(request: Request) -> str:
        text = str(request.messages[-1].content)
        found = re.search(r"PAIR-(\d+)-END", text)
        assert found is not None
        order = "ab" if "<answer_a>\nfirst" in text else "ba"
        if hold is not None and setup == "second" and int(found.group(1)) >= hold:
            await asyncio.Event().wait()  # never answered: the process is killed meanwhile
        with open(log, "a") as f:
            f.write(f"{setup} {found.group(1)}:{order}\n")
        return "[[A]]"

    model = jurist.get_model(f"mock:{setup}", outputs=answer, latency=0.01)
    return jurist.LLMJudge(model, template="mt_bench_pair")


def logged_bench(data: str, out: str, log: str, hold: str = "") -> None:
    held = int(hold) if hold else None
    setups = {name: _judge(name, log, held) for name in ("first", "second")}
    jurist.bench(data, setups, out=out, concurrency=4)
