"""OpenAI graders, unchanged: a grader JSON loads as a jurist judge and as an RL reward.

OpenAI's graders (``string_check``, ``text_similarity``, ``score_model``, ``label_model``,
``python``, ``multi``; templated with ``{{ item.x }}`` and ``{{ sample.output_text }}``)
keep their documented semantics (see ``docs/openai-graders.md``):

>>> from jurist.compat.openai_graders import grader_reward, load_grader
>>> grader = {"type": "string_check", "name": "capital", "operation": "eq",
...           "input": "{{ sample.output_text }}", "reference": "{{ item.answer }}"}
>>> judge = load_grader(grader)
>>> [j.score for j in judge.judge_sync([{"response": "Paris", "answer": "Paris"},
...                                     {"response": "Lyon", "answer": "Paris"}])]
[1.0, 0.0]
>>> reward = grader_reward(grader)
>>> reward(completions=["Paris", "paris"], answer=["Paris", "Paris"])
[1.0, 0.0]

``load_grader(source)`` takes a path (``.json``, or YAML), a grader object, a list of them
or an eval with ``testing_criteria``; several graders make a :class:`~jurist.Panel` of
grader judges (mean of their scores). Model graders call ``openai:<their model>`` unless
``model=`` names a jurist model (one for all, or a map from grader model name).
``python`` graders run only with ``allow_python=True``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jurist.compat.openai_graders._formula import Formula
from jurist.compat.openai_graders._judge import Grade, GraderJudge, ModelChoice, namespaces_of
from jurist.compat.openai_graders._python import PythonLimits
from jurist.compat.openai_graders._reward import GraderReward
from jurist.compat.openai_graders._similarity import METRICS, Embed, similarity
from jurist.compat.openai_graders._spec import parse_grader, read_graders
from jurist.errors import ConfigError

__all__ = [
    "METRICS",
    "Formula",
    "Grade",
    "GraderJudge",
    "GraderReward",
    "PythonLimits",
    "grader_reward",
    "load_grader",
    "load_graders",
    "namespaces_of",
    "parse_grader",
    "read_graders",
    "similarity",
]

Source = str | Path | dict[str, Any] | list[Any]


def load_graders(
    source: Source,
    *,
    model: ModelChoice = None,
    allow_python: bool = False,
    python_limits: PythonLimits | None = None,
    embed: Embed | None = None,
    sample_field: str = "response",
) -> list[GraderJudge]:
    """One :class:`GraderJudge` per grader in ``source``."""
    return [
        GraderJudge(
            g,
            model=model,
            allow_python=allow_python,
            python_limits=python_limits,
            embed=embed,
            sample_field=sample_field,
        )
        for g in read_graders(source)
    ]


def load_grader(source: Source, **options: Any) -> Any:
    """The judge of the grader(s) in ``source``: a :class:`GraderJudge`, or for several
    graders a ``Panel`` of them (``aggregation="mean"``). Options as :func:`load_graders`."""
    judges = load_graders(source, **options)
    if len(judges) == 1:
        return judges[0]
    from jurist.judges import Panel

    return Panel(judges, aggregation="mean", name="openai_graders")


def grader_reward(
    source: Source,
    *,
    failure_value: float | None = 0.0,
    concurrency: int = 32,
    name: str | None = None,
    register: bool = False,
    **options: Any,
) -> GraderReward:
    """The grader in ``source`` as a TRL reward function (see :class:`GraderReward`);
    ``register=True`` also adds it to jurist's reward registry under ``name`` (default
    the grader's name), replacing one of that name."""
    judges = load_graders(source, **options)
    if len(judges) != 1:
        raise ConfigError(
            f"a reward takes one grader, got {len(judges)}: combine them in a multi grader"
        )
    fn = GraderReward(judges[0], failure_value=failure_value, concurrency=concurrency, name=name)
    if register:
        from jurist.rewards import RewardFunction, register_reward

        register_reward(RewardFunction(fn, fn.__name__), overwrite=True)
    return fn
