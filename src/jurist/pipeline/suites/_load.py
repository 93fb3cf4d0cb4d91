"""Reading a suite file: the YAML, its schema, its names, its judges and datasets.

:func:`load_suite` stops at the first problem with a :class:`~jurist.errors.ConfigError`
of one line that names the file, the line and the key (``suite.yaml:12:
bars[1].mean_score: Input should be less than or equal to 1``), before any model is
called. What it returns, a :class:`Suite`, holds the checked file, the folder its
relative paths are read from, the output folder and every judge built (building a judge
loads no weights and opens no connection: see :mod:`jurist.catalog`).

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = (root / "qa.jsonl").write_text('{"prompt": "2+2?", "response": "4"}\\n')
>>> _ = (root / "suite.yaml").write_text('''version: 1
... datasets:
...   qa: {path: qa.jsonl}
... judges:
...   strict: {kind: judge, model: "mock:j", template: true_false}
... bars:
...   - mean_score: 0.5
... ''')
>>> suite = load_suite(root / "suite.yaml")
>>> [(c.dataset, c.judge) for c in suite.cells()], suite.out.name
([('qa', 'strict')], 'suite')
>>> _ = (root / "bad.yaml").write_text(
...     "version: 1\\ndatasets:\\n  qa: {path: qa.jsonl}\\njudges:\\n  j: judges.x\\n"
...     "bars:\\n  - mean_score: 0.5\\n    judges: [k]\\n")
>>> load_suite(root / "bad.yaml")
Traceback (most recent call last):
...
jurist.errors.ConfigError: ...bad.yaml:8: bars[0].judges: no judge named 'k' in the suite ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from jurist.errors import ConfigError
from jurist.pipeline.suites._model import BAR_KEYS, DatasetSpec, GraderJudge, SuiteFile
from jurist.pipeline.suites._yaml_lines import YamlDoc, child, key_lines, locate, read_yaml

__all__ = ["Cell", "GraderLoader", "Suite", "load_suite"]

GraderLoader = Callable[[Path], Any]
"""Reads an OpenAI grader file into a judge."""

_UNION_MEMBERS = ("str", "GraderJudge", "dict[str,any]")


@dataclass
class Cell:
    """One (dataset, judge) pair of a suite: its run folder and what it judges."""

    dataset: str
    judge: str
    run_dir: Path
    spec: DatasetSpec
    judge_obj: Any
    bars: list[Any] = field(default_factory=list)


@dataclass
class Suite:
    """A checked suite file, its judges built."""

    path: Path
    doc: YamlDoc
    file: SuiteFile
    out: Path
    judges: dict[str, Any]

    @property
    def name(self) -> str:
        return self.file.name or self.path.stem

    def where(self, *loc: str | int) -> str:
        """``file:line: key`` of location ``loc`` in the suite file."""
        line, key = locate(self.doc.node, loc)
        return f"{self.path}:{line}: {key}" if line else f"{self.path}: {key}"

    def resolve(self, relative: str) -> Path:
        """A path of the suite file, read from the suite's folder."""
        return (self.path.parent / Path(relative).expanduser()).resolve()

    def cells(self) -> list[Cell]:
        """Every (dataset, judge) cell, datasets first, in the file's order."""
        out = []
        for d, spec in self.file.datasets.items():
            for j, judge in self.judges.items():
                bars = [b for b in self.file.bars if _applies(b, d, j)]
                out.append(Cell(d, j, self.out / d / j, spec, judge, bars))
        return out


def _applies(bar: Any, dataset: str, judge: str) -> bool:
    return (bar.datasets is None or dataset in bar.datasets) and (
        bar.judges is None or judge in bar.judges
    )


