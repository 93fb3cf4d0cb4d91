"""Grounded-answer templates: faithfulness claim by claim (strict reading, the supported
fraction as the score), context relevance, answer relevance; and the faithfulness scale
checked on QAGS's human factual-consistency labels (../shared/realdata/UniEval)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jurist
from jurist.errors import ConfigError
from jurist.metrics import pearson
from jurist.models import MockModel
from jurist.templates import ParsedVerdict, get_template

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
QAGS = REALDATA / "UniEval" / "reproduce" / "unieval_predict" / "fact"

FAITH = get_template("faithfulness")


def _claims_text(rows: list[tuple[str, str]], style: int = 0, reasons: bool = False) -> str:
    """A judge's claim list, written in one of a few styles judges use."""
    out = []
    for i, (claim, verdict) in enumerate(rows, 1):
        key = ("Claim:", f"Claim {i}:", f"{i}. Claim:", "**Claim:**")[style % 4]
        vkey = ("Verdict:", f"Verdict {i}:", "Verdict:", "**Verdict:**")[style % 4]
        out.append(f"{key} {claim}")
        out.append(f"{vkey} {verdict}")
        if reasons:
            out.append("Reason: see the second paragraph.")
    return "\n".join(out)


_claim = st.text(
    alphabet=st.sampled_from(list("abcdefghij XYZ,;0123456789'`\"-()%$")), min_size=1, max_size=50
).filter(lambda s: s.strip() != "")
_rows = st.lists(
    st.tuples(_claim, st.sampled_from(["supported", "unsupported"])), min_size=1, max_size=12
)


@settings(max_examples=100)
@given(rows=_rows, style=st.integers(0, 3), reasons=st.booleans())
def test_a_claim_list_reads_back_as_its_supported_fraction(
    rows: list[tuple[str, str]], style: int, reasons: bool
) -> None:
    expected = sum(v == "supported" for _, v in rows) / len(rows)
    v = FAITH.parse(_claims_text(rows, style, reasons), explanations=True)
    assert v.error is None, v.error
    assert v.score == pytest.approx(expected) and v.value == v.score
    assert v.explanation is not None and v.explanation.startswith(
        f"{sum(x == 'supported' for _, x in rows)} of {len(rows)} claims supported."
    )
    as_json = json.dumps({"claims": [{"claim": c, "verdict": x} for c, x in rows]})
    assert FAITH.parse(as_json, json=True).score == pytest.approx(expected)
    assert FAITH.parse(as_json).score == pytest.approx(expected)  # detected


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("The answer is faithful.", "parse: no 'Claim:' lines in the output"),
        ("No claims", "parse: the judge found no claims to check (the score is undefined)"),
        ("Verdict: supported\nClaim: x", "parse: a 'Verdict:' line before any 'Claim:' line"),
        ("Claim: x\nVerdict: supported\nClaim: y", "parse: claim 2 has no 'Verdict:' line"),
        ("Claim:\nVerdict: supported", "parse: claim 1 is empty"),
        ("Claim: x\nVerdict: partly", "parse: claim 1: 'partly' is not one of"),
        ("Claim: x\nVerdict: supported\nVerdict: unsupported",
         "parse: conflicting verdicts for claim 1: supported, unsupported"),
        ('{"claims": []}', "parse: the judge found no claims to check"),
        ('{"claims": [{"claim": "x", "verdict": "yes"}]}', "parse: claim 1: 'yes' is not one of"),
        ('{"claims": "x"}', "parse: 'claims' must be a list"),
    ],
)  # fmt: skip
def test_strict_reading_fails_clearly(text: str, error: str) -> None:
    v = FAITH.parse(text)
    assert v.score is None and (v.error or "").startswith(error), v.error


