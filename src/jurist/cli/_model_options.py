"""The model options every engine command shares, defined once, and the model stack they build.

:func:`model_options` is a decorator for a typer command: it adds the shared flags
(``--model``, ``--base-url``, ``--api-key``, ``--timeout``, ``--max-retries``, ``--rpm``,
``--tpm``, ``--cache/--no-cache``, ``--cache-path``, ``--json-mode``, ``--concurrency``,
``--temperature``; with ``thinking=True`` also ``--reasoning`` and
``--keep-reasoning/--no-keep-reasoning``) to the command's signature and hands the command
one :class:`ModelOptions` in its ``options`` parameter. A command cannot forget a flag, and
the flags cannot drift apart between commands; a command may only change defaults.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from jurist.cli._bounds import bounded
from jurist.cli._flag_group import add_flag_group
from jurist.cli._help import choices_metavar
from jurist.errors import ConfigError
from jurist.models._backends import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MODEL,
    backend_info,
    backends,
    providers_shown,
    providers_taking,
    server_spec,
)

if TYPE_CHECKING:
    from jurist.models import Model
    from jurist.models._default import DefaultChoice

__all__ = [
    "JSON_MODES",
    "SHARED_OPTIONS",
    "ModelOptions",
    "build_model",
    "default_model_choice",
    "model_options",
    "resolve_model_spec",
]

JSON_MODES = ("json_schema", "json_object", "none")
_PANEL = "Model options"


def resolve_model_spec(model: str | None, base_url: str | None) -> str:
    """``--model``, else ``$JURIST_MODEL``, else the embedded default.

    A bare name with ``--base-url`` means a model of that server: the backend that speaks
    the protocol any server serves (OpenAI-compatible, :func:`~jurist.models.server_spec`).
    """
    spec = model or os.environ.get("JURIST_MODEL") or default_model_choice(base_url).spec
    if base_url and ":" not in spec:
        spec = server_spec(spec)
    return spec


def default_model_choice(base_url: str | None = None) -> DefaultChoice:
    """The model a command line without ``--model`` or ``$JURIST_MODEL`` uses: the
    documented default, or offline the demonstration model (:mod:`jurist.models._default`);
    with ``--base-url`` the default stands (a server is named, not the hub)."""
    from jurist.models._default import DefaultChoice, choose_default_model

    return DefaultChoice(spec=DEFAULT_MODEL) if base_url else choose_default_model()


def build_model(
    spec: str,
    *,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    max_retries: int,
    rpm: int | None = None,
    tpm: int | None = None,
    cache: bool = True,
    cache_path: Path | None = None,
    json_mode: str | None = "json_schema",
    backend_options: Mapping[str, Any] | None = None,
    held: Mapping[str, Any] | None = None,
) -> Model:
    """The backend wrapped as cache(retry(limits(backend))).

    ``backend_options`` (``--model-option KEY=VALUE``) go to the backend as they are
    (``max_model_len`` for ``vllm:``, ``dtype`` for ``hf:``...); one that a flag of its own
    sets (``--timeout``, ``--base-url``, ``--api-key``...) is refused, naming the flag.
    Options inside the spec's brackets (``openai:j[api_key=...,timeout=30]``) hold for that
    model and win over the flags' values; so do ``held`` ones: the backend options a run or
    a catalog entry kept for its model (its server's ``base_url``...), which rebuild that
    model with these flags (the key, the timeout, the retries and the cache of this
    command line).

    The order is :func:`~jurist.models.build_stack`'s: limits innermost so every attempt,
    retries included, is paced; retry over them so a backoff sleep never holds a
    concurrency slot; the cache outermost so a hit costs no slot and no attempt.
    """
    from jurist.models import Transport, build_backend, build_stack, parse_spec

    parsed = parse_spec(spec)  # the spec is read here, once
    if json_mode not in (None, *JSON_MODES):
        raise ConfigError(
            f"--json-mode must be json_schema, json_object or none, not {json_mode!r}"
        )
    backend = backend_info(parsed.provider)
    if base_url and "base_url" not in backend.takes:
        raise ConfigError(
            f"--base-url only applies to {providers_shown(providers_taking('base_url'))} "
            f"models, not {spec!r}"
        )
    # options inside the spec's brackets, and those held for the model (a run's judge
    # rebuilt), hold for that model and win over the flags
    given = {**parsed.options, **(held or {})}
    options = backend.connection_options(
        base_url=base_url or given.get("base_url"),
        api_key=api_key,
        timeout=timeout,
        json_mode=json_mode,
        given=given,
    )
    options.update(held or {})
    for key, value in (backend_options or {}).items():
        if (key in options and key not in (held or {})) or key in _OWN_FLAGS:
            flag = _OWN_FLAGS.get(key, "--" + key.replace("_", "-"))
            raise ConfigError(f"--model-option {key}=...: set it with {flag} instead")
        options[key] = value
    # the backend alone: the one stack builder adds the retry layer, over the limits, once
    built: Model = build_backend(parsed, **options)
    transport = Transport(
        max_retries=max_retries if built.capabilities.remote else 0,
        rpm=rpm,
        tpm=tpm,
        cache=cache,
        cache_path=cache_path,
    )
    return build_stack(built, transport)


# backend options that flags of their own set (--model-option refuses them)
_OWN_FLAGS = {
    "base_url": "--base-url",
    "api_base": "--base-url",
    "api_key": "--api-key",
    "timeout": "--timeout",
    "json_mode": "--json-mode",
    "max_retries": "--max-retries",
}


def parse_backend_options(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` flags as backend options; values read as the catalog reads them
    (``true``/``false``/``null``, whole and decimal numbers, else text).

    >>> parse_backend_options(["max_model_len=8192", "dtype=bfloat16", "enforce_eager=true"])
    {'max_model_len': 8192, 'dtype': 'bfloat16', 'enforce_eager': True}
    """
    from jurist.catalog._names import read_scalar

    out: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ConfigError(
                f"--model-option {pair!r} must be KEY=VALUE with KEY a backend option name, "
                "e.g. --model-option max_model_len=8192"
            )
        if key in out:
            raise ConfigError(f"--model-option {key} is given twice")
        out[key] = read_scalar(raw.strip())
    return out


@dataclass(frozen=True)
class ModelOptions:
    """The shared model flags of one command line, typed."""

    models: tuple[str, ...]
    base_url: str | None
    api_key: str | None
    timeout: float
    max_retries: int
    rpm: int | None
    tpm: int | None
    cache: bool
    cache_path: Path | None
    json_mode: str
    concurrency: int
    temperature: float
    model_option: Sequence[str] | None = None
    prompt_cache: bool = True
    reasoning: str | None = None
    keep_reasoning: bool = True

    def judge_options(self) -> dict[str, Any]:
        """The judge options ``--reasoning`` and ``--no-keep-reasoning`` give (none when
        neither is given), as every judge kind declares them.

        >>> o = ModelOptions((), None, None, 60.0, 2, None, None, True, None, "json_schema",
        ...                  32, 0.0, reasoning="2048", keep_reasoning=False)
        >>> o.judge_options()
        {'reasoning': Reasoning(effort=None, budget_tokens=2048), 'keep_reasoning': False}
        """
        from jurist.types import Reasoning

        out: dict[str, Any] = {}
        if self.reasoning is not None:
            try:
                out["reasoning"] = Reasoning.parse(self.reasoning)
            except ValueError as e:
                raise ConfigError(f"--{e}") from None
        if not self.keep_reasoning:
            out["keep_reasoning"] = False
        return out

    def __repr__(self) -> str:  # never show the API key (nor option values: may be keys)
        key = None if self.api_key is None else "***"
        given = [pair.partition("=")[0] for pair in self.model_option or ()]
        return (
            f"ModelOptions(models={self.models!r}, base_url={self.base_url!r}, api_key={key!r}, "
            f"timeout={self.timeout}, max_retries={self.max_retries}, rpm={self.rpm}, "
            f"tpm={self.tpm}, cache={self.cache}, cache_path={self.cache_path!r}, "
            f"json_mode={self.json_mode!r}, concurrency={self.concurrency}, "
            f"temperature={self.temperature}, model_option={given!r}, "
            f"reasoning={self.reasoning!r}, keep_reasoning={self.keep_reasoning})"
        )

    @property
    def spec(self) -> str:
        """The one model's ``provider:name`` (the first ``--model`` of several)."""
        return self.specs[0]

    @property
    def specs(self) -> list[str]:
        """Every ``--model`` resolved (``$JURIST_MODEL`` or the default when none)."""
        given = self.models or (None,)
        return [resolve_model_spec(m, self.base_url) for m in given]

    @property
    def default_note(self) -> str | None:
        """Why the model is not the documented default (the demonstration model chosen
        offline, :mod:`jurist.models._default`); ``None`` when a model was named or the
        default stands."""
        if self.models or os.environ.get("JURIST_MODEL"):
            return None
        return default_model_choice(self.base_url).note

    def build(
        self,
        spec: str | None = None,
        *,
        limits: bool = True,
        held: Mapping[str, Any] | None = None,
    ) -> Model:
        """The model stack for ``spec`` (default :attr:`spec`) with these options;
        ``limits=False`` leaves out ``--rpm`` / ``--tpm`` (an engine that paces the calls
        itself, or sends none: Ray, the batch API); ``held``: backend options kept for
        that model (a run's, a catalog entry's), which win over the flags (see
        :func:`build_model`)."""
        return build_model(
            spec or self.spec,
            base_url=self.base_url,
            api_key=self.api_key,
            timeout=self.timeout,
            max_retries=self.max_retries,
            rpm=self.rpm if limits else None,
            tpm=self.tpm if limits else None,
            cache=self.cache,
            cache_path=self.cache_path,
            json_mode=self.json_mode,
            backend_options=self._backend_options(spec or self.spec),
            held=held,
        )

    def _backend_options(self, spec: str) -> dict[str, Any]:
        """``--model-option`` pairs, and ``prompt_cache=False`` for a backend that asks
        for prompt caching (``anthropic:``) under ``--no-prompt-cache``."""
        from jurist.models import parse_spec

        options = parse_backend_options(self.model_option)
        if not self.prompt_cache and backend_info(parse_spec(spec).provider).prompt_cache:
            options.setdefault("prompt_cache", False)
        return options

    def rebuild(self, model: Model, *, limits: bool = True) -> Model:
        """``model`` (a catalog entry's, a run's) built again through these options: its
        backend's own options (its server, its JSON mode: :meth:`Model.rebuild_spec
        <jurist.models.Model.rebuild_spec>`) hold, ``--base-url`` moves its server, and the
        key (``--api-key``, ``$JURIST_API_KEY``), timeout, retries, limits and cache are
        this command line's; its own rate limit holds where ``--rpm`` is not given. A
        local backend (no remote calls: ``hf:``, ``vllm:``, a scripted mock) is kept as it
        is: none of these reach it."""
        if not model.capabilities.remote:
            return model
        spec = model.rebuild_spec()
        held = dict(spec.options)
        if self.base_url:  # the server moved: --base-url names where it is now
            held.pop("base_url", None)
            held.pop("api_base", None)
        options = self
        kept_rate = spec.transport.rpm
        if self.rpm is None and kept_rate is not None and limits:
            options = replace(self, rpm=int(kept_rate))
        return options.build(f"{spec.provider}:{spec.name}", limits=limits, held=held)

    def build_all(self, *, limits: bool = True) -> list[Model]:
        """One model stack per ``--model``."""
        return [self.build(s, limits=limits) for s in self.specs]


# name -> (type, default, typer.Option keyword arguments)
SHARED_OPTIONS: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "model": (
        str | None,
        None,
        {"help": f"provider:name; default $JURIST_MODEL, else {DEFAULT_MODEL}."},
    ),
    "base_url": (
        str | None,
        None,
        {"help": "OpenAI-compatible server URL (vLLM, llama.cpp, Ollama...)."},
    ),
    "api_key": (
        str | None,
        None,
        {
            "help": "API key; default $JURIST_API_KEY, else $OPENAI_API_KEY.",
            "envvar": "JURIST_API_KEY",
            "show_default": False,
            "show_envvar": False,
        },
    ),
    "timeout": (float, 60.0, bounded("timeout", help="Seconds per API call.")),
    "max_retries": (
        int,
        DEFAULT_MAX_RETRIES,
        bounded("max_retries", help="Retries of transient API errors (429, 5xx, timeouts)."),
    ),
    "rpm": (int | None, None, bounded("rpm", help="Max calls per minute (paced smoothly).")),
    "tpm": (int | None, None, bounded("tpm", help="Max tokens per minute.")),
    "cache": (
        bool,
        True,
        {"help": "Cache deterministic calls in SQLite (--no-cache to turn off)."},
    ),
    "cache_path": (
        Path | None,
        None,
        {"help": "Cache file; default $JURIST_CACHE_DIR/cache.sqlite."},
    ),
    "json_mode": (
        str,
        "json_schema",
        {
            "help": "How an OpenAI-compatible server takes a JSON schema: json_schema "
            "(OpenAI, vLLM), json_object (llama-cpp-python), none (no JSON output).",
            "metavar": choices_metavar(JSON_MODES),
        },
    ),
    "prompt_cache": (
        bool,
        True,
        {
            "help": "Ask Anthropic models to cache the judge's static text (system, "
            "instructions, few-shot examples) where it is long enough (--no-prompt-cache "
            "to turn off).",
        },
    ),
    "concurrency": (int, 32, bounded("concurrency", help="Model calls in flight at once.")),
    "temperature": (float, 0.0, bounded("temperature", help="Sampling temperature of the model.")),
    "model_option": (
        list[str] | None,
        None,
        {
            "metavar": "KEY=VALUE",
            "help": "A backend option, repeatable: "
            + "; ".join(
                f"{b.provider}: {', '.join(b.option_examples)}"
                for b in backends()
                if b.option_examples
            )
            + ".",
        },
    ),
}

