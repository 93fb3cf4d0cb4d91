"""uqlm's ``LLMPanel`` over jurist's judges; import it from :mod:`jurist.compat.uqlm`.

uqlm's documented signature and result shape: ``LLMPanel(judges, llm=None,
system_prompt=None, max_calls_per_min=None, scoring_templates=None, explanations=False,
additional_context=None)``; ``await panel.score(prompts, responses)`` and ``await
panel.generate_and_score(prompts)`` return a :class:`UQResult` whose ``data`` holds
``prompts``, ``responses``, ``judge_1`` .. ``judge_k``, ``avg``, ``max``, ``min`` and
``median`` (NaN where unscored, as in uqlm).

Each judge is asked through its public ``judge_responses(prompts=..., responses=...,
progress_bar=..., explanations=...)``, as uqlm asks it, so a subclass that overrides it,
or a mock, is what scores; the aggregates are jurist's NaN-aware panel aggregations.

Differences from uqlm, on purpose: the judges run concurrently (uqlm runs one after the
other), and the progress bar counts judges done; ``metadata`` also says, per judge, which
rows it could not score (``unscored``) and how many judges counted per row
(``n_counted``); a row no judge could score gets NaN aggregates and the same warning uqlm
gives.

>>> from jurist.compat.uqlm import LLMPanel
>>> panel = LLMPanel(judges=["mock:a", "mock:b"], scoring_templates=["true_false", "likert"])
>>> panel.judges[1].scoring_template
'likert'
"""

from __future__ import annotations

import asyncio
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from jurist._progress import BatchProgress
from jurist._sync import run_sync
from jurist.compat._uqlm_judge import LLMJudge, judge_or_raise, uqlm_judge_class
from jurist.errors import ConfigError, DataError, JuristError
from jurist.judges import LLMJudge as NativeJudge
from jurist.judges._aggregate import aggregate
from jurist.models import Model, get_model, with_limits
from jurist.models._stack import limits_layer
from jurist.types import Message, Request

__all__ = ["LLMPanel", "UQResult"]

_NAN = math.nan


