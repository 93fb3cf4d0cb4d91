"""What travels to a Ray actor, and the actor that judges batches of items.

A judge is never pickled with its live connections: the driver turns it into its catalog
entry and the specs of its models' stacks (:func:`portable_entry`;
:meth:`~jurist.models.Model.rebuild_spec`: backend options, retries, timeout, cache,
limits) and each :class:`JudgeActor` rebuilds it once, in its constructor
(:func:`rebuild`): the judge from its entry, then each model put back
(``with_models``) as its whole stack, built from its spec and its
:class:`Secrets` (in memory, given to the constructor; no environment is written). The
only objects that travel are scripted :class:`~jurist.models.MockModel` objects, by
their place in the judge's ``models()`` (they hold no connection and their script cannot
be written as a spec; each actor gets its own copy, so a scripted *list* is replayed per
actor while a function of the request answers as it does locally).

Items travel as JSON text (``row``: the item as the run store keeps it; ``values``: the
judge's fields) and results come back as JSON text of one
:class:`~jurist.runs._store.StoredResult` (:func:`encode_result` /
:func:`decode_result`), so nested values round-trip exactly and the driver stores what
the local engine would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from jurist._local_files import LocalFiles
from jurist.data._local_images import resolve_images
from jurist.data._source import item_hash, map_fields
from jurist.engines._item_path import Coster, judge_one, stored_result
from jurist.errors import ConfigError
from jurist.judges._protocol import models_of, with_models_of
from jurist.models import LimitedModel, MockModel, Model, ModelSpec, WrapperModel, rebuild_model
from jurist.runs._cost import PriceTable
from jurist.runs._store import StoredResult
from jurist.templates._conversation import place_of
from jurist.types import Usage

__all__ = [
    "JudgeActor",
    "Pacing",
    "PortableJudge",
    "Secrets",
    "decode_result",
    "encode_json",
    "encode_result",
    "portable_entry",
    "rebuild",
    "records_batch",
]

_DUMP = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def encode_json(value: Any) -> str:
    """JSON text as the run store writes it (numpy values as numbers, others as text)."""
    return orjson.dumps(value, option=_DUMP, default=str).decode()


def encode_result(result: StoredResult) -> str:
    """One stored result as JSON text."""
    return encode_json(
        {
            "idx": result.idx,
            "item_hash": result.item_hash,
            "item": result.item,
            "score": result.score,
            "error": result.error,
            "outcome": result.outcome,
            "usage": result.usage.model_dump(mode="json"),
            "cost": result.cost,
            "cost_estimated": result.cost_estimated,
            "latency": result.latency,
            "cost_uncached": result.cost_uncached,
        }
    )


def decode_result(text: str) -> StoredResult:
    """The :class:`StoredResult` of :func:`encode_result`'s text."""
    data = orjson.loads(text)
    data["usage"] = Usage.model_validate(data["usage"])
    return StoredResult(**data)


@dataclass(frozen=True)
class PortableJudge:
    """What an actor rebuilds a judge from: its catalog ``entry`` (the judge's settings,
    never a key), and for each of the judge's models (in ``models()`` order) its
    :class:`~jurist.models.ModelSpec` (the whole stack: backend options, retries, cache,
    limits; never a key) and ``mocks``: the scripted :class:`~jurist.models.MockModel`
    that is the stack's backend, or ``None`` (a backend rebuilt from its spec)."""

    entry: dict[str, Any]
    models: tuple[ModelSpec, ...]
    mocks: tuple[MockModel | None, ...]

    def __getitem__(self, key: str) -> Any:
        return self.entry[key]


def _backend(model: Model) -> Model:
    while isinstance(model, WrapperModel):
        model = model.wrapped
    return model


