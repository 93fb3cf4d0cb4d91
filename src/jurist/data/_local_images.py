"""Local image files an item names, checked against the local files policy.

An image given by a path in a data file (``"images": ["img/cat.png"]``, or an
``image_url`` part of a message) is read only from the data file's folder (its real path:
a symlink or ``..`` that leaves it is refused), or from folders the user allowed
(``--files-root DIR``, ``files_root=``); a relative path is read from the data file's
folder, wherever the run is started from. Items given in memory (a list, a DataFrame, a
``datasets.Dataset``) have no folder: their local paths are read only from the folders
the caller allowed (relative ones from the working folder). See
:mod:`jurist._local_files` for the checks (a regular file, an image by its bytes, within
the size limit).

:func:`resolve_images` gives the judge the item with each local path replaced by the
permitted :class:`~jurist._local_files.LocalFile` (the row itself, stored and hashed,
keeps the path as written), or stops with a :class:`~jurist.errors.DataError` naming the
item, the field and the path. :func:`image_digest` hashes the bytes of every permitted
local image an item names, for the item hash a resumed run checks (a changed picture
under the same path is a changed item); a refused file is never read.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> resolve_images({"images": "cat.png"}, LocalFiles.of_folder(folder), "d.jsonl:2")
Traceback (most recent call last):
...
jurist.errors.DataError: d.jsonl:2: field 'images': image 'cat.png': no such file .../cat.png ...
>>> resolve_images({"images": "/etc/passwd"}, LocalFiles.of_folder(folder), "d.jsonl:3")
Traceback (most recent call last):
...
jurist.errors.DataError: d.jsonl:3: field 'images': image '/etc/passwd': outside the data ...
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jurist._local_files import LocalFile, LocalFiles, read_image
from jurist.errors import DataError
from jurist.templates import image_refs, parse_messages
from jurist.templates._images import is_local

__all__ = ["image_digest", "local_image", "resolve_images"]

_KEYS = frozenset({"images", "messages", "messages_a", "messages_b"})
_MESSAGES = ("messages", "messages_a", "messages_b")


def local_image(path: str | Path, *, files_root: Any = None) -> LocalFile:
    """The image file ``path``, checked now and permitted for sending: the explicit
    opt-in for code that names a file itself (an item, a reward's ``images`` or a
    message's ``image_url`` part may hold it where a plain path would be refused).

    ``files_root`` (a folder or several) bounds where it may be; by default, the file's
    own folder. The file must be a regular file within the size limit whose bytes are an
    image (see :mod:`jurist._local_files`).

    >>> import pathlib, tempfile
    >>> from jurist._local_files import PNG_MAGIC
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "dot.png"
    >>> _ = p.write_bytes(PNG_MAGIC + bytes(8))
    >>> local_image(p) == str(p.resolve())
    True
    """
    given = Path(path).expanduser()
    if files_root is None:
        files_root = given.absolute().parent
    return LocalFiles.allowing(files_root).permit(str(given), where="local_image()", field="path")


def _url(ref: Any) -> str | None:
    """The URL or path of one reference (a string, ``{"url"}``, or an ``image_url`` part)."""
    if isinstance(ref, Mapping):
        inner = ref.get("image_url", ref)
        ref = inner.get("url") if isinstance(inner, Mapping) else inner
    return ref.strip() if isinstance(ref, str) else None


def _with_url(ref: Any, url: str) -> Any:
    if not isinstance(ref, Mapping):
        return url
    inner = ref.get("image_url")
    if isinstance(inner, Mapping):
        return {**ref, "image_url": {**inner, "url": url}}
    if isinstance(inner, str):
        return {**ref, "image_url": url}
    return {**ref, "url": url}


def _resolved(ref: Any, files: LocalFiles, where: str, field: str) -> tuple[Any, bool]:
    url = _url(ref)
    if not is_local(url):
        return ref, False
    assert url is not None
    return _with_url(ref, files.permit(url, where=where, field=field)), True


def _as_written(url: str) -> str:
    """The path as the item hash has always keyed it (``~`` expanded, normalised)."""
    try:
        return str(Path(url).expanduser())
    except RuntimeError:  # ~nobody: no such user
        return url


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def resolve_images(values: dict[str, Any], files: LocalFiles, where: str) -> dict[str, Any]:
    """``values`` with every local image path (in ``images`` and in the messages'
    ``image_url`` parts) replaced by the file ``files`` permits (see the module);
    ``values`` itself when it names none. A refused path is a
    :class:`~jurist.errors.DataError` naming ``where``, the field and the path."""
    if _KEYS.isdisjoint(values):
        return values
    out = values
    if _present(values.get("images")):
        refs = image_refs(values["images"], where=where)
        pairs = [_resolved(r, files, where, "images") for r in refs]
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
                        m["content"][i], moved = _resolved(part, files, where, field)
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


def image_digest(row: Mapping[str, Any], files: LocalFiles, where: str) -> str | None:
    """A hash of the bytes of every local image file ``row`` names, in order (``None``:
    it names none), each read only when ``files`` permits it. A refused or unreadable
    file counts as such, unread: the item's checks name it."""
    if _KEYS.isdisjoint(row):
        return None
    refs: list[tuple[str, Any]] = []
    if _present(row.get("images")):
        refs += [("images", r) for r in image_refs(row["images"], where=where)]
    for field in _MESSAGES:
        if _present(row.get(field)) and _has_parts(row[field]):
            for m in parse_messages(row[field], where=where, field=field):
                if isinstance(m.content, tuple):
                    refs += [(field, p) for p in m.content if p["type"] == "image_url"]
    paths = [(field, url) for field, url in ((f, _url(r)) for f, r in refs) if is_local(url)]
    if not paths:
        return None
    digest = hashlib.blake2b(digest_size=16)
    for field, url in paths:
        assert url is not None
        digest.update(_as_written(url).encode() + b"\0")
        try:
            data, _ = read_image(files.permit(url, where=where, field=field), where=where)
        except DataError:
            digest.update(b"refused")
        else:
            digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()
