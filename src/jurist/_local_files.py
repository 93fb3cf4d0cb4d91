"""Which local files an item may make jurist read: the local files policy.

A dataset comes from elsewhere (a git repository, a tarball, a hub) and names its images by
path. A path may point anywhere (``/etc/passwd``, ``../../.ssh/id_rsa``, ``~/.netrc``) or
be a symlink that leaves the data's folder (``cat.png -> /etc/passwd``), and whatever is
read is sent, base64, to the model server. So a local file is read only when

- its *real* path (symlinks and ``..`` resolved) lies inside a folder of the policy: a data
  file's own folder, and the folders the user named (``--files-root DIR`` on the command
  line, ``files_root=`` in Python). Items given in memory have no folder: only the ones
  named;
- it is a regular file (never a FIFO, a device or a folder), no larger than
  :data:`MAX_IMAGE_BYTES`;
- its bytes are an image (PNG, JPEG, GIF or WEBP by their magic numbers; the name does not
  count), and the media type sent is the one the bytes show.

:meth:`LocalFiles.permit` checks a reference and returns a :class:`LocalFile` (the only
form of a local path the templates read, see :mod:`jurist.templates._images`);
:func:`read_image` reads one again at send time, with the same checks on the opened file.
A refusal is a :class:`~jurist.errors.DataError` naming the item, the field and the path.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "dot.png").write_bytes(PNG_MAGIC + bytes(8))
>>> _ = (folder / "notes.png").write_text("not a picture")
>>> files = LocalFiles.of_folder(folder)
>>> files.permit("dot.png", where="d.jsonl:1", field="images").path.name
'dot.png'
>>> files.permit("notes.png", where="d.jsonl:2", field="images")
Traceback (most recent call last):
...
jurist.errors.DataError: d.jsonl:2: field 'images': image 'notes.png': not an image by its ...
>>> files.permit("/etc/hosts", where="d.jsonl:3", field="images")
Traceback (most recent call last):
...
jurist.errors.DataError: d.jsonl:3: field 'images': image '/etc/hosts': outside the ...
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jurist.errors import ConfigError, DataError

__all__ = [
    "MAX_IMAGE_BYTES",
    "OPT_IN",
    "LocalFile",
    "LocalFiles",
    "image_type",
    "read_image",
    "roots_of",
]

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""The largest local image file read (OpenAI's own limit per image is 20 MB)."""

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
OPT_IN = (
    "allow its folder with --files-root DIR (command line) or files_root= (Python), "
    "or send the image as a data: URI"
)
"""How a user widens the policy, as refusals say it."""

_HEAD = 16  # bytes enough for every signature below
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def image_type(data: bytes) -> str | None:
    """The media type ``data`` is an image of, by its first bytes; ``None``: not an image.

    >>> image_type(PNG_MAGIC + bytes(8)), image_type(b"\\xff\\xd8\\xff\\xe0"), image_type(b"GIF89a")
    ('image/png', 'image/jpeg', 'image/gif')
    >>> image_type(b"RIFF\\x00\\x00\\x00\\x00WEBPVP8 "), image_type(b"root:x:0:0")
    ('image/webp', None)
    """
    if data.startswith(PNG_MAGIC):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    return None


class LocalFile(str):
    """A local file an item names, permitted by a :class:`LocalFiles` policy.

    The string is its real path (absolute, symlinks resolved), as is ``path``; ``root``
    is the allowed folder holding it. Only the policy makes one (data read from a
    file never holds one: JSON has no such type), and losing it (a copy through JSON) only
    makes the file unreadable, never readable elsewhere.
    """

    path: Path
    root: Path

    def __new__(cls, path: Path, root: Path) -> LocalFile:
        self = super().__new__(cls, str(path))
        self.path, self.root = path, root
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (LocalFile, (self.path, self.root))


