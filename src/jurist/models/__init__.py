"""The models layer: the :class:`Model` base class, backends, and wrappers that compose.

>>> from jurist.models import get_model
>>> model = get_model("mock:judge", outputs=["Correct"])
>>> model.spec
'mock:judge'
"""

from jurist.models._mock import MockModel
from jurist.models._model import Capabilities, Model, WrapperModel
from jurist.models._registry import DEFAULT_MODEL, get_model, known_providers, register_provider

__all__ = [
    "DEFAULT_MODEL",
    "Capabilities",
    "MockModel",
    "Model",
    "WrapperModel",
    "get_model",
    "known_providers",
    "register_provider",
]
