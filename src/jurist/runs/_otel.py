"""A run's judgments as OpenTelemetry events: ``gen_ai.evaluation.result``, per the GenAI
semantic conventions, in OTLP/JSON (to a file, or OTLP/HTTP to a collector).

Each judgment is one log record (the conventions' events are log-based) with
``eventName`` ``gen_ai.evaluation.result`` and the attributes the conventions name:

- ``gen_ai.evaluation.name``: the judge's name (its template, rubric or grader);
- ``gen_ai.evaluation.score.value``: the score on [0, 1] (absent when it failed);
- ``gen_ai.evaluation.score.label``: the verdict when it is a label (``Yes``, ``A``...),
  and ``pass`` or ``fail`` for a numeric verdict;
- ``gen_ai.evaluation.explanation``: the judge's explanation, when it gave one;
- ``error.type``: the failure's category (``parse``, ``api``...) when it failed;
- ``gen_ai.response.id``: the item's ``response_id``, when it has one;

and ``jurist.item.index`` / ``jurist.item.id``. An item that came from ``jurist traces``
carries its trace's ``trace_id`` and the evaluated (root) span's ``span_id``: the record
is parented to that span (``traceId``, ``spanId``, hex as OTLP/JSON writes them), so a
trace viewer shows the evaluation on the span it evaluated.

``FILE`` gets one ``ExportLogsServiceRequest`` per line (the collector's file exporter's
shape); ``http(s)://...`` is posted to ``.../v1/logs`` as OTLP/HTTP JSON, in requests of
at most :data:`BATCH` records; a refusal or a partial success that rejected records is an
:class:`~jurist.errors.OutputError` naming the collector.

>>> rec = evaluation_record({"idx": 0, "item": {"trace_id": "5b8efff798038103d269b633813fc60c",
...     "span_id": "eee19b7ec3c1b174"}, "score": 1.0, "error": None,
...     "outcome": {"verdict": "Yes", "explanation": "Correct."}}, "likert", 1)
>>> rec["eventName"], rec["traceId"], [a["key"] for a in rec["attributes"]][:3]
('gen_ai.evaluation.result', '5b8efff798038103d269b633813fc60c', ['gen_ai.evaluation.name', 'gen_ai.evaluation.score.value', 'gen_ai.evaluation.score.label'])
"""  # noqa: E501

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from jurist._secrets import scrub
from jurist._version import __version__
from jurist.errors import OutputError

__all__ = ["BATCH", "EVENT", "evaluation_record", "export_request", "write_otel"]

EVENT = "gen_ai.evaluation.result"
BATCH = 1000
_HEX = {16: re.compile(r"[0-9a-f]{32}"), 8: re.compile(r"[0-9a-f]{16}")}


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def _hex_id(value: Any, size: int) -> str | None:
    text = str(value or "").strip().lower().removeprefix("0x")
    return text if _HEX[size].fullmatch(text) and text.strip("0") else None


def evaluation_record(row: Mapping[str, Any], judge: str, now: int) -> dict[str, Any]:
    """The OTLP/JSON log record of one stored result (``RunStore.rows()``'s shape)."""
    outcome = row.get("outcome") or {}
    item = row.get("item") or {}
    attributes: list[tuple[str, Any]] = [("gen_ai.evaluation.name", judge)]
    score = row.get("score")
    verdict = outcome.get("verdict", outcome.get("winner"))
    if score is not None:
        attributes.append(("gen_ai.evaluation.score.value", float(score)))
        label = verdict if isinstance(verdict, str) else ("pass" if score >= 0.5 else "fail")
        attributes.append(("gen_ai.evaluation.score.label", label))
    explanation = outcome.get("explanation")
    if isinstance(explanation, str) and explanation:
        attributes.append(("gen_ai.evaluation.explanation", explanation))
    error = row.get("error")
    if score is None:
        attributes.append(("error.type", str(error or "error").split(":", 1)[0]))
    if isinstance(item.get("response_id"), str):
        attributes.append(("gen_ai.response.id", item["response_id"]))
    attributes.append(("jurist.item.index", int(row.get("idx") or 0)))
    if item.get("id") is not None:
        attributes.append(("jurist.item.id", str(item["id"])))
    record: dict[str, Any] = {
        "timeUnixNano": str(now),
        "observedTimeUnixNano": str(now),
        "eventName": EVENT,
        "attributes": [{"key": k, "value": _value(v)} for k, v in attributes],
    }
    trace_id, span_id = _hex_id(item.get("trace_id"), 16), _hex_id(item.get("span_id"), 8)
    if trace_id and span_id:
        record["traceId"], record["spanId"] = trace_id, span_id
    return record


def export_request(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``ExportLogsServiceRequest`` (OTLP/JSON) holding ``records``."""
    return {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "jurist"}}]
                },
                "scopeLogs": [
                    {"scope": {"name": "jurist", "version": __version__}, "logRecords": records}
                ],
            }
        ]
    }


def _batches(rows: Iterable[Mapping[str, Any]], judge: str) -> Iterator[list[dict[str, Any]]]:
    now = time.time_ns()
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(evaluation_record(row, judge, now))
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def write_otel(
    target: str, rows: Iterable[Mapping[str, Any]], judge: str, *, timeout: float = 30.0
) -> int:
    """Send one event per row to ``target`` (a file path, or an ``http(s)://`` collector);
    the number of events sent."""
    sent = 0
    if target.startswith(("http://", "https://")):
        url = target.rstrip("/")
        url = url if url.endswith("/v1/logs") else url + "/v1/logs"
        for batch in _batches(rows, judge):
            _post(url, orjson.dumps(export_request(batch)), timeout)
            sent += len(batch)
        return sent
    path = Path(target)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as f:
            for batch in _batches(rows, judge):
                f.write(orjson.dumps(export_request(batch)) + b"\n")
                sent += len(batch)
    except OSError as e:
        raise OutputError(f"{path}: cannot write the OpenTelemetry events: {e.strerror}") from None
    return sent


def _post(url: str, body: bytes, timeout: float) -> None:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    shown = scrub(url)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            answer = resp.read()
    except urllib.error.HTTPError as e:
        raise OutputError(f"--otel {shown}: the collector answered HTTP {e.code}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        raise OutputError(f"--otel {shown}: cannot reach the collector: {e}") from None
    try:
        partial = (orjson.loads(answer) if answer.strip() else {}).get("partialSuccess") or {}
    except (orjson.JSONDecodeError, AttributeError):
        partial = {}
    rejected = int(partial.get("rejectedLogRecords") or 0)
    if rejected:
        why = partial.get("errorMessage") or "no reason given"
        raise OutputError(f"--otel {shown}: the collector rejected {rejected} events: {why}")
