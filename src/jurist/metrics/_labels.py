"""The one check of labels given by people, before anything is fitted or judged on them.

``jurist calibrate``, ``jurist align``, ``jurist agreement`` (and their Python twins,
:func:`~jurist.trust.fit_calibration` and :func:`~jurist.trust.align`) call
:func:`check_labels` before they fit a map or make a judge call. It refuses, with a
:class:`~jurist.errors.DataError` naming the label field and the first offending item:

- a number that is not finite (``inf``, ``-inf``, or text that reads as one, ``"nan"``
  included): no agreement statistic or fitted map means anything with it. A missing
  label (absent, ``null``, a float NaN, blank text) is not an error: the item is left out;
- fewer labelled items than the caller needs;
- labels that are all the same (one class, no variance): kappa, alpha and correlations
  are undefined, and a gain's interval could never clear zero.

>>> check_labels([1, 2, None, 2.0], field="human")
>>> check_labels([1, float("inf"), 2], field="human", keys=["a", "b", "c"])
Traceback (most recent call last):
jurist.errors.DataError: labels 'human': item b: label inf is not a finite number
>>> check_labels(["good", " Good", None], field="human", where="runs/x")
Traceback (most recent call last):
jurist.errors.DataError: runs/x: labels 'human': every label is 'good' (2 labelled items): ...
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from jurist._missing import is_missing
from jurist.errors import DataError

__all__ = ["check_labels", "label_missing"]


def label_missing(value: Any) -> bool:
    """A label that says nothing: absent, null, NaN (``pandas.NA`` too) or blank text.

    >>> [label_missing(v) for v in (None, float("nan"), "  ", 0, "no")]
    [True, True, True, False, False]
    """
    return is_missing(value) or (isinstance(value, str) and not value.strip())


def _as_number(value: Any) -> float | None:
    """``value`` as a float when it is a number or text that reads as one (bools are not)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    try:  # numpy scalars, Decimal
        return float(value)
    except (TypeError, ValueError):
        return None


def _class_of(value: Any) -> Any:
    """What makes two labels the same class: the number, or the text in any case."""
    number = _as_number(value)
    if number is not None:
        return number
    if isinstance(value, str):
        return value.strip().lower()
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def check_labels(
    labels: Sequence[Any],
    *,
    field: str,
    keys: Sequence[Any] | None = None,
    least: int = 2,
    where: str | None = None,
) -> None:
    """Refuse labels nothing can be fitted or measured on (see the module docs).

    ``field``: the label field, named in the error; ``keys``: the items' ids, as
    :func:`~jurist.data._item_names.item_label` gives them (default: their rows, from 1:
    ``item 3`` is the third); ``least``: how many labelled items the caller needs; ``where``:
    the run folder or file the labels came from.
    """
    head = (f"{where}: " if where else "") + f"labels {field!r}: "
    present: list[Any] = []
    for i, value in enumerate(labels):
        if label_missing(value):
            continue
        number = _as_number(value)
        if number is not None and not math.isfinite(number):
            item = keys[i] if keys is not None else i + 1
            raise DataError(f"{head}item {item}: label {value!r} is not a finite number")
        present.append(value)
    if len(present) < least:
        raise DataError(
            f"{head}{len(present)} of {len(labels)} items have a label; at least {least} are needed"
        )
    classes = {_class_of(v) for v in present}
    if len(classes) < 2:
        raise DataError(
            f"{head}every label is {_class_of(present[0])!r} ({len(present)} labelled "
            "items): agreement needs at least two different labels (with one class, kappa, "
            "alpha and correlations are undefined)"
        )
