""":class:`~jurist.batching.BatchAPIOptions`, exported by :mod:`jurist.engines` too (its
public name there, beside :class:`~jurist.engines.BatchAPIEngine` which takes it)."""

from jurist.batching._options import BatchAPIOptions

__all__ = ["BatchAPIOptions"]
