"""The ``vllm`` backend: vLLM's async engine run in this process, on a CUDA GPU.

``get_model("vllm:Qwen/Qwen2.5-7B-Instruct")`` or ``get_model("vllm:/path/to/model",
tensor_parallel_size=2, gpu_memory_utilization=0.85, max_model_len=8192)``: every option
but ``max_tokens`` (the default generation length) is an ``AsyncEngineArgs`` field and goes
to the engine as it is. Prefix caching is on unless ``enable_prefix_caching=False``.

One engine per process per (model, engine options): models built with the same spec and
options share it. It starts on the first call, or in :meth:`VLLMModel.prepare` (the CLI
calls it so a missing model fails before the first item). The engine lives on an event loop
of its own in a daemon thread, so it serves every caller's loop (``judge_sync`` runs each
call on a fresh one); each ``complete()`` is one ``AsyncLLM.generate`` with a unique request
id, submitted at once: vLLM's continuous batching and prefix cache do the batching.

Prompts are rendered and tokenised exactly as the ``hf`` backend does (the model's chat
template, :func:`jurist.models._hf_compute.render_prompt`) and sent as token ids, so both
backends see the same tokens. Mappings of requests and outputs are in
:mod:`jurist.models._vllm_mapping`.

Thinking: ``Request.reasoning`` sets the chat template's ``enable_thinking`` (through the
shared rendering) and its budget is enforced in legs (:class:`~jurist.models._thinking.
ThinkingLegs`): the thinking runs at most ``budget_tokens``, then the closing tag is
appended and a further request goes on to the verdict, so the answer reads as one
completion (its usage counts the prompt once and every token after it, the forced tag
included; a forced tag has no logprob entry: the model did not choose it).
``capabilities.thinking`` follows the chat template as in the ``hf`` backend.

Checked against vLLM 0.33: ``vllm/v1/engine/async_llm.py`` (``AsyncLLM.from_engine_args``,
``generate``, ``get_tokenizer``, ``shutdown``), ``vllm/engine/arg_utils.py``
(``AsyncEngineArgs``), ``vllm/sampling_params.py`` (``SamplingParams``,
``StructuredOutputsParams`` -- the name since 0.11; older releases had
``GuidedDecodingParams``, which this backend does not use -- ``RequestOutputKind``,
``logprob_token_ids``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import itertools
import os
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from jurist.errors import (
    APITimeoutError,
    ConfigError,
    JuristError,
    MissingDependencyError,
    ModelError,
    ModelLoadError,
)
from jurist.models._fingerprint import engine_fingerprint
from jurist.models._model import Capabilities, Model, refuse_images
from jurist.models._once import Once
from jurist.models._thinking import (
    THINK_CLOSE,
    THINK_OPEN,
    ThinkingLegs,
    open_at_end,
    refuse_reasoning,
    template_thinks,
    thinking_budget,
)
from jurist.models._vllm_mapping import (
    IDENTITY_ENGINE_KEYS,
    candidate_scores_from,
    completion_from_output,
    identity_value,
    merge_legs,
    plan_scoring,
    resolve_model_name,
    sampling_kwargs,
)
from jurist.types import CandidateScores, Completion, Request

__all__ = ["VLLMModel", "build_vllm"]

T = TypeVar("T")
_DEFAULT_MAX_LOGPROBS = 20  # ModelConfig.max_logprobs in vLLM 0.33
_NO_CAP = 2**31 - 1
_FEATURE = "The vllm: backend (vLLM's in-process engine, which needs a CUDA GPU)"


def _require_vllm_and_gpu() -> Any:
    """Import vLLM and check for a CUDA GPU; raise the error that names the fix."""
    try:
        vllm = importlib.import_module("vllm")
    except ImportError as exc:
        raise MissingDependencyError("vllm", "vllm", _FEATURE) from exc
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(
            "the vllm: backend needs a CUDA GPU and torch sees none "
            f"(torch {torch.__version__}). On a machine without a GPU use hf:MODEL (local "
            "transformers on the CPU), or reach a vLLM server elsewhere with openai:MODEL "
            "and --base-url http://HOST:PORT/v1 (get_model('openai:MODEL', base_url=...))"
        )
    return vllm


# -- the engine thread ---------------------------------------------------------------------


class _EngineLoop:
    """An event loop in a daemon thread that owns every vLLM engine of the process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="jurist-vllm", daemon=True
        )
        self.thread.start()

    async def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the engine loop and await it from the caller's loop."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        wrapped = asyncio.wrap_future(future)
        if timeout is None:
            return await wrapped
        return await asyncio.wait_for(wrapped, timeout)


