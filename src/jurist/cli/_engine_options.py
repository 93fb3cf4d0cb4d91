"""The engine options every engine command shares: where the items are judged.

:func:`engine_options` is a decorator for a typer command, like
:func:`~jurist.cli._model_options.model_options`: it adds the shared flags (``--engine``,
``--ray-address``, ``--actors``, ``--gpus-per-actor``, ``--batch-api``,
``--batch-followup``, ``--batch-expired``, ``--batch-file-out``, ``--batch-poll``,
``--batch-adopt``, ``--batch-resubmit``) to the
command's signature and hands the command one :class:`EngineOptions` in its
``engine_options`` parameter. :meth:`EngineOptions.check` refuses combinations that make
no sense before any model is built, and :meth:`EngineOptions.build` maps the flags onto
one engine object (:class:`~jurist.engines.LocalEngine`,
:class:`~jurist.engines.RayEngine` over :class:`~jurist.engines.RayOptions`, or
:class:`~jurist.engines.BatchAPIEngine` over :class:`~jurist.engines.BatchAPIOptions`)
that the command forwards whole.

Rate limits (``--rpm`` / ``--tpm``) belong to one engine only: in process they wrap the
model (:class:`~jurist.models.LimitedModel`); on Ray they hold for the whole cluster
(``RayOptions.rpm`` / ``tpm``), never once per actor; through a batch API requests
travel in files, so nothing paces them. :meth:`EngineOptions.model_limits` says which.

>>> opts = EngineOptions(engine="ray", actors=4)
>>> opts.check(["openai:gpt-4o-mini"])
>>> opts.ray(rpm=600, tpm=None).actors, opts.ray(rpm=600, tpm=None).rpm
(4, 600)
>>> opts.model_limits
False
>>> EngineOptions(actors=4).check(["mock:judge"])
Traceback (most recent call last):
...
jurist.errors.ConfigError: --actors only applies with --engine ray
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from jurist.cli._bounds import bounded
from jurist.cli._flag_group import add_flag_group
from jurist.cli._help import choices_metavar
from jurist.cli._model_options import ModelOptions
from jurist.errors import ConfigError

if TYPE_CHECKING:
    from jurist.engines import BatchAPIOptions, Engine, RayOptions

__all__ = ["ENGINES", "ENGINE_FLAGS", "EngineOptions", "batch_capable", "engine_options"]

ENGINES = ("local", "ray")
FOLLOWUPS = ("batch", "live")
ON_EXPIRED = ("resubmit", "error")
_PANEL = "Engine options"


def batch_capable(spec: str, *, offline: bool = False) -> bool:
    """Whether requests to ``spec`` can travel through its provider's batch API, or to a
    file for an offline engine (``offline``, ``vllm run-batch``): what its backend
    declares (:class:`~jurist.models.BackendInfo`), asked before any model is built."""
    from jurist.models import backend_of

    backend = backend_of(spec)
    return backend.batch_files if offline else backend.batch_api is not None


def _batch_routes(*, offline: bool) -> str:
    """The specs whose requests can take batch files, for a message: the server one
    (any server with the files and batches endpoints), then the providers' own."""
    from jurist.models import server_spec
    from jurist.models._backends import backends

    others = [
        f" or {b.provider}:NAME ({b.batch_api})"
        for b in backends()
        if not b.any_server and (b.batch_files if offline else b.batch_api is not None)
    ]
    return (
        f"use {server_spec('NAME')} (OpenAI, or any server with the files and batches "
        f"endpoints via --base-url){''.join(others)}"
    )


