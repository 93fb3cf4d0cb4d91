"""Parsing is linear in the output's length (issue 15.6).

Each parse of a long adversarial output runs in a thread joined with a generous timeout: a
quadratic parser (9 s for 32 KB before the fix) does not finish in time, a linear one finishes
in well under a second. No timing is asserted beyond "it finished".
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from jurist.templates import Template, list_templates
from jurist.templates._yaml import template_from_dict

SIZE = 64_000
UNITS = [
    "[[", "[[1", "]]", "Rating: ", "Score: ", "Score:\n", "[RESULT] ", "{", '{"verdict": ',
    "1", "1-", "1 ", "1.", "-", " ", "\n", "*", "\n*", "<think>", "</think>", "<think></think>",
    "```", "``` ", "not ", "I am not ", "Explanation: ", "Explanation:\n", "9" * 40 + "/",
    "a" * 30 + " ", "1 out of ",
]  # fmt: skip


def _yaml(parser: dict[str, Any], scale: dict[str, Any]) -> Template:
    return template_from_dict(
        {
            "name": f"y_{parser['type']}",
            "messages": [{"role": "user", "content": "<r>{response}</r>"}],
            "fields": ["response"],
            "scale": scale,
            "parser": parser,
        }
    )


LABELS = {"labels": {"Yes": 1.0, "No": 0.0, "not sure": 0.5}}
RANGE = {"range": {"low": 1, "high": 5, "integer": True}}
TEMPLATES: dict[str, Template] = {
    **list_templates(),
    "yaml_form": _yaml({"type": "form", "open": "Verdict: "}, RANGE),
    "yaml_labels": _yaml({"type": "labels", "open": "[[", "close": "]]", "bare": False}, LABELS),
    "yaml_regex": _yaml({"type": "regex", "pattern": r"Verdict:\s*(\w+)"}, LABELS),
    "yaml_json": _yaml({"type": "json", "key": "verdict"}, RANGE),
}


def _finishes(fn: Any, timeout: float = 20.0) -> bool:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive()


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_adversarial_outputs_parse_in_linear_time(name: str) -> None:
    t = TEMPLATES[name]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for unit in UNITS:
                text = (unit * (SIZE // len(unit) + 1))[:SIZE]
                for explanations in (False, True):
                    verdict = t.parse(text, explanations=explanations)
                    assert (verdict.score is None) == (verdict.error is not None)
                t.parse(text, json=True)
        except BaseException as e:  # reported by the test thread
            errors.append(e)

    assert _finishes(work), f"{name}: parsing adversarial outputs did not finish"
    assert not errors, errors


def test_a_long_output_still_reads_its_verdict() -> None:
    mt = TEMPLATES["mt_bench"]
    text = "[[" * 100_000 + "\nRating: [[7]]"
    assert mt.parse(text).value == 7.0
    likert = TEMPLATES["likert"]
    assert likert.parse("\n" * 100_000 + "Score: 4").value == 4.0


def test_aparse_does_not_block_the_event_loop() -> None:
    """A heavy parse runs in a worker thread: other coroutines keep running meanwhile."""
    t = TEMPLATES["mt_bench"]
    text = "[[" * 300_000 + "Rating: [[7]]"
    ticks = 0

    async def ticker(done: asyncio.Event) -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0)

    async def main() -> float | str | None:
        done = asyncio.Event()
        task = asyncio.create_task(ticker(done))
        await asyncio.sleep(0)
        before = ticks
        verdict = await t.aparse(text)
        done.set()
        await task
        assert ticks > before + 1  # the loop ran other work while the parse was under way
        return verdict.value

    assert asyncio.run(main()) == 7.0


def test_aparse_parses_small_outputs_inline() -> None:
    t = TEMPLATES["likert"]
    assert asyncio.run(t.aparse("Score: 4", explanations=True)).value == 4.0


def test_the_judge_parses_a_huge_output_in_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    from jurist import LLMJudge
    from jurist.models import MockModel

    offloaded: list[int] = []
    real = asyncio.to_thread

    async def spy(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        offloaded.append(len(args[0]))
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", spy)
    huge = "[[" * 50_000 + "\nRating: [[7]]"
    judge = LLMJudge(MockModel("j", outputs=[huge, "Rating: [[6]]"]), template="mt_bench")
    first = asyncio.run(judge.judge({"prompt": "q", "response": "a"}))
    second = asyncio.run(judge.judge({"prompt": "q", "response": "b"}))
    assert (first.score, second.score) == (0.7, 0.6)
    assert offloaded == [len(huge)]  # only the long output left the event loop