def load_suite(
    path: str | Path, *, out: str | Path | None = None, graders: GraderLoader | None = None
) -> Suite:
    """Read and check the suite file ``path``; ``out`` replaces its ``settings.out``;
    ``graders`` reads a ``{grader: FILE}`` judge (an OpenAI grader file) into a judge
    (without it, such a judge is refused)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such suite file")
    doc = read_yaml(path, what="the suite file")
    if not isinstance(doc.data, dict):
        raise ConfigError(f"{path}: a suite file is a mapping (version, datasets, judges, bars)")
    if doc.data.get("version") != 1:
        line, _ = locate(doc.node, ("version",))
        got = "missing" if "version" not in doc.data else f"{doc.data['version']!r}"
        raise ConfigError(
            f"{path}:{line}: version: {got}; this jurist reads suite files of version 1 "
            "(write `version: 1` first)"
        )
    try:
        file = SuiteFile.model_validate(doc.data)
    except ValidationError as e:
        raise _problem(path, doc, e) from None
    suite = Suite(path=path, doc=doc, file=file, out=Path(), judges={})
    _check_names(suite)
    _check_datasets(suite)
    settings = file.settings
    if out is not None:
        suite.out = Path(out)
    elif settings.out is not None:
        suite.out = suite.resolve(settings.out)
    else:
        suite.out = path.parent / "runs" / suite.name
    suite.judges = {n: _judge(suite, n, spec, graders) for n, spec in file.judges.items()}
    return suite


def _problem(path: Path, doc: YamlDoc, error: ValidationError) -> ConfigError:
    problems = error.errors()
    first = problems[0]
    loc = list(first["loc"])
    if len(loc) >= 3 and loc[0] == "bars" and loc[2] in BAR_KEYS:
        del loc[2]  # the bar's kind (a tag), not a key
    message = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown key"
    elif first["type"] == "string_pattern_mismatch" and "[key]" in loc:
        message = "a name is letters, digits, _ and -, and does not start with a digit"
        loc.remove("[key]")
    elif len(loc) >= 3 and loc[0] == "judges" and loc[2] in _UNION_MEMBERS:
        message = (
            "a judge is a catalog name, an inline catalog entry (a mapping with kind), or "
            "{grader: FILE}"
        )
    line, key = locate(doc.node, loc)
    where = f"{path}:{line}" if line else str(path)
    more = len({tuple(p["loc"][:2]) for p in problems}) - 1
    also = f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""
    return ConfigError(f"{where}: {key or 'suite'}: {message}{also}")


def _check_names(suite: Suite) -> None:
    for i, bar in enumerate(suite.file.bars):
        for what, known in (("datasets", suite.file.datasets), ("judges", suite.file.judges)):
            for name in getattr(bar, what) or ():
                if name not in known:
                    raise ConfigError(
                        f"{suite.where('bars', i, what)}: no {what[:-1]} named {name!r} in the "
                        f"suite ({what}: {', '.join(known)})"
                    )


def _check_datasets(suite: Suite) -> None:
    for name, spec in suite.file.datasets.items():
        if spec.path is not None and not suite.resolve(spec.path).is_file():
            raise ConfigError(
                f"{suite.where('datasets', name, 'path')}: no such file: {suite.resolve(spec.path)}"
            )


def _judge(suite: Suite, name: str, spec: Any, graders: GraderLoader | None) -> Any:
    """The judge object of entry ``name`` of the suite's ``judges``."""
    root = suite.resolve(suite.file.settings.catalog) if suite.file.settings.catalog else None
    if isinstance(spec, GraderJudge):
        return _grader(suite, name, spec, graders)
    if isinstance(spec, str):
        from jurist import catalog

        try:
            return catalog.get(spec, root=root)
        except ConfigError as e:
            raise ConfigError(f"{suite.where('judges', name)}: {e}") from None
    from jurist.catalog._resolve import build_entry
    from jurist.catalog._store import EntryFile

    data = {"kind": "judge", **spec}
    lines = key_lines(_node(suite, ("judges", name)))
    lines.setdefault("kind", locate(suite.doc.node, ("judges", name))[0] or 0)
    entry = EntryFile(name=f"judges.{name}", path=suite.path, source="suite", data=data,
                      lines=lines)  # fmt: skip
    from jurist.catalog._entries import entry_model

    try:
        entry_model(data["kind"])
    except ConfigError as e:
        raise ConfigError(f"{suite.where('judges', name, 'kind')}: {e}") from None
    try:
        return build_entry(entry, root=root)
    except ConfigError as e:
        raise ConfigError(_with_key(suite, name, str(e))) from None


def _node(suite: Suite, loc: tuple[str, ...]) -> Any:
    node = suite.doc.node
    for part in loc:
        node = child(node, part)
    return node


def _with_key(suite: Suite, name: str, message: str) -> str:
    """An inline judge's error with its key named from the suite's root (``judges.x.k``)."""
    prefix = f"{suite.path}:"
    if message.startswith(prefix):
        line, sep, rest = message[len(prefix) :].partition(": ")
        if sep and line.isdigit():
            return f"{prefix}{line}: judges.{name}.{rest}"
    return f"{suite.where('judges', name)}: {message}"


def _grader(suite: Suite, name: str, spec: GraderJudge, graders: GraderLoader | None) -> Any:
    """An OpenAI grader file as a judge, through the loader the caller gives (the command
    line gives :mod:`jurist.compat`'s, which sits above this layer)."""
    where = suite.where("judges", name, "grader")
    if graders is None:
        raise ConfigError(f"{where}: OpenAI graders are not available in this version of jurist")
    path = suite.resolve(spec.grader)
    if not path.is_file():
        raise ConfigError(f"{where}: no such file: {path}")
    try:
        return graders(path)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
