"""Counters of the reward server, written in Prometheus' text exposition format (0.0.4).

Hand-written (no client library): counters with labels, one gauge and two histograms.

>>> m = ServerMetrics()
>>> m.count_request("/get_reward", 200, 0.12)
>>> text = m.render(in_flight=0)
>>> "jurist_reward_requests_total{endpoint=\\"/get_reward\\",status=\\"200\\"} 1" in text
True
>>> 'jurist_reward_request_seconds_bucket{endpoint="/get_reward",le="0.25"} 1' in text
True
"""

from __future__ import annotations

import math
from collections import Counter

__all__ = ["CONTENT_TYPE", "FAILURE_KINDS", "LATENCY_BUCKETS", "ServerMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Upper bounds (seconds) of the latency histograms' buckets; ``+Inf`` is added."""
FAILURE_KINDS = ("parse", "api", "rate_limit", "timeout", "connection", "error")
"""The ``kind`` labels of ``jurist_reward_failures_total``: the category an error starts
with (see :mod:`jurist.errors`: a 429 is ``rate_limit``, a dropped connection
``connection``, an API timeout or the judgment timeout ``timeout``); any other is ``error``."""


class _Histogram:
    def __init__(self) -> None:
        self.buckets = [0] * len(LATENCY_BUCKETS)
        self.count = 0
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.count += 1
        self.total += seconds
        for i, bound in enumerate(LATENCY_BUCKETS):
            if seconds <= bound:
                self.buckets[i] += 1


class ServerMetrics:
    """What the server counts; :meth:`render` writes it for ``GET /metrics``."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, int]] = Counter()
        self.items: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.judgments = 0
        self.coalesced = 0
        self.failures: Counter[str] = Counter()
        self.request_latency: dict[str, _Histogram] = {}
        self.judgment_latency = _Histogram()

    def count_request(self, endpoint: str, status: int, seconds: float) -> None:
        """One HTTP request answered with ``status`` after ``seconds``."""
        self.requests[(endpoint, status)] += 1
        self.request_latency.setdefault(endpoint, _Histogram()).observe(seconds)

    def count_items(self, endpoint: str, n: int) -> None:
        """``n`` items received on ``endpoint``."""
        self.items[endpoint] += n

    def count_refused(self, endpoint: str, n: int) -> None:
        """``n`` items of ``endpoint`` refused unjudged (a label the template cannot take)."""
        self.refused[endpoint] += n

    def count_judgment(self, seconds: float, error: str | None) -> None:
        """One judgment made (a judge call), ``error`` its failure (``"parse: ..."``) or None."""
        self.judgments += 1
        self.judgment_latency.observe(seconds)
        if error is not None:
            self.failures[_kind(error)] += 1

    def render(self, *, in_flight: int, batches: int = 0) -> str:
        """The exposition text; ``in_flight``: judgments running now; ``batches``: batches
        the micro-batcher dispatched."""
        out: list[str] = []
        _head(out, "jurist_reward_requests_total", "counter", "HTTP requests answered.")
        for (endpoint, status), n in sorted(self.requests.items()):
            out.append(_line("jurist_reward_requests_total", n, endpoint=endpoint, status=status))
        _head(out, "jurist_reward_items_total", "counter", "Items received for judging.")
        for endpoint, n in sorted(self.items.items()):
            out.append(_line("jurist_reward_items_total", n, endpoint=endpoint))
        _head(
            out,
            "jurist_reward_refused_total",
            "counter",
            "Items refused unjudged (a label or prompt the template cannot take).",
        )
        for endpoint, n in sorted(self.refused.items()):
            out.append(_line("jurist_reward_refused_total", n, endpoint=endpoint))
        _head(out, "jurist_reward_judgments_total", "counter", "Judgments made (judge calls).")
        out.append(_line("jurist_reward_judgments_total", self.judgments))
        _head(
            out,
            "jurist_reward_coalesced_total",
            "counter",
            "Items answered by an identical judgment already in flight.",
        )
        out.append(_line("jurist_reward_coalesced_total", self.coalesced))
        _head(
            out,
            "jurist_reward_batches_total",
            "counter",
            "Batches judged: items of requests that arrived together are one batch.",
        )
        out.append(_line("jurist_reward_batches_total", batches))
        _head(
            out,
            "jurist_reward_failures_total",
            "counter",
            "Judgments that gave the failure value, by kind (" + ", ".join(FAILURE_KINDS) + ").",
        )
        for kind in FAILURE_KINDS:
            out.append(_line("jurist_reward_failures_total", self.failures[kind], kind=kind))
        _head(out, "jurist_reward_in_flight", "gauge", "Judgments running now.")
        out.append(_line("jurist_reward_in_flight", in_flight))
        _head(out, "jurist_reward_judgment_seconds", "histogram", "Seconds per judgment (judging).")
        _histogram(out, "jurist_reward_judgment_seconds", self.judgment_latency, {})
        _head(out, "jurist_reward_request_seconds", "histogram", "Seconds per HTTP request.")
        for endpoint, hist in sorted(self.request_latency.items()):
            _histogram(out, "jurist_reward_request_seconds", hist, {"endpoint": endpoint})
        return "\n".join(out) + "\n"


def _kind(error: str) -> str:
    kind = error.partition(":")[0]
    return kind if kind in FAILURE_KINDS else "error"


def _head(out: list[str], name: str, kind: str, text: str) -> None:
    out.append(f"# HELP {name} {text}")
    out.append(f"# TYPE {name} {kind}")


def _histogram(out: list[str], name: str, hist: _Histogram, labels: dict[str, object]) -> None:
    for bound, n in zip(LATENCY_BUCKETS, hist.buckets, strict=True):
        out.append(_line(f"{name}_bucket", n, **labels, le=_number(bound)))
    out.append(_line(f"{name}_bucket", hist.count, **labels, le="+Inf"))
    out.append(_line(f"{name}_sum", hist.total, **labels))
    out.append(_line(f"{name}_count", hist.count, **labels))


def _line(name: str, value: float, **labels: object) -> str:
    if labels:
        inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
        name = f"{name}{{{inner}}}"
    return f"{name} {_number(value)}"


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
