"""A set of small non-negative integers in one bit each (a run's finished indices).

>>> bits = Bitmap()
>>> bits.add(3); bits.add(3); bits.add(70)
>>> bits.has(3), bits.has(4), bits.count
(True, False, 2)
"""

from __future__ import annotations

__all__ = ["Bitmap"]


class Bitmap:
    """A set of small non-negative integers in one bit each (the finished indices)."""

    def __init__(self) -> None:
        self._bits = bytearray()
        self.count = 0

    def add(self, i: int) -> None:
        byte = i >> 3
        if byte >= len(self._bits):
            self._bits.extend(b"\0" * (byte + 1 - len(self._bits) + 1024))
        mask = 1 << (i & 7)
        if not self._bits[byte] & mask:
            self._bits[byte] |= mask
            self.count += 1

    def has(self, i: int) -> bool:
        byte = i >> 3
        return byte < len(self._bits) and bool(self._bits[byte] & (1 << (i & 7)))
