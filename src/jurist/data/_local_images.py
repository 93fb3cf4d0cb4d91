"""Local image files an item names, read from the data file's folder.

An image given by a relative path in a data file (``"images": ["img/cat.png"]``, or an
``image_url`` part of a message) is the file beside the data file, wherever the run is
started from: :func:`resolve_images` gives the judge the item with such paths made
absolute against the data file's folder (the row itself, stored and hashed, keeps the path
as written). Items given in memory (a list, a DataFrame, a ``datasets.Dataset``) have no
file: their relative paths are read from the working folder.

:func:`image_digest` hashes the bytes of every local image an item names, for the item
hash a resumed run checks (a changed picture under the same path is a changed item).

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> resolve_images({"images": "cat.png"}, folder, "d.jsonl:2")
Traceback (most recent call last):
...
jurist.errors.DataError: d.jsonl:2: image 'cat.png': no such file .../cat.png (a relative ...
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jurist.errors import DataError
from jurist.templates import image_refs, parse_messages

__all__ = ["image_digest", "resolve_images"]

_KEYS = frozenset({"images", "messages", "messages_a", "messages_b"})
_MESSAGES = ("messages", "messages_a", "messages_b")
_REMOTE = ("data:", "http://", "https://")


def _url(ref: Any) -> str | None:
    """The URL or path of one reference (a string, ``{"url"}``, or an ``image_url`` part)."""
    if isinstance(ref, Mapping):
        inner = ref.get("image_url", ref)
        ref = inner.get("url") if isinstance(inner, Mapping) else inner
    return ref.strip() if isinstance(ref, str) else None


def _local(url: str | None) -> Path | None:
    if not url or url.startswith(_REMOTE):
        return None
    return Path(url).expanduser()


def _with_url(ref: Any, url: str) -> Any:
    if not isinstance(ref, Mapping):
        return url
    inner = ref.get("image_url")
    if isinstance(inner, Mapping):
        return {**ref, "image_url": {**inner, "url": url}}
    if isinstance(inner, str):
        return {**ref, "image_url": url}
    return {**ref, "url": url}


def _resolved(ref: Any, base: Path, where: str) -> tuple[Any, bool]:
    path = _local(_url(ref))
    if path is None or path.is_absolute():
        return ref, False
    full = base / path
    if not full.is_file():
        raise DataError(
            f"{where}: image {_url(ref)!r}: no such file {full} (a relative path is read "
            "from the data file's folder)"
        )
    return _with_url(ref, str(full)), True


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def resolve_images(values: dict[str, Any], base: Path | None, where: str) -> dict[str, Any]:
    """``values`` with every relative local image path (in ``images`` and in the messages'
    ``image_url`` parts) made absolute against ``base``, the data file's folder; ``values``
    itself when there is none or ``base`` is ``None``. A missing file is a
    :class:`~jurist.errors.DataError` naming ``where``, the path and where it was looked
    for."""
    if base is None or _KEYS.isdisjoint(values):
        return values
    out = values
    if _present(values.get("images")):
        pairs = [_resolved(r, base, where) for r in image_refs(values["images"], where=where)]
        if any(changed for _, changed in pairs):
            out = {**out, "images": [ref for ref, _ in pairs]}
    for field in _MESSAGES:
        if not _present(values.get(field)) or not _has_parts(values[field]):
            continue
        messages = [m.to_openai() for m in parse_messages(values[field], where=where, field=field)]
        changed = False
        for m in messages:
            if isinstance(m["content"], list):
                for i, part in enumerate(m["content"]):
                    if part["type"] == "image_url":
                        m["content"][i], moved = _resolved(part, base, where)
                        changed = changed or moved
        if changed:
            out = {**out, field: messages}
    return out


def _has_parts(value: Any) -> bool:
    """Whether a messages value may hold an image part (cheap: no parsing)."""
    if isinstance(value, str):
        return "image_url" in value
    if isinstance(value, Mapping):
        return "image_url" in value or any(_has_parts(v) for v in value.values())
    if hasattr(value, "tolist") and type(value).__module__ == "numpy":
        value = value.tolist()  # a list column read by pandas
    if isinstance(value, list | tuple):
        return any(_has_parts(v) for v in value)
    return False


def image_digest(row: Mapping[str, Any], base: Path | None, where: str) -> str | None:
    """A hash of the bytes of every local image file ``row`` names, in order (``None``:
    it names none); relative paths read from ``base`` (else the working folder). A file
    that cannot be read is left to the item's checks, which name it."""
    if _KEYS.isdisjoint(row):
        return None
    refs: list[Any] = []
    if _present(row.get("images")):
        refs += image_refs(row["images"], where=where)
    for field in _MESSAGES:
        if _present(row.get(field)) and _has_parts(row[field]):
            for m in parse_messages(row[field], where=where, field=field):
                if isinstance(m.content, tuple):
                    refs += [p for p in m.content if p["type"] == "image_url"]
    paths = [p for p in (_local(_url(r)) for r in refs) if p is not None]
    if not paths:
        return None
    digest = hashlib.blake2b(digest_size=16)
    for path in paths:
        full = path if path.is_absolute() or base is None else base / path
        digest.update(str(path).encode() + b"\0")
        try:
            digest.update(hashlib.sha256(full.read_bytes()).digest())
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()
