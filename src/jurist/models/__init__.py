"""The models layer: the :class:`Model` base class, backends, and wrappers that compose.

>>> from jurist.models import get_model
>>> model = get_model("mock:judge", outputs=["Correct"])
>>> model.spec
'mock:judge'
"""

from jurist.models._backends import BackendInfo, backend_info, backend_of, server_spec
from jurist.models._cache import CachedModel, default_cache_path
from jurist.models._limits import LimitedModel
from jurist.models._mock import MockModel
from jurist.models._model import Capabilities, Model, WrapperModel
from jurist.models._rebuild import ModelSpec, rebuild_model
from jurist.models._registry import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MODEL,
    ParsedSpec,
    build_backend,
    get_model,
    known_providers,
    parse_spec,
    register_provider,
)
from jurist.models._retry import RetryModel, attempts_of  # noqa: F401  (attempts_of: not public)
from jurist.models._stack import Transport, build_stack, with_limits

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MODEL",
    "BackendInfo",
    "CachedModel",
    "Capabilities",
    "LimitedModel",
    "MockModel",
    "Model",
    "ModelSpec",
    "ParsedSpec",
    "RetryModel",
    "Transport",
    "WrapperModel",
    "backend_info",
    "backend_of",
    "build_backend",
    "build_stack",
    "default_cache_path",
    "get_model",
    "known_providers",
    "parse_spec",
    "rebuild_model",
    "register_provider",
    "server_spec",
    "with_limits",
]
