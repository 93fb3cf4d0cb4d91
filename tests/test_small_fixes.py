"""Small items: ``jurist --version``, the uqlm page's script, swapped grader arguments."""

from __future__ import annotations

import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import jurist
from jurist.cli import EXIT_OK, main
from jurist.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_version_flag_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    from jurist._version import __version__

    assert main(["--version"]) == EXIT_OK
    assert capsys.readouterr().out.strip() == f"jurist {__version__}"


def test_python_m_jurist_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jurist", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("jurist ")


def _script_blocks(page: Path) -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    return [b for b in blocks if ">>>" not in b]


def test_uqlm_page_example_runs_as_a_script(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_chat = pytest.importorskip("langchain_core.language_models.fake_chat_models")

    def chat_openai(model: str, temperature: float) -> object:
        # a real LangChain chat model that answers without a network
        return fake_chat.FakeListChatModel(responses=["5", "1"])

    stand_in = types.ModuleType("langchain_openai")
    stand_in.ChatOpenAI = chat_openai  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "langchain_openai", stand_in)
    # the page's script (the UQEnsemble snippet after it needs a server: its test is
    # tests/compat/test_compat_uqlm_native.py::test_uqensemble_scores_with_the_drop_in)
    (block,) = [
        b
        for b in _script_blocks(ROOT / "docs" / "uqlm.md")
        if "__main__" in b or "asyncio.run(main())" in b
    ]
    assert "await" in block and "asyncio.run(main())" in block
    code = compile(block, "docs/uqlm.md", "exec")  # a script: no top-level await
    exec(code, {"__name__": "__main__"})
    assert capsys.readouterr().out.strip() == "[1.0, 0.0]"


def test_readme_names_what_llama_cpp_python_needs_and_the_tiny_model_scoring() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "build-essential cmake" in readme
    assert re.search(r"jurist\.testing\.tiny_model .*--scoring logprobs", readme)


def test_swapped_grade_arguments_name_the_order() -> None:
    rubric = jurist.Rubric.from_dict({"criteria": [{"name": "c", "requirement": "Is right"}]})
    model = jurist.get_model("mock:j", outputs=['{"c1": {"verdict": "MET"}}'], cycle=True)
    grader = jurist.CriterionGrader(judges=[model])
    with pytest.raises(ConfigError, match=r"takes the rubric first.*swap the two arguments"):
        grader.grade_sync("The answer is 4.", rubric)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"grade_many.*rubric first"):
        grader.grade_many_sync(["4"], rubric)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must be a Rubric"):
        grader.grade_sync("just text", "more text")  # type: ignore[arg-type]
    assert grader.grade_sync(rubric, "The answer is 4.").ok