@dataclass(frozen=True)
class EngineOptions:
    """The shared engine flags of one command line, typed (``None``: not given)."""

    engine: str = "local"
    ray_address: str | None = None
    actors: int | None = None
    gpus_per_actor: float | None = None
    batch_api_flag: bool = False
    batch_followup: str | None = None
    batch_expired: str | None = None
    batch_file_out: Path | None = None
    batch_poll: float | None = None
    batch_adopt: Sequence[str] | None = None
    batch_resubmit: bool = False

    @property
    def batch(self) -> bool:
        """Whether requests travel in batch files (``--batch-api`` or ``--batch-file-out``)."""
        return self.batch_api_flag or self.batch_file_out is not None

    @property
    def model_limits(self) -> bool:
        """Whether ``--rpm`` / ``--tpm`` wrap the model in this process (local engine only)."""
        return self.engine == "local" and not self.batch

    def check(self, specs: Sequence[str]) -> None:
        """Refuse flags that do not combine, naming them; ``specs``: the judge models."""
        if self.engine not in ENGINES:
            raise ConfigError(f"--engine must be local or ray, not {self.engine!r}")
        if self.engine != "ray":
            for flag, value in (
                ("--ray-address", self.ray_address),
                ("--actors", self.actors),
                ("--gpus-per-actor", self.gpus_per_actor),
            ):
                if value is not None:
                    raise ConfigError(f"{flag} only applies with --engine ray")
        if self.batch_followup not in (None, *FOLLOWUPS):
            raise ConfigError(
                f"--batch-followup must be batch or live, not {self.batch_followup!r}"
            )
        if self.batch_expired not in (None, *ON_EXPIRED):
            raise ConfigError(
                f"--batch-expired must be resubmit or error, not {self.batch_expired!r}"
            )
        if not self.batch_api_flag:
            for flag, given in (
                ("--batch-adopt", bool(self.batch_adopt)),
                ("--batch-resubmit", self.batch_resubmit),
            ):
                if given:
                    raise ConfigError(
                        f"{flag} only applies with --batch-api (to a request file uploaded "
                        "to a server whose batch id was never recorded)"
                    )
        if not self.batch:
            for flag, value in (
                ("--batch-followup", self.batch_followup),
                ("--batch-expired", self.batch_expired),
                ("--batch-poll", self.batch_poll),
            ):
                if value is not None:
                    raise ConfigError(f"{flag} only applies with --batch-api")
            return
        flag = "--batch-api" if self.batch_api_flag else "--batch-file-out"
        if self.engine == "ray":
            raise ConfigError(
                f"{flag} and --engine ray do not combine: through a batch API the provider "
                "does the work and this process only waits, so there is nothing to spread "
                "over a cluster; drop one of them"
            )
        offline = not self.batch_api_flag
        refused = [s for s in specs if not batch_capable(s, offline=offline)]
        if refused:
            raise ConfigError(
                f"{flag} needs an OpenAI-compatible model: {', '.join(map(repr, refused))} "
                f"cannot take batch files; {_batch_routes(offline=offline)}, or drop the flag"
            )

    def ray(self, *, rpm: int | None, tpm: int | None) -> RayOptions | None:
        """The Ray engine's options (``None`` for the local engine); ``rpm`` / ``tpm``: the
        model options' limits, which hold for the whole cluster."""
        if self.engine != "ray":
            return None
        given: dict[str, Any] = {"address": self.ray_address, "rpm": rpm, "tpm": tpm}
        if self.actors is not None:
            given["actors"] = self.actors
        if self.gpus_per_actor is not None:
            given["num_gpus"] = self.gpus_per_actor
        from jurist.engines import RayOptions

        return RayOptions(**given)

    def build(self, model: ModelOptions) -> Engine:
        """The engine object of this command line, given its model options: the one
        object the command forwards to :func:`jurist.evaluate` (with its
        :class:`~jurist.engines.RunOptions`).

        On Ray, each actor rebuilds the model stack this process built (its spec never
        holds a key): the engine hands the key the model was built with (``--api-key``,
        ``$JURIST_API_KEY``, ``$OPENAI_API_KEY``) to the rebuilt model in memory.
        """
        from jurist.engines import BatchAPIEngine, LocalEngine, RayEngine

        ray = self.ray(rpm=model.rpm, tpm=model.tpm)
        if ray is not None:
            return RayEngine(ray)
        batch = self.batch_api(max_retries=model.max_retries)
        return BatchAPIEngine(batch) if batch is not None else LocalEngine()

    def batch_api(self, *, max_retries: int | None = None) -> BatchAPIOptions | None:
        """The batch-API mode's options (``None`` when requests are sent live).

        ``max_retries`` (``--max-retries``): how often a request that a batch answers
        with a transient error (429, 5xx) or leaves unanswered (expired) is sent again,
        as a live call is retried, so the flag means the same with and without
        ``--batch-api``.
        """
        if not self.batch:
            return None
        given: dict[str, Any] = {"file_out": self.batch_file_out}
        if max_retries is not None:
            given["max_resubmits"] = max_retries
        if self.batch_followup is not None:
            given["followup"] = self.batch_followup
        if self.batch_expired is not None:
            given["on_expired"] = self.batch_expired
        if self.batch_poll is not None:
            given["poll_interval"] = self.batch_poll
        if self.batch_adopt:
            given["adopt"] = tuple(self.batch_adopt)
        if self.batch_resubmit:
            given["resubmit"] = True
        from jurist.engines import BatchAPIOptions

        return BatchAPIOptions(**given)


