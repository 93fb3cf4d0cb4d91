"""``llm_as_judge_reward``: a judge model scores a prediction against the golden answer.

The judge uses the ``reward`` template (a score from 0.0 to 1.0 after ``Score:``; the
response and the reference between tags, the question too when given). The result is a
dict:

- ``reward``: the score clamped to [0, 1], or 0.0 when no score could be had;
- ``raw_score``: the number the judge gave, before clamping (``None`` when it gave none);
- ``judge_output``: the judge's text; ``clamped``: whether ``raw_score`` was out of [0, 1];
- ``parse_failed``: ``True`` when the judge's text held no readable score;
- ``error``: why there is no score (``"parse: ..."``, ``"api: ..."``), else ``None``.

A failure gives ``reward`` 0.0, as the seed documents for rewards, and says so in
``parse_failed`` / ``error``: the 0.0 is never silent.

**Reading the raw score.** The strict parser of the ``reward`` template (see
:mod:`jurist.templates._parse`) reads the verdict first. Its scale is 0-1, and it rejects
out-of-range numbers, so when it fails the reward reads the raw number itself, under the
same form: the text after ``Score:`` on its lines, or the whole output when there is no
such line. Exactly one distinct number must be there (``"Score: 1.2"`` gives raw 1.2,
reward 1.0; ``"Score: -0.5"`` gives 0.0); none or conflicting numbers are a parse failure.

>>> from jurist.rewards import RewardBackend, llm_as_judge_reward
>>> from jurist.models import MockModel
>>> backend = RewardBackend(MockModel("j", outputs=["Score: 0.95", "Score: 1.2", "no idea"]))
>>> llm_as_judge_reward("Paris is the capital", "Paris", llm_backend=backend)["reward"]
0.95
>>> r = llm_as_judge_reward("Paris!", "Paris", llm_backend=backend)
>>> r["reward"], r["raw_score"], r["clamped"]
(1.0, 1.2, True)
>>> r = llm_as_judge_reward("Lyon", "Paris", llm_backend=backend)
>>> r["reward"], r["raw_score"], r["parse_failed"]
(0.0, None, True)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from jurist._sync import run_sync
from jurist.errors import DataError
from jurist.judges._batch import run_items
from jurist.models import Model
from jurist.rewards._backend import DEFAULT_LLM_CONFIG, RewardBackend
from jurist.rewards._registry import reward
from jurist.templates import split_reasoning
from jurist.types import Judgment

__all__ = [
    "judgment_to_reward",
    "llm_as_judge_reward",
    "llm_as_judge_reward_async",
    "llm_as_judge_rewards",
    "llm_as_judge_rewards_async",
    "read_raw_score",
]

_KEY_LINE = re.compile(r"^[\s*_#>-]*score[\s*_]*[:=][\s*_]*(?P<rest>.*)$", re.I | re.M)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w]|\.\d)")


def read_raw_score(text: str) -> tuple[float | None, str | None]:
    """The one number after ``Score:`` (or in a bare output), unclamped; or why there is none.

    >>> read_raw_score("Score: 1.2")
    (1.2, None)
    >>> read_raw_score("Score: 2\\nScore: 3")
    (None, 'parse: conflicting scores after Score:: 2, 3')
    """
    answer, _ = split_reasoning(text)
    segments = [m.group("rest") for m in _KEY_LINE.finditer(answer)]
    where = "after Score:" if segments else "in the output"
    numbers = [float(n) for seg in (segments or [answer]) for n in _NUMBER.findall(seg)]
    distinct = list(dict.fromkeys(numbers))
    if not distinct:
        return None, f"parse: no score {where}"
    if len(distinct) > 1:
        shown = ", ".join(f"{x:g}" for x in distinct)
        return None, f"parse: conflicting scores {where}: {shown}"
    return distinct[0], None


def judgment_to_reward(judgment: Judgment) -> dict[str, Any]:
    """The reward dict (see the module doc) for a judgment of the ``reward`` template."""
    text = judgment.response
    if judgment.score is not None:
        raw = float(judgment.verdict) if isinstance(judgment.verdict, int | float) else None
        return _record(judgment.score if raw is None else raw, text)
    error = judgment.error or "parse: no verdict"
    if error.startswith("parse:") and text is not None:
        raw, _why = read_raw_score(text)
        if raw is not None:
            return _record(raw, text)
    return {
        "reward": 0.0,
        "raw_score": None,
        "judge_output": text,
        "clamped": False,
        "parse_failed": error.startswith("parse:"),
        "error": error,
    }


def _record(raw: float, text: str | None) -> dict[str, Any]:
    value = min(1.0, max(0.0, raw))
    return {
        "reward": value,
        "raw_score": raw,
        "judge_output": text,
        "clamped": value != raw,
        "parse_failed": False,
        "error": None,
    }


def _backend(llm_backend: RewardBackend | Model | str | None) -> RewardBackend:
    if isinstance(llm_backend, RewardBackend):
        return llm_backend
    if llm_backend is None:
        built = llm_as_judge_reward.backend()
        assert built is not None  # llm_as_judge_reward has an llm_config
        return built
    return RewardBackend(llm_backend)


async def llm_as_judge_reward_async(
    prediction: str,
    golden_answer: str,
    llm_backend: RewardBackend | Model | str | None = None,
    *,
    prompt: str | None = None,
    retries: int = 0,
) -> dict[str, Any]:
    """Async variant of :func:`llm_as_judge_reward`."""
    backend = _backend(llm_backend)
    item = {"response": prediction, "reference": golden_answer, "prompt": prompt}
    return judgment_to_reward(await backend.judge.judge(item, retries=retries))


@reward(name="llm_as_judge_reward", llm_config=DEFAULT_LLM_CONFIG)
def llm_as_judge_reward(
    prediction: str,
    golden_answer: str,
    llm_backend: RewardBackend | Model | str | None = None,
    *,
    prompt: str | None = None,
    retries: int = 0,
) -> dict[str, Any]:
    """Score ``prediction`` against ``golden_answer`` with a judge model (sync).

    ``llm_backend`` is a :class:`RewardBackend`, a model or a ``"provider:name"``; left
    out, it is the registered default: local transformers ``$LLM_JUDGE_MODEL`` (default
    ``Qwen/Qwen2.5-0.5B-Instruct``), max_tokens 10, temperature 0.1, built once on the
    first call. ``prompt`` adds the question to the judge's view; ``retries`` re-asks an
    unreadable verdict.
    """
    return run_sync(
        llm_as_judge_reward_async(
            prediction, golden_answer, llm_backend, prompt=prompt, retries=retries
        )
    )


async def llm_as_judge_rewards_async(
    predictions: Sequence[str],
    golden_answers: Sequence[str],
    llm_backend: RewardBackend | Model | str | None = None,
    *,
    prompts: Sequence[str | None] | None = None,
    retries: int = 0,
    concurrency: int = 32,
) -> list[dict[str, Any]]:
    """Rewards for a batch, judged concurrently (a local model batches them); in order."""
    if len(predictions) != len(golden_answers):
        raise DataError(
            f"predictions and golden_answers differ in length: {len(predictions)} != "
            f"{len(golden_answers)}"
        )
    if prompts is not None and len(prompts) != len(predictions):
        raise DataError(
            f"prompts and predictions differ in length: {len(prompts)} != {len(predictions)}"
        )
    backend = _backend(llm_backend)

    async def one(i: int) -> dict[str, Any]:
        return await llm_as_judge_reward_async(
            predictions[i],
            golden_answers[i],
            backend,
            prompt=prompts[i] if prompts is not None else None,
            retries=retries,
        )

    return await run_items(one, len(predictions), concurrency=concurrency, ok=_rewarded)


def _rewarded(result: dict[str, Any]) -> bool:
    return result.get("error") is None


def llm_as_judge_rewards(
    predictions: Sequence[str],
    golden_answers: Sequence[str],
    llm_backend: RewardBackend | Model | str | None = None,
    *,
    prompts: Sequence[str | None] | None = None,
    retries: int = 0,
    concurrency: int = 32,
) -> list[dict[str, Any]]:
    """Sync twin of :func:`llm_as_judge_rewards_async` (the batch form for RL loops)."""
    return run_sync(
        llm_as_judge_rewards_async(
            predictions,
            golden_answers,
            llm_backend,
            prompts=prompts,
            retries=retries,
            concurrency=concurrency,
        )
    )
