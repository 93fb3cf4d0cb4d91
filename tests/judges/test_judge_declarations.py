"""Every judge kind is declared once (a frozen configuration); its catalog entry, the entry a
run keeps, ``describe()``'s options and ``with_options`` all come from that declaration.

The tests are parametrised from the registry of kinds and from each declaration's fields,
so a new kind or a new option is covered without a line here: an option declared with
:func:`jurist.judges._declare.option` carries the example value these tests use.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist import catalog
from jurist.catalog._dump import entry_of
from jurist.catalog._entries import entry_model, judge_kinds
from jurist.catalog._resolve import build_entry
from jurist.catalog._store import EntryFile
from jurist.engines._judge_entry import judge_entry_of, rebuild_judge
from jurist.errors import ConfigError
from jurist.judges._declare import Kind, codec_of, declaration_of

KINDS = judge_kinds()
OPTIONS = [(k, f) for k, kind in KINDS.items() for f in kind.config.model_fields]


def _example(kind: Kind, field: str) -> Any:
    example = declaration_of(kind.config.model_fields[field]).example
    return example() if callable(example) else example


def _judge(kind: Kind) -> Any:
    """A judge of ``kind`` with every option set to its declared example (not the default)."""
    values = {f: _example(kind, f) for f in kind.config.model_fields}
    return kind.judge.from_config(kind.config.model_validate(values))


def _rebuilt(entry: dict[str, Any], tmp_path: Path) -> Any:
    return build_entry(
        EntryFile(name="judges.t.x", path=tmp_path / "x.yaml", source="user", data=entry, lines={})
    )


def _written(kind: Kind, field: str, config: Any) -> Any:
    """How ``field`` of ``config`` is written in an entry (its codec's keys, or its value)."""
    info = kind.config.model_fields[field]
    codec = codec_of(info)
    if codec is not None:
        return codec.dump(field, getattr(config, field))
    return config.model_dump(mode="json", include={field})[field]


def test_the_registry_knows_every_judge_kind_of_the_catalog() -> None:
    assert set(KINDS) == {
        "judge",
        "pairwise_judge",
        "panel",
        "cascade",
        "rubric_judge",
        "calibrated_judge",
        "reward_model",
    }
    assert KINDS["judge"].judge is jurist.LLMJudge
    assert KINDS["cascade"].judge is jurist.trust.CascadeJudge


@pytest.mark.parametrize("name", sorted(KINDS))
def test_judge_entry_judge_is_the_identity(name: str, tmp_path: Path) -> None:
    """A judge with non-default options -> catalog entry -> built judge -> entry."""
    kind = KINDS[name]
    judge = _judge(kind)
    entry = entry_of(judge)
    assert entry["kind"] == name
    back = _rebuilt(entry, tmp_path)
    assert type(back) is type(judge)
    assert entry_of(back) == entry
    assert back.describe() == judge.describe()
    # the run keeps the same entry (scrubbed: nothing to scrub here) and rebuilds the judge
    assert judge_entry_of(judge) == entry
    again = rebuild_judge(entry, tmp_path / "run.sqlite")
    assert entry_of(again) == entry and again.describe() == judge.describe()


@pytest.mark.parametrize("name", sorted(KINDS))
def test_the_catalog_stores_and_gives_back_every_kind(name: str, tmp_path: Path) -> None:
    judge = _judge(KINDS[name])
    catalog.add(judge, "judges.declared.one", root=tmp_path, description="d")
    back = catalog.get("judges.declared.one", root=tmp_path)
    assert entry_of(back) == entry_of(judge)
    info = [e for e in catalog.list_entries(root=tmp_path) if e.name == "judges.declared.one"]
    assert [(i.kind, i.description, i.error) for i in info] == [(name, "d", None)]


@pytest.mark.parametrize(("name", "field"), OPTIONS, ids=[f"{k}.{f}" for k, f in OPTIONS])
def test_every_declared_option_round_trips(name: str, field: str, tmp_path: Path) -> None:
    """Each option, at its example value, is written to the entry and read back."""
    kind = KINDS[name]
    info = kind.config.model_fields[field]
    assert any(m is declaration_of(info) for m in info.metadata), f"{field}: not option()"
    judge = _judge(kind)
    written = _written(kind, field, judge.config)
    default = info.get_default(call_default_factory=True)
    if codec_of(info) is None:
        assert written != default, f"{name}.{field}: the example is the default"
        assert entry_of(judge)[field] == written
    back = _rebuilt(entry_of(judge), tmp_path)
    assert _written(kind, field, back.config) == written
    # with_options takes it, as the constructor does
    changed = judge.with_options(**{field: getattr(judge.config, field)})
    assert _written(kind, field, changed.config) == written


@pytest.mark.parametrize("name", sorted(KINDS))
def test_describe_writes_the_declared_options(name: str) -> None:
    """What ``describe()`` records of the options (resume compares it) is the declaration's
    ``described()``; an option left at its default and marked "changed" is not written, so
    runs made before the option existed still resume."""
    kind = KINDS[name]
    judge = _judge(kind)
    described = judge.config.described()
    got = judge.describe()
    assert {k: got[k] for k in described} == described
    plain = kind.config.model_validate(
        {f: _example(kind, f) for f, i in kind.config.model_fields.items() if i.is_required()}
    )
    for field, info in kind.config.model_fields.items():
        if declaration_of(info).describe == "changed":
            assert field not in plain.described()


def test_an_entry_schema_is_derived_from_the_declaration() -> None:
    fields = entry_model("judge").model_fields
    assert fields["min_coverage"].default == jurist.judges._weigher.DEFAULT_MIN_COVERAGE
    assert {"model", "model_options", "template", "description", "alignment"} <= set(fields)
    assert "model_options" in entry_model("rubric_judge").model_fields
    assert "alignment" not in entry_model("panel").model_fields


def test_the_catalog_names_no_judge_option() -> None:
    """catalog/ is generic: no declared option is named in its code (the object keys the
    codecs write, ``model``, ``template``, ``rubric``..., are names of kinds' objects)."""
    objects = {"name", "model", "models", "template", "rubric", "judge", "judges", "tiers"}
    options = {f for _, f in OPTIONS} - objects
    folder = Path(jurist.catalog.__file__).parent
    for path in sorted(folder.glob("*.py")):
        words = _code_words(path.read_text(encoding="utf-8"))
        assert not options & words, f"{path.name} names {sorted(options & words)}"


def _code_words(source: str) -> set[str]:
    """The names and the words of string literals in ``source``'s code (docstrings, whose
    doctests show judges' options, and comments left out)."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            words.add(node.arg)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            words |= set(re.findall(r"[a-z_]+", node.value))
    return words


def test_with_options_refuses_an_unknown_option_and_checks_values() -> None:
    judge = jurist.LLMJudge("mock:j", template="likert")
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['temprature'\]"):
        judge.with_options(temprature=0.3)
    with pytest.raises(ConfigError, match="min_coverage must be between 0 and 1, got 2"):
        judge.with_options(min_coverage=2)
    panel = jurist.Panel([judge, judge.with_options(name="b")])
    assert panel.with_options(aggregation="max").aggregation == "max"
    assert panel.aggregation == "mean"  # the judge is never changed


def test_llm_judge_keeps_its_options_once() -> None:
    judge = jurist.LLMJudge("mock:j", template="likert", temperature=0.3, scoring="auto")
    assert judge.config.temperature == 0.3 and judge.temperature == 0.3
    assert not hasattr(judge, "_options")
    assert judge.config.entry() == {
        "model": "mock:j",
        "template": "likert",
        "temperature": 0.3,
        "scoring": "auto",
    }
    # a judge given a paced stack keeps the pacing as its option
    from jurist.models import with_limits
    from jurist.models._stack import limits_layer

    paced = with_limits(jurist.get_model("mock:j"), limits_layer(rpm=12))
    assert entry_of(jurist.LLMJudge(paced))["max_calls_per_min"] == 12
    assert (
        entry_of(jurist.LLMJudge("mock:j", max_calls_per_min=12).with_models(lambda m: m))[
            "max_calls_per_min"
        ]
        == 12
    )


def test_request_settings_go_into_every_call() -> None:
    """An option declared ``request=True`` is sent with every call under its own name."""
    from jurist.models import MockModel

    kind = KINDS["judge"]
    asked = [f for f, i in kind.config.model_fields.items() if declaration_of(i).request]
    assert "temperature" in asked
    model = MockModel("j", outputs=["Correct"], cycle=True)
    values = {f: _example(kind, f) for f in asked}
    judge = jurist.LLMJudge(model, **values)
    judge.judge_one_sync({"prompt": "q", "response": "a"})
    [request] = model.requests
    assert {f: getattr(request, f) for f in asked} == values
