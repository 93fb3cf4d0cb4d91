"""A stand-in for the Ray cluster's pacer actor, for tests that rebuild a judge in process."""

from __future__ import annotations

from typing import Any

__all__ = ["FakePacer"]


class FakePacer:
    """Stands in for the cluster's pacer actor: counts reservations, waits nothing."""

    class _Method:
        def __init__(self, calls: list[Any]) -> None:
            self.calls = calls

        async def remote(self, *args: Any) -> float:
            self.calls.append(args)
            return 0.0

    def __init__(self) -> None:
        self.reservations: list[Any] = []
        self.reserve = self._Method(self.reservations)
        self.settle = self._Method([])
