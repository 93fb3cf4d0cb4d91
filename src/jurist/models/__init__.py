"""The models layer: the :class:`Model` base class, backends, and wrappers that compose.

>>> from jurist.models import get_model
>>> model = get_model("mock:judge", outputs=["Correct"])
>>> model.spec
'mock:judge'
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what __getattr__ below gives, for type checkers
    from jurist.models._backends import (
        DEFAULT_MAX_RETRIES,
        DEFAULT_MODEL,
        BackendInfo,
        backend_info,
        backend_of,
        scripted_spec,
        server_spec,
    )
    from jurist.models._cache import CachedModel, default_cache_path
    from jurist.models._limits import LimitedModel
    from jurist.models._mock import MockModel
    from jurist.models._model import Capabilities, Model, WrapperModel
    from jurist.models._rebuild import ModelSpec, rebuild_model
    from jurist.models._registry import (
        ParsedSpec,
        build_backend,
        get_model,
        known_providers,
        parse_spec,
        register_provider,
    )
    from jurist.models._retry import RetryModel, attempts_of  # noqa: F401  (not public)
    from jurist.models._stack import Transport, build_stack, with_limits

# each public name's module: imported on first use, so that a command line that only
# reads a backend's declaration (jurist.models._backends) loads no backend, no pydantic
_HOMES = {
    "jurist.models._backends": (
        "DEFAULT_MAX_RETRIES",
        "DEFAULT_MODEL",
        "BackendInfo",
        "backend_info",
        "backend_of",
        "scripted_spec",
        "server_spec",
    ),
    "jurist.models._cache": ("CachedModel", "default_cache_path"),
    "jurist.models._limits": ("LimitedModel",),
    "jurist.models._mock": ("MockModel",),
    "jurist.models._model": ("Capabilities", "Model", "WrapperModel"),
    "jurist.models._rebuild": ("ModelSpec", "rebuild_model"),
    "jurist.models._registry": (
        "ParsedSpec",
        "build_backend",
        "get_model",
        "known_providers",
        "parse_spec",
        "register_provider",
    ),
    "jurist.models._retry": ("RetryModel", "attempts_of"),
    "jurist.models._stack": ("Transport", "build_stack", "with_limits"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (and kept)."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'jurist.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
    "scripted_spec",
    "server_spec",
    "with_limits",
]