def roots_of(value: Any, *, what: str = "files_root") -> tuple[Path, ...]:
    """The folders a user allows, as real paths: ``None``, one path, or several.

    Each must be an existing folder (a :class:`~jurist.errors.ConfigError` names it).

    >>> roots_of(None)
    ()
    >>> roots_of("/no/such/folder")
    Traceback (most recent call last):
    ...
    jurist.errors.ConfigError: files_root '/no/such/folder' is not a folder
    """
    if value is None:
        return ()
    given = [value] if isinstance(value, str | os.PathLike) else list(value)
    out: list[Path] = []
    for folder in given:
        real = Path(os.path.realpath(Path(folder).expanduser()))
        if not real.is_dir():
            raise ConfigError(f"{what} {str(folder)!r} is not a folder")
        out.append(real)
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class LocalFiles:
    """The folders local files may be read from (real paths), and the folder a relative
    path is read from (``base``; ``None``: the working folder).

    ``LocalFiles()`` allows none: no local file is read. :meth:`of_folder` is a data
    file's default (its own folder), widened by the folders given.
    """

    roots: tuple[Path, ...] = ()
    base: Path | None = None
    data_file: bool = False

    @classmethod
    def of_folder(cls, folder: Path, extra: Iterable[Path] = ()) -> LocalFiles:
        """A data file's policy: its folder (real path), then ``extra`` (real paths)."""
        real = Path(os.path.realpath(folder))
        return cls((real, *(r for r in extra if r != real)), base=folder, data_file=True)

    @classmethod
    def allowing(cls, files_root: Any, base: Path | None = None) -> LocalFiles:
        """Items with no data file: only the folders the user named (see :func:`roots_of`)."""
        return cls(roots_of(files_root), base=base)

    def permit(self, ref: str, *, where: str, field: str) -> LocalFile:
        """``ref`` checked (see the module): the :class:`LocalFile` to read, or a
        :class:`~jurist.errors.DataError` naming ``where``, ``field`` and ``ref``."""
        if isinstance(ref, LocalFile) and ref.root in self.roots:
            return ref  # already checked against a folder this policy allows
        said = f"{where}: field {field!r}: image {_short(ref)}"
        if not self.roots:
            raise DataError(
                f"{said}: a local file is not read for items given without a data file "
                f"(no folder was allowed); {OPT_IN}"
            )
        try:
            given = Path(ref).expanduser()
            full = given if given.is_absolute() else (self.base or Path.cwd()) / given
            real = Path(os.path.realpath(full))
        except (RuntimeError, ValueError, OSError) as e:  # ~nobody, a NUL byte
            raise DataError(f"{said}: not a usable path ({e})") from None
        root = next((r for r in self.roots if real == r or real.is_relative_to(r)), None)
        if root is None:
            shown = "" if real == full else f" (its real path is {real})"
            raise DataError(f"{said}: outside {self._allowed()}{shown}; {OPT_IN}")
        try:
            info = os.stat(real)
        except OSError:
            hint = " (a relative path is read from the data file's folder)" * self.data_file
            raise DataError(f"{said}: no such file {full}{hint}") from None
        _check_kind(info, said)
        file = LocalFile(real, root)
        _read(file, said, head=True)
        return file

    def _allowed(self) -> str:
        folders = ", ".join(str(r) for r in self.roots)
        if self.data_file and len(self.roots) == 1:
            return f"the data file's folder {folders}"
        return f"the folders allowed ({folders})"


def _check_kind(info: os.stat_result, said: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO, a device or a socket"
        raise DataError(f"{said}: not a regular file ({kind})")
    if info.st_size > MAX_IMAGE_BYTES:
        raise DataError(f"{said}: is {info.st_size} bytes, over the {MAX_IMAGE_BYTES} limit")


def read_image(file: LocalFile, *, where: str, field: str = "images") -> tuple[bytes, str]:
    """The bytes of a permitted file and their media type, checked again on the opened
    file (still inside its folder, a regular file, within the size limit, an image)."""
    return _read(file, f"{where}: field {field!r}: image {_short(str(file))}", head=False)


def _read(file: LocalFile, said: str, *, head: bool) -> tuple[bytes, str]:
    real = Path(os.path.realpath(file.path))
    if real != file.path or not real.is_relative_to(file.root):
        raise DataError(f"{said}: its real path changed to {real} since it was checked")
    try:  # no symlink at the end, and never blocking on a FIFO put there meanwhile
        fd = os.open(real, _FLAGS)
    except OSError as e:
        raise DataError(f"{said}: cannot read it ({e.strerror})") from None
    try:
        _check_kind(os.fstat(fd), said)
        limit = _HEAD if head else MAX_IMAGE_BYTES + 1
        chunks: list[bytes] = []
        got = 0
        while got < limit:
            chunk = os.read(fd, min(limit - got, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as e:
        raise DataError(f"{said}: cannot read it ({e.strerror})") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if not head and len(data) > MAX_IMAGE_BYTES:
        raise DataError(f"{said}: is over the {MAX_IMAGE_BYTES} bytes limit")
    media = image_type(data)
    if media is None:
        raise DataError(
            f"{said}: not an image by its content (its first bytes are not a PNG, JPEG, GIF "
            "or WEBP signature; the file's name does not count)"
        )
    return data, media


def _short(ref: str, size: int = 300) -> str:
    text = str(ref)
    return repr(text if len(text) <= size else text[: size - 3] + "...")
