"""Where a key sits in a YAML file: a validation problem's location -> ``file:line: key``.

:func:`read_yaml` reads a file once into its data and its node tree; :func:`locate` walks
the tree along a pydantic error location (``("bars", 1, "mean_score")``) and returns the
line of the deepest node found and the dotted key (``bars[1].mean_score``); a missing key
is named with the line of the mapping that lacks it.

>>> import tempfile, pathlib
>>> f = pathlib.Path(tempfile.mkdtemp()) / "s.yaml"
>>> _ = f.write_text("version: 1\\nbars:\\n  - mean_score: 2\\n  - pass_rate: 1\\n")
>>> doc = read_yaml(f, what="the suite file")
>>> locate(doc.node, ("bars", 0, "mean_score"))
(3, 'bars[0].mean_score')
>>> locate(doc.node, ("bars", 1, "threshold"))
(4, 'bars[1].threshold')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jurist._files import read_utf8
from jurist.errors import ConfigError

__all__ = ["YamlDoc", "child", "key_lines", "locate", "read_yaml"]


@dataclass(frozen=True)
class YamlDoc:
    """A YAML file's data and node tree."""

    path: Path
    data: Any
    node: Any


def read_yaml(path: Path, *, what: str) -> YamlDoc:
    """Read ``path`` as YAML; a syntax error names the file and line."""
    import yaml

    text = read_utf8(path, what=what)
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{at}: {what} is not valid YAML: {getattr(e, 'problem', e)}") from None
    return YamlDoc(path=path, data=data, node=node)


def child(node: Any, part: str | int) -> Any:
    """The node under ``node`` at ``part`` (a mapping key or a list index), else ``None``."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if str(key.value) == str(part):
                return value
    elif (
        isinstance(node, yaml.SequenceNode)
        and isinstance(part, int)
        and 0 <= part < len(node.value)
    ):
        return node.value[part]
    return None


def _key_node(node: Any, part: str | int) -> Any:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, _ in node.value:
            if str(key.value) == str(part):
                return key
    return None


def _joined(parts: Sequence[str | int]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def locate(root: Any, loc: Sequence[str | int]) -> tuple[int | None, str]:
    """The line and the dotted key of location ``loc`` in the tree ``root``.

    Parts that name no node (a union member's name in a pydantic location) are skipped; a
    last part that a mapping lacks (a missing key) is named, at the mapping's line."""
    import yaml

    node: Any = root
    line: int | None = None
    used: list[str | int] = []
    if node is not None:
        line = node.start_mark.line + 1
    for i, part in enumerate(loc):
        under = child(node, part)
        if under is not None:
            key = _key_node(node, part)
            line = (key if key is not None else under).start_mark.line + 1
            node, used = under, [*used, part]
        elif i == len(loc) - 1 and isinstance(node, yaml.MappingNode) and isinstance(part, str):
            used.append(part)
    return line, _joined(used)


def key_lines(node: Any) -> dict[str, int]:
    """Each key of a mapping node -> its line."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in node.value}