def portable_entry(judge: Any) -> PortableJudge:
    """What each actor rebuilds ``judge`` from (mock models kept as objects).

    >>> import jurist
    >>> entry = portable_entry(jurist.LLMJudge("openai:gpt-4o-mini", template="likert"))
    >>> entry["kind"], entry["model"], entry["template"], entry.mocks
    ('judge', 'openai:gpt-4o-mini', 'likert', (None,))
    >>> entry.models[0].transport.max_retries
    2
    """
    from jurist.catalog._dump import entry_of

    try:
        entry = entry_of(judge)
        specs = tuple(model.rebuild_spec() for model in models_of(judge))
    except ConfigError as e:
        raise ConfigError(
            f"cannot judge with this {type(judge).__name__} on Ray: each actor rebuilds the "
            f"judge from its catalog entry and its models from their specs, and {e}. Use an "
            "LLMJudge, PairwiseJudge, Panel or RubricJudge over provider:name models, or "
            "the local engine (engine=LocalEngine())."
        ) from None
    backends = [_backend(model) for model in models_of(judge)]
    mocks = tuple(b if isinstance(b, MockModel) else None for b in backends)
    return PortableJudge(entry, specs, mocks)


def _entry_file(entry: dict[str, Any]) -> Any:
    from jurist.catalog._store import EntryFile

    name = str(entry.get("name") or "ray-judge")
    return EntryFile(
        name=name, path=Path(f"<ray entry {name}>"), source="ray", data=entry, lines={}
    )


class Secrets:
    """The credentials of a judge's models, in ``models()`` order (each model's
    :meth:`~jurist.models.Model.secrets`: constructor options such as ``api_key``), held
    in memory and given to the rebuilt models' constructors, never to an environment. The
    repr shows option names only, so a log line or an error that prints the actor's
    arguments shows no value.

    >>> Secrets(({"api_key": "sk-1"}, {}))
    Secrets(model 0: api_key=***)
    """

    def __init__(self, per_model: Sequence[Mapping[str, Any]]) -> None:
        self.per_model = tuple(dict(s) for s in per_model)

    @classmethod
    def of(cls, judge: Any) -> Secrets:
        """The secrets of ``judge``'s models."""
        return cls([model.secrets() for model in models_of(judge)])

    def __repr__(self) -> str:
        shown = [
            f"model {i}: " + ", ".join(f"{k}=***" for k in s)
            for i, s in enumerate(self.per_model)
            if s
        ]
        return f"Secrets({'; '.join(shown)})"


@dataclass(frozen=True)
class Pacing:
    """The cluster limits of a judge's models, in ``models()`` order: each model's
    :class:`~jurist.engines._ray_limits.ClusterPacer` actor (or ``None``) and whether it
    paces tokens."""

    limiters: tuple[Any, ...]
    tokens: tuple[bool, ...]


def rebuild(
    portable: PortableJudge, pacing: Pacing | None = None, secrets: Secrets | None = None
) -> Any:
    """The judge of :func:`portable_entry`'s ``portable``: built from its entry, then each
    model replaced (``with_models``) by its stack rebuilt from its spec with its secrets
    (a mock put back as the backend). With ``pacing`` (on an actor) the limits' place of
    each stack holds the model's cluster pacer when it has one
    (:class:`~jurist.engines._ray_limits.SharedLimitModel`, under the retries, so each
    retry is paced by the cluster) and the model's ``max_concurrency`` per actor: the
    transport's own ``rpm`` / ``tpm`` never make a limiter per actor. Without (the
    driver's check that the judge rebuilds) each stack is rebuilt as it is.

    >>> import jurist
    >>> rebuild(portable_entry(jurist.LLMJudge("mock:j", outputs=None))).model.spec
    'mock:j'
    """
    from jurist.catalog._resolve import build_entry
    from jurist.engines._ray_limits import SharedLimitModel

    judge = build_entry(_entry_file(portable.entry))
    count = len(models_of(judge))
    if count != len(portable.models):
        raise ConfigError(
            f"the judge rebuilt on a Ray actor calls {count} models, the driver's "
            f"{len(portable.models)}; use the local engine (engine=LocalEngine())"
        )
    n = len(portable.models)
    keys = secrets.per_model if secrets is not None else ({},) * n
    places = iter(range(n))

    def prepared(_: Model) -> Model:
        i = next(places)
        spec = portable.models[i]
        limiter, tokens = (pacing.limiters[i], pacing.tokens[i]) if pacing else (None, False)
        concurrency = spec.transport.max_concurrency

        def layer(model: Model) -> Model:
            if concurrency is not None:  # per actor: the cluster pacer paces calls only
                model = LimitedModel(model, max_concurrency=concurrency)
            if limiter is not None:
                model = SharedLimitModel(model, limiter, tokens=tokens)
            return model

        # each actor has its own (unpickled) copy of a mock; without pacing (the driver's
        # check) the stack is rebuilt as it is, its own limits included
        limits = layer if pacing is not None else None
        return rebuild_model(spec, keys[i], limits=limits, backend=portable.mocks[i])

    return with_models_of(judge, prepared)


