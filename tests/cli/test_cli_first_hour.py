"""A newcomer's first hour (issue 21): a report after every run, ``eval-model`` as a run
folder, one item numbering, resume refused before any model loads, ``--judge`` and
``--criteria`` on the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jurist.cli import EXIT_OK, main
from tests._cli_run import write


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, " ".join(out.split()), " ".join(err.split())


ROWS = [{"prompt": f"What is {i}+{i}?", "response": str(2 * i)} for i in range(3)]


@pytest.mark.parametrize("out_name", ["folder", "file.jsonl"])
def test_judge_writes_report_beside_the_results_and_prints_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], out_name: str
) -> None:
    data = write(tmp_path / "d.jsonl", ROWS)
    out = tmp_path / "out" / out_name
    args = ["judge", str(data), "--model", "mock:j", "--no-progress", "--out", str(out)]
    code, said, _ = run(args, capsys)
    assert code == EXIT_OK
    report = out / "report.html" if out_name == "folder" else out.with_name("file.report.html")
    assert report.is_file() and "<html" in report.read_text()
    assert f"report: {report}" in said


def test_compare_and_grade_write_their_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write(tmp_path / "a.jsonl", ROWS)
    b = write(tmp_path / "b.jsonl", [{**r, "response": "no idea"} for r in ROWS])
    out = tmp_path / "cmp"
    code, said, _ = run(
        ["compare", str(a), str(b), "--model", "mock:j", "--no-progress", "--out", str(out)],
        capsys,
    )
    assert code in (0, 1) and (out / "report.html").is_file()
    assert f"report: {out / 'report.html'}" in said
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("criteria:\n  - name: right\n    requirement: The answer is right\n")
    code, said, _ = run(
        [
            "grade",
            str(a),
            "--rubric",
            str(rubric),
            "--model",
            "mock:j",
            "--no-progress",
            "--out",
            str(tmp_path / "g"),
        ],
        capsys,
    )
    assert (tmp_path / "g" / "report.html").is_file(), said
    assert re.search(r"report: \S+report\.html", said)


def test_a_foreign_report_file_beside_a_jsonl_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write(tmp_path / "d.jsonl", ROWS)
    (tmp_path / "o.report.html").write_text("mine")
    code, _, err = run(
        ["judge", str(data), "--model", "mock:j", "--out", str(tmp_path / "o.jsonl")], capsys
    )
    assert code == 2 and "o.report.html" in err
    assert (tmp_path / "o.report.html").read_text() == "mine"


def _json(path: Path) -> dict[str, object]:
    value: dict[str, object] = json.loads(path.read_text())
    return value


def _catalog_judge(root: Path, name: str, outputs: list[str], template: str = "likert") -> None:
    path = root / Path(*name.split(".")[:-1]) / f"{name.split('.')[-1]}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"kind: judge\nmodel: 'mock:judge'\nmodel_options: {{outputs: {json.dumps(outputs)}, "
        f"cycle: true}}\ntemplate: {template}\n"
    )


def test_eval_model_writes_a_run_folder_that_report_agreement_and_resume_accept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JURIST_CATALOG", str(tmp_path / "catalog"))
    _catalog_judge(tmp_path / "catalog", "judges.mine.lk", ["Score: 4", "Score: 2"])
    rows = [{"question": f"q{i}", "stars": 4 if i % 2 == 0 else 2} for i in range(4)]
    data = write(tmp_path / "qa.jsonl", rows)
    out = tmp_path / "em"
    base = ["eval-model", str(data), "--model", "mock:model", "--judge", "judges.mine.lk"]
    base += ["--prompt-field", "question", "--no-progress", "--out", str(out)]
    code, said, _ = run(base, capsys)
    assert code == EXIT_OK, said
    assert {"manifest.json", "run.sqlite", "results.jsonl", "summary.json", "report.html"} <= {
        p.name for p in out.iterdir()
    }
    assert f"report: {out / 'report.html'}" in said
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["score"] for r in records] == [0.75, 0.25, 0.75, 0.25]
    assert records[0]["model_prompt"] == "q0" and isinstance(records[0]["prediction"], str)
    summary = _json(out / "summary.json")
    assert (summary["n"], summary["n_scored"], summary["items"]) == (4, 4, 4)
    assert summary["status"] == "complete" and summary["judge"] == "judges.mine.lk"

    # jurist report and jurist agreement read it as any run
    code, said, _ = run(["report", str(out), "--labels", "stars"], capsys)
    assert code == EXIT_OK and "Agreement with stars" in (out / "report.html").read_text()
    code, said, _ = run(["agreement", str(out), "--labels", "stars"], capsys)
    assert code == EXIT_OK and "agreement" in said

    # resume: nothing is asked again (the mock would answer differently now)
    calls_before = summary["calls"]
    code, said, _ = run(base, capsys)
    assert code == EXIT_OK
    assert _json(out / "summary.json")["calls"] == calls_before
    # a changed generation setting is refused, naming it, and nothing is written
    code, _, err = run([*base, "--max-tokens", "9"], capsys)
    assert code == 2 and "generation.max_tokens: 256 -> 9" in err, err


def test_one_item_numbering_the_data_id_else_a_1_based_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the judge answers nonsense on every item: every item fails and is listed
    with_ids = [{"id": f"q{i}", **r} for i, r in enumerate(ROWS)]
    data = write(tmp_path / "ids.jsonl", with_ids)
    out = tmp_path / "ids"
    args = ["judge", str(data), "--model", "mock:j", "--model-option", "outputs=??"]
    args += ["--model-option", "cycle=true", "--retries", "0"]
    code, said, _ = run([*args, "--no-progress", "--out", str(out)], capsys)
    assert code == 1 and "item q0: parse:" in said and "item q2: parse:" in said
    page = (out / "report.html").read_text()
    assert '<td class="text">q1</td>' in page  # the failures table names the data's id
    code, _, err = run(["agreement", str(out), "--labels", "human"], capsys)
    assert code == 2 and "item q0 has no field 'human'" in err

    data = write(tmp_path / "rows.jsonl", ROWS)
    out = tmp_path / "rows"
    code, said, _ = run(["judge", str(data), *args[2:], "--no-progress", "--out", str(out)], capsys)
    assert "item 1: parse:" in said and "item 3: parse:" in said and "item 0" not in said
    code, _, err = run(["agreement", str(out), "--labels", "human"], capsys)
    assert "item 1 has no field 'human'" in err


def test_eval_model_errors_name_the_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JURIST_CATALOG", str(tmp_path / "catalog"))
    _catalog_judge(tmp_path / "catalog", "judges.mine.ref", ["[[8]]"], "mt_bench_reference")
    rows = [{"question": "a", "gold": "x"}, {"question": "b"}]
    data = write(tmp_path / "qa.jsonl", rows)
    base = ["eval-model", str(data), "--model", "mock:m", "--judge", "judges.mine.ref"]
    base += ["--prompt-field", "question", "--reference-field", "gold", "--no-progress"]
    code, _, err = run([*base, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and f"{data}: item 2: the judge needs field 'reference'" in err, err
    data = write(tmp_path / "qa.jsonl", [{"id": "k9", "gold": "x"}])
    code, _, err = run([*base, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "item k9: the prompt needs field 'question'" in err, err


def test_a_changed_option_is_refused_before_the_hf_weights_load(
    tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    data = write(tmp_path / "d.jsonl", ROWS[:2])
    base = ["judge", str(data), "--model", f"hf:{model}", "--template", "likert"]
    base += ["--scoring", "logprobs", "--no-progress", "--out", str(tmp_path / "r")]
    code, _, err = run(base, capsys)
    assert code in (0, 1), err
    # the weights are gone: loading them now fails (exit 3); a refusal must come first
    for weights in model.glob("*.safetensors"):
        weights.unlink()
    code, _, err = run([*base, "--temperature", "0.5"], capsys)
    assert code == 2, err
    assert "cannot resume this run" in err and "judge.temperature: 0.0 -> 0.5" in err
    assert "preparing" not in err and "load" not in err
    code, _, err = run(base, capsys)  # the same settings: the run resumes, loads, fails
    assert code == 3, err


def test_a_template_change_is_one_line_showing_where_it_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        "name: helpful\nkind: single\nfields: [prompt, response]\nmessages:\n"
        "  - role: system\n    content: >-\n      Decide whether the reply actually helps the "
        "user with their request. Consider all of its parts and whether anything in it is WORD. "
        'End with "Verdict: Yes" or "Verdict: No".\n'
        "  - role: user\n    content: '<q>{prompt}</q><r>{response}</r>'\n"
        "scale:\n  labels: {'Yes': 1.0, 'No': 0.0}\nparser:\n  type: labels\n"
        "  open: 'Verdict: '\n"
    )
    template = tmp_path / "t.yaml"
    template.write_text(text.replace("WORD", "wrong"))
    data = write(tmp_path / "d.jsonl", ROWS[:1])
    base = ["judge", str(data), "--template", str(template), "--model", "mock:j"]
    base += ["--no-progress", "--out", str(tmp_path / "r")]
    code, _, err = run(base, capsys)
    assert code in (0, 1), err  # the mock's "Correct" is no verdict here: failed, stored
    template.write_text(text.replace("WORD", "false"))
    code = main([*base, "--temperature", "0.5"])
    err = capsys.readouterr().err
    assert code == 2
    lines = [x for x in err.splitlines() if x.startswith("  judge.")]
    assert len(lines) == 2, err  # the system text (in two keys, one line) and the temperature
    assert lines[0].startswith("  judge.system, judge.template.instructions: differ at")
    assert "differ at character 126" in err and "is [wrong]. End with" in err
    assert "is [false]. End with" in err and "temperature: 0.0 -> 0.5" in err
    code, _, err = run([*base[:3], "likert", *base[4:]], capsys)
    assert code == 2 and 'judge.template: "helpful" -> "likert" (another template)' in err
    assert "judge.system" not in err and "template.scale" not in err


def test_judge_takes_a_catalog_name_with_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JURIST_CATALOG", str(tmp_path / "catalog"))
    _catalog_judge(tmp_path / "catalog", "judges.mine.lk", ["Score: 4"])
    data = write(tmp_path / "d.jsonl", ROWS)
    out = tmp_path / "r"
    args = ["judge", str(data), "--judge", "judges.mine.lk[temperature=0.3]", "--no-progress"]
    code, _, err = run([*args, "--out", str(out), "--max-tokens", "40"], capsys)
    assert code == EXIT_OK, err
    manifest = _json(out / "manifest.json")["judge"]
    assert isinstance(manifest, dict)
    assert manifest["temperature"] == 0.3 and manifest["max_tokens"] == 40
    assert manifest["template"]["name"] == "likert"
    assert _json(out / "summary.json")["mean_score"] == 0.75
    # the built-in entries too: docs/judge-metric.md says a catalog name works here
    builtin = [*args[:2], "--judge", "judges.likert.hf_qwen2_5_0_5b_instruct"]
    builtin += ["--model", "mock:j", "--no-progress", "--out", str(tmp_path / "b")]
    code, _, err = run(builtin, capsys)
    assert code in (0, 1), err
    assert _json(tmp_path / "b" / "summary.json")["model"] == "mock:j"  # --model replaced it
    code, _, err = run([*args, "--template", "likert"], capsys)
    assert code == 2 and "--template" in err and "give one" in err
    code, _, err = run([*args[:3], "judges.mt_bench_pair.hf_qwen2_5_0_5b_instruct"], capsys)
    assert code == 2 and "response_a" in err


def test_compare_and_grade_take_a_catalog_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "catalog"
    monkeypatch.setenv("JURIST_CATALOG", str(root))
    path = root / "judges" / "mine" / "pair.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(
        "kind: pairwise_judge\nmodel: 'mock:judge'\nmodel_options: {outputs: ['[[A]]', "
        "'[[B]]'], cycle: true}\ntemplate: mt_bench_pair\n"
    )
    a = write(tmp_path / "a.jsonl", ROWS)
    b = write(tmp_path / "b.jsonl", [{**r, "response": "?"} for r in ROWS])
    out = tmp_path / "cmp"
    args = ["compare", str(a), str(b), "--judge", "judges.mine.pair", "--no-progress"]
    code, said, err = run([*args, "--out", str(out)], capsys)
    assert code == EXIT_OK, err
    summary = _json(out / "summary.json")
    assert summary["template"] == "judges.mine.pair" and summary["win_rate_a"] == 1.0
    code, _, err = run([*args, "--max-tokens", "9", "--out", str(tmp_path / "c2")], capsys)
    assert code == 2 and "judges.mine.pair[max_tokens=...]" in err

    _catalog_judge(root, "judges.mine.grader", ['{"c1": {"verdict": "MET"}}'], "likert")
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("criteria:\n  - name: right\n    requirement: The answer is right\n")
    g = ["grade", str(a), "--rubric", str(rubric), "--judge", "judges.mine.grader[temperature=0.2]"]
    code, said, err = run([*g, "--no-progress", "--out", str(tmp_path / "g")], capsys)
    assert code == EXIT_OK, said + err
    graders = _json(tmp_path / "g" / "manifest.json")["judge"]["judges"]  # type: ignore[index]
    assert [(j["id"], j["temperature"]) for j in graders] == [("mock:judge", 0.2)]
    code, _, err = run([*g, "--model", "mock:x", "--out", str(tmp_path / "g2")], capsys)
    assert code == 2 and "give one" in err


def test_criteria_judge_on_the_named_scale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests._fault_server import Fault, FaultServer

    data = write(tmp_path / "d.jsonl", ROWS)
    out = tmp_path / "c"
    args = ["judge", str(data), "--criteria", "Is the answer concise and correct?"]
    with FaultServer([Fault("ok", text="4")] * 3) as server:
        served = ["--model", "openai:x", "--base-url", server.url, "--api-key", "x"]
        served += ["--no-cache", "--output", "text", "--no-progress", "--out", str(out)]
        code, said, err = run([*args, "--scale", "likert", *served], capsys)
        assert code == EXIT_OK, said + err
        sent = server.bodies[0]["messages"][0]["content"]
    template = _json(out / "manifest.json")["judge"]["template"]  # type: ignore[index]
    assert template["name"] == "criteria-likert"
    assert "<criteria>\nIs the answer concise and correct?\n</criteria>" in sent
    assert "1 not at all, 2 poorly, 3 in part, 4 largely, 5 fully" in sent
    assert _json(out / "summary.json")["mean_score"] == 0.75
    args += ["--model", "mock:j"]
    # the spelling: --scoring likert says where the scale goes
    code, _, err = run([*args, "--scoring", "likert", "--out", str(tmp_path / "x")], capsys)
    assert code == 2 and "--scale" in err
    code, _, err = run([*args, "--scale", "stars", "--out", str(tmp_path / "x")], capsys)
    assert code == 2 and "yes_no" in err


def test_building_the_tiny_model_as_a_module_warns_nothing(tmp_path: Path) -> None:
    import subprocess
    import sys

    module = ["-m", "jurist.testing.tiny_model", str(tmp_path / "m")]
    done = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", *module],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "RuntimeWarning" not in done.stderr and "found in sys.modules" not in done.stderr
    assert (tmp_path / "m" / "config.json").is_file()
    from jurist.testing import build_tiny_model

    assert callable(build_tiny_model)


def test_no_progress_hides_the_loading_weights_bar(
    tmp_path: Path, tiny_model_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import subprocess
    import sys

    data = write(tmp_path / "d.jsonl", ROWS[:1])
    args = ["judge", str(data), "--model", f"hf:{tiny_model_dir}", "--template", "likert"]
    args += ["--scoring", "logprobs", "--no-cache"]  # no cache: every run loads the weights
    assert main([*args, "--out", str(tmp_path / "a")]) in (0, 1)
    assert "Loading weights" in capfd.readouterr().err  # the bar this test is about, by default
    # --no-progress here, where transformers is imported already: it is told directly
    code = main([*args, "--no-progress", "--out", str(tmp_path / "b")])
    err = capfd.readouterr().err
    assert code in (0, 1) and "Loading weights" not in err and "it/s" not in err, err
    # and in a fresh interpreter, which imports transformers inside the quiet block
    quiet = subprocess.run(
        [sys.executable, "-m", "jurist", *args, "--no-progress", "--out", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert quiet.returncode in (0, 1), quiet.stderr
    assert "Loading weights" not in quiet.stderr and "it/s" not in quiet.stderr, quiet.stderr
    for out in ("a", "b", "c"):  # each run asked the model: its weights were loaded
        assert _json(tmp_path / out / "summary.json")["calls"] == 1, out


def test_no_progress_leaves_the_environment_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    data = write(tmp_path / "d.jsonl", ROWS[:1])
    run(
        ["judge", str(data), "--model", "mock:j", "--no-progress", "--out", str(tmp_path / "r")],
        capsys,
    )
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ


def test_pairwise_report_names_both_systems_and_shows_the_judge_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jurist.runs import Run

    a = write(tmp_path / "gpt-x.jsonl", [{**r, "response": r["response"] * 5} for r in ROWS])
    b = write(tmp_path / "llama-y.jsonl", ROWS)
    out = tmp_path / "cmp"
    args = ["compare", str(a), str(b), "--model", "mock:p", "--model-option", "outputs=[[A]]"]
    _code, said, _err = run([*args, "--no-progress", "--out", str(out)], capsys)
    assert "systems A = gpt-x, B = llama-y" in " ".join(said.replace("│", " ").split())
    assert _json(out / "summary.json")["systems"] == {"A": "gpt-x", "B": "llama-y"}
    page = (out / "report.html").read_text()
    assert "Pairwise: A = gpt-x, B = llama-y" in page
    assert '<td class="text">A = gpt-x, B = llama-y</td>' in page  # the summary table
    # the judge response column holds both orders' answers, never empty
    from jurist.runs.report._browse import browse_row

    rows = list(Run(out).rows())
    shown = browse_row(rows[0], None, None, None)[5]
    assert shown.startswith("A shown first: ") and "B shown first: " in shown

    # a system column names the systems instead of the file names
    a = write(tmp_path / "a.jsonl", [{**r, "system": "model-one"} for r in ROWS])
    b = write(tmp_path / "b.jsonl", [{**r, "system": "model-two"} for r in ROWS])
    run(["compare", str(a), str(b), "--model", "mock:p", "--out", str(tmp_path / "c2")], capsys)
    assert _json(tmp_path / "c2" / "summary.json")["systems"] == {
        "A": "model-one",
        "B": "model-two",
    }


def test_local_models_and_cache_hits_cost_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import jurist
    from jurist.engines._item_path import Coster
    from jurist.runs import PriceTable
    from jurist.types import Judgment, Usage
    from tests._fault_server import Fault, FaultServer

    data = write(tmp_path / "d.jsonl", ROWS)
    with FaultServer([Fault("ok", text="Correct")] * 3) as server:
        served = ["--model", "openai:local-model", "--base-url", server.url, "--api-key", "x"]
        args = ["judge", str(data), *served, "--output", "text", "--no-progress"]
        code, said, err = run([*args, "--out", str(tmp_path / "r")], capsys)
        assert code == EXIT_OK, err
        summary = _json(tmp_path / "r" / "summary.json")
        assert summary["cost"] == 0.0 and summary["cost_unknown_items"] == 0
        assert re.search(r"cost\W+\$0\.0000", said), said
        # the same items again in a new run: every answer comes from the cache
        code, said, err = run([*args, "--out", str(tmp_path / "r2")], capsys)
        assert _json(tmp_path / "r2" / "summary.json")["cache_hits"] == 3
        assert _json(tmp_path / "r2" / "summary.json")["cost"] == 0.0
    # an API model without a price: unknown when called, nothing when the cache answered
    remote = jurist.LLMJudge(
        jurist.get_model("openai:x", base_url="https://api.example.com/v1", api_key="k")
    )
    coster = Coster(remote, PriceTable.default())
    assert coster.cost(Judgment(score=1.0, usage=Usage(prompt_tokens=9, calls=1, attempts=1))) == (
        None,
        False,
    )
    assert coster.cost(Judgment(score=1.0, usage=Usage(prompt_tokens=9, cache_hits=1))) == (
        0.0,
        False,
    )


def test_report_summary_shows_template_scoring_coverage_and_cost(
    tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write(tmp_path / "d.jsonl", ROWS[:2])
    out = tmp_path / "r"
    args = ["judge", str(data), "--model", f"hf:{tiny_model_dir}", "--template", "likert"]
    code, said, err = run(
        [*args, "--scoring", "logprobs", "--min-coverage", "0", "--no-progress", "--out", str(out)],
        capsys,
    )
    assert code in (0, 1), err
    page = (out / "report.html").read_text()

    def row(name: str) -> str:
        found = re.search(rf"<td class=\"text\">{name}</td><td[^>]*>([^<]*)</td>", page)
        assert found is not None, name
        return found.group(1)

    assert row("template") == "likert" and row("scoring") == "logprobs"
    assert row("verdict coverage").startswith("median")
    assert row("cost") == "$0.0000"
    assert "│ scoring │ logprobs" in said
    _code, _, _ = run(
        [
            "judge",
            str(data),
            "--model",
            "mock:j",
            "--template",
            "likert",
            "--out",
            str(tmp_path / "p"),
        ],
        capsys,
    )
    page = (tmp_path / "p" / "report.html").read_text()
    assert "not measured (verdicts parsed from text)" in page


def test_generate_then_judge_rebuilds_with_its_models_and_settings() -> None:
    import pickle

    import jurist
    from jurist.pipeline._generate_judge import GenerateThenJudge

    metric = jurist.JudgeMetric(
        jurist.LLMJudge(jurist.get_model("mock:j", outputs=["4"], cycle=True), "likert"),
        context_fields={"prompt": "question"},
        seed=7,
        confidence=0.9,
    )
    both = GenerateThenJudge(
        jurist.get_model("mock:m", outputs=["x"], cycle=True),
        metric,
        prompt_template="Q: {question}",
        judge_concurrency=2,
    )
    assert both.required_fields == ("question",)
    assert [m.spec for m in both.models()] == ["mock:m", "mock:j"]
    swapped = both.with_models(lambda m: jurist.get_model(m.spec + "2", outputs=["5"]))
    assert [m.spec for m in swapped.models()] == ["mock:m2", "mock:j2"]
    assert (swapped.metric.seed, swapped.metric.confidence) == (7, 0.9)
    assert swapped.describe()["generation"]["prompt_template"] == "Q: {question}"
    out = jurist.evaluate([{"question": "a"}, {"question": "b"}], both, progress=False)
    assert [r["judge_prediction"] for r in out.records()] == ["x", "x"]
    assert [r["judge_score"] for r in out.records()] == [0.75, 0.75]
    again = pickle.loads(pickle.dumps(both))  # travels (Ray), its semaphores left behind
    assert again.describe() == both.describe()


def test_eval_model_resume_asks_again_only_for_failed_generations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests._fault_server import FaultServer, ok, status

    monkeypatch.setenv("JURIST_CATALOG", str(tmp_path / "catalog"))
    _catalog_judge(tmp_path / "catalog", "judges.mine.lk", ["Score: 4"])
    data = write(tmp_path / "qa.jsonl", [{"prompt": f"question {i}"} for i in range(3)])
    out = tmp_path / "em"
    with FaultServer(by_prompt={"question 1": [status(400)]}) as server:
        args = ["eval-model", str(data), "--model", "openai:m", "--base-url", server.url]
        args += ["--api-key", "x", "--max-retries", "0", "--judge", "judges.mine.lk"]
        args += ["--no-progress", "--out", str(out)]
        code, said, _ = run(args, capsys)
        assert code == 1 and "item 2: api: inference:" in said, said
        assert server.requests == 3
        server.script(ok("an answer"))
        code, said, _ = run(args, capsys)  # the same command: only the failed one again
        assert code == EXIT_OK, said
        assert server.requests == 4
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["score"] for r in records] == [0.75, 0.75, 0.75]
    assert records[1]["prediction"] == "an answer"
