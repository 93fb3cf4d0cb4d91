"""Judge setups for a bench: any judge, named, from an object or a short spec.

A setup is any :class:`~jurist.judges.ItemJudge` (an LLM judge, a panel, a cascade, a
rubric judge, a judge kind registered later) under a name. For pairwise data the judge
scores one order at a time (its score is the preference for the response shown first):
the bench asks both orders itself, so a :class:`~jurist.PairwiseJudge` given with
``swap=True`` is run with ``swap=False`` (its two orders are the bench's two items).

A spec string (the command line's ``--setup``), optionally ``NAME=SPEC``:

- ``recorded:JUDGE@TEMPLATE``: the ``recorded`` column's outputs of ``JUDGE``, read with
  ``TEMPLATE`` (default ``mt_bench_pair`` for pairs, ``true_false_uncertain`` otherwise);
- ``scores:MODEL`` (``scores:MODEL[temperature=2]``): the ``scores`` column's rewards;
- ``judges.…`` (any catalog name, overrides allowed): that catalog judge;
- ``PROVIDER:MODEL@TEMPLATE[key=value,...]``: an LLM judge of that model with that
  template and those options (``[temperature=0,max_tokens=256]``), written as a catalog
  name's overrides are.

>>> s = setup_of("rm=scores:Skywork", "pairwise")
>>> s.name, s.judge.name
('rm', 'scores:Skywork')
>>> setup_of("recorded:gpt-4@arena_hard", "pairwise").judge.template.name
'arena_hard'
>>> setup_of("mock:j@mt_bench_pair[max_tokens=64]", "pairwise").judge.config.max_tokens
64
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jurist.benchmark._data import DataKind
from jurist.benchmark._replay import RecordedJudge, ScoresJudge
from jurist.errors import ConfigError
from jurist.judges._protocol import ItemJudge

__all__ = ["Setup", "setup_of", "setups_of"]

_NAME = re.compile(r"^([A-Za-z0-9_.\-]+)=(.+)$")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DEFAULT_TEMPLATE: dict[DataKind, str] = {
    "pairwise": "mt_bench_pair",
    "pointwise": "true_false_uncertain",
}


@dataclass(frozen=True)
class Setup:
    """A named judge setup: ``name`` (shown and keyed on), ``judge`` (for the data kind
    it was built for), ``spec`` (its spec string, when it came from one)."""

    name: str
    judge: ItemJudge
    spec: str | None = None

    @property
    def folder(self) -> str:
        """A folder name for this setup's runs (its name made safe, plus a short hash
        when that changed it, so two names never share a folder)."""
        safe = _SAFE.sub("_", self.name).strip("._") or "setup"
        if safe == self.name:
            return safe
        return f"{safe}-{hashlib.sha256(self.name.encode()).hexdigest()[:8]}"


def _single_order(judge: ItemJudge) -> ItemJudge:
    from jurist.judges import PairwiseJudge

    if isinstance(judge, PairwiseJudge) and judge.swap:
        return judge.with_options(swap=False)
    return judge


def _options(spec: str) -> tuple[str, dict[str, Any]]:
    """``SPEC[key=value,...]`` split as a catalog name's overrides are."""
    if not spec.endswith("]") or "[" not in spec:
        return spec, {}
    from jurist.catalog._names import parse_overrides

    head, _, rest = spec.partition("[")
    return head, dict(parse_overrides(rest[:-1], context=spec))


def _from_spec(spec: str, kind: DataKind) -> ItemJudge:
    if spec.startswith("judges."):
        from jurist import catalog

        found = catalog.get(spec)
        if not isinstance(found, ItemJudge):
            raise ConfigError(f"setup {spec!r} is a {type(found).__name__}, not a judge")
        return found
    spec, options = _options(spec)
    if spec.startswith("recorded:"):
        name, _, template = spec[len("recorded:") :].partition("@")
        _no_options(spec, options)
        return RecordedJudge(name, template=template or _DEFAULT_TEMPLATE[kind])
    if spec.startswith("scores:"):
        unknown = sorted(set(options) - {"temperature"})
        if unknown:
            raise ConfigError(f"setup {spec!r}: a scores replay takes temperature, not {unknown}")
        return ScoresJudge(spec[len("scores:") :], **options)
    model, at, template = spec.rpartition("@")
    if at and ":" in model:
        from jurist.judges import LLMJudge

        return LLMJudge(model, template=template, **options)
    raise ConfigError(
        f"setup {spec!r} is none of recorded:JUDGE@TEMPLATE, scores:MODEL, a catalog "
        "name (judges.…) or PROVIDER:MODEL@TEMPLATE"
    )


def _no_options(spec: str, options: dict[str, Any]) -> None:
    if options:
        raise ConfigError(f"setup {spec!r}: a recorded replay takes no options ({sorted(options)})")


def setup_of(given: Any, kind: DataKind, name: str | None = None) -> Setup:
    """One setup from a judge object or a spec string (see the module doc)."""
    spec: str | None = None
    if isinstance(given, Setup):
        return Setup(given.name, _single_order(given.judge), given.spec)
    if isinstance(given, str):
        spec = given
        named = _NAME.match(given)
        if named:  # a name holds no ':' nor '[' (a spec or an override before '=' does)
            name, spec = named.group(1), named.group(2)
        judge = _from_spec(spec, kind)
    elif isinstance(given, ItemJudge):
        judge = given
    else:
        raise ConfigError(f"setup {given!r} is a {type(given).__name__}, not a judge or a spec")
    fields = set(judge.required_fields)
    pairwise = {"response_a", "response_b"} <= fields
    replay = isinstance(judge, RecordedJudge | ScoresJudge)
    if not replay and pairwise != (kind == "pairwise"):
        want = "a pairwise judge (response_a, response_b)" if kind == "pairwise" else "a judge"
        raise ConfigError(
            f"setup {name or judge.name!r} judges fields {sorted(fields)}; {kind} data needs {want}"
        )
    return Setup(name or judge.name, _single_order(judge), spec)


def setups_of(given: Any, kind: DataKind) -> list[Setup]:
    """Setups from a mapping (name -> judge or spec) or a sequence; names must differ."""
    if isinstance(given, Mapping):
        out = [setup_of(v, kind, name=str(k)) for k, v in given.items()]
    elif isinstance(given, str | Setup | ItemJudge):
        out = [setup_of(given, kind)]
    else:
        out = [setup_of(v, kind) for v in given]
    if not out:
        raise ConfigError("a bench needs at least one judge setup")
    names = [s.name for s in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"setup names repeat: {twice}; name them (NAME=SPEC)")
    return out