class JudgeActor:
    """A Ray Data actor: rebuilds the judge once, then judges each batch concurrently.

    A batch (pyarrow) has the columns ``idx``, ``digest``, ``row`` and ``values`` (JSON
    text); the actor answers with ``idx`` and ``result`` (JSON text of the item's
    :class:`StoredResult`, priced by a :class:`Coster` over ``table``). With ``raw=True``
    a batch is a user's rows instead (their fields mapped by ``fields``). With
    ``records=True`` the answer is the results.jsonl records
    (:func:`~jurist.runs._run.flatten`), as a pandas batch of object columns so values
    stay the Python values the records hold.
    """

    def __init__(
        self,
        entry: PortableJudge,
        table: PriceTable,
        retries: int,
        pacing: Pacing | None = None,
        raw: bool = False,
        fields: dict[str, str] | None = None,
        records: bool = False,
        secrets: Secrets | None = None,
        files: LocalFiles | None = None,
    ) -> None:
        self.judge = rebuild(entry, pacing, secrets)
        self.coster = Coster(self.judge, table)
        self.retries = retries
        self.raw = raw
        self.records = records
        self.fields = fields
        self.required = tuple(self.judge.required_fields)
        self.files = files or LocalFiles()
        """The run's local files policy: a local image path that travelled as JSON text
        is permitted again against it before it is read."""

    async def _one(self, row: dict[str, Any]) -> StoredResult:
        idx = int(row["idx"])
        values = orjson.loads(row["values"])
        values = resolve_images(values, self.files, place_of(values, f"item {idx + 1}"))
        outcome = await judge_one(self.judge, values, idx, self.retries)
        item = orjson.loads(row["row"])
        return stored_result(idx, row["digest"], item, outcome, self.coster)

    async def _raw(self, row: dict[str, Any]) -> StoredResult:
        where = f"Ray dataset row {encode_json(row)[:80]}"
        values = map_fields(row, self.fields, self.required, where, files=self.files)
        outcome = await judge_one(self.judge, values, -1, self.retries)
        item = orjson.loads(encode_json(row))
        digest = item_hash(row, files=self.files, where=where)
        return stored_result(-1, digest, item, outcome, self.coster)

    async def __call__(self, batch: Any) -> Any:
        rows = batch.to_pylist()
        judge = self._raw if self.raw else self._one
        results = await asyncio.gather(*(judge(r) for r in rows))
        if self.records:
            return records_batch(results)
        import pyarrow as pa

        return pa.table(
            {
                "idx": pa.array([r.idx for r in results], pa.int64()),
                "result": pa.array([encode_result(r) for r in results], pa.string()),
            }
        )


def records_batch(results: list[StoredResult]) -> Any:
    """Results as a pandas batch of results.jsonl records (object columns)."""
    import pandas as pd

    from jurist.runs._run import flatten

    records = [
        flatten({"item": r.item, "outcome": r.outcome, "usage": r.usage, "cost": r.cost})
        for r in results
    ]
    columns: dict[str, None] = {}
    for record in records:
        columns.update(dict.fromkeys(record))
    return pd.DataFrame(
        {name: pd.Series([r.get(name) for r in records], dtype=object) for name in columns}
    )
