"""Options written inside a model spec: ``provider:name[key=value,...]``.

A spec may carry backend options in square brackets, read with the catalog's inline
grammar (:mod:`jurist._inline`): ``openai:gpt-4o-mini[api_key=sk-...,timeout=30]``,
``vllm:/models/qwen[max_model_len=8192]``. A dotted key fills a mapping option:
``openai:j[headers.Authorization='Bearer ...']``. Brackets that hold no ``=`` are part of
the name (``mock:a[/]``); brackets that do are read as options, strictly (a mistake is a
:class:`~jurist.errors.ConfigError` that shows no value).

The options are split off here, before a backend exists: the model's name is the part
before ``[``, so no option, and no key among them, is ever part of the model's spec, name,
identity, cache entries or any text that shows the model. Every secret-looking option is
given to :func:`~jurist._secrets.remember_secret` at once, so a message that quotes the
spec as the user wrote it shows ``***``.

>>> split_spec_options("stub[api_key=sk-abc-0123456789abcdef, timeout=30]")
('stub', {'api_key': 'sk-abc-0123456789abcdef', 'timeout': 30})
>>> split_spec_options("Qwen/Qwen2.5-0.5B-Instruct"), split_spec_options("a[/]")
(('Qwen/Qwen2.5-0.5B-Instruct', {}), ('a[/]', {}))
>>> split_spec_options("j[headers.Authorization='Bearer tok-0123456789']")
('j', {'headers': {'Authorization': 'Bearer tok-0123456789'}})
>>> split_spec_options("j[api_key=sk-abc-0123456789abcdef", spec="openai:j[...")
Traceback (most recent call last):
...
jurist.errors.ConfigError: model spec 'openai:j[...': the options are not closed with ']'
"""

from __future__ import annotations

from typing import Any

from jurist._inline import parse_overrides
from jurist._secrets import remember_secrets_in, scrub
from jurist.errors import ConfigError

__all__ = ["merge_options", "split_spec_options"]


def split_spec_options(name: str, *, spec: str | None = None) -> tuple[str, dict[str, Any]]:
    """``name[key=value,...]`` -> the name and its options (``{}`` without brackets).

    ``spec`` is the whole spec, quoted (scrubbed) in errors.
    """
    shown = scrub(spec if spec is not None else name)
    head, bracket, rest = name.partition("[")
    if not bracket or "=" not in rest:  # no options: brackets, if any, are the name's
        return name, {}
    if not rest.rstrip().endswith("]"):
        raise ConfigError(f"model spec {shown!r}: the options are not closed with ']'")
    if not head.strip():
        raise ConfigError(f"model spec {shown!r}: no model name before '['")
    flat = parse_overrides(rest.rstrip()[:-1], context=spec or name, what="model spec")
    options: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, last = key.split(".")
        target = options
        for part in parents:
            inner = target.setdefault(part, {})
            if not isinstance(inner, dict):
                raise ConfigError(f"model spec {shown!r}: {part!r} is set and also has options")
            target = inner
        if isinstance(target.get(last), dict):
            raise ConfigError(f"model spec {shown!r}: {key!r} is set and also has options")
        target[last] = value
    remember_secrets_in(options)
    return head.strip(), options


def merge_options(
    spec_options: dict[str, Any], options: dict[str, Any], *, spec: str
) -> dict[str, Any]:
    """The spec's options with the keyword ones; an option given both ways is refused
    (its value is never shown)."""
    both = sorted(set(spec_options) & set(options))
    if both:
        raise ConfigError(
            f"model spec {scrub(spec)!r} sets {', '.join(both)}, and so do the options "
            "given with it; give each once"
        )
    return {**spec_options, **options}