# the thinking flags: only on the commands whose judges take them (model_options(thinking=True))
THINKING_OPTIONS: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "reasoning": (
        str | None,
        None,
        {
            "metavar": "none|low|medium|high|TOKENS",
            "help": "How long a thinking judge may think: an effort or a token budget, sent "
            "as each backend's own parameters (docs/reasoning.md); default: the model's own.",
        },
    ),
    "keep_reasoning": (
        bool,
        True,
        {"help": "Keep each judgment's thinking trace (--no-keep-reasoning drops it)."},
    ),
}

F = TypeVar("F", bound=Callable[..., Any])


def model_options(
    *,
    multiple_models: bool = False,
    model_required: bool = False,
    thinking: bool = False,
    **defaults: Any,
) -> Callable[[F], F]:
    """Add the shared model flags to a typer command; it receives ``options: ModelOptions``.

    ``multiple_models`` makes ``--model`` repeatable; ``model_required`` makes it required;
    ``thinking`` adds ``--reasoning`` and ``--keep-reasoning`` (a command whose judges take
    them: :meth:`ModelOptions.judge_options`);
    ``defaults`` change a flag's default (``concurrency=16``) or help (``model_help=...``).
    """
    helps = {k[: -len("_help")]: v for k, v in defaults.items() if k.endswith("_help")}
    values = {k: v for k, v in defaults.items() if not k.endswith("_help")}
    unknown = (set(values) | set(helps)) - set(SHARED_OPTIONS)
    if unknown:
        raise TypeError(f"unknown shared model options: {sorted(unknown)}")

    def decorate(func: F) -> F:
        flags: dict[str, tuple[Any, Any]] = {}
        shared = {**SHARED_OPTIONS, **(THINKING_OPTIONS if thinking else {})}
        for name, (kind, default, info) in shared.items():
            info = {**info, "rich_help_panel": _PANEL}
            if name in helps:
                info["help"] = helps[name]
            if name == "model" and multiple_models:
                kind = list[str] | None
                info["help"] += " Repeat for an ensemble."
            value = values.get(name, default)
            if name == "model" and model_required:
                kind, value = str, inspect.Parameter.empty
            flags[name] = (value, Annotated[kind, typer.Option(**info)])

        def build(shared: dict[str, Any]) -> ModelOptions:
            model = shared.pop("model")
            models = tuple(model or ()) if multiple_models else ((model,) if model else ())
            return ModelOptions(models=models, **shared)

        return add_flag_group(func, "options", flags, build, what="model options")

    return decorate
