"""Engines as strategies: ``jurist.evaluate(data, judge, options, engine=...)``.

Each engine object's checks run before any run folder is made; an engine is one object
(the ``ray=`` / ``batch_api=`` keywords of 0.x versions are gone); the keywords and one
:class:`RunOptions` give the same run; the CLI builds one RunOptions and
one engine from its flags and forwards them whole."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import jurist
import jurist.cli._run as cli_run
from jurist.cli import main
from jurist.engines import (
    BatchAPIEngine,
    BatchAPIOptions,
    Engine,
    LocalEngine,
    RayEngine,
    RayOptions,
    RunOptions,
    aevaluate,
)
from jurist.engines._engines import choose_engine
from jurist.errors import ConfigError
from jurist.judges import LLMJudge
from jurist.types import Usage

ITEMS = [{"prompt": "2+2?", "response": "4"}, {"prompt": "2+3?", "response": "6"}]


def mock_judge() -> LLMJudge:
    return LLMJudge(jurist.get_model("mock:judge", outputs=["Correct", "Incorrect"]))


class LengthJudge:
    """A judge of its own (no catalog entry, no models): runs locally, not on Ray."""

    name = "length"
    required_fields = ("response",)

    def describe(self) -> dict[str, Any]:
        return {"kind": "length"}

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> Any:
        from jurist.types import Judgment

        return Judgment(score=float(len(item["response"])), usage=Usage())


@pytest.mark.parametrize(
    ("engine", "judge", "options", "message"),
    [
        (LocalEngine(), mock_judge, {"concurrency": 0}, "concurrency must be at least 1"),
        (LocalEngine(), mock_judge, {"retries": -1}, "retries must be >= 0"),
        (RayEngine(actors=2), LengthJudge, {}, "cannot judge with this LengthJudge on Ray"),
        (
            BatchAPIEngine(poll_interval=1),
            mock_judge,
            {},
            "the batch-API engine sends the requests of models whose provider has a batch API",
        ),
    ],
    ids=["local-concurrency", "local-retries", "ray-judge", "batch-model"],
)
def test_each_engines_checks_run_before_any_folder(
    engine: Engine, judge: Any, options: dict[str, Any], message: str, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    with pytest.raises(ConfigError, match=message):
        jurist.evaluate(ITEMS, judge(), engine=engine, run_dir=folder, **options)
    assert not folder.exists()


def test_engine_options_are_checked_when_the_engine_is_made() -> None:
    with pytest.raises(ConfigError, match="actors"):
        RayEngine(actors=0)
    with pytest.raises(ConfigError, match="poll_interval"):
        BatchAPIEngine(poll_interval=0)
    with pytest.raises(ConfigError, match="not both"):
        RayEngine(RayOptions(), actors=2)


def test_run_options_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match=r"run options: concurrency: concurrency must be"):
        RunOptions(concurrency=0)
    with pytest.raises(ConfigError, match=r"run options: colour: Extra inputs"):
        RunOptions(colour="red")


def test_the_engine_is_one_object_and_the_old_keywords_are_gone(tmp_path: Path) -> None:
    assert choose_engine(None) == LocalEngine()
    folder = tmp_path / "run"
    # the engine options alone are not an engine
    for options in (RayOptions(), BatchAPIOptions()):
        named = type(options).__name__
        with pytest.raises(ConfigError, match=rf"engine= takes an engine .* not {named}"):
            jurist.evaluate(ITEMS, mock_judge(), run_dir=folder, engine=options)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"engine= takes an engine .* not str"):
        jurist.evaluate(ITEMS, mock_judge(), run_dir=folder, engine="ray")  # type: ignore[arg-type]
    # ray= / batch_api= of 0.x versions: Python's own TypeError, before any folder
    for call in (jurist.evaluate, aevaluate):
        for keyword, value in (("ray", RayOptions()), ("batch_api", BatchAPIOptions())):
            with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'"):
                call(ITEMS, mock_judge(), run_dir=folder, **{keyword: value})
    assert not folder.exists()


def test_options_object_and_keywords_give_the_same_run(tmp_path: Path) -> None:
    by_keywords = jurist.evaluate(
        ITEMS, mock_judge(), run_dir=tmp_path / "a", retries=1, concurrency=1
    )
    options = RunOptions(run_dir=tmp_path / "b", retries=1, concurrency=1)
    by_object = jurist.evaluate(ITEMS, mock_judge(), options, engine=LocalEngine())
    # a keyword overrides the object's field of that name
    overridden = jurist.evaluate(ITEMS, mock_judge(), options, run_dir=tmp_path / "c")
    for run in (by_keywords, by_object, overridden):
        assert [r["judge_score"] for r in run.records()] == [1.0, 0.0]
        assert run.manifest.options == {"fields": {}, "retries": 1}
        assert run.manifest.settings["engine"] == "local"
        assert run.manifest.settings["concurrency"] == 1
    assert overridden.run_dir == tmp_path / "c"
    assert by_object.run_dir == tmp_path / "b"


def test_cli_judge_forwards_one_options_object_and_one_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flags of `jurist judge` become one RunOptions and one engine, forwarded whole
    to the real evaluate (recorded on the way through)."""
    data = tmp_path / "d.jsonl"
    data.write_text(
        "\n".join(json.dumps({"q": q, "a": a}) for q, a in (("2+2?", "4"), ("2+3?", "5"))) + "\n"
    )
    seen: list[tuple[Any, ...]] = []

    async def through(
        data: Any, judge: Any, options: RunOptions, *, engine: Engine, **more: Any
    ) -> Any:
        assert set(more) == {"announce"}  # the two objects, and the CLI's spinner
        seen.append((options, engine))
        return await aevaluate(data, judge, options, engine=engine, **more)

    monkeypatch.setattr(cli_run, "aevaluate", through)
    out = tmp_path / "out"
    code = main(
        [
            "judge",
            str(data),
            "--model",
            "mock:judge",
            "--prompt-field",
            "q",
            "--response-field",
            "a",
            "--field",
            "reference=a",
            "--retries",
            "3",
            "--no-resume",
            "--no-retry-failed",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    capsys.readouterr()
    assert code in (0, 1)
    assert seen == [
        (
            RunOptions(
                run_dir=out,
                resume=False,
                retry_failed=False,
                overwrite=False,
                fields={"prompt": "q", "response": "a", "reference": "a"},
                retries=3,
                progress=False,
            ),
            LocalEngine(),
        )
    ]
    assert jurist.Run(out).manifest.options["retries"] == 3


def test_cli_compare_forwards_one_options_object_and_one_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "2+2?", "response": "4"}) + "\n")
    seen: list[tuple[Any, ...]] = []

    async def through(
        data: Any, judge: Any, options: RunOptions, *, engine: Engine, **more: Any
    ) -> Any:
        assert set(more) == {"announce"}
        seen.append((options, engine))
        return await aevaluate(data, judge, options, engine=engine, **more)

    monkeypatch.setattr(cli_run, "aevaluate", through)
    out = tmp_path / "cmp"
    args = ["compare", str(data), str(data), "--model", "mock:judge", "--retries", "0"]
    code = main([*args, "--overwrite", "--no-progress", "--out", str(out)])
    capsys.readouterr()
    assert code in (0, 1)
    # pairs.jsonl names the answer files' images by real path: their folder is allowed
    expected = RunOptions(
        run_dir=out, overwrite=True, retries=0, progress=False, files_root=tmp_path
    )
    assert seen == [(expected, LocalEngine())]