_LOOP: _EngineLoop | None = None
_LOOP_LOCK = threading.Lock()


def _engine_loop() -> _EngineLoop:
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            _LOOP = _EngineLoop()
        return _LOOP


@dataclass
class _Engine:
    """A started ``AsyncLLM`` and the tokenizer facts prompts are built with."""

    llm: Any
    lm: Any  # jurist.models._hf_loading.LoadedModel holding vLLM's tokenizer (no weights)
    vllm: Any


# key -> the task starting (or that started) that engine; touched only on the engine loop
_ENGINES: dict[tuple[str, str], asyncio.Task[_Engine]] = {}
_REQUEST_IDS = itertools.count(1)


def _start_engine(vllm: Any, name: str, engine_kwargs: dict[str, Any]) -> _Engine:
    """Build the engine (blocking: loads the weights) and its tokenizer facts."""
    from vllm.usage.usage_lib import UsageContext
    from vllm.v1.engine.async_llm import AsyncLLM

    try:
        args = vllm.AsyncEngineArgs(model=name, **engine_kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"vllm backend: bad engine options {engine_kwargs!r}: {exc}") from exc
    try:
        # the offline-batch profile (vLLM's LLM class): larger default scheduler budgets
        # (max_num_batched_tokens, max_num_seqs) than ENGINE_CONTEXT, as bulk judging wants
        llm = AsyncLLM.from_engine_args(args, usage_context=UsageContext.LLM_CLASS)
    except Exception as exc:
        raise ModelLoadError(
            f"cannot start the vLLM engine for {name!r}: {type(exc).__name__}: {exc}",
            model=f"vllm:{name}",
        ) from exc
    return _Engine(llm=llm, lm=tokenizer_facts(llm.get_tokenizer()), vllm=vllm)


def tokenizer_facts(tokenizer: Any) -> Any:
    """The ``hf`` backend's ``LoadedModel`` for a tokenizer alone (no weights).

    Prompt rendering and candidate tokenisation (:func:`~jurist.models._hf_compute.render_prompt`,
    :func:`~jurist.models._hf_scoring.candidate_ids`) read only the tokenizer and these
    facts, so both backends build the same tokens from the same messages.
    """
    from jurist.models._hf_loading import LoadedModel

    return LoadedModel(
        tokenizer=tokenizer,
        model=None,
        device=None,
        eos_ids=(),
        pad_id=0,
        has_chat_template=bool(getattr(tokenizer, "chat_template", None)),
        added_tokens=tuple(
            str(t.content) for t in getattr(tokenizer, "added_tokens_decoder", {}).values()
        ),
    )


_DEFAULT_MAX_TOKENS = 256
_ENGINE_DEFAULTS: dict[str, Any] = {"enable_prefix_caching": True, "disable_log_stats": True}
_SECRET_ENGINE_KEYS = frozenset({"hf_token"})
_UNSET = object()


