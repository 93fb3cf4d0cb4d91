"""A judge's model from what the user passed: a Model, a ``provider:name`` spec with model
options (``LLMJudge("openai:x", base_url=..., api_key=...)``), a LangChain model or None.

>>> from jurist.judges._spec import judge_model
>>> judge_model("mock:j", {"outputs": ["4"]}, "LLMJudge").spec
'mock:j'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jurist.errors import ConfigError
from jurist.models import Model, get_model

__all__ = ["judge_model"]


def judge_model(model: Model | str | Any | None, options: Mapping[str, Any], who: str) -> Model:
    """``get_model(model, **options)``; an option the backend does not take is a
    :class:`~jurist.errors.ConfigError` naming it, not a ``TypeError``."""
    if isinstance(model, Model) and options:
        raise ConfigError(
            f"{who}: model options {sorted(options)} apply to a 'provider:name' spec, not to "
            f"an existing model object ({model.spec}); pass them to get_model instead"
        )
    try:
        return get_model(model, **options)
    except TypeError as e:
        if "unexpected keyword argument" not in str(e):
            raise
        raise ConfigError(
            f"{who}: {sorted(options)} holds an argument that is neither one of {who}'s nor "
            f"an option of the model backend ({e})"
        ) from None
