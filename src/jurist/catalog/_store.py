"""Where catalog entries live and how they are read and written.

Two roots are searched, in order: the **user catalog** (``root=`` when given, else
``$JURIST_CATALOG``, else ``$XDG_CONFIG_HOME/jurist/catalog``, else
``~/.config/jurist/catalog``) and the **built-in catalog** shipped inside the package.
A user entry with the name of a built-in one shadows it (``jurist catalog`` shows which
one is used). :func:`default_root` is the only place that reads the environment.

Entries are YAML files named after the entry (``judges.likert.x`` is
``judges/likert/x.yaml``); every problem in one is a :class:`~jurist.errors.ConfigError`
that names the file, the line and the key.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from jurist._files import read_utf8
from jurist.catalog._entries import all_kinds, entry_model, section_kinds
from jurist.catalog._names import check_name, name_to_relpath
from jurist.errors import ConfigError

__all__ = [
    "BUILTIN_ROOT",
    "EntryFile",
    "EntryInfo",
    "default_root",
    "find_entry",
    "iter_names",
    "read_entry",
    "validation_error",
    "write_entry",
]

BUILTIN_ROOT = Path(__file__).resolve().parent / "_builtin"


def default_root() -> Path:
    """The user catalog folder: ``$JURIST_CATALOG``, else the per-user config folder."""
    env = os.environ.get("JURIST_CATALOG")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "jurist" / "catalog"


def roots(root: str | Path | None) -> list[tuple[str, Path]]:
    """The roots searched, in order, labelled ``user`` and ``builtin``."""
    user = Path(root).expanduser() if root is not None else default_root()
    return [("user", user), ("builtin", BUILTIN_ROOT)]


@dataclass(frozen=True)
class EntryFile:
    """An entry's raw data, where it came from, and the line of each top-level key."""

    name: str
    path: Path
    source: str
    data: dict[str, Any]
    lines: dict[str, int]

    def where(self, key: str | None = None) -> str:
        """``file:line`` of ``key`` (its top-level part), or the file."""
        if key is None:
            return str(self.path)
        line = self.lines.get(key.split(".", 1)[0])
        return f"{self.path}:{line}" if line else str(self.path)


class EntryInfo(BaseModel):
    """One row of the catalog listing. ``error`` is set when the file cannot be read."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: str
    description: str
    source: str
    path: str
    shadows_builtin: bool = False
    error: str | None = None


def find_entry(name: str, root: str | Path | None = None) -> tuple[str, Path]:
    """The source label and file of entry ``name`` (first root that has it)."""
    rel = name_to_relpath(name)
    for source, base in roots(root):
        path = base / rel
        if path.is_file():
            return source, path
    known = sorted(iter_names(root))
    hint = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    extra = f" Did you mean {hint[0]!r}?" if hint else ""
    where = ", ".join(str(base) for _, base in roots(root))
    raise ConfigError(
        f"no catalog entry named {name!r} (searched {where}; `jurist catalog` lists them).{extra}"
    )


def iter_names(root: str | Path | None = None) -> dict[str, tuple[str, Path]]:
    """Every entry name -> (source, file), user entries shadowing built-in ones."""
    found: dict[str, tuple[str, Path]] = {}
    for source, base in roots(root):
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.yaml")):
            rel = path.relative_to(base).with_suffix("")
            name = ".".join(rel.parts)
            try:
                check_name(name)
            except ConfigError:
                continue  # not a valid entry name: list_entries shows it with the error
            found.setdefault(name, (source, path))
    return found


def read_entry(name: str, root: str | Path | None = None) -> EntryFile:
    """Read entry ``name``'s file; errors name the file and line."""
    source, path = find_entry(name, root)
    return read_entry_file(path, name=name, source=source)


def read_entry_file(path: Path, *, name: str, source: str) -> EntryFile:
    """Read and check the basic shape of one entry file (a mapping with a known ``kind``)."""
    import yaml

    text = read_utf8(path, what="the catalog entry")
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{at}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a catalog entry must be a mapping of keys to values")
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, _ in node.value:
            lines[str(key_node.value)] = key_node.start_mark.line + 1
    entry = EntryFile(name=name, path=path, source=source, data=data, lines=lines)
    kind = data.get("kind")
    if kind is None:
        raise ConfigError(f"{path}: kind: missing (one of {', '.join(_all_kinds())})")
    try:
        entry_model(kind)
    except ConfigError as e:
        raise ConfigError(f"{entry.where('kind')}: kind: {e}") from None
    section = name.split(".", 1)[0]
    if kind not in section_kinds(section):
        raise ConfigError(
            f"{entry.where('kind')}: kind: a {kind!r} entry cannot live under {section}. "
            f"(it holds {', '.join(section_kinds(section))})"
        )
    return entry


def _all_kinds() -> list[str]:
    return all_kinds()


def validation_error(
    entry: EntryFile, error: ValidationError, overrides: dict[str, Any] | None = None
) -> ConfigError:
    """A ConfigError naming the file, line and key of the first validation problem."""
    err = error.errors()[0]
    key = ".".join(str(x) for x in err["loc"]) or "entry"
    message = str(err["msg"])
    if err["type"] == "extra_forbidden":
        known = ", ".join(sorted(entry_model(entry.data["kind"]).model_fields))
        message = f"unknown key for a {entry.data['kind']!r} entry (known keys: {known})"
    top = key.split(".", 1)[0]
    set_by = [k for k in overrides or {} if k.split(".", 1)[0] == top]
    if set_by:
        return ConfigError(
            f"{entry.name}[{set_by[0]}=...]: {key}: {message} (an inline override of {entry.path})"
        )
    return ConfigError(f"{entry.where(key)}: {key}: {message}")


def write_entry(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as YAML to ``path`` atomically (a temporary file, then a rename)."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    text = "# a jurist catalog entry (see docs/catalog.md)\n" + yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, width=100
    )
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
