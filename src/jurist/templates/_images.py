"""Images an item carries: paths, URLs or data URIs, made into :class:`~jurist.types.ImagePart`.

An item names its images in an ``images`` field (one reference, a list of them, or in a
CSV cell a JSON list) or as ``image_url`` parts of its conversation's messages. A
reference is

- a ``data:image/...;base64,...`` URI: sent as it is, hashed over its decoded bytes;
- an ``http://`` or ``https://`` URL: sent as it is for the server to fetch (jurist never
  fetches it), hashed over the URL's text;
- anything else, a path to a local file (``~`` expanded; relative to the working folder
  here: a data file's relative paths are made absolute against its folder when it is read,
  see :mod:`jurist.data._local_images`): read and sent as a data URI, hashed over its bytes.

A reference may also be a mapping, ``{"url": ..., "detail": "low"}`` or OpenAI's part
``{"type": "image_url", "image_url": {"url": ..., "detail": ...}}``.

>>> part = load_image("data:image/png;base64,iVBORw0KGgo=", where="item 0")
>>> part.ref, part.sha256[:12]
('sha256:4c4b6a3be1314ab86138bef4314dde022e600960d8689a2c8f8631802d20dab6', '4c4b6a3be131')
>>> load_image({"url": "https://example.com/cat.png", "detail": "low"}, where="item 0").detail
'low'
>>> load_image("missing.png", where="data.jsonl:3")
Traceback (most recent call last):
...
jurist.errors.DataError: data.jsonl:3: image 'missing.png': no such file
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from jurist._missing import is_missing
from jurist.errors import DataError
from jurist.types import ImagePart

__all__ = ["MAX_IMAGE_BYTES", "check_image", "image_refs", "load_image", "load_images"]

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""The largest local image file read (OpenAI's own limit per image is 20 MB)."""

_DETAILS = ("auto", "low", "high")
_SUFFIX_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png",
                 ".gif": "image/gif", ".webp": "image/webp"}  # fmt: skip


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


def check_image(ref: Any, *, where: str) -> None:
    """Check a reference without reading a file: its form, and that a local file exists."""
    url = ref
    if isinstance(ref, Mapping):
        inner = ref.get("image_url", ref)
        url = inner.get("url") if isinstance(inner, Mapping) else inner
    if isinstance(url, str) and url.strip().startswith(("data:", "http://", "https://")):
        load_image(ref, where=where)  # no file to read: the whole check is cheap
    elif not isinstance(url, str) or not Path(url.strip()).expanduser().is_file():
        load_image(ref, where=where)  # raises, naming what is wrong


def load_images(refs: list[Any], *, where: str) -> tuple[ImagePart, ...]:
    """:func:`load_image` of each reference, in order."""
    return tuple(load_image(ref, where=where) for ref in refs)


def load_image(ref: Any, *, where: str) -> ImagePart:
    """One reference as the part that is sent (see the module); errors name ``where``."""
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
    ref = ref.strip()
    if ref.startswith("data:"):
        data = _data_uri_bytes(ref, where)
        digest = hashlib.sha256(data).hexdigest()
        return ImagePart(url=ref, sha256=digest, ref=f"sha256:{digest}", detail=detail)
    if ref.startswith(("http://", "https://")):
        digest = hashlib.sha256(ref.encode()).hexdigest()
        return ImagePart(url=ref, sha256=digest, ref=ref, detail=detail)
    return _from_file(ref, detail, where)


def _from_file(ref: str, detail: Any, where: str) -> ImagePart:
    path = Path(ref).expanduser()
    if not path.is_file():
        raise DataError(f"{where}: image {_short(ref)}: no such file")
    media = _SUFFIX_TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0]
    if media is None or not media.startswith("image/"):
        raise DataError(
            f"{where}: image {_short(ref)}: not an image file by its name (use .png, .jpg, "
            ".jpeg, .gif or .webp)"
        )
    size = path.stat().st_size
    if size > MAX_IMAGE_BYTES:
        raise DataError(
            f"{where}: image {_short(ref)} is {size} bytes, over the {MAX_IMAGE_BYTES} limit"
        )
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DataError(f"{where}: image {_short(ref)}: cannot read it ({e.strerror})") from None
    url = f"data:{media};base64,{base64.b64encode(data).decode()}"
    return ImagePart(url=url, sha256=hashlib.sha256(data).hexdigest(), ref=ref, detail=detail)


def _data_uri_bytes(uri: str, where: str) -> bytes:
    head, comma, payload = uri.partition(",")
    if not comma or not head.startswith("data:image/") or not head.endswith(";base64"):
        raise DataError(
            f"{where}: image {_short(uri)}: a data URI must read data:image/<type>;base64,<data>"
        )
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise DataError(f"{where}: image {_short(uri)}: its base64 data is not valid") from None


def _short(ref: Any, size: int = 60) -> str:
    text = ref if isinstance(ref, str) else repr(ref)
    return repr(text if len(text) <= size else text[: size - 3] + "...")