class UQResult:
    """uqlm's result object: ``data`` (column -> list), ``metadata``, ``to_dict``, ``to_df``."""

    def __init__(self, result: dict[str, Any]) -> None:
        data = dict(result.get("data") or {})
        if "prompts" in data:  # prompts first, as uqlm orders them
            data = {"prompts": data.pop("prompts"), **data}
        self.data: dict[str, Any] = data
        self.metadata: dict[str, Any] = dict(result.get("metadata") or {})
        self.result_dict = {"data": self.data, "metadata": self.metadata}

    def __repr__(self) -> str:
        return f"UQResult(columns={list(self.data)}, metadata={self.metadata})"

    def to_dict(self) -> dict[str, Any]:
        """``{"data": ..., "metadata": ...}``."""
        return self.result_dict

    def to_df(self) -> Any:
        """A pandas DataFrame; plural column names lose their ``s`` (``prompt``), as in uqlm."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            from jurist.errors import MissingDependencyError

            raise MissingDependencyError("pandas", "dev", "UQResult.to_df()") from e
        rename = {c: c[:-1] for c in self.data if c.endswith("s")}
        return pd.DataFrame(self.data).rename(columns=rename)

    def to_pandas(self) -> Any:
        """Same as :meth:`to_df`."""
        return self.to_df()


class LLMPanel:
    """uqlm's ``LLMPanel``: several judges score each response; ``avg``/``max``/``min``/``median``.

    ``judges`` are :class:`jurist.compat.uqlm.LLMJudge`, uqlm's own ``LLMJudge`` or
    :class:`jurist.LLMJudge` objects (used as they are: each is asked through its own
    ``judge_responses``), or models (a
    LangChain chat model, a jurist model, a ``"provider:name"``), each turned into an
    ``LLMJudge`` with the matching entry of ``scoring_templates`` (default
    ``"true_false_uncertain"``), ``max_calls_per_min`` and ``additional_context`` (added to
    that judge's system message). ``llm`` generates the responses in
    :meth:`generate_and_score`, with ``system_prompt`` (default "You are a helpful
    assistant.").
    """

    def __init__(
        self,
        judges: Sequence[Any],
        llm: Any = None,
        system_prompt: str | None = None,
        max_calls_per_min: int | None = None,
        scoring_templates: list[str] | None = None,
        explanations: bool = False,
        additional_context: str | None = None,
    ) -> None:
        judges = list(judges)
        if scoring_templates:
            if len(scoring_templates) != len(judges):
                raise ConfigError(
                    "Length of scoring_templates list must be equal to length of judges list: "
                    f"got {len(scoring_templates)} templates for {len(judges)} judges"
                )
        else:
            scoring_templates = ["true_false_uncertain"] * len(judges)
        if not judges:
            raise ConfigError("LLMPanel needs at least one judge")
        self.llm = llm
        self.system_prompt = system_prompt
        self.max_calls_per_min = max_calls_per_min
        self.scoring_templates = scoring_templates
        self.explanations = explanations
        self.additional_context = additional_context
        self.judges: list[Any] = []
        self._natives: dict[int, NativeJudge] = {}
        uqlm_judge = uqlm_judge_class()
        for i, (judge, template) in enumerate(zip(judges, scoring_templates, strict=True)):
            if isinstance(judge, NativeJudge):  # jurist's own: configured as uqlm's would be
                self._natives[i] = _configured(judge, explanations)
            elif _is_model(judge):
                judge = LLMJudge(
                    judge,
                    max_calls_per_min=max_calls_per_min,
                    scoring_template=template,
                    additional_context=additional_context,
                )
            elif not isinstance(judge, LLMJudge) and not (
                uqlm_judge is not None and isinstance(judge, uqlm_judge)
            ):
                raise ConfigError(
                    "judges must be a list containing instances of either LLMJudge (jurist's, "
                    "uqlm's or jurist.compat.uqlm's) or BaseChatModel (or a jurist model); "
                    f"judge {i} is a {type(judge).__module__}.{type(judge).__name__}"
                )
            self.judges.append(judge)
        self._generator: Model | None = None

    # -- scoring ----------------------------------------------------------------------------

    async def score(
        self,
        prompts: list[str],
        responses: list[str] | None = None,
        show_progress_bars: bool = True,
        _display_header: bool = True,
    ) -> UQResult:
        """Score ``responses`` to ``prompts`` with every judge (5 re-asks for unreadable ones)."""
        if responses is None:
            raise DataError("score() needs responses; use generate_and_score() to generate them")
        if len(prompts) != len(responses):
            raise DataError(
                f"prompts and responses differ in length: {len(prompts)} != {len(responses)}"
            )
        return await self._score(list(prompts), list(responses), show_progress_bars, {})

    async def _score(
        self,
        prompts: list[str],
        responses: list[str | None],
        progress: bool,
        generation_errors: dict[int, str],
    ) -> UQResult:
        todo = [i for i, r in enumerate(responses) if r is not None]
        asked = [prompts[i] for i in todo]
        answers = [r for r in responses if r is not None]
        k = len(self.judges)
        outs: list[Mapping[str, Any]] = [{} for _ in range(k)]
        with BatchProgress(k, enabled=progress, description="judges") as bar:

            async def run(j: int) -> None:
                outs[j] = await self._ask(j, asked, answers)
                bar.advance(ok=True)

            tasks = [asyncio.ensure_future(run(j)) for j in range(k)]
            try:
                await asyncio.gather(*tasks)
            except BaseException:  # a judge raised: stop the others, raise its own error
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        scores = [self._scores(j, outs[j], len(todo)) for j in range(k)]
        data: dict[str, Any] = {"prompts": prompts, "responses": responses}
        rows = {row: n for n, row in enumerate(todo)}
        for j in range(k):
            data[f"judge_{j + 1}"] = [
                _nan(scores[j][rows[i]]) if i in rows else _NAN for i in range(len(prompts))
            ]
            if self.explanations:
                said = outs[j].get("explanations") or [None] * len(todo)
                data[f"judge_{j + 1}_explanation"] = [
                    said[rows[i]] if i in rows else None for i in range(len(prompts))
                ]
        per_row: list[list[float | None]] = [
            [scores[j][rows[i]] for j in range(k)] if i in rows else [None] * k
            for i in range(len(prompts))
        ]
        for column, how in (("avg", "mean"), ("max", "max"), ("min", "min"), ("median", "median")):
            data[column] = [_nan(aggregate(s, how).score) for s in per_row]
        unscored = {
            f"judge_{j + 1}": [i for i, s in enumerate(per_row) if s[j] is None] for j in range(k)
        }
        partial = [i for i, s in enumerate(per_row) if any(x is None for x in s)]
        if partial:
            warnings.warn(
                f"Judge scores could not be parsed for {len(partial)} prompt(s) (indices: "
                f"{partial[:10]}); panel aggregates exclude those judge scores. Inspect the "
                "per-judge score columns (or metadata['unscored']) to find the failing judge.",
                stacklevel=3,
            )
        metadata: dict[str, Any] = {
            "num_judges": k,
            "temperature": getattr(self.llm, "temperature", None) if self.llm else None,
            "n_counted": [sum(x is not None for x in s) for s in per_row],
            "unscored": unscored,
        }
        if generation_errors:
            metadata["generation_errors"] = generation_errors
        return UQResult({"data": data, "metadata": metadata})

    async def _ask(self, j: int, prompts: list[str], responses: list[str]) -> Mapping[str, Any]:
        """Judge ``j``'s answer through its public ``judge_responses``, as uqlm calls it."""
        native = self._natives.get(j)
        if native is not None:  # a failed call raises, as the uqlm-style judges' do
            return await judge_or_raise(native, prompts, responses, 5, False)
        judge = self.judges[j]  # jurist.compat.uqlm's, uqlm's own, or a mock with its spec
        out: Any = await judge.judge_responses(
            prompts=prompts, responses=responses, progress_bar=None, explanations=self.explanations
        )
        if not isinstance(out, Mapping):
            raise DataError(
                f"judge {j + 1} ({type(judge).__name__}): judge_responses() gave "
                f"{type(out).__name__}, not a dict with 'scores'"
            )
        return out

    def _scores(self, j: int, out: Mapping[str, Any], n: int) -> list[float | None]:
        """Judge ``j``'s scores, NaN and None both read as unscored."""
        scores: Any = out.get("scores")
        listed = isinstance(scores, Sequence) and not isinstance(scores, str)
        if not listed or len(scores) != n:
            got = f"{len(scores)} scores" if listed else f"scores={scores!r}"
            raise DataError(
                f"judge {j + 1} ({type(self.judges[j]).__name__}): judge_responses() gave "
                f"{got} for {n} responses; it must return {{'scores': [one per response]}}"
            )
        return [None if s is None or s != s else float(s) for s in scores]

    async def generate_and_score(
        self, prompts: list[str], show_progress_bars: bool | None = True
    ) -> UQResult:
        """Generate a response to each prompt with ``llm``, then :meth:`score` them.

        A prompt whose generation fails gets ``None`` as its response and NaN scores; the
        error is in ``metadata["generation_errors"]`` (by row index).
        """
        if not all(isinstance(p, str) for p in prompts):
            raise ConfigError("prompts must be list of strings when using LLMPanel")
        if self.llm is None:
            raise ConfigError("generate_and_score() needs the llm= that generates the responses")
        model = self._model()
        system = self.system_prompt or "You are a helpful assistant."
        requests = [
            Request(
                messages=(Message(role="system", content=system), Message(role="user", content=p))
            )
            for p in prompts
        ]
        done = await asyncio.gather(*(model.complete(r) for r in requests), return_exceptions=True)
        responses: list[str | None] = []
        errors: dict[int, str] = {}
        for i, c in enumerate(done):
            if isinstance(c, JuristError):
                errors[i] = f"{c.category}: {c}"
                responses.append(None)
            elif isinstance(c, BaseException):
                raise c
            else:
                responses.append(c.text)
        return await self._score(list(prompts), responses, bool(show_progress_bars), errors)

    def _model(self) -> Model:
        if self._generator is None:
            model = self.llm if isinstance(self.llm, Model) else get_model(self.llm)
            if self.max_calls_per_min is not None:
                model = with_limits(model, limits_layer(rpm=self.max_calls_per_min))
            self._generator = model
        return self._generator

    # -- sync twins -------------------------------------------------------------------------

    def score_sync(
        self,
        prompts: list[str],
        responses: list[str] | None = None,
        show_progress_bars: bool = True,
        _display_header: bool = True,
    ) -> UQResult:
        """Sync twin of :meth:`score`; works inside a running event loop too."""
        return run_sync(self.score(prompts, responses, show_progress_bars, _display_header))

    def generate_and_score_sync(
        self, prompts: list[str], show_progress_bars: bool | None = True
    ) -> UQResult:
        """Sync twin of :meth:`generate_and_score`."""
        return run_sync(self.generate_and_score(prompts, show_progress_bars))


def _is_model(obj: Any) -> bool:
    if isinstance(obj, Model | str):
        return True
    from jurist.models._langchain import is_langchain_model

    return is_langchain_model(obj)


def _configured(base: NativeJudge, explanations: bool) -> NativeJudge:
    """``base`` asking for explanations (or not) and answering in text, as uqlm's judges do."""
    if base.explanations == explanations and not base.json:
        return base
    tpl = base.template
    default = base.system_prompt in (None, tpl.system_text(explanations=base.explanations))
    system = tpl.system_text(explanations=explanations) if default else base.system_prompt
    max_tokens = max(base.max_tokens, tpl.max_tokens_explained) if explanations else base.max_tokens
    return base.with_options(
        explanations=explanations,
        system_prompt=system,
        max_tokens=max_tokens,
        name=base.name,
        output="text",
    )


def _nan(x: float | None) -> float:
    return _NAN if x is None else float(x)
