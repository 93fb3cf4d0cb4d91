"""A CascadeJudge in every engine: the Ray and batch-API engines give the local engine's
records and server-side attempts, against the engine matrix's loopback server.

The cascade has two tiers, each a panel of two judges over the server's scripted verdicts
(tests/engines/test_engine_matrix.py: Correct, Incorrect, "I am not sure" by item). The first
tier's judges read different templates, so on the unsure item one of them cannot parse
the verdict: the tier agrees at 1/2 and passes the item on; the second tier's two judges
agree on it. So items 0 and 1 are decided by the first tier and item 2 by the second, and
its calls and attempts are each engine's to get right.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.models import Transport, build_stack, get_model
from jurist.trust import CascadeJudge
from tests._marked_server import MarkedServer
from tests._ray_cluster import ray_session  # noqa: F401  (the ray_cluster fixture)
from tests.engines.test_engine_matrix import SECRET, SETTINGS, answer, engine_run, items, kept


@pytest.fixture(scope="module")
def server() -> Any:
    with MarkedServer(answer) as marked:
        yield marked


def cascade(server: MarkedServer) -> CascadeJudge:
    def judge(name: str, template: str) -> jurist.LLMJudge:
        backend = get_model(
            f"openai:{name}",
            base_url=server.base_url,
            api_key=SECRET,
            json_mode=None,
            max_retries=0,
        )
        model = build_stack(backend, Transport(max_retries=0))
        return jurist.LLMJudge(model, template=template, name=name)

    first = jurist.Panel([judge("ca", "true_false_uncertain"), judge("cb", "true_false")])
    second = jurist.Panel(
        [judge("da", "true_false_uncertain"), judge("db", "true_false_uncertain")]
    )
    return CascadeJudge([first, second], thresholds=[0.9, 0.9])


def run(
    engine: str, server: MarkedServer, folder: Path
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    server.reset({})
    result = engine_run(engine, items(), cascade(server), folder, SETTINGS["cache"])
    return list(result.records()), dict(server.attempts)


def test_the_local_engine_runs_the_tiers_in_order(server: MarkedServer, tmp_path: Path) -> None:
    records, attempts = run("local", server, tmp_path)
    assert [r["judge_tier"] for r in records] == [0, 0, 1]
    assert [r["judge_score"] for r in records] == [1.0, 0.0, 0.5]
    assert records[2]["judge_steps"][0]["confidence"] == 0.5
    assert attempts == {
        **{f"{m}|ans-{i}": 1 for m in ("ca", "cb") for i in range(3)},
        "da|ans-2": 1,
        "db|ans-2": 1,
    }


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["ray", "batch"])
def test_every_engine_runs_a_cascade_as_the_local_one(
    engine: str, server: MarkedServer, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if engine == "ray":
        request.getfixturevalue("ray_cluster")
    local = run("local", server, tmp_path / "local")
    other = run(engine, server, tmp_path / engine)
    assert other[1] == local[1]
    assert [kept(r) for r in other[0]] == [kept(r) for r in local[0]]
