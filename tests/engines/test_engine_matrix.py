"""Each judge kind x each engine x each transport setting: the same records and the same
server-side attempts as the local engine, against one loopback server.

Judge kinds: an LLMJudge, a Panel of two, a PairwiseJudge (both orders) and a rubric
grader. Settings: retries of 429s (``max_retries``), a timeout (a hung call retried),
the cache on (a second run makes no request) and off (every other cell), and a rate
(``rpm``: every attempt paced, retries included). Each cell runs the local engine first,
then every other engine of :data:`ENGINES` on the same items and scripts, and asserts
the other engine's records and per-call attempt counts are the local one's.

Engines: ``ray`` (one Ray instance serves the module, ``tests/_ray_cluster.py``) and
``batch``: ``jurist.evaluate(..., engine=BatchAPIEngine(BatchAPIOptions(...)))`` against the same
server, which is also a Batch API (:class:`MarkedServer`): each line of a batch takes
its key's next scripted fault and counts as one attempt under its key, as a live call
does. What a batch does with the settings:

- ``max_retries``: a line that fails with a transient status (429, 5xx) is sent again by
  the batcher in the next round, at most ``BatchAPIOptions.max_resubmits`` times
  (``RetryModel`` sits under the batcher and never sees a batched request); the cell
  sets ``max_resubmits`` to the transport's ``max_retries``, and then every call makes
  as many attempts as live, and the call that outlasts them fails with the same error;
- ``timeout``: a client waits for a batch, not for a line, so a line cannot time out
  and a hung line is answered on its one attempt (the server's ``hang`` has no meaning
  for a line). The cell cannot match: its attempts are 1 per call where the local
  engine's hung calls make 2; its records match once every attempt count is left out
  (:data:`DIFFERS`);
- the cache: the same layer over the batcher; a second run makes no request at all (no
  upload, no batch);
- ``rpm``: the limits sit under the batcher and pace live calls only; a batch's lines
  reach the server together when it runs them, so the pacing is not asserted for batch
  cells (:data:`DIFFERS`); the attempts and records match.

Records are compared without their latencies (timings) and without ``usage.batch_calls``
(per judgment: 1 for an answer that came in a batch, billed at the batch rates, 0 live):
those are the fields that legitimately differ between engines; every other field, the
error texts and the per-judgment attempts included, must be equal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.engines import BatchAPIEngine, BatchAPIOptions, RayEngine, RayOptions
from jurist.models import Transport, build_stack, get_model
from tests._fault_server import Fault, hang, status
from tests._marked_server import MarkedServer
from tests._ray_cluster import ray_session  # noqa: F401  (the ray_cluster fixture)

ENGINES = ("ray", "batch")  # each compared with the local engine
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


@dataclass(frozen=True)
class Differs:
    """Why a cell's engine cannot do what the local engine does, and what it does instead."""

    reason: str
    attempts: bool = False  # its attempts differ (records are compared without them)
    paced: bool = True  # whether its requests reach the server paced at the setting's rpm


DIFFERS: dict[tuple[str, str], Differs] = {
    ("batch", "timeout"): Differs(
        "a batch line cannot time out (the client waits for the batch, not the line): "
        "the hung calls make 1 attempt, not 2",
        attempts=True,
    ),
    ("batch", "rpm"): Differs(
        "rpm paces live calls (the limits sit under the batcher): a batch's lines reach "
        "the server together when the batch runs them",
        paced=False,
    ),
}
"""The cells that cannot match the local engine in full (see the module docs); every
other cell must match it in full."""

CELLS = [
    pytest.param(engine, name, DIFFERS.get((engine, name)), id=f"{engine}-{name}")
    for engine in ENGINES
    for name in SETTINGS
]


def engine_run(
    engine: str, data: list[dict[str, Any]], judge: Any, run_dir: Path, setting: Setting
) -> Any:
    if engine == "local":
        return jurist.evaluate(data, judge, run_dir=run_dir)
    if engine == "ray":
        options = RayOptions(actors=1, batch_size=8)
        return jurist.evaluate(data, judge, run_dir=run_dir, engine=RayEngine(options))
    if engine == "batch":
        # the batcher's resubmits of 429 lines stand for the transport's retries
        resubmits = setting.transport.max_retries or 0
        batch = BatchAPIOptions(poll_interval=0.01, max_resubmits=resubmits)
        return jurist.evaluate(data, judge, run_dir=run_dir, engine=BatchAPIEngine(batch))
    raise AssertionError(f"no engine {engine!r}")


def kept(value: Any, drop: tuple[str, ...] = ()) -> Any:
    """A record without its latencies and ``batch_calls`` (at any depth), nor keys
    containing a word of ``drop``: timings and the batch billing counter, not results."""
    if isinstance(value, dict):
        return {
            k: kept(v, drop)
            for k, v in value.items()
            if "latency" not in k and k != "batch_calls" and not any(w in k for w in drop)
        }
    if isinstance(value, list):
        return [kept(v, drop) for v in value]
    return value


