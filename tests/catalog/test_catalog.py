"""The catalog: built-in entries, add / get / list round trip, overrides, errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import jurist
from jurist import catalog
from jurist.errors import ConfigError
from jurist.judges import ItemJudge, LLMJudge, PairwiseJudge, Panel, RubricJudge
from jurist.templates import Template

DEFAULT = "judges.mt_bench.hf_qwen2_5_0_5b_instruct"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user catalog in tmp_path, also as $JURIST_CATALOG (never the real one)."""
    folder = tmp_path / "catalog"
    monkeypatch.setenv("JURIST_CATALOG", str(folder))
    return folder


def write(root: Path, name: str, text: str) -> Path:
    path = root / Path(*name.split(".")[:-1]) / (name.split(".")[-1] + ".yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


# -- built-in entries ------------------------------------------------------------------------


def test_default_judge_builds_offline_without_loading(root: Path) -> None:
    judge = catalog.get(DEFAULT)
    assert isinstance(judge, LLMJudge)
    assert judge.name == DEFAULT
    assert judge.model.spec == "hf:Qwen/Qwen2.5-0.5B-Instruct"
    assert judge.template.name == "mt_bench"
    assert (judge.temperature, judge.max_tokens) == (0.0, 512)
    assert judge.model.loaded is False  # type: ignore[attr-defined]


def test_default_judge_fails_at_first_call_with_the_backends_message(root: Path) -> None:
    judge = catalog.get(DEFAULT)
    out = judge.judge_one_sync({"prompt": "2+2?", "response": "4"})
    assert out.score is None
    assert out.error is not None and out.error.startswith("load: ")
    assert "Qwen/Qwen2.5-0.5B-Instruct" in out.error


def test_every_builtin_entry_builds(root: Path) -> None:
    entries = catalog.list_entries()
    assert len(entries) >= 10
    assert all(e.source == "builtin" and e.error is None and e.description for e in entries)
    kinds = {e.kind for e in entries}
    assert kinds == {"judge", "pairwise_judge", "panel", "rubric_judge", "template", "rubric"}
    for e in entries:
        obj = catalog.get(e.name)
        if e.kind == "template":
            assert isinstance(obj, Template)
        elif e.kind == "rubric":
            assert isinstance(obj, jurist.Rubric)
        else:
            assert isinstance(obj, ItemJudge)
    assert isinstance(catalog.get("judges.mt_bench_pair.hf_qwen2_5_0_5b_instruct"), PairwiseJudge)
    panel = catalog.get("judges.panels.qwen_likert_and_mt_bench")
    assert isinstance(panel, Panel)
    assert [j.name for j in panel.judges] == [
        "judges.likert.hf_qwen2_5_0_5b_instruct",
        DEFAULT,
    ]
    rubric_judge = catalog.get("judges.rubric.answer_quality_hf_qwen2_5_0_5b_instruct")
    assert isinstance(rubric_judge, RubricJudge)
    assert len(rubric_judge.rubric) == 4


def test_builtin_template_entry_scores_with_a_mock(root: Path) -> None:
    judge = catalog.get(
        "judges.helpful.hf_qwen2_5_0_5b_instruct",
        model=jurist.get_model("mock:j", outputs=["It answers it.\nHelpful: Yes"]),
    )
    assert judge.template.name == "helpful_yes_no"
    assert judge.judge_one_sync({"prompt": "2+2?", "response": "4"}).score == 1.0


# -- overrides -------------------------------------------------------------------------------


def test_inline_overrides(root: Path) -> None:
    judge = catalog.get(DEFAULT + "[temperature=0.2,max_tokens=64,explanations=true]")
    assert (judge.temperature, judge.max_tokens, judge.explanations) == (0.2, 64, True)
    # the stored entry is untouched
    assert catalog.get(DEFAULT).temperature == 0.0


def test_keyword_overrides_win_and_may_be_objects(root: Path) -> None:
    mock = jurist.get_model("mock:judge", outputs=["Rating: [[7]]"])
    judge = catalog.get(DEFAULT + "[temperature=0.2]", temperature=0.5, model=mock)
    assert judge.temperature == 0.5
    assert judge.model is mock
    assert judge.judge_one_sync({"prompt": "q", "response": "a"}).score == 0.7


def test_nested_override_into_model_options(root: Path) -> None:
    judge = catalog.get(
        "judges.likert.openai_gpt_4o_mini[model_options.base_url='http://127.0.0.1:9/v1',"
        "model_options.api_key=sk-zzz-secret]"
    )
    assert judge.model.identity()["base_url"] == "http://127.0.0.1:9/v1"
    assert "sk-zzz-secret" not in str(judge.describe())


def test_override_errors_name_the_override(root: Path) -> None:
    with pytest.raises(ConfigError, match=r"'temprature' is not a key of a 'judge' entry"):
        catalog.get(DEFAULT + "[temprature=0.2]")
    with pytest.raises(ConfigError) as e:
        catalog.get(DEFAULT + "[max_tokens=lots]")
    assert f"{DEFAULT}[max_tokens=...]: max_tokens:" in str(e.value)
    with pytest.raises(ConfigError, match="'template' is not a mapping"):
        catalog.get(DEFAULT + "[template.name=x]")
    with pytest.raises(ConfigError, match="has no model to replace"):
        catalog.get("rubrics.answer_quality", model=jurist.get_model("mock:x"))


# -- round trips -----------------------------------------------------------------------------


def test_add_get_list_round_trip(root: Path) -> None:
    model = jurist.get_model(
        "openai:tiny", base_url="http://127.0.0.1:8/v1", api_key="secret", json_mode="json_object"
    )
    judge = jurist.LLMJudge(model, template="likert", temperature=0.3, explanations=True)
    path = catalog.add(judge, "judges.likert.my_server", description="likert on my server")
    assert path == root / "judges" / "likert" / "my_server.yaml"
    assert "secret" not in path.read_text()
    back = catalog.get("judges.likert.my_server")
    assert back.describe() == judge.describe()
    [info] = [e for e in catalog.list_entries() if e.name == "judges.likert.my_server"]
    assert (info.kind, info.source, info.description) == ("judge", "user", "likert on my server")
    assert catalog.load_entry("judges.likert.my_server")["model_options"] == {
        "base_url": "http://127.0.0.1:8/v1",
        "json_mode": "json_object",
    }
    assert back.model.capabilities == model.capabilities


def test_overwrite_is_refused_unless_asked(root: Path) -> None:
    judge = jurist.LLMJudge("mock:a", template="likert")
    catalog.add(judge, "judges.likert.mine")
    other = jurist.LLMJudge("mock:b", template="true_false")
    with pytest.raises(ConfigError, match=r"already exists at .*overwrite=True"):
        catalog.add(other, "judges.likert.mine")
    assert catalog.get("judges.likert.mine").template.name == "likert"
    catalog.add(other, "judges.likert.mine", overwrite=True)
    assert catalog.get("judges.likert.mine").template.name == "true_false"
    # a built-in name is taken too; overwriting it shadows the built-in entry
    with pytest.raises(ConfigError, match="already exists"):
        catalog.add(other, DEFAULT)
    catalog.add(other, DEFAULT, overwrite=True)
    [info] = [e for e in catalog.list_entries() if e.name == DEFAULT]
    assert info.source == "user" and info.shadows_builtin
    assert catalog.get(DEFAULT).template.name == "true_false"
    catalog.remove(DEFAULT)
    assert catalog.get(DEFAULT).template.name == "mt_bench"
    with pytest.raises(ConfigError, match="no user catalog entry"):
        catalog.remove(DEFAULT)


def test_template_and_rubric_round_trip(root: Path) -> None:
    tpl = jurist.get_template("likert").model_copy(
        update={"name": "strict_likert", "instructions": "Grade very strictly, 1 to 5."}
    )
    catalog.add(tpl, "templates.strict_likert")
    assert catalog.get("templates.strict_likert") == tpl
    rubric = jurist.Rubric.from_dict(
        [{"name": "polite", "requirement": "Is polite"}, {"name": "short", "requirement": "Short"}]
    )
    catalog.add(rubric, "rubrics.tiny")
    assert catalog.get("rubrics.tiny").to_dict() == rubric.to_dict()
    # a judge with a changed template stores it inline and gets it back
    judge = jurist.LLMJudge("mock:j", template=tpl)
    catalog.add(judge, "judges.strict.mock")
    assert isinstance(catalog.load_entry("judges.strict.mock")["template"], dict)
    assert catalog.get("judges.strict.mock").template == tpl


def test_pairwise_and_panel_round_trip(root: Path) -> None:
    pair = jurist.PairwiseJudge("mock:p", template="mt_bench_pair", consistency="inconsistent")
    catalog.add(pair, "judges.pair.mock")
    back = catalog.get("judges.pair.mock")
    assert isinstance(back, PairwiseJudge)
    assert back.describe() == pair.describe()
    panel = jurist.Panel(
        [jurist.LLMJudge("mock:a", template="likert", name="a"), pair],
        aggregation="weighted",
        weights=[2.0, 1.0],
    )
    catalog.add(panel, "judges.panel.mock")
    got = catalog.get("judges.panel.mock")
    assert isinstance(got, Panel)
    assert got.describe() == panel.describe()


def test_rubric_judge_round_trip(root: Path) -> None:
    rubric = jurist.Rubric.from_dict([{"name": "ok", "requirement": "Answers the question"}])
    grader = jurist.CriterionGrader(judges=[jurist.get_model("mock:j")], seed=3)
    judge = grader.for_rubric(rubric, submission_field="answer", query_field="question")
    catalog.add(judge, "judges.rubric.mine")
    back = catalog.get("judges.rubric.mine")
    assert isinstance(back, RubricJudge)
    assert back.describe() == judge.describe()
    assert back.required_fields == ("answer",)


def test_add_checks_the_section(root: Path) -> None:
    with pytest.raises(ConfigError, match="a template is stored under templates"):
        catalog.add(jurist.get_template("likert"), "judges.likert_template")
    with pytest.raises(ConfigError, match="cannot store a str"):
        catalog.add("likert", "templates.x")


def test_catalog_names_inside_entries_and_loops(root: Path) -> None:
    write(
        root,
        "judges.mine.panel",
        """
        kind: panel
        description: two judges
        judges:
          - judges.likert.hf_qwen2_5_0_5b_instruct[temperature=0.4]
          - {model: "mock:x", template: true_false, name: inline}
        aggregation: max
        """,
    )
    panel = catalog.get("judges.mine.panel")
    assert [j.name for j in panel.judges] == ["judges.likert.hf_qwen2_5_0_5b_instruct", "inline"]
    assert panel.judges[0].temperature == 0.4
    write(root, "judges.loop.a", "kind: panel\njudges: [judges.loop.b]\n")
    write(root, "judges.loop.b", "kind: panel\njudges: [judges.loop.a]\n")
    with pytest.raises(ConfigError, match=r"in a loop: judges\.loop\.a -> judges\.loop\.b"):
        catalog.get("judges.loop.a")


# -- where the user catalog is ---------------------------------------------------------------


def test_root_argument_env_and_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JURIST_CATALOG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert catalog.default_root() == tmp_path / "xdg" / "jurist" / "catalog"
    monkeypatch.setenv("JURIST_CATALOG", str(tmp_path / "env"))
    assert catalog.default_root() == tmp_path / "env"
    judge = jurist.LLMJudge("mock:a", template="likert")
    assert catalog.add(judge, "judges.a.b", root=tmp_path / "arg").is_relative_to(tmp_path / "arg")
    assert catalog.add(judge, "judges.a.b").is_relative_to(tmp_path / "env")
    assert not (tmp_path / "xdg").exists()


def test_unknown_name_suggests(root: Path) -> None:
    with pytest.raises(ConfigError, match=r"Did you mean 'judges.likert.hf_qwen2_5_0_5b_instruct'"):
        catalog.get("judges.likert.hf_qwen2_5_05b_instruct")


# -- malformed entries name the file, line and key -------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "message", "listed"),
    [
        ("kind: judge\nmodel: mock:x\ntemprature: 0.1\n", 3, "temprature: unknown key", True),
        ("kind: judge\nmodel: mock:x\n\nmax_tokens: many\n", 4, "max_tokens: Input", True),
        ("kind: judge\ntemplate: likret\n", 2, "template: unknown template 'likret'", False),
        ("kind: juge\nmodel: mock:x\n", 1, "kind: kind 'juge' is not one of", True),
        ("kind: rubric\nrubric: []\n", 1, "a 'rubric' entry cannot live under judges", True),
        ("kind: judge\n- model\n", 2, "not valid YAML", True),
        ("description: x\nscoring: auto\nkind: judge\nscoring2: 1\n", 4, "scoring2", True),
    ],
)
def test_malformed_entry_names_file_line_and_key(
    root: Path, text: str, line: int, message: str, listed: bool
) -> None:
    path = write(root, "judges.bad.entry", text)
    with pytest.raises(ConfigError) as e:
        catalog.get("judges.bad.entry")
    assert f"{path}:{line}" in str(e.value)
    assert message in str(e.value)
    # the listing shows the problems it can see without building (never skips the file)
    [info] = [x for x in catalog.list_entries() if x.name == "judges.bad.entry"]
    assert (info.error is not None) == listed


