"""The run manifest: what a run is (judge configuration, dataset, options), kept beside it.

``manifest.json`` in the run folder records the judge's whole configuration (its
``describe()``), the dataset's hash and size, the options that change results (field
mapping, re-asks), the price table and the jurist version. A resumed run must have the
same judge, dataset and options, or it stops and says what differs. ``settings`` records
how the run was driven (concurrency, whether failures are judged again); they cannot
change a successful judgment, so they are never compared. The run store keeps the same
manifest (see :mod:`jurist.runs._store`); the file is a readable copy of it.

>>> a = Manifest(judge={"kind": "llm_judge", "temperature": 0.0}, dataset=DatasetInfo(
...     source="d.jsonl", items=3, hash="abc"), options={"retries": 0})
>>> b = a.model_copy(update={"judge": {"kind": "llm_judge", "temperature": 0.7}})
>>> a.differences(b)
['judge.temperature: 0.0 -> 0.7']
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from jurist._files import replaced_atomically
from jurist._secrets import scrub
from jurist._version import __version__
from jurist.errors import ConfigError

__all__ = ["MANIFEST_NAME", "DatasetInfo", "Manifest"]

MANIFEST_NAME = "manifest.json"


class DatasetInfo(BaseModel):
    """The dataset a run judges: where from, how many items, the hash of their content.

    ``hash`` is ``None`` for a one-shot iterator (its items are checked one by one instead).
    """

    source: str
    items: int | None
    hash: str | None


class Manifest(BaseModel):
    """Everything a run's results depend on."""

    jurist_version: str = __version__
    created: float = Field(default_factory=time.time)
    judge: dict[str, Any]
    dataset: DatasetInfo
    options: dict[str, Any] = Field(default_factory=dict)
    prices: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    run_id: str | None = None

    def differences(self, other: Manifest) -> list[str]:
        """What differs between this run's judge, dataset and options and ``other``'s."""
        diffs: list[str] = []
        _diff("judge", scrub(self.judge), scrub(other.judge), diffs)  # as written
        if self.dataset.hash and other.dataset.hash and self.dataset.hash != other.dataset.hash:
            diffs.append(
                f"dataset: {self.dataset.source} ({self.dataset.items} items, hash "
                f"{self.dataset.hash[:12]}) -> {other.dataset.source} ({other.dataset.items} "
                f"items, hash {other.dataset.hash[:12]})"
            )
        _diff("options", scrub(self.options), scrub(other.options), diffs)
        return diffs

    def check_storable(self) -> None:
        """Stop before a run folder is made if a number here cannot be stored: the run
        store (SQLite, JSON) keeps whole numbers of 64 bits; a larger one (``retries=10**20``)
        is a :class:`~jurist.errors.ConfigError` naming it.

        >>> Manifest(judge={"max_tokens": 10**20}, dataset=DatasetInfo(source="d", items=1,
        ...     hash=None)).check_storable()
        Traceback (most recent call last):
        ...
        jurist.errors.ConfigError: judge.max_tokens = 100000000000000000000 is too large: a run \
records whole numbers from -2**63 to 2**63-1
        """
        for section in ("judge", "options", "settings", "prices"):
            found = _too_large(getattr(self, section), section)
            if found is not None:
                where, value = found
                raise ConfigError(
                    f"{where} = {value} is too large: a run records whole numbers from "
                    "-2**63 to 2**63-1"
                )

    def write(self, run_dir: Path) -> None:
        """Write ``manifest.json`` atomically (a temporary file of this process, renamed)."""
        path = run_dir / MANIFEST_NAME
        text = json.dumps(scrub(self.model_dump(mode="json")), indent=2, ensure_ascii=False) + "\n"
        with replaced_atomically(path, what="the run manifest") as tmp:
            tmp.write_text(text, encoding="utf-8")

    @classmethod
    def read(cls, run_dir: Path) -> Manifest | None:
        """The manifest in ``run_dir``, or ``None`` when there is none."""
        path = run_dir / MANIFEST_NAME
        if not path.exists():
            return None
        try:
            return cls.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, ValidationError) as e:
            raise ConfigError(f"{path}: not a jurist run manifest ({e})") from None


def _too_large(value: Any, where: str) -> tuple[str, int] | None:
    """The first whole number in ``value`` outside 64 bits, and where it is."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (where, value) if not -(2**63) <= value < 2**63 else None
    if isinstance(value, dict):
        items: Any = ((f"{where}.{k}", v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for at, inner in items:
        found = _too_large(inner, at)
        if found is not None:
            return found
    return None


def _diff(prefix: str, old: Any, new: Any, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            _diff(f"{prefix}.{key}", old.get(key, "<absent>"), new.get(key, "<absent>"), out)
        return
    if old != new:
        out.append(f"{prefix}: {_short(old)} -> {_short(new)}")


def _short(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."