@dataclass
class Seen:
    records: list[list[dict[str, Any]]]
    attempts: list[dict[str, int]]
    spans: list[tuple[int, float]]  # per model and run: arrivals, first to last (s)
    batches: list[tuple[int, int, int]]  # per run: files uploaded, batches made, live calls


def cell(engine: str, kind: str, setting: Setting, server: MarkedServer, folder: Path) -> Seen:
    seen = Seen([], [], [], [])
    judge = judge_of(kind, server, setting, folder / "cache.sqlite")
    keys = _call_keys(kind)
    for run in range(setting.runs):
        server.reset({key(i): setting.faults(i) for i in range(N) for key in keys})
        result = engine_run(engine, items(), judge, folder / f"run{run}", setting)
        seen.records.append(list(result.records()))
        seen.attempts.append(dict(server.attempts))
        seen.batches.append((server.uploads, server.creations, server.live_calls))
        for name in {model for model, _ in server.arrivals}:  # each model has its rate
            times = sorted(t for model, t in server.arrivals if model == name)
            seen.spans.append((len(times), times[-1] - times[0]))
        assert server.keys <= {f"Bearer {SECRET}"}
    return seen


def paced(seen: Seen, interval: float) -> bool:
    """Whether each model's n arrivals span at least 80% of (n - 2) intervals (unpaced,
    they would come within milliseconds: the 429s are retried after 1 ms).

    The pacer holds each call to its start time; it cannot make the first call leave on
    time. On a loaded machine that call's reservation comes back late (a Ray actor's
    reply, a busy event loop), so it may reach the server up to about an interval after
    its slot while the later calls keep theirs: one interval of the span is that slack
    (seen at load 7 on 2 cores: 4 paced arrivals 0.36 s apart at a 0.2 s interval)."""
    return all(span >= 0.8 * interval * max(n - 2, 1) for n, span in seen.spans)


def want_attempts(engine: str, kind: str, setting: Setting) -> dict[str, int]:
    """Each call's attempts: its faults and a success, or 1 + max_retries when its faults
    outnumber its retries; a batch line cannot hang, so there only status faults count."""
    tries = (setting.transport.max_retries or 0) + 1
    want = {}
    for i in range(N):
        faults = [f for f in setting.faults(i) if engine != "batch" or f.kind == "status"]
        for key in _call_keys(kind):
            want[key(i)] = min(len(faults) + 1, tries)
    return want


def _call_keys(kind: str) -> list[Callable[[int], str]]:
    """The key of each call a judge of ``kind`` makes for item i."""
    if kind == "llm":
        return [lambda i: f"j|ans-{i}"]
    if kind == "panel":
        return [lambda i: f"pa|ans-{i}", lambda i: f"pb|ans-{i}"]
    if kind == "pairwise":
        return [lambda i: f"p|ra-{i}/rb-{i}", lambda i: f"p|rb-{i}/ra-{i}"]
    return [lambda i: f"r|ans-{i}"]


_LOCAL: dict[tuple[str, str], Seen] = {}
"""The local engine's cell per (kind, setting), run once and compared with every engine."""


def local_cell(kind: str, name: str, server: MarkedServer, folder: Path) -> Seen:
    if (kind, name) not in _LOCAL:
        _LOCAL[kind, name] = cell("local", kind, SETTINGS[name], server, folder)
    return _LOCAL[kind, name]


@pytest.fixture(scope="module")
def server() -> Any:
    with MarkedServer(answer) as marked:
        yield marked


@pytest.mark.slow
@pytest.mark.parametrize(("engine", "name", "differs"), CELLS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_engine_matches_the_local_one(
    kind: str,
    engine: str,
    name: str,
    differs: Differs | None,
    server: MarkedServer,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    if engine == "ray":
        request.getfixturevalue("ray_cluster")
    setting = SETTINGS[name]
    local = local_cell(kind, name, server, tmp_path / "local")
    other = cell(engine, kind, setting, server, tmp_path / engine)
    # the local engine did what the setting says
    assert local.attempts[0] == want_attempts("local", kind, setting)
    if name == "cache":  # the second run is served from the cache
        assert local.attempts[1] == {}
        scores = [[r["judge_score"] for r in run] for run in local.records]
        assert scores[1] == scores[0]
    failed = [r["judge_score"] is None for r in local.records[0]]
    assert failed == [False, False, name == "retries"]  # item 2's four 429s beat 3 retries
    assert paced(local, setting.interval)
    # and the other engine did the same, or what its cell says it does instead
    assert other.attempts[0] == want_attempts(engine, kind, setting)
    drop: tuple[str, ...] = ()
    if differs is not None and differs.attempts:
        drop = ("attempts",)
    else:
        assert other.attempts == local.attempts
    assert [[kept(r, drop) for r in run] for run in other.records] == [
        [kept(r, drop) for r in run] for run in local.records
    ]
    if differs is None or differs.paced:
        assert paced(other, setting.interval)
    if engine == "batch":  # every request went in a batch, none live; the cached run none
        uploads, creations, live = other.batches[0]
        assert uploads >= 1 and creations == uploads and live == 0
        assert all(batches == (0, 0, 0) for batches in other.batches[1:])
