"""Resuming a run: is the run in a folder the same run, and what is left to judge.

A run's identity is its manifest (:class:`~jurist.runs.Manifest`: the judge, the data, the
options that change a judgment). :func:`refuse_changed` compares a new manifest with the
stored one read-only, so a resume whose judge, data or options changed stops before any
model is loaded, with one line per changed setting. :func:`open_run` then opens the run in
its store once the folder is claimed: the same run resumed (this session's settings and
prices recorded, the run's identity kept) or a new one started, with the items already
done (:class:`OpenedRun`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from jurist.errors import ConfigError
from jurist.runs._folder import STORE_NAME, FolderKind
from jurist.runs._manifest import Manifest
from jurist.runs._store import FORMAT, Bitmap, RunStore, is_jurist_store

__all__ = ["OpenedRun", "cannot_resume", "open_run", "refuse_changed", "stored_manifest"]


def stored_manifest(store: RunStore, folder: Path) -> Manifest | None:
    """The manifest the store's rows belong to (``manifest.json`` for an older store)."""
    kept = store.get_meta("manifest")
    if kept is not None:
        return Manifest.model_validate(kept)
    return Manifest.read(folder)


def cannot_resume(store: RunStore, folder: Path, diffs: list[str]) -> ConfigError:
    """The error that stops a resume whose judge, data or options changed."""
    listed = "\n  ".join(diffs)
    totals = store.totals()
    lost = (
        f"None of its {totals.items} stored items has a score: starting over loses nothing.\n"
        if totals.items and not totals.scored
        else ""
    )
    return ConfigError(
        f"{folder}: cannot resume this run: its judge, data or options changed:\n"
        f"  {listed}\n{lost}Use another run folder, or start over with resume=False "
        "(--no-resume)."
    )


def refuse_changed(folder: Path, manifest: Manifest) -> None:
    """Refuse now, read-only, before any model is loaded, a resume that :func:`open_run`
    would refuse once the models are up: the run already in ``folder`` has another judge,
    data or options (one line per changed setting). Nothing to check without a run there
    (and a folder that is not a run is the folder check's to refuse)."""
    if not (folder / STORE_NAME).is_file() or is_jurist_store(folder / STORE_NAME) is not None:
        return
    store = RunStore(folder / STORE_NAME, readonly=True)
    try:
        existing = stored_manifest(store, folder)
        diffs = existing.differences(manifest) if existing is not None else []
        if diffs:
            raise cannot_resume(store, folder, diffs)
    finally:
        store.close()


@dataclass(frozen=True)
class OpenedRun:
    """A run opened in its store: its manifest, the items done (not judged again) and the
    items stored (done, or kept as failures)."""

    manifest: Manifest
    done: Bitmap
    stored: Bitmap


def open_run(
    store: RunStore,
    folder: Path,
    kind: FolderKind,
    manifest: Manifest,
    *,
    resume: bool,
    retry_failed: bool,
    repeats: bool = False,
) -> OpenedRun:
    """Resume the run in ``store`` (after checking it is the same run), or start a new
    one; with what is done: the stored items, but those without a score when
    ``retry_failed`` (and, with ``repeats``, those with a repeat still to judge again)."""
    existing = stored_manifest(store, folder) if kind == "run" else None
    if existing is not None and resume:
        diffs = existing.differences(manifest)
        if diffs:
            raise cannot_resume(store, folder, diffs)
        # this session's settings and prices; the run's identity stays
        opened = existing.model_copy(
            update={"settings": manifest.settings, "prices": manifest.prices}
        )
        if existing.run_id is None:  # a store from before the manifest was kept in it
            opened = opened.model_copy(update={"run_id": manifest.run_id or uuid.uuid4().hex})
            store.set_meta("format", FORMAT)
        store.set_meta("manifest", opened.model_dump(mode="json"))
    else:
        run_id = store.start(manifest.model_dump(mode="json"))
        opened = manifest.model_copy(update={"run_id": run_id})
    opened.write(folder)
    done = store.done_bitmap(scored_only=retry_failed)
    stored = store.done_bitmap() if retry_failed else done
    table = store.repeat_table()
    if repeats and retry_failed and table is not None:
        # an item with a failed repeat is not done: that repeat is judged again
        done = store.done_bitmap(scored_only=True, exclude=table.unsettled())
    return OpenedRun(opened, done, stored)
