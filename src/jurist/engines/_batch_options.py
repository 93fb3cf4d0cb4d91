"""Moved to :mod:`jurist.batching` (``from jurist.evaluate import BatchAPIOptions`` still
works, and is the public name)."""

from jurist.batching._options import BatchAPIOptions

__all__ = ["BatchAPIOptions"]
