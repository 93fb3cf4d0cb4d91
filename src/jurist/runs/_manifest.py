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
    """One line per changed setting of ``old`` -> ``new`` (see :func:`changes`)."""
    out.extend(changes(prefix, old, new))


_TEMPLATE_KEYS = ("template", "templates")


def changes(prefix: str, old: Any, new: Any) -> list[str]:
    """What differs between ``old`` and ``new``, one line per changed setting.

    Another template (its name differs) is one line, not a line per field of it; a value
    changed the same way under several keys (a template's instructions are also in the
    judge's system message) is one line naming them all; a judge's ``name``, made of its
    other settings, and its ``system`` message beside another template are left out; a
    long text shows where it first
    differs, with some context on each side (:func:`text_change`).

    >>> changes("judge", {"name": "a@m", "temperature": 0.0, "template": {"name": "likert",
    ...     "max_tokens": 32}}, {"name": "b@m", "temperature": 0.5, "template": {"name": "mine",
    ...     "max_tokens": 512}})
    ['judge.temperature: 0.0 -> 0.5', 'judge.template: "likert" -> "mine" (another template)']
    """
    leaves: list[tuple[str, Any, Any]] = []
    _leaves(prefix, old, new, leaves)
    named = [w for w, _, _ in leaves]
    grouped: dict[str, list[str]] = {}
    for where, a, b in leaves:
        if not _derived(where, named, leaves):
            grouped.setdefault(_change(_json(a), _json(b)), []).append(where)
    return [f"{', '.join(wheres)}: {change}" for change, wheres in grouped.items()]


def _leaves(prefix: str, old: Any, new: Any, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        if prefix.rsplit(".", 1)[-1] in _TEMPLATE_KEYS and old.get("name") != new.get("name"):
            out.append((prefix, _Named(old.get("name")), _Named(new.get("name"))))
            return
        for key in sorted(set(old) | set(new), key=str):
            _leaves(f"{prefix}.{key}", old.get(key, "<absent>"), new.get(key, "<absent>"), out)
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _leaves(f"{prefix}[{i}]", a, b, out)
        return
    if old != new:
        out.append((prefix, old, new))


class _Named(str):
    """A template's name standing for the whole template."""


def _derived(where: str, named: list[str], leaves: list[tuple[str, Any, Any]]) -> bool:
    """A change that follows from another one listed: a ``name`` whose parent has other
    changes (a name made of them), a ``system`` message beside another template (the
    template writes it)."""
    parent, _, last = where.rpartition(".")
    if last == "name":
        return any(w != where and w.startswith(parent + ".") for w in named)
    if last == "system":
        return any(w == f"{parent}.template" and isinstance(a, _Named) for w, a, _ in leaves)
    return False


def _json(value: Any) -> str:
    if isinstance(value, _Named):
        return "\x00template\x00" + json.dumps(str(value), ensure_ascii=False)
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)


def _change(old: str, new: str) -> str:
    if old.startswith("\x00template\x00"):
        a, b = old.split("\x00")[-1], new.split("\x00")[-1]
        return f"{a} -> {b} (another template)"
    a, b = json.loads(old), json.loads(new)
    if isinstance(a, str) and isinstance(b, str) and max(len(old), len(new)) > _SHORT:
        return text_change(a, b)
    if isinstance(a, list) and isinstance(b, list) and max(len(old), len(new)) > _SHORT:
        return f"{len(a)} entries -> {len(b)} entries: {_short(old)} -> {_short(new)}"
    return f"{_short(old)} -> {_short(new)}"


_SHORT = 60
_WINDOW = 20
_MIDDLE = 30


def text_change(old: str, new: str) -> str:
    """Where two texts first differ, with up to 20 characters of context each side and
    the differing part in [brackets].

    >>> print(text_change("Explain briefly, then say if anything is wrong.",
    ...                   "Explain briefly, then say if anything is false."))
    differ at character 42: "... say if anything is [wrong]." -> "... say if anything is [false]."
    """
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    tail = 0
    while tail < limit - start and old[-1 - tail] == new[-1 - tail]:
        tail += 1

    def window(text: str) -> str:
        before = text[max(0, start - _WINDOW) : start]
        middle = text[start : len(text) - tail]
        if len(middle) > _MIDDLE:
            middle = middle[: _MIDDLE - 3] + "..."
        after = text[len(text) - tail : len(text) - tail + _WINDOW]
        shown = json.dumps(before + "[" + middle + "]" + after, ensure_ascii=False)[1:-1]
        lead = "..." if start > _WINDOW else ""
        trail = "..." if tail > _WINDOW else ""
        return f'"{lead}{shown}{trail}"'

    return f"differ at character {start + 1}: {window(old)} -> {window(new)}"


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."
