"""Helpers for testing code that uses jurist: tiny local models, built offline.

``build_tiny_model`` is imported on first use, so ``python -m jurist.testing.tiny_model``
runs its module without it being imported twice (runpy's warning).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jurist.testing.tiny_model import build_tiny_model

__all__ = ["build_tiny_model"]


def __getattr__(name: str) -> Any:
    if name == "build_tiny_model":
        from jurist.testing.tiny_model import build_tiny_model

        return build_tiny_model
    raise AttributeError(f"module 'jurist.testing' has no attribute {name!r}")
