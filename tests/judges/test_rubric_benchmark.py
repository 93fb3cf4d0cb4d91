"""The rubric benchmark's pieces: the stub's schema answers and server-side counters.

Correctness only (timing belongs to ``benchmarks/rubric.py``).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import jurist
from jurist.models import WrapperModel
from jurist.types import Completion, Request

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from _stub_server import StubServer, schema_instance  # noqa: E402


class Recording(WrapperModel):
    """Records the characters of every message it sends."""

    def __init__(self, wrapped: jurist.Model) -> None:
        super().__init__(wrapped)
        self.chars = 0

    async def complete(self, request: Request) -> Completion:
        self.chars += sum(len(m.content) for m in request.messages)
        return await self.wrapped.complete(request)


@pytest.fixture(scope="module")
def schema_server() -> Iterator[StubServer]:
    with StubServer(latency=0.0, answer="schema") as server:
        yield server


def test_schema_instances() -> None:
    # jurist's per-item schema
    rubric = jurist.Rubric.from_dict(
        [
            {"requirement": "a"},
            {
                "requirement": "b",
                "options": [{"label": "x", "value": 0}, {"label": "y", "value": 1}],
            },
        ]
    )
    from jurist.judges.rubric._prompts import item_schema

    criteria = [c.with_na_option() for c in rubric.criteria]
    assert schema_instance(item_schema(criteria, True)) == {
        "c1": {"explanation": "ok", "verdict": "MET"},
        "c2": {"explanation": "ok", "option": 1},
    }
    # a pydantic-style schema with $defs, $ref, nullable fields and a list of judgments
    schema = {
        "$defs": {
            "V": {"enum": ["MET", "UNMET"], "type": "string"},
            "J": {
                "type": "object",
                "properties": {
                    "criterion_id": {"type": "string"},
                    "criterion_status": {"anyOf": [{"$ref": "#/$defs/V"}, {"type": "null"}]},
                    "selected_option": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                },
            },
        },
        "type": "object",
        "properties": {"judgments": {"type": "array", "items": {"$ref": "#/$defs/J"}}},
    }
    prompt = '<rubric_criterion id="c0">..</rubric_criterion><rubric_criterion id="c1">'
    out = schema_instance(schema, prompt=prompt)
    assert [j["criterion_id"] for j in out["judgments"]] == ["c0", "c1"]
    assert out["judgments"][0]["criterion_status"] == "MET"
    assert out["judgments"][0]["selected_option"] == 1


def test_server_counts_requests_and_prompt_tokens(schema_server: StubServer) -> None:
    rubric = jurist.Rubric.from_dict(
        [
            {"requirement": "Says hello"},
            {
                "requirement": "Tone?",
                "scale_type": "nominal",
                "options": [{"label": "Warm", "value": 1}, {"label": "Cold", "value": 0}],
            },
        ]
    )
    sent: list[int] = []

    async def go(calls: str) -> tuple[list[jurist.GradeReport], int]:
        model = Recording(
            jurist.get_model("openai:stub", base_url=schema_server.base_url, api_key="x")
        )
        grader = jurist.CriterionGrader(judges=[model], calls=calls, seed=1)  # type: ignore[arg-type]
        reports = await grader.grade_many(rubric, ["hello there", "go away", "hi"])
        await model.aclose()
        return reports, model.chars

    for calls, per_item in (("per_item", 1), ("per_criterion", 2)):
        schema_server.reset()
        reports, chars = asyncio.run(go(calls))
        stats = schema_server.stats()
        assert stats["count"] == 3 * per_item
        assert all(r.error is None and r.score is not None for r in reports)
        assert all(not v.is_error for r in reports for c in r.criteria for v in c.votes)
        # the server's count of prompt characters matches what the grader sent
        assert stats["prompt_chars"] == chars
        sent.append(chars)
        assert stats["prompt_tokens"] >= stats["prompt_chars"] / 4
        assert stats["prompt_tokens"] <= stats["prompt_chars"] / 4 + stats["count"]
    assert sent[0] < sent[1]  # one call per item sends less than one per criterion