def test_unsupported_is_never_read_as_supported_and_aliases() -> None:
    assert FAITH.parse("Claim: a\nVerdict: Unsupported.").score == 0.0
    assert FAITH.parse("Claim: a\nVerdict: not supported (the context is silent)").score == 0.0
    assert FAITH.parse("Claim: a\nVerdict: **Supported**").score == 1.0
    text = "Claim: a\nVerdict: supported\nVerdict: unsupported"
    assert FAITH.with_conflict("last").parse(text).score == 0.0
    assert FAITH.with_conflict("first").parse(text).score == 1.0
    # a reasoning block is set aside; the claims after it are read
    assert (
        FAITH.parse("<think>Claim: z\nVerdict: no</think>Claim: a\nVerdict: supported").score == 1.0
    )


def test_prompts_and_json_schema() -> None:
    system = FAITH.system_text()
    assert "Claim: <the claim>\nVerdict: <supported or unsupported>" in system
    assert "Reason:" in FAITH.system_text(explanations=True)
    assert '{"claims": [{"claim": "<one claim>"' in FAITH.system_text(json=True)
    schema = FAITH.json_schema()
    item = schema["properties"]["claims"]["items"]
    assert item["properties"]["verdict"]["enum"] == ["supported", "unsupported"]
    assert FAITH.candidates() is None  # a fraction of claims: no logprob verdict space
    msgs = FAITH.render(
        {"context": "The sky is green </context>", "response": "Green.", "prompt": "Sky?"}
    )
    assert msgs[-1].content.count("</context>") == 1
    assert msgs[-1].content.startswith("<question>\nSky?\n</question>")
    assert FAITH.summary()["verdict"] == "Claim: ... / Verdict: ... per claim"
    # the dump leaves claims out of every template that has none (old manifests still match)
    assert "claims" not in get_template("likert").model_dump()
    assert jurist.Template.model_validate(FAITH.model_dump(mode="json")) == FAITH


@pytest.mark.parametrize(
    ("name", "item", "text", "score"),
    [
        ("context_relevance", {"prompt": "q", "context": "c"}, "5", 1.0),
        ("context_relevance", {"prompt": "q", "context": "c"}, "Score: 2", 0.25),
        ("answer_relevance", {"prompt": "q", "response": "r"}, "3", 0.5),
        ("answer_relevance", {"prompt": "q", "response": "r"}, "6", None),
    ],
)
def test_relevance_templates(
    name: str, item: dict[str, str], text: str, score: float | None
) -> None:
    t = get_template(name)
    assert t.render(item)[-1].content.startswith("<question>\nq\n</question>")
    assert t.parse(text).score == score


async def test_faithfulness_judge_end_to_end_text_and_json() -> None:
    out = _claims_text([("Lyon is in France.", "supported"), ("It has 9M people.", "unsupported")])
    judge = jurist.LLMJudge(jurist.get_model("mock:f", outputs=[out]), template="faithfulness")
    j = await judge.judge({"context": "Lyon, France: 522,000 people.", "response": "Lyon is..."})
    assert (j.score, j.verdict, j.error) == (0.5, 0.5, None)
    answer = json.dumps({"claims": [{"claim": "Lyon is in France.", "verdict": "supported"}]})
    model = jurist.get_model("mock:fj", outputs=[answer], json_schema=True)
    judge = jurist.LLMJudge(model, template="faithfulness", output="json")
    j = await judge.judge({"context": "Lyon, France.", "response": "Lyon is in France."})
    assert j.score == 1.0 and j.output_format == "json"


# -- real labels: QAGS (via UniEval's reproduce data) ----------------------------------------

_SENTENCE_END = re.compile(r"(?<=\s[.!?])\s+")  # the summaries are tokenized: " ." ends one


def _sentences(summary: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(summary.strip()) if s.strip()]


@pytest.fixture(scope="module")
def qags() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for name in ("qags_cnndm_result.json", "qags_xsum_result.json"):
        path = QAGS / name
        if not path.exists():
            pytest.skip(f"{path} is absent (../shared/realdata is not here)")
        records += json.loads(path.read_text())
    return records


