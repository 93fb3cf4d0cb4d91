"""Scalar reward models for real: a tiny random sequence classifier built offline, run by
``hf-reward:`` in process and by ``reward-server:`` against a loopback server speaking
vLLM's (and SGLang's) reward routes; its rewards equal a bare forward pass over each
conversation alone, and they travel through the pointwise, pairwise and RL reward paths."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch
import transformers

import jurist
from jurist.errors import ConfigError
from jurist.judges import RewardModelJudge
from jurist.judges._reward_map import pair_probability, squash
from jurist.rewards._reward_judge import reward_judge_from_kwargs
from jurist.types import Message, Request
from tests._reward_server import RewardRoutes

PAIRS = [
    ("What is 2+2?", "4", "It is five."),
    ("Capital of France?", "Paris, the capital and largest city of France.", "Lyon"),
    ("Say hi.", "hi", "Hello there! How can I help you today with anything at all?"),
    ("Is the sky green?", "No.", "Yes, the sky is green on most days."),
    ("Name a fox.", "The quick brown fox.", "A dog"),
]


@pytest.fixture(scope="module")
def reward_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from jurist.testing import build_tiny_reward_model

    return build_tiny_reward_model(tmp_path_factory.mktemp("tiny-reward"), seed=3)


@pytest.fixture(scope="module")
def bare(reward_dir: Path) -> tuple[object, object]:
    tok = transformers.AutoTokenizer.from_pretrained(reward_dir)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(reward_dir).eval()
    return tok, model


def bare_reward(bare: tuple[object, object], prompt: str, response: str) -> float:
    """One forward pass over one conversation, as a user of transformers writes it."""
    tok, model = bare
    conv = [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
    text = tok.apply_chat_template(conv, tokenize=False)  # type: ignore[attr-defined]
    enc = tok(text, return_tensors="pt", add_special_tokens=False)  # type: ignore[operator]
    with torch.no_grad():
        return float(model(**enc).logits[0, 0])  # type: ignore[operator]


def request(prompt: str, response: str) -> Request:
    return Request(
        messages=(Message(role="user", content=prompt), Message(role="assistant", content=response))
    )


def all_conversations() -> list[tuple[str, str]]:
    return [(p, r) for p, a, b in PAIRS for r in (a, b)]


def test_batched_rewards_equal_a_bare_forward_pass(reward_dir: Path, bare: tuple) -> None:
    # three rows per pass and a token budget that cuts the batch into several passes of
    # unlike widths: padding, bucketing and splitting must not change a reward
    model = jurist.get_model(f"hf-reward:{reward_dir}", max_batch_size=3, max_batch_tokens=90)
    assert model.capabilities.scalar and not model.capabilities.logprobs
    convs = all_conversations()
    done = asyncio.run(model.complete_many([request(p, r) for p, r in convs]))
    expected = [bare_reward(bare, p, r) for p, r in convs]
    assert [c.text for c in done] == [""] * len(convs)
    for got, want in zip(done, expected, strict=True):
        assert got.score == pytest.approx(want, abs=1e-5)
        assert got.usage.prompt_tokens > 0 and got.finish_reason == "score"
    assert len({round(w, 6) for w in expected}) == len(expected)  # the rewards differ

    async def one_by_one() -> list[float | None]:  # concurrent calls, gathered by the queue
        outs = await asyncio.gather(*(model.complete(request(p, r)) for p, r in convs))
        return [c.score for c in outs]

    assert asyncio.run(one_by_one()) == pytest.approx(expected, abs=1e-5)


def test_pointwise_and_pairwise_judges_read_the_rewards(reward_dir: Path, bare: tuple) -> None:
    model = jurist.get_model(f"hf-reward:{reward_dir}")
    point = RewardModelJudge(model, temperature=0.05, center=0.01)
    prompt, a, _ = PAIRS[1]
    out = point.judge_one_sync({"prompt": prompt, "response": a})
    raw = bare_reward(bare, prompt, a)
    assert out.verdict == pytest.approx(raw, abs=1e-5)
    assert out.score == pytest.approx(squash(raw, center=0.01, temperature=0.05), abs=1e-5)
    assert out.confidence == pytest.approx(max(out.score, 1 - out.score))
    raw_judge = point.with_options(squash="none")
    assert raw_judge.judge_one_sync({"prompt": prompt, "response": a}).score == pytest.approx(
        raw, abs=1e-5
    )

    pair = RewardModelJudge(model, pairwise=True, temperature=0.02)
    results = pair.judge_sync(
        [{"prompt": p, "response_a": x, "response_b": y} for p, x, y in PAIRS]
    )
    for (p, x, y), got in zip(PAIRS, results, strict=True):
        ra, rb = bare_reward(bare, p, x), bare_reward(bare, p, y)
        assert got.score == pytest.approx(pair_probability(ra, rb, temperature=0.02), abs=1e-4)
        assert got.winner == ("A" if ra > rb else "B")
        assert got.forward.verdict == pytest.approx(ra - rb, abs=1e-5)
    assert results.summary().n_failed == 0


def test_pairwise_temperature_is_fitted_by_maximum_likelihood(
    reward_dir: Path, bare: tuple
) -> None:
    # soft labels drawn from a known temperature: the likelihood is highest at that one
    judge = RewardModelJudge(f"hf-reward:{reward_dir}", pairwise=True)
    items = [{"prompt": p, "response_a": x, "response_b": y} for p, x, y in PAIRS]
    items += [{"prompt": p, "response_a": y, "response_b": x} for p, x, y in PAIRS]
    truth = 0.004
    labels = [
        pair_probability(
            bare_reward(bare, i["prompt"], i["response_a"]),
            bare_reward(bare, i["prompt"], i["response_b"]),
            temperature=truth,
        )
        for i in items
    ]
    fitted = judge.fit_sync(items, labels)
    assert fitted.config.temperature == pytest.approx(truth, rel=1e-3)
    assert judge.config.temperature == 1.0  # the judge fitted is unchanged


def test_a_reward_model_is_an_rl_reward(reward_dir: Path, bare: tuple) -> None:
    rj = reward_judge_from_kwargs(model=f"hf-reward:{reward_dir}", squash="none")
    assert rj.scalar and rj.kind_name == "reward_model"
    convs = all_conversations()[:4]
    records = rj.score_batch_sync([r for _, r in convs], prompts=[p for p, _ in convs])
    for (p, r), rec in zip(convs, records, strict=True):
        assert rec["error"] is None
        assert rec["reward"] == pytest.approx(bare_reward(bare, p, r), abs=1e-5)
        assert rec["raw_score"] == rec["reward"]
    squashed = reward_judge_from_kwargs(model=f"hf-reward:{reward_dir}")
    rec = squashed.score_batch_sync([convs[0][1]], prompts=[convs[0][0]])[0]
    assert rec["reward"] == pytest.approx(squash(rec["raw_score"]), abs=1e-9)
    with pytest.raises(ConfigError, match="scalar reward model"):
        reward_judge_from_kwargs(model=f"hf-reward:{reward_dir}", template="likert")


def test_trl_reward_function_takes_a_reward_model(reward_dir: Path, bare: tuple) -> None:
    from jurist.rewards import trl_reward_func

    fn = trl_reward_func(model=f"hf-reward:{reward_dir}", squash="none")
    prompts = [p for p, _, _ in PAIRS[:2]]
    completions = [a for _, a, _ in PAIRS[:2]]
    got = fn(prompts=prompts, completions=completions)
    want = [bare_reward(bare, p, c) for p, c in zip(prompts, completions, strict=True)]
    assert got == pytest.approx(want, abs=1e-5)


def test_text_judges_refuse_a_reward_model_and_back(reward_dir: Path) -> None:
    with pytest.raises(ConfigError, match="scalar reward model"):
        jurist.LLMJudge(f"hf-reward:{reward_dir}")
    with pytest.raises(ConfigError, match="not a scalar reward model"):
        RewardModelJudge("mock:j")
    with pytest.raises(ConfigError, match="label 2"):
        jurist.get_model(f"hf-reward:{reward_dir}", label=2).load_sync()  # type: ignore[attr-defined]


@pytest.mark.parametrize("api", ["classify", "pooling"])
def test_served_rewards_over_vllm_routes_equal_the_local_ones(
    reward_dir: Path, bare: tuple, api: str
) -> None:
    convs = all_conversations()[:4]
    with RewardRoutes(reward_dir) as server:
        model = jurist.get_model("reward-server:rm", base_url=server.base_url + "/v1", api=api)
        assert model.capabilities.scalar and model.capabilities.remote
        done = asyncio.run(model.complete_many([request(p, r) for p, r in convs]))
        body = server.bodies[0]
    assert body["messages"][-1] == {"role": "assistant", "content": convs[0][1]}
    assert body.get("use_activation", False) is False  # raw rewards, never squashed twice
    for (p, r), c in zip(convs, done, strict=True):
        assert c.score == pytest.approx(bare_reward(bare, p, r), abs=1e-5)
        assert c.usage.prompt_tokens > 0


def test_served_pairwise_judge_and_a_broken_answer(reward_dir: Path, bare: tuple) -> None:
    p, a, b = PAIRS[0]
    with RewardRoutes(reward_dir) as server:
        judge = RewardModelJudge("reward-server:rm", pairwise=True, base_url=server.base_url)
        out = judge.judge_one_sync({"prompt": p, "response_a": a, "response_b": b})
        server.answer = {"data": [{"index": 0}]}  # no probs: not a reward
        broken = judge.judge_one_sync({"prompt": p, "response_a": a, "response_b": b})
    ra, rb = bare_reward(bare, p, a), bare_reward(bare, p, b)
    assert out.score == pytest.approx(pair_probability(ra, rb), abs=1e-6)
    assert broken.score is None and broken.error.startswith("api: response A:")
    assert "answered without a reward" in broken.error


def test_served_over_sglangs_route(reward_dir: Path, bare: tuple) -> None:
    p, a, _ = PAIRS[2]
    with RewardRoutes(reward_dir, sglang=True) as server:
        model = jurist.get_model(
            "reward-server:rm", base_url=server.base_url, api="sglang", tokenizer=str(reward_dir)
        )
        done = asyncio.run(model.complete(request(p, a)))
        text = server.bodies[0]["text"][0]
    assert text.endswith("<|im_end|>\n") and a in text  # the whole conversation, closed
    assert done.score == pytest.approx(bare_reward(bare, p, a), abs=1e-5)


def test_the_main_job_with_a_reward_model(
    reward_dir: Path, bare: tuple, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from jurist.cli import main

    data = tmp_path / "qa.jsonl"
    rows = [{"prompt": p, "response": a} for p, a, _ in PAIRS[:3]]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    args = ["judge", str(data), "--model", f"hf-reward:{reward_dir}", "--no-progress"]
    assert main([*args, "--out", str(out)]) == 0
    capsys.readouterr()
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for row, got in zip(rows, results, strict=True):
        raw = bare_reward(bare, row["prompt"], row["response"])
        assert got["judge_score"] == pytest.approx(squash(raw), abs=1e-6)
        assert got["judge_verdict"] == pytest.approx(raw, abs=1e-5)
    assert json.loads((out / "summary.json").read_text())["template"] == "reward_model"
    assert main([*args, "--template", "likert", "--out", str(tmp_path / "x")]) != 0
    assert "takes no --template" in " ".join(capsys.readouterr().err.split())
