"""Option shuffling against position bias: one permutation per (seed, item, criterion, judge).

The permutation maps each shown position to the option's index in the rubric
(``order[shown] = original``). It depends only on the grader's seed, the item (its query and
submission), the criterion's index and the judge's id, never on scheduling, so a rerun
with the same seed shows every judge the same orders, whether the criterion is asked alone
or with the whole rubric.

>>> order = option_order(42, item_key("What is 2+2?", "4"), 0, "judge-a", 4)
>>> sorted(order) == [0, 1, 2, 3]
True
>>> order == option_order(42, item_key("What is 2+2?", "4"), 0, "judge-a", 4)
True
>>> original_index(order, shown_number=1) == order[0]
True
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

__all__ = ["item_key", "option_order", "original_index"]


def item_key(query: str | None, submission: str) -> str:
    """A short stable digest of an item (its query and submission)."""
    digest = hashlib.sha256()
    digest.update((query or "").encode())
    digest.update(b"\x00")
    digest.update(submission.encode())
    return digest.hexdigest()[:16]


def option_order(
    seed: int | None, key: str, criterion_index: int, judge_id: str, n_options: int
) -> list[int]:
    """The order to show ``n_options`` options in; the identity when ``seed`` is ``None``."""
    order = list(range(n_options))
    if seed is None:
        return order
    material = f"{seed}\x00{key}\x00{criterion_index}\x00{judge_id}".encode()
    derived = int.from_bytes(hashlib.sha256(material).digest()[:8], "big")
    random.Random(derived).shuffle(order)
    return order


def original_index(order: Sequence[int], shown_number: int) -> int:
    """The rubric index of the option the judge chose by its 1-based shown number."""
    if not 1 <= shown_number <= len(order):
        raise ValueError(f"option {shown_number} is not between 1 and {len(order)}")
    return order[shown_number - 1]
