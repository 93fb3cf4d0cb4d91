"""Reading the text files users hand jurist (data, rubrics, templates, catalog entries),
and writing jurist's own files whole or not at all (:func:`replaced_atomically`).

Files are read as UTF-8, with or without a byte order mark (spreadsheet programs and
Windows editors write one). A file in another encoding, a folder where a file was
expected, or a file that cannot be read stops with one line naming the file (and the
line of the first undecodable byte).

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "r.yaml"
>>> _ = p.write_bytes(b"\\xef\\xbb\\xbfname: x\\n")
>>> read_utf8(p, what="the rubric file")
'name: x\\n'
>>> _ = p.write_bytes(b"name: x\\ndescription: caf\\xe9\\n")
>>> read_utf8(p, what="the rubric file")
Traceback (most recent call last):
...
jurist.errors.ConfigError: ...r.yaml:2: the rubric file is not UTF-8 text (byte 0xe9); ...
"""

from __future__ import annotations

import codecs
import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from jurist.errors import ConfigError, OutputError, UserError

__all__ = ["decode_error", "read_utf8", "replaced_atomically"]


@contextlib.contextmanager
def replaced_atomically(out: Path, *, what: str) -> Iterator[Path]:
    """A new temporary file of this process beside ``out`` to write; renamed over ``out``
    when the block ends, removed when it fails.

    The name is unique per process and call (never a fixed ``out.tmp`` that two writers
    would share) and the file gets the permissions an ordinary new file gets. A failure to
    write (a full disk) is an :class:`~jurist.errors.OutputError` naming ``out``; other
    errors pass through.

    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "results.jsonl"
    >>> with replaced_atomically(out, what="the results") as tmp:
    ...     _ = tmp.write_text("{}\\n")
    >>> out.read_text(), [p.name for p in out.parent.iterdir()]
    ('{}\\n', ['results.jsonl'])
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
        finally:
            os.close(fd)
        yield tmp
        os.replace(tmp, out)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"{out}: cannot write {what}: {e.strerror or e}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def decode_error(
    path: Path, data: bytes, e: UnicodeDecodeError, what: str, *, first_line: int = 1
) -> str:
    """The one-line message for ``data`` (bytes of ``path`` from ``first_line`` on) that
    are not UTF-8."""
    line = first_line + data.count(b"\n", 0, e.start)
    bad = data[e.start : e.start + 1].hex()
    return f"{path}:{line}: {what} is not UTF-8 text (byte 0x{bad}); save it as UTF-8"


def read_utf8(path: Path, *, what: str, error: type[UserError] = ConfigError) -> str:
    """The text of ``path`` (UTF-8, a leading byte order mark dropped).

    Raises ``error`` (a :class:`~jurist.errors.UserError`) naming the file when it is a
    folder, cannot be read, or is not UTF-8.
    """
    if path.is_dir():
        raise error(f"{path}: is a folder; {what} must be a file")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise error(f"{path}: cannot read {what}: {e.strerror or e}") from None
    body = data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else data
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(decode_error(path, body, e, what)) from None
