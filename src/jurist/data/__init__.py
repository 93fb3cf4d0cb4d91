"""Items in: files (JSONL, CSV, Parquet), pandas frames, ``datasets`` and plain lists.

:func:`open_source` opens any of them as an :class:`ItemSource` (a count, a fingerprint and
an iterator of items, each with its own id or row number); :func:`read_records` reads a
file into a list of dicts with errors that name the file and the line; :func:`local_image`
permits one image file a caller names itself (see docs/security.md).
"""

from jurist.data._local_images import local_image
from jurist.data._readers import Records, read_records, require_fields
from jurist.data._source import ItemSource, open_source

__all__ = ["ItemSource", "Records", "local_image", "open_source", "read_records", "require_fields"]