def test_badly_named_files_are_listed_not_hidden(root: Path) -> None:
    (root / "judges").mkdir(parents=True)
    (root / "judges" / "My-Judge.yaml").write_text("kind: judge\n")
    [info] = [e for e in catalog.list_entries() if e.source == "user"]
    assert info.name == "judges.My-Judge" and info.error is not None
    assert "two or more dotted parts" in info.error


def test_missing_kind_and_inline_template_errors(root: Path) -> None:
    path = write(root, "judges.bad.nokind", "model: mock:x\n")
    with pytest.raises(ConfigError, match=f"{path}: kind: missing"):
        catalog.get("judges.bad.nokind")
    path = write(
        root,
        "judges.bad.tpl",
        """
        kind: judge
        model: mock:x
        template:
          messages: [{role: user, content: "{response}"}]
          fields: [response]
          scale: {labels: {"Yes": 1.0}}
        """,
    )
    with pytest.raises(ConfigError) as e:
        catalog.get("judges.bad.tpl")
    assert f"{path}:3: template" in str(e.value)
    assert "scale" in str(e.value)


def test_conversation_turn_and_tool_chars_round_trip(root: Path) -> None:
    """A judge's turn and max_tool_chars survive add/get, for every judge kind that has them,
    and a registered template stays stored by its name."""
    judge = jurist.LLMJudge("mock:j", template="likert", turn=0, max_tool_chars=50)
    catalog.add(judge, "judges.turn.single")
    entry = catalog.load_entry("judges.turn.single")
    assert (entry["template"], entry["turn"], entry["max_tool_chars"]) == ("likert", 0, 50)
    back = catalog.get("judges.turn.single")
    assert (back.template.turn, back.template.max_tool_chars) == (0, 50)
    assert back.describe() == judge.describe()

    pair = jurist.PairwiseJudge("mock:p", turn="all", max_tool_chars=None)
    catalog.add(pair, "judges.turn.pair")
    entry = catalog.load_entry("judges.turn.pair")
    assert (entry["template"], entry["turn"], entry["max_tool_chars"]) == (
        "mt_bench_pair",
        "all",
        None,
    )
    got = catalog.get("judges.turn.pair")
    assert (got.template.turn, got.template.max_tool_chars) == ("all", None)
    assert got.describe() == pair.describe()

    rubric = jurist.Rubric.from_dict([{"name": "ok", "requirement": "Answers the question"}])
    grader = jurist.CriterionGrader(judges=[jurist.get_model("mock:j")], turn=-2, max_tool_chars=9)
    catalog.add(grader.for_rubric(rubric), "judges.turn.rubric")
    graded = catalog.get("judges.turn.rubric")
    assert (graded.grader.turn, graded.grader.max_tool_chars) == (-2, 9)
    # the defaults are not written
    catalog.add(jurist.LLMJudge("mock:j", template="likert"), "judges.turn.plain")
    assert "turn" not in catalog.load_entry("judges.turn.plain")
