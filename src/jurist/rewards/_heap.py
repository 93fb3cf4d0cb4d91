"""Freezing a long-lived process's heap out of the garbage collector's way.

CPython's full (generation 2) collection walks every container object the process holds.
A verl reward loop worker holds torch, transformers and verl (about 510,000 objects): one
full collection there takes about 0.3 s, and the objects a run of 1,024 in-flight
judgments keeps alive (coroutines, futures, messages, requests; about 30 per judgment,
plus verl's own per sample) promote enough survivors to trigger about one per run. The
reward server's process had full collections of about 0.16 s. :func:`freeze_heap` runs one
collection (the garbage of startup is freed, not frozen) and then :func:`gc.freeze`: every
object alive now moves to the permanent generation, which collections skip, so a full
collection walks only what was made since.

The trade-off (why the verl path only does it when asked, with ``gc_freeze=True``): an
object frozen here is still freed by reference counting when its last reference goes, but
a reference cycle among frozen objects that becomes garbage later is never collected. For
the objects alive once a trainer or server has started (modules, models, the judge, its
connection pool) that is what they would do anyway: live as long as the process.

>>> import gc
>>> freeze_heap()
True
>>> gc.get_freeze_count() > 0
True
>>> freeze_heap(once=True)  # the process's heap was frozen already
False
>>> gc.unfreeze()
"""

from __future__ import annotations

import gc
import threading

__all__ = ["freeze_heap"]

_frozen = False
_lock = threading.Lock()


def freeze_heap(*, once: bool = False) -> bool:
    """Collect, then freeze every object alive (module doc). With ``once``, only the first
    call in the process does it. Returns whether it froze."""
    global _frozen
    with _lock:
        if once and _frozen:
            return False
        gc.collect()
        gc.freeze()
        _frozen = True
        return True
