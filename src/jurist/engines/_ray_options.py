"""Options of the Ray Data engine (:class:`~jurist.engines.RayEngine`)."""

from __future__ import annotations

import warnings

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["RayOptions"]


class RayOptions(BaseModel):
    """How a run is spread over a Ray cluster.

    ``address``: the cluster to join (``None``: start a local instance); ``actors``: the
    actor pool's size; ``num_gpus`` / ``num_cpus``: what each actor reserves (a local model
    wants ``num_gpus=1``); ``batch_size``: items per Ray batch; ``rpm`` / ``tpm``: calls and
    tokens per minute for the whole cluster, shared by every actor; ``env_vars``:
    deprecated and unused (API keys travel with each model, :meth:`Model.secrets`, in
    memory; jurist writes no actor's environment); ``window``: items handed to Ray at a
    time (the driver holds one window in memory, and each window gets a fresh actor pool,
    so a local model loads once per window: raise it for a GPU judge whose load takes
    minutes).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    address: str | None = None
    actors: int = Field(default=2, ge=1)
    num_gpus: float = Field(default=0.0, ge=0)
    num_cpus: float = Field(default=1.0, ge=0)
    batch_size: int = Field(default=16, ge=1)
    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    env_vars: tuple[str, ...] = ()
    window: int = Field(default=100_000, ge=1)

    @field_validator("env_vars")
    @classmethod
    def _deprecated(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if value:
            warnings.warn(
                "RayOptions.env_vars is deprecated and unused: each model's API key travels "
                "to the actors with it (Model.secrets(), in memory) and is given to the "
                "rebuilt model, never to an environment",
                DeprecationWarning,
                stacklevel=2,
            )
        return value