class VLLMModel(Model):
    """A model served by vLLM's async engine in this process (see the module docs).

    ``name``: a hub id or a local folder. ``max_tokens``: the generation length when a
    request sets none. ``engine_kwargs``: ``AsyncEngineArgs`` fields.
    """

    provider = "vllm"

    def __init__(
        self, name: str, *, max_tokens: int = _DEFAULT_MAX_TOKENS, **engine_kwargs: Any
    ) -> None:
        if max_tokens < 1:
            raise ConfigError(f"vllm backend: max_tokens must be >= 1, not {max_tokens}")
        self._vllm = _require_vllm_and_gpu()
        fields = {f.name for f in dataclasses.fields(self._vllm.AsyncEngineArgs)}
        unknown = sorted(set(engine_kwargs) - fields)
        if "model" in engine_kwargs or unknown:
            raise ConfigError(
                f"vllm backend: unknown options {unknown or ['model']}; it takes max_tokens and "
                "the fields of vllm.AsyncEngineArgs (tensor_parallel_size, "
                "gpu_memory_utilization, max_model_len, dtype, ...), the model coming from "
                "the spec"
            )
        self.name = resolve_model_name(name)
        self.max_tokens = max_tokens
        self.engine_kwargs: dict[str, Any] = {**_ENGINE_DEFAULTS, **engine_kwargs}
        self._key = (self.name, repr(sorted(self.engine_kwargs.items())))
        max_logprobs = int(self.engine_kwargs.get("max_logprobs", _DEFAULT_MAX_LOGPROBS))
        self.max_logprobs = max_logprobs
        self._fingerprint: Once[dict[str, Any] | None] = Once()

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            logprobs=True,
            top_logprobs=_NO_CAP if self.max_logprobs < 0 else self.max_logprobs,
            json_schema=True,
            candidate_scores=True,
            remote=False,
            thinking=self._thinks(),
        )

    def _thinks(self) -> bool:
        """Whether the chat template has a thinking switch: the started engine's tokenizer,
        else the model's files (:mod:`jurist.models._hf_thinking`)."""
        task = _ENGINES.get((self.name, repr(sorted(self.engine_kwargs.items()))))
        if task is not None and task.done() and not task.cancelled() and not task.exception():
            return template_thinks(getattr(task.result().lm.tokenizer, "chat_template", None))
        from jurist.models._hf_loading import resolve_source
        from jurist.models._hf_thinking import files_template_thinks

        try:
            source = resolve_source(self.name)
        except JuristError:
            return False
        return files_template_thinks(source, self.engine_kwargs.get("revision"))

    def rebuild_options(self) -> dict[str, Any]:
        """The options that build this model again (a catalog entry's ``model_options``,
        a Ray actor's rebuild): every engine option given, never ``hf_token``.

        Unlike :meth:`identity` this keeps the options that do not change outputs
        (``gpu_memory_utilization``, ``tensor_parallel_size``...): a model rebuilt
        elsewhere must fit its GPU the same way.
        """
        out: dict[str, Any] = {
            k: v
            for k, v in self.engine_kwargs.items()
            if k not in _SECRET_ENGINE_KEYS and _ENGINE_DEFAULTS.get(k, _UNSET) != v
        }
        if self.max_tokens != _DEFAULT_MAX_TOKENS:
            out["max_tokens"] = self.max_tokens
        return out

    def secrets(self) -> dict[str, Any]:
        """``hf_token`` when given: the credential :meth:`rebuild_options` leaves out."""
        return {
            k: v
            for k, v in self.engine_kwargs.items()
            if k in _SECRET_ENGINE_KEYS and v is not None
        }

    def identity(self) -> dict[str, Any]:
        out: dict[str, Any] = {"provider": self.provider, "name": self.name}
        for key in IDENTITY_ENGINE_KEYS:
            if self.engine_kwargs.get(key) is not None:
                out[key] = identity_value(self.engine_kwargs[key])
        out["default_max_tokens"] = self.max_tokens
        return out

    async def fingerprint(self) -> dict[str, Any] | None:
        """The fingerprint of the model's files, and the tokenizer's when it comes from
        elsewhere (:func:`jurist.models._fingerprint.engine_fingerprint`); taken once per
        engine start (again after :meth:`aclose`). A hub id is fingerprinted once the engine
        has started, as vLLM may fetch a newer snapshot when it starts."""
        return await self._fingerprint.get(self._take_fingerprint)

    async def _take_fingerprint(self) -> dict[str, Any] | None:
        if not os.path.isdir(self.name):
            await self.prepare()
        found = await asyncio.to_thread(engine_fingerprint, self.name, self.engine_kwargs)
        if found is None:  # a tokenizer from the hub, fetched when the engine starts
            await self.prepare()
            found = await asyncio.to_thread(engine_fingerprint, self.name, self.engine_kwargs)
        if found is None:
            raise ModelLoadError(
                f"vllm model {self.name!r} started but its snapshot is not in the Hugging "
                "Face cache (or download_dir), so its weights cannot be fingerprinted for the "
                "jurist cache; pass the model's folder or turn the cache off (--no-cache)",
                model=self.spec,
            )
        return found

    # -- the engine ------------------------------------------------------------------

    async def _engine(self) -> _Engine:
        """The shared engine for this model and options (runs on the engine loop)."""
        task = _ENGINES.get(self._key)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):

            async def start() -> _Engine:
                return _start_engine(self._vllm, self.name, dict(self.engine_kwargs))

            task = asyncio.get_running_loop().create_task(start())
            _ENGINES[self._key] = task
        return await asyncio.shield(task)

    async def prepare(self) -> None:
        """Start the engine now (load the weights), so a bad model stops a batch early."""
        await _engine_loop().run(self._engine())

    async def aclose(self) -> None:
        """Shut the engine down and free the GPU; a later call starts it again.

        Every model sharing the engine (same spec and options) loses it too.
        """

        self._fingerprint.reset()

        async def close() -> None:
            task = _ENGINES.pop(self._key, None)
            if task is None:
                return
            try:
                engine = await task
            except Exception:
                return  # it never started: nothing to free
            engine.llm.shutdown()

        await _engine_loop().run(close())

    # -- generation ------------------------------------------------------------------

    async def complete(self, request: Request) -> Completion:
        refuse_images(self.spec, request)
        kwargs = sampling_kwargs(
            request, default_max_tokens=self.max_tokens, max_logprobs=self.max_logprobs
        )
        start = time.perf_counter()
        try:
            if request.reasoning is not None:
                done = await _engine_loop().run(self._think(request, kwargs))
                return done.model_copy(update={"latency": time.perf_counter() - start})
            output = await _engine_loop().run(self._generate(request, kwargs))
        except TimeoutError as exc:
            raise APITimeoutError(
                f"vllm request got no answer within {request.timeout} s", model=self.spec
            ) from exc
        latency = time.perf_counter() - start
        return completion_from_output(output, request, model_name=self.name, latency=latency)

    async def _think(self, request: Request, kwargs: dict[str, Any]) -> Completion:
        """A request with ``reasoning``: refused where the template cannot think, else
        generated in legs within its thinking budget (see the module docs)."""
        from jurist.models._hf_compute import encode, encode_prompts, render_prompt

        engine = await self._engine()
        thinks = template_thinks(getattr(engine.lm.tokenizer, "chat_template", None))
        refuse_reasoning(self.spec, request, thinks)
        text = render_prompt(engine.lm, request.messages, request.reasoning)
        prompt_ids = encode_prompts(engine.lm, [text])[0]
        budget = thinking_budget(request.reasoning)
        if budget is None:  # effort="none": the switch alone
            run = self._run(engine, prompt_ids, self._params(engine, kwargs))
            output = await asyncio.wait_for(run, request.timeout)
            return completion_from_output(output, request, model_name=self.name)
        open_ids, close_ids = encode(engine.lm, [THINK_OPEN, THINK_CLOSE], special=False)
        legs = ThinkingLegs(
            budget=budget,
            open_ids=open_ids,
            close_ids=close_ids,
            opened=open_at_end(text),
            max_tokens=int(kwargs["max_tokens"]),
        )
        parts: list[Completion] = []
        ids = list(prompt_ids)
        cached = 0
        while (n := legs.next_leg()) is not None:
            run = self._run(engine, ids, self._params(engine, {**kwargs, "max_tokens": n}))
            output = await asyncio.wait_for(run, request.timeout)
            part = completion_from_output(output, request, model_name=self.name)
            cached = cached or part.usage.cached_tokens
            generated = [int(t) for t in output.outputs[0].token_ids]
            forced = legs.take(generated, finished=part.finish_reason != "length")
            parts.append(part)
            ids += generated
            if forced:
                ids += forced
                parts.append(
                    Completion(text=THINK_CLOSE, logprobs=() if request.logprobs else None)
                )
        return merge_legs(
            parts,
            prompt_tokens=len(prompt_ids),
            forced_tokens=legs.forced * len(close_ids),
            cached_tokens=cached,
        )

    async def _generate(self, request: Request, kwargs: dict[str, Any]) -> Any:
        from jurist.models._hf_compute import encode_prompts, render_prompt

        engine = await self._engine()
        text = render_prompt(engine.lm, request.messages, request.reasoning)
        prompt_ids = encode_prompts(engine.lm, [text])[0]
        run = self._run(engine, prompt_ids, self._params(engine, kwargs))
        # the timeout bounds the request, not the engine's start (minutes, once)
        return await asyncio.wait_for(run, request.timeout)

    def _params(self, engine: _Engine, kwargs: dict[str, Any]) -> Any:
        from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams

        given = dict(kwargs)
        structured = given.pop("structured_outputs", None)
        try:
            if structured is not None:
                given["structured_outputs"] = StructuredOutputsParams(**structured)
            return engine.vllm.SamplingParams(output_kind=RequestOutputKind.FINAL_ONLY, **given)
        except Exception as exc:  # VLLMValidationError, ValueError, TypeError
            raise ConfigError(
                f"vllm backend: vLLM refused the sampling parameters {kwargs!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    async def _run(self, engine: _Engine, prompt_ids: list[int], params: Any) -> Any:
        """One ``AsyncLLM.generate`` call; returns its final ``RequestOutput``."""
        prompt = engine.vllm.TokensPrompt(prompt_token_ids=list(prompt_ids))
        request_id = f"jurist-{next(_REQUEST_IDS)}"
        final = None
        try:
            async for output in engine.llm.generate(prompt, params, request_id):
                final = output
        except JuristError:
            raise
        except Exception as exc:
            raise ModelError(
                f"vllm request {request_id} failed: {type(exc).__name__}: {exc}", model=self.spec
            ) from exc
        if final is None:
            raise ModelError(f"vllm request {request_id} produced no output", model=self.spec)
        return final

    # -- candidate scoring -----------------------------------------------------------

    async def candidate_scores(
        self, request: Request, candidates: Sequence[str]
    ) -> CandidateScores:
        """Logprob of each candidate as the start of the answer (see :func:`plan_scoring`).

        The tokens of a candidate are found as the ``hf`` backend finds them
        (:func:`jurist.models._hf_scoring.candidate_ids`); each row of the plan is one
        engine request with ``max_tokens=1`` that reads the asked token ids' logprobs at the
        row's end (``SamplingParams.logprob_token_ids``). All rows go to the engine at once,
        and they share the prompt through the prefix cache (prompt logprobs would not:
        vLLM 0.33 skips the prefix cache for requests that ask for them).
        """
        unique = tuple(dict.fromkeys(candidates))
        if not unique:
            raise ConfigError("candidate_scores needs at least one candidate")
        if any(not c for c in unique):
            raise ConfigError("candidate_scores got an empty candidate string")
        try:
            return await _engine_loop().run(self._score(request, unique))
        except TimeoutError as exc:
            raise APITimeoutError(
                f"vllm candidate scoring got no answer within {request.timeout} s",
                model=self.spec,
            ) from exc

    async def _score(self, request: Request, candidates: tuple[str, ...]) -> CandidateScores:
        from jurist.models._hf_compute import encode_prompts, render_prompt
        from jurist.models._hf_scoring import candidate_ids

        engine = await self._engine()
        if request.reasoning is not None:
            thinks = template_thinks(getattr(engine.lm.tokenizer, "chat_template", None))
            refuse_reasoning(self.spec, request, thinks)
        text = render_prompt(engine.lm, request.messages, request.reasoning)
        prompt_ids = encode_prompts(engine.lm, [text])[0]
        tokens = candidate_ids(engine.lm, text, candidates)
        plan = plan_scoring(prompt_ids, dict(zip(candidates, tokens, strict=True)))
        from vllm.sampling_params import RequestOutputKind

        def params(ids: tuple[int, ...]) -> Any:
            return engine.vllm.SamplingParams(
                max_tokens=1,
                temperature=0.0,
                logprob_token_ids=list(ids),
                detokenize=False,
                output_kind=RequestOutputKind.FINAL_ONLY,
            )

        rows = asyncio.gather(
            *(self._run(engine, list(row), params(ids)) for row, ids in plan.rows)
        )
        outputs = await asyncio.wait_for(rows, request.timeout)
        read: list[dict[int, float]] = []
        for output in outputs:
            positions = output.outputs[0].logprobs if output.outputs else None
            if not positions:
                raise ModelError("vllm returned no logprobs for a scoring row", model=self.spec)
            read.append({int(t): float(lp.logprob) for t, lp in positions[0].items()})
        cached = int(outputs[0].num_cached_tokens or 0)
        return candidate_scores_from(plan, read, cached_tokens=cached)


def build_vllm(name: str, **options: Any) -> VLLMModel:
    """Factory used by the registry: ``get_model("vllm:NAME", **engine_kwargs)``."""
    return VLLMModel(name, **options)
