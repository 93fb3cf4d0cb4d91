"""Fingerprints of local model weights, for the cache key of the ``hf`` and ``vllm`` backends.

A model named by a folder keeps its name when other weights are copied into that folder,
so the name alone would let the cache answer with the old model's verdicts.
:func:`source_fingerprint` reads what identifies the files instead, cheaply (milliseconds
for a model of any size, never the gigabytes of weights) and the same way in every process
on the machine (a Ray actor that rebuilds the model gets the same key):

- Only the folder's top-level files count (what ``from_pretrained`` reads), hidden ones
  (``.git``, ``.cache``) left out; each is recorded by its name, size and a content digest.
- A file up to 16 MiB (``config.json``, ``generation_config.json``, the tokenizer files,
  a chat template, a safetensors index) is hashed whole (SHA-256).
- A larger file (the weights) is hashed by sampling: its safetensors header (tensor names,
  dtypes, shapes, offsets, ``__metadata__``) when it has one, 8 blocks of 64 KiB spread
  evenly from its first to its last byte, and its size and modification time (ns). Other
  weights change every block sampled (another seed, another training run), a rewrite in
  place changes the modification time, and a copy keeps its fingerprint only when its
  bytes and time are kept too. Reading 1 MiB per weight file, not the whole file, is what
  keeps this cheap; the price is that two copies of one model with different times
  fingerprint apart (a cache miss, never a stale answer).
- A file of the Hugging Face cache (a symlink into ``blobs/``) is recorded by its blob
  name, which is the hash of its content: nothing is read.

A hub id resolves, without network calls, to the snapshot folder of the Hugging Face cache
that ``from_pretrained`` loads (``refs/<revision>`` gives the commit); the fingerprint
names the repository and commit and covers that folder's files. A hub id not downloaded yet
has no fingerprint (``None``). The backends fingerprint a hub model after loading it, as
the load may fetch a newer snapshot than the one the cache held before.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

from jurist.errors import ModelLoadError

__all__ = [
    "FINGERPRINT_VERSION",
    "engine_fingerprint",
    "file_fingerprint",
    "folder_fingerprint",
    "hub_snapshot",
    "source_fingerprint",
]

FINGERPRINT_VERSION = 1
_WHOLE_MAX = 16 * 1024 * 1024  # files up to this size are hashed whole
_BLOCK = 64 * 1024
_SAMPLES = 8
_HEADER_MAX = 100 * 1024 * 1024  # a safetensors header longer than this is not one


def _blob_name(path: Path) -> str | None:
    """The blob (content hash) a Hugging Face cache symlink points to, else ``None``."""
    if not path.is_symlink():
        return None
    target = Path(os.path.realpath(path))
    return target.name if target.parent.name == "blobs" else None


def _safetensors_header(handle: Any, size: int) -> bytes:
    if size < 8:
        return b""
    handle.seek(0)
    (length,) = struct.unpack("<Q", handle.read(8))
    if not 0 < length <= min(_HEADER_MAX, size - 8):
        return b""
    header = bytes(handle.read(length))
    return header if header.startswith(b"{") else b""


def _file_digest(path: Path, stat: os.stat_result) -> str:
    blob = _blob_name(path)
    if blob is not None:
        return "blob:" + blob
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        if stat.st_size <= _WHOLE_MAX:
            while piece := handle.read(1024 * 1024):
                digest.update(piece)
            return "sha256:" + digest.hexdigest()
        if path.suffix == ".safetensors":
            digest.update(_safetensors_header(handle, stat.st_size))
        last = max(stat.st_size - _BLOCK, 0)
        for i in range(_SAMPLES):
            handle.seek(last * i // (_SAMPLES - 1))
            digest.update(handle.read(_BLOCK))
    return f"sampled:{digest.hexdigest()}:mtime_ns={stat.st_mtime_ns}"


def folder_fingerprint(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The fingerprint of the model files in ``folder`` (see the module docs).

    Raises :class:`~jurist.errors.ModelLoadError` naming the folder when it cannot be read.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "config.json").write_text("{}")
    >>> a = folder_fingerprint(d)
    >>> _ = (d / "config.json").write_text('{"hidden_size": 8}')
    >>> a == folder_fingerprint(d), sorted(a)
    (False, ['digest', 'files', 'v'])
    """
    root = Path(folder)
    try:
        entries = sorted(p for p in root.iterdir() if not p.name.startswith("."))
        records = []
        for path in entries:
            if not path.is_file():  # a folder, or a link to nothing
                continue
            stat = path.stat()  # follows symlinks (the Hugging Face cache's blobs)
            records.append([path.name, stat.st_size, _file_digest(path, stat)])
    except OSError as exc:
        raise ModelLoadError(f"cannot read the model folder {str(root)!r}: {exc}") from exc
    canonical = json.dumps(records, separators=(",", ":"))
    return {
        "v": FINGERPRINT_VERSION,
        "files": len(records),
        "digest": hashlib.sha256(canonical.encode()).hexdigest(),
    }


