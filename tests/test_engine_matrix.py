"""Each judge kind x each engine x each transport setting: the same records and the same
server-side attempts as the local engine, against one loopback server.

Judge kinds: an LLMJudge, a Panel of two, a PairwiseJudge (both orders) and a rubric
grader. Settings: retries of 429s (``max_retries``), a timeout (a hung call retried),
the cache on (a second run makes no request) and off (every other cell), and a rate
(``rpm``: every attempt paced, retries included). Each cell runs the local engine first,
then every other engine of :data:`ENGINES` on the same items and scripts, and asserts
the other engine's records and per-call attempt counts are the local one's.

Adding an engine is one more entry of :data:`ENGINES` and one branch of
:func:`engine_run`: a batch-API column adds ``"batch"`` there, runs
``jurist.evaluate(..., batch_api=BatchAPIOptions(...))`` against a server that also
serves the provider's files and batches endpoints (each request of a batch counted as
one attempt under its key, as :class:`MarkedServer` counts live calls), and the same
assertions hold. One Ray instance serves the module (``tests/_ray_cluster.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.evaluate import RayOptions
from jurist.models import Transport, build_stack, get_model
from tests._fault_server import Fault, hang, status
from tests._marked_server import MarkedServer
from tests._ray_cluster import ray_session  # noqa: F401  (the ray_cluster fixture)

ENGINES = ("ray",)  # compared with the local engine; "batch" would be one more
KINDS = ("llm", "panel", "pairwise", "rubric")
N = 3
SECRET = "sk-matrix-secret-0005"


def items() -> list[dict[str, Any]]:
    return [
        {
            "prompt": f"question q{i}?",
            "response": f"ans-{i}",
            "response_a": f"ra-{i}",
            "response_b": f"rb-{i}",
        }
        for i in range(N)
    ]


def answer(text: str, item: int) -> str:
    """Verdicts, pair winners and rubric grades that vary by item."""
    if "c1" in text:  # a rubric grade
        return json.dumps({"c1": {"verdict": "MET" if item % 2 else "UNMET"}})
    if "[[A]]" in text:  # a pair: rb-i wins when i % 3 == 0
        a, b = text.find(f"ra-{item}"), text.find(f"rb-{item}")
        winner_first = (a < b) == (item % 3 != 0)
        return "[[A]]" if winner_first else "[[B]]"
    return ("Correct", "Incorrect", "I am not sure")[item % 3]


@dataclass(frozen=True)
class Setting:
    """A transport setting and the faults it is tried with (per call key)."""

    transport: Transport
    timeout: float = 30.0
    faults: Callable[[int], list[Fault]] = lambda i: []
    runs: int = 1  # the cache cell runs twice: the second run is served from the cache
    interval: float = 0.0  # seconds between the starts of one model's calls (rpm)


def _429s(n: int) -> list[Fault]:
    return [status(429, retry_after_ms=1)] * n


SETTINGS: dict[str, Setting] = {
    # item 0 no 429, item 1 two, item 2 four: more than its 3 retries, so it fails
    "retries": Setting(Transport(max_retries=3), faults=lambda i: _429s((0, 2, 4)[i])),
    # item 1's calls hang once past the timeout: retried, they score
    "timeout": Setting(
        Transport(max_retries=1), timeout=0.5, faults=lambda i: [hang(2.0)] if i == 1 else []
    ),
    "cache": Setting(Transport(max_retries=0, cache=True), runs=2),
    # 300 calls a minute: one model's attempts start 0.2 s apart, the retry of item 1's
    # 429 included (a loaded machine may delay one arrival: the span is asserted)
    "rpm": Setting(
        Transport(max_retries=2, rpm=300),
        faults=lambda i: _429s(1 if i == 1 else 0),
        interval=0.2,
    ),
}


def judge_of(kind: str, server: MarkedServer, setting: Setting, cache: Path) -> Any:
    transport = setting.transport
    if transport.cache:
        transport = transport.model_copy(update={"cache_path": cache})

    def model(name: str) -> Any:
        backend = get_model(
            f"openai:{name}",
            base_url=server.base_url,
            api_key=SECRET,
            timeout=setting.timeout,
            json_mode=None,
            max_retries=0,
        )
        return build_stack(backend, transport)

    if kind == "llm":
        return jurist.LLMJudge(model("j"))
    if kind == "panel":
        return jurist.Panel([jurist.LLMJudge(model("pa")), jurist.LLMJudge(model("pb"))])
    if kind == "pairwise":
        return jurist.PairwiseJudge(model("p"), swap=True)
    rubric = jurist.Rubric.from_dict(
        {"criteria": [{"name": "correct", "requirement": "The answer is right."}]}
    )
    return jurist.CriterionGrader(judges=[model("r")], seed=1).for_rubric(rubric)


def engine_run(engine: str, data: list[dict[str, Any]], judge: Any, run_dir: Path) -> Any:
    if engine == "local":
        return jurist.evaluate(data, judge, run_dir=run_dir)
    if engine == "ray":
        options = RayOptions(actors=1, batch_size=8)
        return jurist.evaluate(data, judge, run_dir=run_dir, ray=options)
    raise AssertionError(f"no engine {engine!r}")


def kept(value: Any) -> Any:
    """A record without its latencies (at any depth): they are timings, not results."""
    if isinstance(value, dict):
        return {k: kept(v) for k, v in value.items() if "latency" not in k}
    if isinstance(value, list):
        return [kept(v) for v in value]
    return value


@dataclass
class Seen:
    records: list[list[dict[str, Any]]]
    attempts: list[dict[str, int]]
    spans: list[tuple[int, float]]  # per model and run: arrivals, first to last (s)


def cell(engine: str, kind: str, setting: Setting, server: MarkedServer, folder: Path) -> Seen:
    seen = Seen([], [], [])
    judge = judge_of(kind, server, setting, folder / "cache.sqlite")
    keys = _call_keys(kind)
    for run in range(setting.runs):
        server.reset({key(i): setting.faults(i) for i in range(N) for key in keys})
        result = engine_run(engine, items(), judge, folder / f"run{run}")
        seen.records.append([kept(r) for r in result.records()])
        seen.attempts.append(dict(server.attempts))
        for name in {model for model, _ in server.arrivals}:  # each model has its rate
            times = sorted(t for model, t in server.arrivals if model == name)
            seen.spans.append((len(times), times[-1] - times[0]))
        assert server.keys <= {f"Bearer {SECRET}"}
    return seen


def paced(seen: Seen, interval: float) -> bool:
    """Whether each model's n arrivals span at least 80% of (n - 1) intervals (unpaced,
    they would come within milliseconds: the 429s are retried after 1 ms)."""
    return all(span >= 0.8 * interval * (n - 1) for n, span in seen.spans)


def _call_keys(kind: str) -> list[Callable[[int], str]]:
    """The key of each call a judge of ``kind`` makes for item i."""
    if kind == "llm":
        return [lambda i: f"j|ans-{i}"]
    if kind == "panel":
        return [lambda i: f"pa|ans-{i}", lambda i: f"pb|ans-{i}"]
    if kind == "pairwise":
        return [lambda i: f"p|ra-{i}/rb-{i}", lambda i: f"p|rb-{i}/ra-{i}"]
    return [lambda i: f"r|ans-{i}"]


@pytest.fixture(scope="module")
def server() -> Any:
    with MarkedServer(answer) as marked:
        yield marked


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(SETTINGS))
@pytest.mark.parametrize("kind", KINDS)
def test_every_engine_matches_the_local_one(
    kind: str, name: str, engine: str, server: MarkedServer, ray_cluster: Any, tmp_path: Path
) -> None:
    setting = SETTINGS[name]
    local = cell("local", kind, setting, server, tmp_path / "local")
    other = cell(engine, kind, setting, server, tmp_path / engine)
    # the local engine did what the setting says: each call's attempts are its faults
    # and a success, or 1 + max_retries when its faults outnumber its retries
    tries = (setting.transport.max_retries or 0) + 1
    want = {
        key(i): min(len(setting.faults(i)) + 1, tries) for i in range(N) for key in _call_keys(kind)
    }
    assert local.attempts[0] == want
    if name == "cache":  # the second run is served from the cache
        assert local.attempts[1] == {}
        scores = [[r["judge_score"] for r in run] for run in local.records]
        assert scores[1] == scores[0]
    failed = [r["judge_score"] is None for r in local.records[0]]
    assert failed == [False, False, name == "retries"]  # item 2's four 429s beat 3 retries
    assert paced(local, setting.interval)
    # and the other engine did the same
    assert other.attempts == local.attempts
    assert other.records == local.records
    assert paced(other, setting.interval)