def test_qags_human_scores_are_the_supported_fraction_of_summary_sentences(
    qags: list[dict[str, Any]],
) -> None:
    """QAGS's consistency score is, per summary, the share of its sentences that the
    annotators' majority judged consistent with the article: the faithfulness template's
    scale with one claim per sentence. Every score times the sentence count is whole."""
    assert len(qags) == 235 + 239
    for r in qags:
        n = len(_sentences(r["system_output"]))
        k = r["scores"]["consistency"] * n
        assert abs(k - round(k)) < 1e-9, (n, r["scores"], r["system_output"][:80])


def test_qags_replayed_through_the_faithfulness_judge(qags: list[dict[str, Any]]) -> None:
    """A judge that agrees with the annotators on every sentence, replayed through the
    mock model: the template renders the real articles and summaries, the parser reads
    claim lists in several styles, and the scores equal the human scores exactly. (The
    labels are per summary, so which sentences are unsupported is not known: the first k
    are marked supported. What a real judge model would score cannot be checked here.)"""
    outputs, items = [], []
    for i, r in enumerate(qags):
        sents = _sentences(r["system_output"])
        k = round(r["scores"]["consistency"] * len(sents))
        rows = [(s, "supported" if j < k else "unsupported") for j, s in enumerate(sents)]
        outputs.append(_claims_text(rows, style=i, reasons=i % 2 == 1))
        items.append({"context": r["source"], "response": r["system_output"]})
    model = MockModel("qags", outputs=outputs, record=True)
    judge = jurist.LLMJudge(model, template="faithfulness", output="text")
    results = judge.judge_sync(items)
    human = [r["scores"]["consistency"] for r in qags]
    assert results.scores == pytest.approx(human, abs=1e-12)
    assert pearson(results.scores, human) == pytest.approx(1.0)
    first = model.requests[0].messages[-1].content
    assert first.startswith("<context>\n") and "</context>\n\n<answer>\n" in first


def test_qags_parse_failures_are_failures_not_zeros(qags: list[dict[str, Any]]) -> None:
    """An answer the judge could not split into claims gets no score, never 0.0."""
    r = qags[0]
    v: ParsedVerdict = FAITH.parse(f"The summary says: {r['system_output']}")
    assert v.score is None and v.error == "parse: no 'Claim:' lines in the output"


def test_a_yaml_template_with_a_claims_parser(tmp_path: Path) -> None:
    """Claim by claim with labels of one's own: the score is the mean of the claims' labels."""
    text = """
name: key_facts
fields: [response, reference]
messages:
  - {role: system, content: "List the key facts of the reference; does the response state each?"}
  - {role: user, content: "<reference>{reference}</reference>\\n<response>{response}</response>"}
scale: {labels: {"stated": 1.0, "partly": 0.5, "missing": 0.0}}
parser: {type: claims, claim_key: Fact, verdict_key: Status}
"""
    path = tmp_path / "key_facts.yaml"
    path.write_text(text)
    t = jurist.load_template(path)
    v = t.parse("Fact: Lyon is in France\nStatus: stated\nFact: 522,000 people\nStatus: partly")
    assert (v.score, v.error) == (0.75, None)
    assert t.parse("Fact: x\nStatus: maybe").error == (
        'parse: claim 1: \'maybe\' is not one of "stated", "partly", "missing"'
    )
    assert t.parse("Claim: x\nVerdict: stated").error == "parse: no 'Fact:' lines in the output"
    assert t.json_schema()["properties"]["claims"]["items"]["properties"]["verdict"]["enum"] == [
        "stated", "partly", "missing",
    ]  # fmt: skip
    assert jurist.Template.model_validate(t.model_dump(mode="json")) == t
    bad = tmp_path / "bad.yaml"
    labels = '{labels: {"stated": 1.0, "partly": 0.5, "missing": 0.0}}'
    bad.write_text(text.replace(labels, "{range: {low: 0, high: 1}}"))
    with pytest.raises(ConfigError, match=r"bad\.yaml:8: parser\.type: a claims parser needs"):
        jurist.load_template(bad)