# parameter name -> (flag declarations, type, default, typer.Option keyword arguments)
ENGINE_FLAGS: dict[str, tuple[tuple[str, ...], Any, Any, dict[str, Any]]] = {
    "engine": (
        ("--engine",),
        str,
        "local",
        {
            "help": "local: judge in this process; ray: on a Ray cluster (Ray Data actors).",
            "metavar": choices_metavar(ENGINES),
        },
    ),
    "ray_address": (
        ("--ray-address",),
        str | None,
        None,
        {"help": "Ray cluster to join (ray://HOST:10001 or auto); default: a local Ray."},
    ),
    "actors": (
        ("--actors",),
        int | None,
        None,
        bounded("actors", help="Ray actors judging at once (default 2); --engine ray only."),
    ),
    "gpus_per_actor": (
        ("--gpus-per-actor",),
        float | None,
        None,
        bounded(
            "gpus_per_actor",
            help="GPUs each Ray actor reserves (1 for a model that runs on the actor's GPU).",
        ),
    ),
    "batch_api_flag": (
        ("--batch-api",),
        bool,
        False,
        {"help": "Send the requests through the provider's batch API (files, ~half price)."},
    ),
    "batch_followup": (
        ("--batch-followup",),
        str | None,
        None,
        {
            "help": "Re-asks of unreadable verdicts: batch (a follow-up batch) or live.",
            "metavar": choices_metavar(FOLLOWUPS),
        },
    ),
    "batch_expired": (
        ("--batch-expired",),
        str | None,
        None,
        {
            "help": "Requests an expired batch did not run: resubmit, or record as error.",
            "metavar": choices_metavar(ON_EXPIRED),
        },
    ),
    "batch_file_out": (
        ("--batch-file-out",),
        Path | None,
        None,
        {"help": "Write the batch request file there and stop (read results: jurist ingest)."},
    ),
    "batch_poll": (
        ("--batch-poll",),
        float | None,
        None,
        bounded("batch_poll", help="Seconds between batch status checks (default 30)."),
    ),
    "batch_adopt": (
        ("--batch-adopt",),
        list[str] | None,
        None,
        {
            "metavar": "BATCH_ID",
            "help": "Take this batch as the batch of an uploaded request file whose batch id "
            "was never recorded (checked against it first); for servers that cannot list "
            "batches. Repeatable.",
        },
    ),
    "batch_resubmit": (
        ("--batch-resubmit",),
        bool,
        False,
        {
            "help": "Create again the batch of an uploaded request file whose batch id was "
            "never recorded, on a server that cannot list batches (its requests may run, "
            "and be billed, twice).",
        },
    ),
}

F = TypeVar("F", bound=Callable[..., Any])


def engine_options(func: F) -> F:
    """Add the shared engine flags to a typer command; it receives
    ``engine_options: EngineOptions``."""
    flags = {
        name: (default, Annotated[kind, typer.Option(*decls, **info, rich_help_panel=_PANEL)])
        for name, (decls, kind, default, info) in ENGINE_FLAGS.items()
    }
    return add_flag_group(
        func,
        "engine_options",
        flags,
        lambda shared: EngineOptions(**shared),
        what="engine options",
    )
