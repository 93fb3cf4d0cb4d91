"""``llm_as_judge_reward``: a judge model scores a prediction against the golden answer.

The judge uses the ``reward`` template (a score from 0.0 to 1.0 after ``Score:``; the
response and the reference between tags, the question too when given). The result is a
dict:

- ``reward``: the score, clamped to [0, 1] when it was a hair outside; 0.0 when no score
  could be had;
- ``raw_score``: the number the judge gave, before clamping (``None`` when there is no score);
- ``judge_output``: the judge's text; ``clamped``: whether ``raw_score`` was out of [0, 1];
- ``parse_failed``: ``True`` when the judge's text held no readable score;
- ``error``: why there is no score (``"parse: ..."``, ``"api: ..."``), else ``None``.

A failure gives ``reward`` 0.0, as the seed documents for rewards, and says so in
``parse_failed`` / ``error``: the 0.0 is never silent.

**Reading the score.** The strict parser of the ``reward`` template (see
:mod:`jurist.templates._parse`) reads the verdict first: a number from 0 to 1 in the
``Score:`` line, or the whole output when it is only a number. When it fails because the
number is outside [0, 1], the number counts only if it is within ``tolerance`` (0.05 by
default) of the range and is the whole verdict (the rest of the ``Score:`` line, or the
whole output): ``"Score: 1.03"`` gives raw 1.03, reward 1.0, ``clamped`` True. A number
further out (``"Score: 99"``, ``"Score: 1.2"``), a number that is not the verdict
(``"nonsense 7"``) and a cut-off JSON object (``{"verdict":99``) are parse failures.

``lenient=True`` restores the seed's reading: any one number after ``Score:`` or anywhere in
a bare output, clamped into [0, 1] however far out it was. It pays for garbage
(``"Score: 99"`` is reward 1.0), so it is off by default and in the TRL and verl adapters.

>>> from jurist.rewards import RewardBackend, llm_as_judge_reward
>>> from jurist.models import MockModel
>>> backend = RewardBackend(MockModel("j", outputs=["Score: 0.95", "Score: 1.03", "Score: 99"]))
>>> llm_as_judge_reward("Paris is the capital", "Paris", llm_backend=backend)["reward"]
0.95
>>> r = llm_as_judge_reward("Paris!", "Paris", llm_backend=backend)
>>> r["reward"], r["raw_score"], r["clamped"]
(1.0, 1.03, True)
>>> r = llm_as_judge_reward("Lyon", "Paris", llm_backend=backend)
>>> r["reward"], r["raw_score"], r["parse_failed"]
(0.0, None, True)
>>> r["error"]
'parse: 99 is outside [0, 1] by more than the clamp tolerance 0.05'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from jurist._local_files import LocalFiles
from jurist._sync import run_sync
from jurist.data._local_images import resolve_images
from jurist.errors import DataError
from jurist.judges._many import run_items
from jurist.models import Model
from jurist.rewards._backend import DEFAULT_LLM_CONFIG, RewardBackend
from jurist.rewards._registry import reward
from jurist.templates import split_reasoning
from jurist.types import Judgment

__all__ = [
    "DEFAULT_TOLERANCE",
    "judgment_to_reward",
    "llm_as_judge_reward",
    "llm_as_judge_reward_async",
    "llm_as_judge_rewards",
    "llm_as_judge_rewards_async",
    "read_raw_score",
]

DEFAULT_TOLERANCE = 0.05
"""How far outside [0, 1] a score may be and still be clamped (in score units)."""

_KEY_LINE = re.compile(r"^[ \t\r\f\v*_#>-]*+score[\s*_]*+[:=][\s*_]*+(?P<rest>.*)$", re.I | re.M)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w]|\.\d)")
_ALONE = re.compile(r"[\s*_`\"']*+(?P<num>[-+]?\d{1,30}(?:\.\d{1,30})?)[\s*_`\"'.]*+")


def read_raw_score(text: str, *, lenient: bool = False) -> tuple[float | None, str | None]:
    """The score as written, unclamped, or why there is none.

    Strict (the default): the rest of each ``Score:`` line, or the whole output when there
    is no such line, must be one number and nothing else (markdown emphasis, quotes and a
    final period aside). ``lenient=True`` (the seed's reading): any one distinct number
    there, whatever surrounds it.

    >>> read_raw_score("Score: 1.2")
    (1.2, None)
    >>> read_raw_score("Score: 2\\nScore: 3")
    (None, 'parse: conflicting scores after Score:: 2, 3')
    >>> read_raw_score("I'd say 7")
    (None, "parse: the output is not a score: I'd say 7")
    >>> read_raw_score("I'd say 7", lenient=True)
    (7.0, None)
    """
    answer, _ = split_reasoning(text)
    segments = [m.group("rest") for m in _KEY_LINE.finditer(answer)]
    where = "after Score:" if segments else "in the output"
    numbers: list[float] = []
    for seg in segments or [answer]:
        if lenient:
            numbers += [float(n) for n in _NUMBER.findall(seg)]
            continue
        alone = _ALONE.fullmatch(seg)
        if alone is None:
            what = "the Score: line is" if segments else "the output is"
            return None, f"parse: {what} not a score: {_clip(seg)}"
        numbers.append(float(alone.group("num")))
    distinct = list(dict.fromkeys(numbers))
    if not distinct:
        return None, f"parse: no score {where}"
    if len(distinct) > 1:
        shown = ", ".join(f"{x:g}" for x in distinct)
        return None, f"parse: conflicting scores {where}: {shown}"
    return distinct[0], None


def _clip(text: str, size: int = 60) -> str:
    text = " ".join(text.split()[:40])
    return text if len(text) <= size else text[: size - 3] + "..."


def judgment_to_reward(
    judgment: Judgment, *, tolerance: float = DEFAULT_TOLERANCE, lenient: bool = False
) -> dict[str, Any]:
    """The reward dict (see the module doc) for a judgment of the ``reward`` template.

    ``tolerance``: how far outside [0, 1] a score may be and still be clamped; further out
    is a parse failure. ``lenient=True``: the seed's reading (any number, any distance).
    """
    _check_tolerance(tolerance)
    text = judgment.response
    if judgment.score is not None:
        raw = float(judgment.verdict) if isinstance(judgment.verdict, int | float) else None
        return _record(judgment.score if raw is None else raw, text)
    error = judgment.error or "parse: no verdict"
    if error.startswith("parse:") and text is not None:
        raw, _why = read_raw_score(text, lenient=lenient)
        if raw is not None:
            if lenient or -tolerance <= raw <= 1.0 + tolerance:
                return _record(raw, text)
            error = (
                f"parse: {raw:g} is outside [0, 1] by more than the clamp tolerance {tolerance:g}"
            )
    return {
        "reward": 0.0,
        "raw_score": None,
        "judge_output": text,
        "clamped": False,
        "parse_failed": error.startswith("parse:"),
        "error": error,
    }


def _check_tolerance(tolerance: float) -> None:
    if not tolerance >= 0.0 or tolerance == float("inf"):
        raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance!r}")


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
    tolerance: float = DEFAULT_TOLERANCE,
    lenient: bool = False,
    messages: Sequence[Mapping[str, Any]] | str | None = None,
    images: Sequence[Any] | None = None,
    files_root: Any = None,
) -> dict[str, Any]:
    """Async variant of :func:`llm_as_judge_reward`."""
    _check_tolerance(tolerance)
    backend = _backend(llm_backend)
    item: dict[str, Any] = {"response": prediction, "reference": golden_answer, "prompt": prompt}
    if messages is not None:
        item["messages"] = messages
    if images is not None:
        item["images"] = list(images)
    if files_root is not None:  # the caller's say: local images from these folders only
        item = resolve_images(item, LocalFiles.allowing(files_root), "the reward's item")
    judgment = await backend.judge.judge(item, retries=retries)
    return judgment_to_reward(judgment, tolerance=tolerance, lenient=lenient)


@reward(name="llm_as_judge_reward", llm_config=DEFAULT_LLM_CONFIG)
def llm_as_judge_reward(
    prediction: str,
    golden_answer: str,
    llm_backend: RewardBackend | Model | str | None = None,
    *,
    prompt: str | None = None,
    retries: int = 0,
    tolerance: float = DEFAULT_TOLERANCE,
    lenient: bool = False,
    messages: Sequence[Mapping[str, Any]] | str | None = None,
    images: Sequence[Any] | None = None,
    files_root: Any = None,
) -> dict[str, Any]:
    """Score ``prediction`` against ``golden_answer`` with a judge model (sync).

    ``llm_backend`` is a :class:`RewardBackend`, a model or a ``"provider:name"``; left
    out, it is the registered default: local transformers ``$LLM_JUDGE_MODEL`` (default
    ``Qwen/Qwen2.5-0.5B-Instruct``), max_tokens 10, temperature 0.1, built once on the
    first call. ``prompt`` adds the question to the judge's view; ``retries`` re-asks an
    unreadable verdict. ``tolerance`` is how far outside [0, 1] a score may be and still be
    clamped (further out is a parse failure); ``lenient=True`` is the seed's reading, which
    clamps any number (see the module doc).

    ``messages`` is a multi-turn rollout's conversation before the prediction (OpenAI chat
    format, tool calls and results included): the judge sees it, rendered compactly, as
    the question (``prompt`` given too wins). ``images`` (paths, URLs, data URIs) are sent
    with the judge's prompt, as are the image parts of ``messages``; the judge model must
    take image input. A local image file is read only from the folders in ``files_root``
    (one or several; relative paths from the working folder): without it, a path is a
    :class:`~jurist.errors.DataError` and nothing is read (see docs/security.md).
    """
    return run_sync(
        llm_as_judge_reward_async(
            prediction,
            golden_answer,
            llm_backend,
            prompt=prompt,
            retries=retries,
            tolerance=tolerance,
            lenient=lenient,
            messages=messages,
            images=images,
            files_root=files_root,
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
    tolerance: float = DEFAULT_TOLERANCE,
    lenient: bool = False,
    messages: Sequence[Sequence[Mapping[str, Any]] | str | None] | None = None,
) -> list[dict[str, Any]]:
    """Rewards for a batch, judged concurrently (a local model batches them); in order.

    ``messages`` holds each rollout's conversation before its prediction (or ``None``), as
    :func:`llm_as_judge_reward` takes it.
    """
    _check_tolerance(tolerance)
    if len(predictions) != len(golden_answers):
        raise DataError(
            f"predictions and golden_answers differ in length: {len(predictions)} != "
            f"{len(golden_answers)}"
        )
    if prompts is not None and len(prompts) != len(predictions):
        raise DataError(
            f"prompts and predictions differ in length: {len(prompts)} != {len(predictions)}"
        )
    if messages is not None and len(messages) != len(predictions):
        raise DataError(
            f"messages and predictions differ in length: {len(messages)} != {len(predictions)}"
        )
    backend = _backend(llm_backend)

    async def one(i: int) -> dict[str, Any]:
        return await llm_as_judge_reward_async(
            predictions[i],
            golden_answers[i],
            backend,
            prompt=prompts[i] if prompts is not None else None,
            retries=retries,
            tolerance=tolerance,
            lenient=lenient,
            messages=messages[i] if messages is not None else None,
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
    tolerance: float = DEFAULT_TOLERANCE,
    lenient: bool = False,
    messages: Sequence[Sequence[Mapping[str, Any]] | str | None] | None = None,
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
            tolerance=tolerance,
            lenient=lenient,
            messages=messages,
        )
    )
