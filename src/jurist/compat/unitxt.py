"""jurist inside unitxt: a jurist model as an ``InferenceEngine``, a jurist judge as a metric.

- :class:`JuristInferenceEngine` runs unitxt's instances through any jurist backend
  (``jurist.get_model`` spec + options), with jurist's retries, limits and cache.
- :class:`JuristJudgeMetric` is a unitxt ``BulkInstanceMetric`` whose per-instance score is
  a jurist judge's verdict: ``compute(references, predictions, task_data)`` in unitxt's
  order. The judge is a jurist catalog name or a catalog entry (a plain mapping, see
  :func:`judge_metric`), so the metric can be stored in a unitxt catalog with
  ``add_to_catalog`` and used by name in a recipe (``import jurist.compat.unitxt`` first,
  so unitxt knows the class).

A verdict that cannot be read is NaN in the main score (unitxt's missing value, which its
means skip) and the reason is in ``<main_score>_error``; it is never a made-up score.

``data_classification_policy`` is unitxt's: when it is not given, a metric or engine whose
model is remote (``openai:``, ``litellm:``, ...: it sends the data to a server) takes
``["public"]``, as unitxt's own ``OpenAiInferenceEngine`` does, so unitxt's own check
(``Artifact.verify_instance``) refuses ``proprietary`` data with unitxt's message; one
whose models are all local (``hf:``, ``vllm:``, ``mock:``) has none, as unitxt's HF
engines (nothing leaves the process). Give ``data_classification_policy=[...]`` to choose.

Importing this module needs unitxt (``pip install 'jurist[unitxt]'``). See docs/unitxt.md.
"""

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jurist._sync import run_sync
from jurist.errors import ConfigError, DataError, JuristError, MissingDependencyError

try:
    from unitxt.inference import InferenceEngine, TextGenerationInferenceOutput
    from unitxt.metrics import BulkInstanceMetric
except ImportError as e:  # pragma: no cover - depends on the environment
    raise MissingDependencyError("unitxt", "unitxt", "jurist.compat.unitxt") from e

__all__ = ["JuristInferenceEngine", "JuristJudgeMetric", "judge_metric"]

# Judges given to a metric as objects: unitxt serialises a recipe's metrics (into each
# instance, and to copy them), so an object is written as a token that finds it again in
# this process. Another process cannot: store the judge as an entry (judge_metric).
_INLINE: dict[str, Any] = {}
_INLINE_KEY = "jurist_inline_judge"


class JuristInferenceEngine(InferenceEngine):  # type: ignore[misc]
    """A jurist model as a unitxt inference engine.

    ``model`` is a jurist spec (``"openai:my-model"``, ``"hf:Qwen/Qwen2.5-0.5B-Instruct"``,
    ``"vllm:..."``, ``"litellm:..."``); ``model_options`` go to :func:`jurist.get_model`
    (``base_url``, ``timeout``, ...; keep secrets in the environment, e.g.
    ``$OPENAI_API_KEY``, since unitxt records an engine's fields). ``max_retries``,
    ``max_concurrency``, ``max_calls_per_min`` and ``cache`` (a SQLite path, or ``True``
    for jurist's default cache file) wrap the model with jurist's retry, limits and cache.
    unitxt's own disk cache is off (``use_cache=False``): jurist's cache keys on what
    changes the output.
    """

    model: str
    model_options: dict[str, Any] = {}  # noqa: RUF012 - unitxt fields copy their defaults
    max_tokens: int | None = None
    temperature: float | None = 0.0
    max_retries: int | None = None
    max_concurrency: int | None = None
    max_calls_per_min: float | None = None
    cache: Any = None
    use_cache: bool = False
    label: str = "jurist"

    def verify_instance(self, instance: dict[str, Any], name: str | None = None) -> Any:
        """unitxt's data classification check, under the model's default policy (see the
        module doc) when none was given."""
        return _verify(self, super().verify_instance, instance, name, self._models)

    def _models(self) -> tuple[Any, ...]:
        model = getattr(self, "_model", None)
        if model is None:
            from jurist.models import get_model

            model = get_model(self.model, **dict(self.model_options))
        return (model,)

    def prepare_engine(self) -> None:
        from jurist.models import CachedModel, LimitedModel, get_model

        model = get_model(self.model, max_retries=self.max_retries, **dict(self.model_options))
        if self.max_concurrency is not None or self.max_calls_per_min is not None:
            model = LimitedModel(
                model,
                max_concurrency=self.max_concurrency,
                max_calls_per_min=self.max_calls_per_min,
            )
        if self.cache:
            model = CachedModel(model, None if self.cache is True else self.cache)
        self._model = model

    def get_engine_id(self) -> str:
        name = self.model.split(":", 1)[-1].split("/")[-1]
        return f"{name.replace('-', '_').replace('.', ',').lower()}_jurist"

    def _infer(self, dataset: Any, return_meta_data: bool = False) -> list[Any]:
        from jurist.types import Request

        requests = [
            Request(
                messages=_messages(i, inst),
                max_tokens=self.max_tokens,
                temperature=self.temperature,
            )
            for i, inst in enumerate(dataset)
        ]
        completions = run_sync(self._model.complete_many(requests))
        out: list[Any] = []
        for inst, c in zip(dataset, completions, strict=True):
            if not return_meta_data:
                out.append(c.text)
                continue
            out.append(
                TextGenerationInferenceOutput(
                    prediction=c.text,
                    generated_text=c.text,
                    input_tokens=c.usage.prompt_tokens,
                    output_tokens=c.usage.completion_tokens,
                    stop_reason=c.finish_reason,
                    input_text=str(inst.get("source")),
                    model_name=self.model,
                    inference_type=self.label,
                )
            )
        return out

    def get_return_object(self, *args: Any, **kwargs: Any) -> Any:  # unitxt checks for it
        raise NotImplementedError


