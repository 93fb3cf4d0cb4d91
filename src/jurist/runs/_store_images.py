"""Images in the run store: kept once, by content hash, never inline in each item.

An item may carry an image inline, as a ``data:image/...;base64,...`` URI (in its
``images`` field, in a message's ``image_url`` part, or inside a conversation written as
JSON text). Before the item is written, every such URI in it is replaced by the reference
``sha256:<hex>`` (the hash of the image's bytes, the same reference a judge's
:class:`~jurist.types.ImagePart` gives it), and the bytes go to the store's ``images``
table once per hash, however many items (or runs resumed) show the same image. An image
given by path or URL is a reference already and is kept as it is.

>>> item, blobs = externalise({"images": ["data:image/png;base64,iVBORw0KGgo=", "cat.png"]})
>>> item["images"][0][:15], item["images"][1], len(blobs)
('sha256:4c4b6a3b', 'cat.png', 1)
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["IMAGES_SCHEMA", "Blobs", "externalise"]

IMAGES_SCHEMA = """
CREATE TABLE IF NOT EXISTS images (
    sha256 TEXT PRIMARY KEY,
    media_type TEXT NOT NULL,
    data BLOB NOT NULL
) WITHOUT ROWID;
"""

Blobs = dict[str, tuple[str, bytes]]
_DATA_URI = re.compile(r"data:(image/[A-Za-z0-9.+-]+);base64,([A-Za-z0-9+/]+={0,2})")


def externalise(value: Any) -> tuple[Any, Blobs]:
    """``value`` with each inline image replaced by ``sha256:<hex>``, and the images
    (hash -> media type, bytes); ``value`` itself when it holds none."""
    blobs: Blobs = {}
    return _walk(value, blobs), blobs


def _walk(value: Any, blobs: Blobs) -> Any:
    if isinstance(value, str):
        return _DATA_URI.sub(lambda m: _keep(m, blobs), value) if "data:image/" in value else value
    if isinstance(value, Mapping):
        return {k: _walk(v, blobs) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, blobs) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return _walk(value.tolist(), blobs)  # a list column read by pandas
    return value


def _keep(m: re.Match[str], blobs: Blobs) -> str:
    try:
        data = base64.b64decode(m.group(2), validate=True)
    except (binascii.Error, ValueError):
        return m.group(0)  # not an image jurist could send either: kept as given
    digest = hashlib.sha256(data).hexdigest()
    blobs.setdefault(digest, (m.group(1), data))
    return f"sha256:{digest}"