def file_fingerprint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The fingerprint of a model held in one file (a GGUF): its name, size and digest, as
    :func:`folder_fingerprint` records each file of a folder."""
    file = Path(path)
    try:
        stat = file.stat()
        record = [file.name, stat.st_size, _file_digest(file, stat)]
    except OSError as exc:
        raise ModelLoadError(f"cannot read the model file {str(file)!r}: {exc}") from exc
    canonical = json.dumps([record], separators=(",", ":"))
    return {
        "v": FINGERPRINT_VERSION,
        "files": 1,
        "digest": hashlib.sha256(canonical.encode()).hexdigest(),
    }


def hub_snapshot(
    repo_id: str, revision: str | None = None, cache_dir: str | os.PathLike[str] | None = None
) -> Path | None:
    """The Hugging Face cache's snapshot folder of ``repo_id`` at ``revision`` (default
    ``main``), found without network calls; ``None`` when it is not downloaded."""
    import huggingface_hub

    try:
        found = huggingface_hub.snapshot_download(
            repo_id,
            revision=revision,
            cache_dir=None if cache_dir is None else str(cache_dir),
            local_files_only=True,
        )
    except Exception:  # not in the cache (LocalEntryNotFoundError), or not a valid repo id
        return None
    return Path(found)


def source_fingerprint(
    name: str,
    *,
    revision: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> dict[str, Any] | None:
    """The fingerprint of a model named by a folder or a hub id (``None``: a hub id whose
    snapshot is not downloaded yet)."""
    path = Path(name).expanduser()
    if path.is_dir():
        return folder_fingerprint(path.resolve())
    if path.is_file():  # one file holds the model (a GGUF): that file is the fingerprint
        return file_fingerprint(path.resolve())
    snapshot = hub_snapshot(name, revision, cache_dir)
    if snapshot is None:
        return None
    return {"repo": name, "commit": snapshot.name, **folder_fingerprint(snapshot)}


def engine_fingerprint(name: str, engine_kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The ``vllm`` backend's fingerprint: its model's, and its tokenizer's when the engine
    takes the tokenizer from elsewhere (``tokenizer=``); ``None`` until the model is on disk.

    The hub cache is ``download_dir`` when the engine was given one, as vLLM downloads there.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> sorted(engine_fingerprint(d, {"tokenizer": d}) or {})
    ['model']
    """
    cache_dir = engine_kwargs.get("download_dir")
    model = source_fingerprint(name, revision=engine_kwargs.get("revision"), cache_dir=cache_dir)
    if model is None:
        return None
    out: dict[str, Any] = {"model": model}
    tokenizer = engine_kwargs.get("tokenizer")
    if isinstance(tokenizer, str) and tokenizer and tokenizer != name:
        tok_revision = engine_kwargs.get("tokenizer_revision")
        tok = source_fingerprint(tokenizer, revision=tok_revision, cache_dir=cache_dir)
        if tok is None:
            return None
        out["tokenizer"] = tok
    return out
