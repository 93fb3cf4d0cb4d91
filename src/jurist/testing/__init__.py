"""Helpers for testing code that uses jurist: tiny local models, built offline."""

from jurist.testing.tiny_model import build_tiny_model

__all__ = ["build_tiny_model"]
