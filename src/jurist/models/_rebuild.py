"""How a model stack describes itself, and how another process builds it again.

A model stack (a backend inside its cache, retry and limits layers, :func:`build_stack`)
says what rebuilds it with :meth:`~jurist.models.Model.rebuild_spec`: a
:class:`ModelSpec` holding the backend's ``provider``, ``name`` and constructor
``options`` (:meth:`~jurist.models.Model.rebuild_options`, never a secret) and the
:class:`~jurist.models.Transport` its wrappers stand for (each wrapper describes its own
layer, :meth:`~jurist.models.WrapperModel.layer`). The credentials the backend was given
are :meth:`~jurist.models.Model.secrets`: constructor options (``api_key``, ``headers``)
kept apart, to travel in memory only. :func:`rebuild_model` builds the stack again from
the two, so a Ray actor runs the stack the driver built::

    rebuild_model(model.rebuild_spec(), model.secrets()) == model   # the same stack

>>> from jurist.models import MockModel, Transport, build_stack
>>> stack = build_stack(MockModel("a"), Transport(max_retries=3, rpm=60))
>>> spec = stack.rebuild_spec()
>>> spec.provider, spec.name, spec.transport.max_retries, spec.transport.rpm
('mock', 'a', 3, 60.0)
>>> rebuild_model(spec, {})
RetryModel(LimitedModel(MockModel('mock:a'), max_calls_per_min=60.0), max_retries=3)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jurist.errors import ConfigError
from jurist.models._model import Model
from jurist.models._stack import Layer, build_stack
from jurist.models._transport import ModelSpec

__all__ = ["ModelSpec", "rebuild_model"]


def rebuild_model(
    spec: ModelSpec,
    secrets: Mapping[str, Any],
    *,
    limits: Layer | None = None,
    backend: Model | None = None,
) -> Model:
    """The stack ``spec`` describes, its backend given ``secrets`` as options (in memory).

    ``limits`` takes the place of the transport's own limits (a cluster pacer);
    ``backend`` is used as it is instead of one built from the spec (a scripted mock,
    which no spec can hold).
    """
    from jurist.models._registry import get_model

    if backend is None:
        clash = sorted(set(spec.options) & set(secrets))
        if clash:
            raise ConfigError(
                f"cannot rebuild {spec.provider}:{spec.name}: {clash} given both as options "
                "and as secrets"
            )
        backend = get_model(
            f"{spec.provider}:{spec.name}", max_retries=0, **spec.options, **secrets
        )
    return build_stack(backend, spec.transport, limits=limits)
