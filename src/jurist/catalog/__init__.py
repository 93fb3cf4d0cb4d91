"""Named judges, templates and rubrics, stored as YAML and resolved by dotted names.

``get`` builds a ready object from a name (inline overrides allowed); ``add`` stores an
object in the user catalog; ``list_entries`` lists every entry with its one-line
description. The user catalog is ``root=`` when given, else ``$JURIST_CATALOG``, else
``~/.config/jurist/catalog`` (``$XDG_CONFIG_HOME`` honoured); built-in entries ship with
the package. See ``docs/catalog.md``.

>>> import jurist, tempfile
>>> root = tempfile.mkdtemp()
>>> judge = jurist.catalog.get("judges.likert.hf_qwen2_5_0_5b_instruct[temperature=0.2]", root=root)
>>> judge.name, judge.template.name, judge.temperature, judge.model.spec
('judges.likert.hf_qwen2_5_0_5b_instruct', 'likert', 0.2, 'hf:Qwen/Qwen2.5-0.5B-Instruct')
>>> mine = jurist.LLMJudge(jurist.get_model("mock:j", outputs=["4"]), template="likert")
>>> path = jurist.catalog.add(mine, "judges.likert.mine", root=root, description="my judge")
>>> jurist.catalog.get("judges.likert.mine", root=root).template.name
'likert'
>>> jurist.catalog.add(mine, "judges.likert.mine", root=root)
Traceback (most recent call last):
...
jurist.errors.ConfigError: catalog entry 'judges.likert.mine' already exists at ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jurist.catalog._dump import entry_of, kind_of
from jurist.catalog._entries import (  # noqa: F401  (KINDS: importable, not public)
    KINDS,
    entry_model,
    judge_kinds,
    section_kinds,
    section_of,
)
from jurist.catalog._names import (
    SECTIONS,
    check_name,
    format_overrides,  # noqa: F401  (importable, not public)
    name_to_relpath,
    parse_name,
    parse_overrides,  # noqa: F401  (importable, not public)
)
from jurist.catalog._resolve import build
from jurist.catalog._store import (
    BUILTIN_ROOT,
    EntryInfo,
    default_root,
    find_entry,
    iter_names,
    read_entry,
    read_entry_file,
    roots,
    write_entry,
)
from jurist.errors import ConfigError, JuristError

__all__ = [
    "EntryInfo",
    "add",
    "add_version",
    "default_root",
    "get",
    "list_entries",
    "load_entry",
    "parse_name",
    "remove",
]


def get(name: str, *, root: str | Path | None = None, **overrides: Any) -> Any:
    """The ready object of catalog entry ``name`` (``name[key=value,...]`` allowed).

    ``overrides`` set entry keys like the inline ones and win over them; they may hold any
    Python value, and ``model=`` may be a :class:`~jurist.Model` object (a judge run on
    another backend). Nothing is loaded or connected until the first call.
    """
    return build(name, root=root, overrides=overrides)


def load_entry(name: str, *, root: str | Path | None = None) -> dict[str, Any]:
    """The raw mapping stored for ``name`` (no overrides, nothing built)."""
    return dict(read_entry(check_name(name), root).data)


def add(
    obj: Any,
    name: str,
    *,
    overwrite: bool = False,
    description: str | None = None,
    root: str | Path | None = None,
    alignment: dict[str, Any] | None = None,
) -> Path:
    """Store ``obj`` (a judge, template or rubric) as entry ``name`` in the user catalog.

    Refuses a name that exists (in the user catalog or built in) unless ``overwrite=True``;
    a user entry then shadows the built-in one. Returns the file written. ``alignment``
    (``jurist align``'s record: the data, examples and held-out figures) is kept in a
    ``judge`` or ``calibrated_judge`` entry as it is.
    """
    check_name(name)
    kind = kind_of(obj)
    section = name.split(".", 1)[0]
    if kind not in section_kinds(section):
        want = section_of(kind)
        raise ConfigError(
            f"catalog name {name!r}: a {kind} is stored under {want}., e.g. "
            f"'{want}.{name.split('.', 1)[1]}'"
        )
    base = dict(roots(root))["user"]
    path = base / name_to_relpath(name)
    if not overwrite:
        try:
            _, existing = find_entry(name, root)
        except ConfigError:
            existing = None
        if existing is not None:
            raise ConfigError(
                f"catalog entry {name!r} already exists at {existing}; pass overwrite=True "
                "to replace it"
            )
    data = entry_of(obj, description)
    if "description" not in data:
        data = {"kind": data.pop("kind"), "description": _describe(obj, kind), **data}
    if alignment is not None:
        declared = judge_kinds().get(kind)
        if declared is None or not declared.config.keeps_alignment:
            raise ConfigError(f"catalog entry {name!r}: a {kind} entry keeps no alignment")
        data["alignment"] = alignment
    write_entry(path, data)
    return path


def next_version(name: str, *, root: str | Path | None = None) -> int:
    """The first free version of ``name``: one more than the highest ``name.vN`` stored (in
    the user catalog or built in), 1 when there is none."""
    check_name(name)
    prefix = f"{name}.v"
    taken = [
        int(other[len(prefix) :])
        for other in iter_names(root)
        if other.startswith(prefix) and other[len(prefix) :].isdigit()
    ]
    return max(taken, default=0) + 1


def add_version(
    obj: Any,
    name: str,
    *,
    description: str | None = None,
    root: str | Path | None = None,
    alignment: dict[str, Any] | None = None,
) -> tuple[str, Path]:
    """Store ``obj`` as the next version of ``name`` (``name.v1``, ``name.v2``...), never
    replacing one; returns the versioned name and the file written.

    >>> import jurist, tempfile
    >>> root = tempfile.mkdtemp()
    >>> judge = jurist.LLMJudge("mock:j", template="likert")
    >>> [add_version(judge, "judges.mine", root=root)[0] for _ in range(2)]
    ['judges.mine.v1', 'judges.mine.v2']
    """
    full = f"{name}.v{next_version(name, root=root)}"
    path = add(obj, full, description=description, root=root, alignment=alignment)
    return full, path


def remove(name: str, *, root: str | Path | None = None) -> Path:
    """Delete user entry ``name``; built-in entries cannot be removed. Returns the file."""
    base = dict(roots(root))["user"]
    path = base / name_to_relpath(name)
    if not path.is_file():
        raise ConfigError(f"no user catalog entry named {name!r} at {path}")
    path.unlink()
    return path


def list_entries(*, root: str | Path | None = None, section: str | None = None) -> list[EntryInfo]:
    """Every entry, sorted by name: kind, description, source (``user`` / ``builtin``).

    A file that cannot be read, or whose path is not a valid entry name, is listed with its
    ``error`` instead of being skipped.
    """
    if section is not None and section not in SECTIONS:
        raise ConfigError(f"section {section!r} is not one of {', '.join(SECTIONS)}")
    builtin = {
        ".".join(p.relative_to(BUILTIN_ROOT).with_suffix("").parts)
        for p in BUILTIN_ROOT.rglob("*.yaml")
    }
    out: list[EntryInfo] = []
    for name, (source, path) in sorted(iter_names(root).items()):
        if section is not None and name.split(".", 1)[0] != section:
            continue
        shadows = source == "user" and name in builtin
        try:
            entry = read_entry_file(path, name=name, source=source)
            kind = str(entry.data["kind"])
            spec = entry_model(kind).model_validate(entry.data)
            description = str(getattr(spec, "description", ""))
            out.append(
                EntryInfo(
                    name=name,
                    kind=kind,
                    description=description,
                    source=source,
                    path=str(path),
                    shadows_builtin=shadows,
                )
            )
        except (JuristError, ValueError) as e:
            out.append(
                EntryInfo(
                    name=name,
                    kind="?",
                    description="",
                    source=source,
                    path=str(path),
                    shadows_builtin=shadows,
                    error=str(e).splitlines()[0],
                )
            )
    for source, base in roots(root):
        for path in sorted(base.rglob("*.yaml")) if base.is_dir() else ():
            dotted = ".".join(path.relative_to(base).with_suffix("").parts)
            try:
                check_name(dotted)
            except ConfigError as e:
                if section is None or dotted.split(".", 1)[0] == section:
                    out.append(
                        EntryInfo(name=dotted, kind="?", description="", source=source,
                                  path=str(path), error=str(e))
                    )  # fmt: skip
    return sorted(out, key=lambda e: e.name)


def _describe(obj: Any, kind: str) -> str:
    """The one-line description of an entry added without one."""
    if kind == "template":
        return str(obj.description or f"template {obj.name}")
    if kind == "rubric":
        return str(obj.name or f"rubric of {len(obj)} criteria")
    return str(obj.summary())