def _messages(index: int, instance: Mapping[str, Any]) -> tuple[Any, ...]:
    """unitxt's ``source``: a rendered prompt (text) or chat messages (role/content dicts)."""
    from jurist.types import Message

    source = instance.get("source")
    if isinstance(source, str):
        return (Message(role="user", content=source),)
    if isinstance(source, list) and all(
        isinstance(m, Mapping) and isinstance(m.get("content"), str) for m in source
    ):
        return tuple(Message(role=m.get("role", "user"), content=m["content"]) for m in source)
    raise DataError(
        f"instance {index}: unitxt 'source' must be text or a list of chat messages with "
        f"text content, got {type(source).__name__}"
    )


class JuristJudgeMetric(BulkInstanceMetric):  # type: ignore[misc]
    """A jurist judge as a unitxt metric (unitxt's ``compute(references, predictions,
    task_data)``).

    ``judge``: a jurist catalog name (``"judges.likert.openai_gpt_4o_mini"``) or a catalog
    entry mapping (:func:`judge_metric` makes one from a
    judge object). ``context_fields`` maps judge fields to ``task_data`` columns
    (``{"prompt": "question"}``). ``use_references``: the first reference of each instance
    fills the judge's reference (``None``: when the judge requires one). ``context_fields``
    also takes unitxt's forms, a field name or a list of ``task_data`` fields: those that
    are judge fields fill them, and the others are the judge's ``prompt``, written as
    unitxt's judges show context (``name: value`` lines; a lone field named ``context``,
    its value). ``data_classification_policy``: see the module doc. Per instance:
    ``<main_score>`` (NaN when unscored), ``<main_score>_verdict``, ``<main_score>_error``
    (the reason, empty when scored) and ``<main_score>_explanation``.
    """

    judge: Any
    context_fields: Any = None
    use_references: bool | None = None
    retries: int = 0
    concurrency: int = 16
    catalog_root: str | None = None
    main_score: str = "jurist_judge"
    reduction_map: Any = None
    ci_scores: Any = None
    prediction_type: Any = str

    def prepare(self) -> None:
        super().prepare()
        if self.reduction_map is None:
            self.reduction_map = {"mean": [self.main_score]}
        if self.ci_scores is None:
            self.ci_scores = [self.main_score]
        self._metric: Any = None
        self._context: list[str] = []

    def verify_instance(self, instance: dict[str, Any], name: str | None = None) -> Any:
        """unitxt's data classification check, under the judge's default policy (see the
        module doc) when none was given."""
        return _verify(
            self,
            super().verify_instance,
            instance,
            name,
            lambda: self._judge_metric().judge.models(),
        )

    def process_data_before_dump(self, data: Any) -> Any:
        data = super().process_data_before_dump(data)
        judge = data.get("judge") if isinstance(data, dict) else None
        if judge is not None and not isinstance(judge, str | Mapping):
            token = f"{getattr(judge, 'name', type(judge).__name__)}#{id(judge):x}"
            _INLINE[token] = judge
            data = {**data, "judge": {_INLINE_KEY: token}}
        return data

    def _judge_metric(self) -> Any:
        if self._metric is None:
            from jurist.pipeline import JudgeMetric

            judge = _build_judge(self.judge, self.catalog_root)
            mapping, self._context = _context_fields(self.context_fields, judge)
            self._metric = JudgeMetric(
                judge,
                context_fields=mapping,
                retries=self.retries,
                concurrency=self.concurrency,
            )
        return self._metric

    def compute(
        self,
        references: list[list[Any]],
        predictions: list[Any],
        task_data: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        metric = self._judge_metric()
        use = self.use_references
        if use is None:
            use = metric.reference_target in metric.judge.required_fields
        refs = [_first(i, r) for i, r in enumerate(references)] if use else None
        if self._context:
            task_data = [_with_context(i, td, self._context) for i, td in enumerate(task_data)]
        results = metric.compute(predictions, references=refs, task_data=task_data)
        key = self.main_score
        out: list[dict[str, Any]] = []
        for r in results.instances:
            out.append(
                {
                    key: math.nan if r.score is None else float(r.score),
                    f"{key}_verdict": None if r.verdict is None else str(r.verdict),
                    f"{key}_error": r.error or "",
                    f"{key}_explanation": r.explanation or "",
                }
            )
        return out


_CONTEXT = "__jurist_unitxt_context__"  # the task_data column the rendered context goes in


def _context_fields(fields: Any, judge: Any) -> tuple[Any, list[str]]:
    """unitxt's ``context_fields`` as jurist's mapping, and the fields shown as context.

    A mapping (judge field -> column) is jurist's, taken as is. A name or a list of names
    is unitxt's: a name that is a judge field fills it; the others are the context that
    fills the judge's ``prompt``.
    """
    if fields is None or isinstance(fields, Mapping):
        return fields, []
    if isinstance(fields, str):
        fields = [fields]
    if not isinstance(fields, list | tuple) or not all(isinstance(f, str) for f in fields):
        raise ConfigError(
            "JuristJudgeMetric: context_fields must be a field name, a list of task_data "
            "fields (unitxt's forms) or a mapping judge field -> task_data column, not "
            f"{fields!r}"
        )
    from jurist.pipeline._metric import _judge_fields

    reads = _judge_fields(judge)
    mapping = {f: f for f in fields if f in reads}
    context = [f for f in fields if f not in reads]
    if context:
        if "prompt" not in reads or "prompt" in mapping:
            raise ConfigError(
                f"JuristJudgeMetric: context_fields {context} are not fields of the judge "
                f"(it reads {reads}), and its prompt is "
                f"{'given already' if 'prompt' in mapping else 'not a field'}: map them with "
                "a dict, judge field -> task_data column"
            )
        mapping["prompt"] = _CONTEXT
    return mapping, context


def _with_context(index: int, row: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """``row`` with the context fields rendered as unitxt's judges render them."""
    missing = [n for n in names if n not in row]
    if missing:
        raise DataError(
            f"instance {index}: context field {missing[0]!r} is not in task_data (its "
            f"fields: {sorted(row)})"
        )
    if len(names) == 1 and names[0].lower() == "context":
        text = str(row[names[0]])
    else:
        text = "\n".join(f"{n}: {row[n]}" for n in names)
    return {**row, _CONTEXT: text}


def _verify(artifact: Any, verify: Any, instance: Any, name: str | None, models: Any) -> Any:
    """Run unitxt's ``verify_instance`` with the models' default policy when the artifact
    has none of its own (the field is restored after, so the artifact is unchanged)."""
    if artifact.data_classification_policy is not None:
        return verify(instance, name)
    if not any(m.capabilities.remote for m in models()):
        return verify(instance, name)  # local models: no policy, as unitxt's HF engines
    artifact.data_classification_policy = ["public"]
    try:
        return verify(instance, name)
    finally:
        artifact.data_classification_policy = None


def _first(index: int, refs: Any) -> Any:
    if isinstance(refs, str):
        return refs
    if isinstance(refs, list | tuple):
        return refs[0] if refs else None
    raise DataError(f"instance {index}: references must be a list, got {type(refs).__name__}")


def _build_judge(judge: Any, root: str | None) -> Any:
    from jurist import catalog
    from jurist.judges._protocol import ItemJudge

    if isinstance(judge, str):
        return catalog.get(judge, root=root)
    if isinstance(judge, Mapping) and _INLINE_KEY in judge:
        token = judge[_INLINE_KEY]
        if token not in _INLINE:
            raise ConfigError(
                f"JuristJudgeMetric: the judge {token!r} was given as an object in another "
                "process; store it as a catalog entry with judge_metric(judge) or use a "
                "jurist catalog name"
            )
        return _INLINE[token]
    if isinstance(judge, Mapping):
        from jurist.catalog._resolve import build_entry
        from jurist.catalog._store import EntryFile

        entry = EntryFile(
            name="unitxt_metric",
            path=Path("<unitxt metric judge>"),
            source="unitxt",
            data=dict(judge),
            lines={},
        )
        return build_entry(entry, root=root)
    if isinstance(judge, ItemJudge):
        return judge
    raise ConfigError(
        "JuristJudgeMetric(judge=...) takes a jurist catalog name, a catalog entry "
        f"(judge_metric(judge) makes one) or a judge, not {type(judge).__name__}"
    )


def judge_metric(judge: Any, **fields: Any) -> JuristJudgeMetric:
    """A :class:`JuristJudgeMetric` for a jurist judge object, stored as its catalog entry
    (so ``add_to_catalog`` can save it); ``fields`` are the metric's other fields."""
    from jurist.catalog._dump import entry_of

    try:
        entry = entry_of(judge)
    except JuristError as e:
        raise ConfigError(f"judge_metric: {e}") from None
    return JuristJudgeMetric(judge=entry, **fields)
