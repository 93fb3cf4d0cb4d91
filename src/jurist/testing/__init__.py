"""Helpers for testing code that uses jurist: tiny local models, built offline.

``build_tiny_model`` and ``build_tiny_reward_model`` are imported on first use, so
``python -m jurist.testing.tiny_model`` runs its module without it being imported twice
(runpy's warning).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jurist.testing.tiny_model import build_tiny_model, build_tiny_reward_model

__all__ = ["build_tiny_model", "build_tiny_reward_model"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from jurist.testing import tiny_model

        return getattr(tiny_model, name)
    raise AttributeError(f"module 'jurist.testing' has no attribute {name!r}")
