"""Parse time of 1 MB adversarial judge outputs, per template, and the event-loop stall.

Every built-in template and the four YAML parser types (form, labels, regex, json) parse
outputs made of one short unit repeated to the size asked (``[[`` a million times over, a
megabyte of newlines, ``1 `` pairs, ...), once as text, once with explanations and once as
JSON. Before jurist parsed linearly, a 32 KB output of ``[[`` took 9 s; a quadratic parser
would take hours on 1 MB, so every figure here is a check too.

Then the stall: while a 1 MB output is parsed, how long does the event loop go without
running other coroutines? ``Template.parse`` called inline blocks it for the whole parse;
``Template.aparse`` (what judges call) parses outputs above ``PARSE_INLINE_MAX`` in a worker
thread, so the loop keeps serving the other calls in flight.

    python benchmarks/parse_adversarial.py                 # 1 MB, every template
    python benchmarks/parse_adversarial.py --size 100000 --templates likert mt_bench
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from jurist.templates import Template, list_templates
from jurist.templates._yaml import template_from_dict

UNITS = [
    "[[", "[[1", "]]", "Rating: ", "Score: ", "Score:\n", "[RESULT] ", "{", '{"verdict": ',
    "1", "1-", "1 ", "1.", "-", " ", "\n", "*", "\n*", "<think>", "</think>", "<think></think>",
    "```", "``` ", "not ", "I am not ", "Explanation: ", "Explanation:\n", "9" * 40 + "/",
    "a" * 30 + " ", "1 out of ", "</answer >",
]  # fmt: skip


def _yaml(parser: dict[str, Any], scale: dict[str, Any]) -> Template:
    return template_from_dict(
        {
            "name": f"yaml_{parser['type']}",
            "messages": [{"role": "user", "content": "<r>{response}</r>"}],
            "fields": ["response"],
            "scale": scale,
            "parser": parser,
        }
    )


def templates() -> dict[str, Template]:
    labels = {"labels": {"Yes": 1.0, "No": 0.0, "not sure": 0.5}}
    likert = {"range": {"low": 1, "high": 5, "integer": True}}
    return {
        **list_templates(),
        "yaml_form": _yaml({"type": "form", "open": "Verdict: "}, likert),
        "yaml_labels": _yaml(
            {"type": "labels", "open": "[[", "close": "]]", "bare": False}, labels
        ),
        "yaml_regex": _yaml({"type": "regex", "pattern": r"^Verdict:\s*(\w+)"}, labels),
        "yaml_json": _yaml({"type": "json", "key": "verdict"}, likert),
    }


def adversarial(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def time_parses(t: Template, text: str) -> float:
    """Seconds for the slowest of: text, text with explanations, JSON."""
    worst = 0.0
    for kwargs in ({}, {"explanations": True}, {"json": True}):
        start = time.perf_counter()
        t.parse(text, **kwargs)
        worst = max(worst, time.perf_counter() - start)
    return worst


async def _max_gap(work: Any) -> float:
    """The longest time the event loop went without running a ticking coroutine."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    await work()
    done.set()
    await task
    return max(gaps)


def stall(t: Template, text: str) -> tuple[float, float]:
    async def inline() -> None:
        t.parse(text)

    async def offloaded() -> None:
        await t.aparse(text)

    return asyncio.run(_max_gap(inline)), asyncio.run(_max_gap(offloaded))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=1_000_000, help="characters per output")
    ap.add_argument("--templates", nargs="*", help="names (default: all)")
    args = ap.parse_args()
    every = templates()
    names = args.templates or sorted(every)
    print(f"parse time of a {args.size:,}-character adversarial output (slowest of text,")
    print("explanations and JSON parsing), per template: worst unit, its time, and the total")
    print(f"over all {len(UNITS)} units\n")
    print(f"{'template':32} {'worst unit':>16} {'worst s':>9} {'all units s':>12}")
    overall, slowest = 0.0, ("", "")
    for name in names:
        t = every[name]
        times = {unit: time_parses(t, adversarial(unit, args.size)) for unit in UNITS}
        unit, worst = max(times.items(), key=lambda kv: kv[1])
        if worst > overall:
            overall, slowest = worst, (name, unit)
        print(f"{name:32} {unit!r:>16} {worst:9.3f} {sum(times.values()):12.2f}")
    print(f"\nslowest single parse of a {args.size:,}-character output: {overall:.3f} s")
    name, unit = slowest
    blocked, free = stall(every[name], adversarial(unit, args.size))
    print(
        f"\nlongest event-loop stall while {name} parses that output ({unit!r} repeated):"
        f"\n  Template.parse inline: {blocked * 1000:.0f} ms"
        f"\n  Template.aparse (what judges call): {free * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
