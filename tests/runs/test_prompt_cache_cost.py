"""Prompt caching counted right: 1,000 judgments with a long shared rubric against loopback
servers that cache prompt prefixes and report it as Anthropic and OpenAI do, with and
without caching; the summary's cost, tokens and saving."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._cli_run import run as cli
from tests._cli_run import write
from tests._prompt_cache_server import AnthropicCacheServer, OpenAICacheServer

N = 1000
RUBRIC = " ".join(
    f"Criterion {i}: the response must be accurate, complete, concise and cite its sources."
    for i in range(70)
)  # about 6,000 characters: past Anthropic's 1,024-token minimum


def _yes(body: dict[str, Any]) -> str:
    return "Yes"


def _data(tmp_path: Path) -> Path:
    rows = [{"prompt": f"Question {i}?", "response": f"Answer {i}."} for i in range(N)]
    return write(tmp_path / "data.jsonl", rows)


def _judge(
    capsys: pytest.CaptureFixture[str], data: Path, out: Path, model: str, *extra: str
) -> tuple[dict[str, Any], str]:
    code, text = cli(
        [
            "judge",
            str(data),
            "--criteria",
            RUBRIC,
            "--model",
            model,
            "--out",
            str(out),
            "--no-cache",
            "--concurrency",
            "8",
            *extra,
        ],
        capsys,
    )
    assert code == 0, text
    return json.loads((out / "summary.json").read_text()), text


def test_anthropic_cache_writes_and_reads_counted_and_priced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _data(tmp_path)
    model = "anthropic:claude-sonnet-4-5"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with AnthropicCacheServer(_yes) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        cached, shown = _judge(capsys, data, tmp_path / "cached", model)
        marked = sum(isinstance(b.get("system"), list) for b in server.bodies)
    with AnthropicCacheServer(_yes) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        plain, _ = _judge(capsys, data, tmp_path / "plain", model, "--no-prompt-cache")
        unmarked = sum(isinstance(b.get("system"), list) for b in server.bodies)
    assert (marked, unmarked) == (N, 0)
    # every prompt token counted either way: writes are no longer lost
    assert cached["prompt_tokens"] == plain["prompt_tokens"]
    assert cached["cache_write_tokens"] > 0 and cached["cached_tokens"] > 0
    assert plain["cached_tokens"] == plain["cache_write_tokens"] == 0
    assert cached["cost"] < plain["cost"]
    assert cached["cost_without_prompt_cache"] == pytest.approx(plain["cost"])
    assert cached["prompt_cache_saved"] == pytest.approx(plain["cost"] - cached["cost"])
    assert "prompt cache" in shown and "saved $" in shown
    print(
        f"\nanthropic {N} judgments: cost ${cached['cost']:.4f} with caching "
        f"(read {cached['cached_tokens']}, written {cached['cache_write_tokens']} of "
        f"{cached['prompt_tokens']} prompt tokens) vs ${plain['cost']:.4f} without; "
        f"saved ${cached['prompt_cache_saved']:.4f}"
    )


def test_openai_cached_tokens_priced_at_the_cached_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _data(tmp_path)
    model = "openai:gpt-4o-mini"
    with OpenAICacheServer(_yes) as server:
        cached, shown = _judge(
            capsys,
            data,
            tmp_path / "cached",
            model,
            "--base-url",
            server.base_url,
            "--api-key",
            "x",
            "--json-mode",
            "none",
        )
    with OpenAICacheServer(_yes, caching=False) as server:
        plain, _ = _judge(
            capsys,
            data,
            tmp_path / "plain",
            model,
            "--base-url",
            server.base_url,
            "--api-key",
            "x",
            "--json-mode",
            "none",
        )
    assert cached["prompt_tokens"] == plain["prompt_tokens"]
    assert cached["cached_tokens"] > 0 and cached["cache_write_tokens"] == 0
    assert cached["cost"] < plain["cost"]
    assert cached["cost_without_prompt_cache"] == pytest.approx(plain["cost"])
    assert "saved $" in shown
    print(
        f"\nopenai {N} judgments: cost ${cached['cost']:.4f} with caching "
        f"(read {cached['cached_tokens']} of {cached['prompt_tokens']} prompt tokens) vs "
        f"${plain['cost']:.4f} without; saved ${cached['prompt_cache_saved']:.4f}"
    )
