"""One local Ray instance (2 CPUs) for every Ray test module of a pytest session.

Import ``ray_session`` (the ``ray_cluster`` fixture) into a test module; the first module
that asks starts Ray, later ones find it running (the engine uses an initialised Ray as it
is), and it is shut down when the session ends. Tests skip cleanly where Ray is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session", name="ray_cluster")
def ray_session() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
    yield ray
    if started:
        ray.shutdown()
