"""The thinking budget in legs (the vllm backend's way, vLLM itself being absent here): a
scripted model's token stream goes through ThinkingLegs as the backend drives it, and the
result is what the hf backend's logits processor gives for the same stream."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from jurist.models._thinking import ThinkingLegs

OPEN, CLOSE, EOS = 90, 91, 99
Script = Callable[[Sequence[int]], int]


def legs_run(script: Script, *, budget: int, opened: bool, max_tokens: int) -> list[int]:
    """Drive ``script`` (next token from the tokens so far) leg by leg, as the backend does."""
    legs = ThinkingLegs(
        budget=budget, open_ids=(OPEN,), close_ids=(CLOSE,), opened=opened, max_tokens=max_tokens
    )
    out: list[int] = []
    while (n := legs.next_leg()) is not None:
        generated: list[int] = []
        finished = False
        for _ in range(n):
            token = script(out + generated)
            if token == EOS:
                finished = True
                break
            generated.append(token)
        out += generated
        out += legs.take(generated, finished=finished)
    return out


def forced_run(script: Script, *, budget: int, opened: bool, max_tokens: int) -> list[int]:
    """The same stream under the hf rule: one pass, the closing tag forced at the budget."""
    out: list[int] = []
    inside, spent, closed = opened, 0, False
    while len(out) < max_tokens:
        token = CLOSE if inside and not closed and spent >= budget else script(out)
        if token == EOS:
            break
        out.append(token)
        if token == CLOSE and inside:
            inside, closed = False, True
        elif token == OPEN and not inside and not closed:
            inside = True
        elif inside:
            spent += 1
    return out


def never_closes(tokens: Sequence[int]) -> int:
    return 1 + len(tokens) % 7


def closes_after(n: int) -> Script:
    def script(tokens: Sequence[int]) -> int:
        if CLOSE in tokens:
            return EOS if len(tokens) > tokens.index(CLOSE) + 3 else 5
        return CLOSE if len(tokens) == n else 2

    return script


def opens_late(tokens: Sequence[int]) -> int:
    if len(tokens) == 3:
        return OPEN
    if CLOSE in tokens:
        return EOS if len(tokens) > tokens.index(CLOSE) + 2 else 4
    return 3


@pytest.mark.parametrize(
    ("script", "opened"),
    [(never_closes, True), (closes_after(3), True), (closes_after(20), True), (opens_late, False)],
)
@pytest.mark.parametrize("budget", [1, 5, 12])
@pytest.mark.parametrize("max_tokens", [4, 16, 40])
def test_legs_give_what_the_forcing_processor_gives(
    script: Script, opened: bool, budget: int, max_tokens: int
) -> None:
    legs = legs_run(script, budget=budget, opened=opened, max_tokens=max_tokens)
    forced = forced_run(script, budget=budget, opened=opened, max_tokens=max_tokens)
    assert legs == forced
    assert len(legs) <= max_tokens


def test_thinking_never_passes_the_budget() -> None:
    out = legs_run(never_closes, budget=6, opened=True, max_tokens=30)
    assert out.index(CLOSE) == 6  # six thinking tokens, then the forced tag
    assert len(out) == 30  # and generation went on to the limit


def test_no_room_to_close_leaves_the_trace_cut() -> None:
    out = legs_run(never_closes, budget=6, opened=True, max_tokens=6)
    assert CLOSE not in out and len(out) == 6
