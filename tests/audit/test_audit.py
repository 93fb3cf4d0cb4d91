"""``jurist.audit`` and ``jurist audit`` (issue 23, item 4): a judge's position, verbosity,
format and self-preference biases, measured on a loopback OpenAI-compatible judge with
planted biases (tests/_bias_server.py); every interval must contain the planted effect."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import jurist
from jurist.audit import AuditReport, ProbeResult, as_markdown, audit_sync, pad
from jurist.cli import main
from jurist.errors import ConfigError, DataError
from jurist.judges import PairwiseJudge
from tests._bias_server import POSITION, SELF, VERBOSITY, BiasServer

pytestmark = pytest.mark.slow  # a loopback server and a few thousand judge calls


@pytest.fixture(scope="module")
def server() -> Iterator[BiasServer]:
    with BiasServer() as s:
        yield s


def _judge(server: BiasServer, model: str = "biased") -> PairwiseJudge:
    return PairwiseJudge(
        jurist.get_model(f"openai:{model}", base_url=server.base_url, api_key="x"),
        "mt_bench_pair",
        concurrency=32,
    )


def _pairs(n: int, *, own_style: bool = False) -> list[dict[str, str]]:
    """Arithmetic questions; one reply right and one wrong (on alternating sides), or with
    ``own_style`` both right, side A in the judge model's own style ("Sure! ...")."""
    rows = []
    for i in range(n):
        right, wrong = f"{i} + {i} = {2 * i}.", f"{i} + {i} = {2 * i + 1}."
        if own_style:
            a, b = f"Sure! {right}", f"It is simple: {right}"
        else:
            a, b = (right, wrong) if i % 2 else (wrong, right)
        rows.append(
            {"prompt": f"Question {i}: what is {i} + {i}?", "response_a": a, "response_b": b}
        )
    return rows


def test_audit_reports_the_planted_position_and_verbosity_biases(server: BiasServer) -> None:
    report = audit_sync(_judge(server), _pairs(200), probes=("position", "verbosity", "format"))
    position, verbosity, fmt = report["position"], report["verbosity"], report["format"]
    assert position.n == 200 and verbosity.n == 400 and fmt.n == 400
    assert position.n_failed == verbosity.n_failed == fmt.n_failed == 0
    for probe, planted in ((position, POSITION), (verbosity, VERBOSITY), (fmt, 0.0)):
        assert probe.lower is not None and probe.upper is not None
        assert probe.lower < planted < probe.upper, (probe.name, probe.lower, probe.upper)
    assert position.verdict == "fail" and verbosity.verdict == "fail"
    assert fmt.verdict == "pass"
    assert not report.passed


def test_an_unbiased_judge_passes(server: BiasServer) -> None:
    report = audit_sync(_judge(server, "reference"), _pairs(60), probes=("position", "verbosity"))
    assert [p.verdict for p in report.probes] == ["pass", "pass"]
    assert report["position"].effect == 0.0 and report.passed


def test_self_preference_against_a_reference_judge(server: BiasServer) -> None:
    report = audit_sync(
        _judge(server),
        _pairs(200, own_style=True),
        probes=("self_preference",),
        reference=_judge(server, "reference"),
        own="a",
    )
    probe = report["self_preference"]
    assert probe.lower is not None and probe.upper is not None
    assert probe.lower < SELF < probe.upper and probe.verdict == "fail"
    assert report.reference is not None and "reference" in report.reference


def test_self_preference_without_a_reference_is_skipped_with_the_reason(server: BiasServer) -> None:
    report = audit_sync(_judge(server), _pairs(4), probes=("self_preference",))
    probe = report["self_preference"]
    assert probe.verdict == "skipped" and probe.reason is not None and "reference" in probe.reason
    assert report.passed  # a skipped probe does not fail the audit


def test_audit_rejects_bad_input(server: BiasServer) -> None:
    with pytest.raises(ConfigError, match="unknown probe 'length'"):
        audit_sync(_judge(server), _pairs(2), probes=("length",))
    with pytest.raises(DataError, match="item 2 needs prompt and response_a"):
        audit_sync(_judge(server), [_pairs(1)[0], {"prompt": "q"}])
    with pytest.raises(DataError, match="item 1: response_b is int, not text"):
        audit_sync(_judge(server), [{"prompt": "q", "response_a": "a", "response_b": 3}])
    with pytest.raises(DataError, match="no items to audit"):
        audit_sync(_judge(server), [])


def test_rewrites_keep_the_content() -> None:
    text = "Water boils at 100 C at sea level. It freezes at 0 C."
    padded = pad(text, factor=1.0)
    assert padded.startswith(text) and len(padded.split()) >= 2 * len(text.split())
    assert as_markdown(text) == (
        "**Answer**\n\n- Water boils at 100 C at sea level.\n- It freezes at 0 C."
    )
    assert as_markdown("- one\n- two") == "**Answer**\n\n- one\n- two"


def test_verdicts_follow_the_interval_and_threshold() -> None:
    assert (
        ProbeResult.measured("format", [0.0, 0.02, -0.02] * 50, threshold=0.1, n_failed=0).verdict
        == "pass"
    )
    wide = ProbeResult.measured("format", [1.0, -1.0, 0.5], threshold=0.1, n_failed=2)
    assert wide.verdict == "inconclusive" and wide.n == 3 and wide.n_failed == 2
    none = ProbeResult.measured("position", [], threshold=0.1, n_failed=5)
    assert none.verdict == "skipped" and none.reason is not None and "5 failed" in none.reason


def test_cli_audit_writes_the_report(server: BiasServer, tmp_path: Path) -> None:
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _pairs(120)))
    out = tmp_path / "audit"
    argv = [
        "audit", str(data), "--model", "biased", "--base-url", server.base_url, "--api-key", "x",
        "--probe", "position", "--probe", "verbosity", "--out", str(out), "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    report = AuditReport.model_validate_json((out / "audit.json").read_text())
    assert [p.name for p in report.probes] == ["position", "verbosity"]
    position = report["position"]
    assert position.lower is not None and position.upper is not None
    assert position.lower < POSITION < position.upper
    page = (out / "audit.md").read_text()
    assert "| position |" in page and "| verbosity |" in page
    assert main([*argv, "--strict"]) == 1  # a failed probe fails the command under --strict
    assert main(["audit", str(data), "--probe", "nope", "--out", str(out)]) == 2


def test_cli_self_preference_with_a_reference_model(server: BiasServer, tmp_path: Path) -> None:
    data = tmp_path / "own.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _pairs(150, own_style=True)))
    out = tmp_path / "self"
    argv = [
        "audit", str(data), "--model", "biased", "--base-url", server.base_url, "--api-key", "x",
        "--probe", "self_preference", "--reference-model", "reference", "--own", "a",
        "--out", str(out), "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    probe = AuditReport.model_validate_json((out / "audit.json").read_text())["self_preference"]
    assert probe.lower is not None and probe.upper is not None
    assert probe.lower < SELF < probe.upper


def _figures() -> str:
    """The planted-bias table of docs/audit.md, measured."""
    with BiasServer() as server:
        biased = audit_sync(_judge(server), _pairs(200), probes=("position", "verbosity", "format"))
        own = audit_sync(
            _judge(server),
            _pairs(200, own_style=True),
            probes=("self_preference",),
            reference=_judge(server, "reference"),
            own="a",
        )
    return biased.to_markdown() + "\n" + own.to_markdown()


if __name__ == "__main__":  # PYTHONPATH=src python -m tests.audit.test_audit
    print(_figures())
