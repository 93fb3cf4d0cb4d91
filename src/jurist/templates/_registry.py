"""The template registry: built-in and registered templates by name, YAML files by path.

``get_template`` takes a registered name or the path of a YAML template file (a name
ending in ``.yaml`` / ``.yml``, or an existing file), so ``jurist judge --template
my.yaml`` works like a built-in name.

>>> get_template("likert").name
'likert'
>>> get_template("likret")
Traceback (most recent call last):
...
jurist.errors.ConfigError: unknown template 'likret'; ... Did you mean 'likert'?
"""

from __future__ import annotations

import difflib
from pathlib import Path

from jurist.errors import ConfigError
from jurist.templates._template import Template

__all__ = ["get_template", "list_templates", "register_template"]

_TEMPLATES: dict[str, Template] = {}


def register_template(template: Template, *, overwrite: bool = False) -> Template:
    """Add a template to the registry under its name; returns it.

    A name already taken is an error unless ``overwrite=True``.
    """
    if template.name in _TEMPLATES and not overwrite:
        raise ConfigError(f"a template named {template.name!r} is already registered")
    _TEMPLATES[template.name] = template
    return template


def get_template(name: str | Path) -> Template:
    """The registered template called ``name``, or the YAML template file at that path.

    Unknown names list the known ones and suggest the closest.
    """
    key = str(name)
    hit = _TEMPLATES.get(key)
    if hit is not None:
        return hit
    if isinstance(name, Path) or key.lower().endswith((".yaml", ".yml")) or Path(key).is_file():
        from jurist.templates._yaml import load_template

        return load_template(key)
    hint = difflib.get_close_matches(key, list(_TEMPLATES), n=1)
    extra = f" Did you mean {hint[0]!r}?" if hint else ""
    raise ConfigError(
        f"unknown template {key!r}; known templates: {', '.join(sorted(_TEMPLATES))}.{extra}"
    )


def list_templates() -> dict[str, Template]:
    """Every registered template by name."""
    return dict(_TEMPLATES)
