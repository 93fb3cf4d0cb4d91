"""jurist: LLM-as-a-judge, fast, cheap and reproducible."""

from jurist._version import __version__
from jurist.models import Model, get_model

__all__ = ["Model", "__version__", "get_model"]
