"""Images an item carries: paths, URLs or data URIs, made into :class:`~jurist.types.ImagePart`.

An item names its images in an ``images`` field (one reference, a list of them, or in a
CSV cell a JSON list) or as ``image_url`` parts of its conversation's messages. A
reference is

- a ``data:image/...;base64,...`` URI: sent as it is, hashed over its decoded bytes;
- an ``http://`` or ``https://`` URL: sent as it is for the server to fetch (jurist never
  fetches it), hashed over the URL's text;
- anything else, a path to a local file: read only as a :class:`~jurist._local_files.LocalFile`,
  which the data layer makes after checking the path against the local files policy (the
  data file's folder, or folders the user allowed: see :mod:`jurist._local_files`); the
  bytes must be an image by their magic numbers, and are sent as a data URI of the media
  type they show. A plain path string is refused here: nothing reaches a template's
  reader without the policy's say.

A data URI's decoded bytes must be an image too (PNG, JPEG, GIF or WEBP).

A reference may also be a mapping, ``{"url": ..., "detail": "low"}`` or OpenAI's part
``{"type": "image_url", "image_url": {"url": ..., "detail": ...}}``.

>>> part = load_image("data:image/png;base64,iVBORw0KGgo=", where="item 0")
>>> part.ref, part.sha256[:12]
('sha256:4c4b6a3be1314ab86138bef4314dde022e600960d8689a2c8f8631802d20dab6', '4c4b6a3be131')
>>> load_image({"url": "https://example.com/cat.png", "detail": "low"}, where="item 0").detail
'low'
>>> load_image("/etc/passwd", where="data.jsonl:3")
Traceback (most recent call last):
...
jurist.errors.DataError: data.jsonl:3: field 'images': image '/etc/passwd': a local file is ...
>>> load_image("data:image/png;base64,cm9vdDp4OjA6MA==", where="item 2")
Traceback (most recent call last):
...
jurist.errors.DataError: item 2: image 'data:image/png;base64,cm9vdDp4OjA6MA==': its data is not ...
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from jurist._local_files import MAX_IMAGE_BYTES, LocalFile, LocalFiles, image_type, read_image
from jurist._missing import is_missing
from jurist.errors import DataError
from jurist.types import ImagePart

__all__ = [
    "MAX_IMAGE_BYTES",
    "check_image",
    "image_refs",
    "is_local",
    "load_image",
    "load_images",
]

_DETAILS = ("auto", "low", "high")
_REMOTE = ("data:", "http://", "https://")


def image_refs(value: Any, *, where: str) -> list[Any]:
    """The references in an item's ``images`` field: none, one, a list, or a JSON list
    written in a CSV cell.

    >>> image_refs('["a.png", "b.png"]', where="d.csv:2"), image_refs(None, where="x")
    (['a.png', 'b.png'], [])
    """
    if value is None or (not isinstance(value, str | Mapping) and _scalar_missing(value)):
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        if text.startswith("["):
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError as e:
                raise DataError(f"{where}: field 'images' is not a valid JSON list ({e})") from None
        else:
            return [text]
    if isinstance(value, Mapping):
        return [value]
    if hasattr(value, "tolist") and type(value).__module__ == "numpy":
        value = value.tolist()  # a list column read by pandas
    if not isinstance(value, list | tuple):
        raise DataError(
            f"{where}: field 'images' must be a reference or a list of them, "
            f"got a {type(value).__name__}"
        )
    return list(value)


def _scalar_missing(value: Any) -> bool:
    try:
        return bool(is_missing(value))
    except (TypeError, ValueError):
        return False


def check_image(ref: Any, *, where: str, field: str = "images") -> None:
    """Check a reference before any call: its form, a data URI's bytes, and that a local
    path was permitted (a :class:`~jurist._local_files.LocalFile`; its checks were made
    when it was)."""
    url = ref
    if isinstance(ref, Mapping):
        inner = ref.get("image_url", ref)
        url = inner.get("url") if isinstance(inner, Mapping) else inner
    if isinstance(url, LocalFile):
        return
    load_image(ref, where=where, field=field)  # no file is read: cheap, or raises


def load_images(refs: list[Any], *, where: str, field: str = "images") -> tuple[ImagePart, ...]:
    """:func:`load_image` of each reference, in order."""
    return tuple(load_image(ref, where=where, field=field) for ref in refs)


def load_image(ref: Any, *, where: str, field: str = "images") -> ImagePart:
    """One reference as the part that is sent (see the module); errors name ``where``
    and, for a local file, ``field``."""
    detail: Any = None
    if isinstance(ref, Mapping):
        inner = ref.get("image_url", ref)
        if isinstance(inner, str):
            inner = {"url": inner}
        if not isinstance(inner, Mapping) or not isinstance(inner.get("url"), str):
            raise DataError(f"{where}: image {_short(ref)} has no 'url' string")
        detail = inner.get("detail")
        ref = inner["url"]
    if not isinstance(ref, str) or not ref.strip():
        raise DataError(f"{where}: an image reference must be a non-empty string, got {ref!r}")
    if detail is not None and detail not in _DETAILS:
        raise DataError(f"{where}: image {_short(ref)}: detail must be one of {_DETAILS}")
    if isinstance(ref, LocalFile):
        data, media = read_image(ref, where=where, field=field)
        url = f"data:{media};base64,{base64.b64encode(data).decode()}"
        digest = hashlib.sha256(data).hexdigest()
        return ImagePart(url=url, sha256=digest, ref=str(ref), detail=detail)
    ref = ref.strip()
    if ref.startswith("data:"):
        data, url = _data_uri(ref, where)
        digest = hashlib.sha256(data).hexdigest()
        return ImagePart(url=url, sha256=digest, ref=f"sha256:{digest}", detail=detail)
    if ref.startswith(("http://", "https://")):
        digest = hashlib.sha256(ref.encode()).hexdigest()
        return ImagePart(url=ref, sha256=digest, ref=ref, detail=detail)
    LocalFiles().permit(ref, where=where, field=field)  # raises: no folder was allowed
    raise AssertionError("unreachable: a policy with no folder permits nothing")


def is_local(url: Any) -> bool:
    """Whether an image URL names a local file (not a data URI, not http(s)).

    >>> is_local("img/cat.png"), is_local("https://x/cat.png"), is_local(None)
    (True, False, False)
    """
    return isinstance(url, str) and bool(url.strip()) and not url.strip().startswith(_REMOTE)


def _data_uri(uri: str, where: str) -> tuple[bytes, str]:
    """A data URI's decoded bytes, and the URI to send: the media type its bytes show."""
    head, comma, payload = uri.partition(",")
    if not comma or not head.startswith("data:image/") or not head.endswith(";base64"):
        raise DataError(
            f"{where}: image {_short(uri)}: a data URI must read data:image/<type>;base64,<data>"
        )
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise DataError(f"{where}: image {_short(uri)}: its base64 data is not valid") from None
    media = image_type(data)
    if media is None:
        raise DataError(
            f"{where}: image {_short(uri)}: its data is not an image by its content (not a "
            "PNG, JPEG, GIF or WEBP signature)"
        )
    return data, uri if head == f"data:{media};base64" else f"data:{media};base64,{payload}"


def _short(ref: Any, size: int = 60) -> str:
    text = ref if isinstance(ref, str) else repr(ref)
    return repr(text if len(text) <= size else text[: size - 3] + "...")
