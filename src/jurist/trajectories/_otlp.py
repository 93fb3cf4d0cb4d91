"""Reading exported OpenTelemetry spans: OTLP JSON, one request per file or per line.

Two shapes are read, each as one JSON document or as JSON Lines (one per line):

- **OTLP JSON** (the collector's ``file`` exporter, OTLP/HTTP with JSON encoding):
  ``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`` with
  attributes as ``[{"key": ..., "value": {"stringValue": ...}}]``;
- **SDK JSON** (``span.to_json()`` of the Python SDK's console exporter): a span object, or
  a list of them, with ``context.trace_id`` / ``context.span_id`` and plain attribute maps.

Every span becomes a :class:`Span` with decoded attribute values; a malformed document is a
:class:`~jurist.errors.DataError` naming the file, the line and the span. So is a file
that is not UTF-8 text, a document nested deeper than :data:`jurist._json.MAX_DEPTH`
levels (read without recursion, never a ``RecursionError``), and a file that holds no span
at all (empty, ``[]``, ``{"resourceSpans": []}``): an export with nothing in it is a
mistake to see (an exporter that never flushed, the wrong file), not zero trajectories.

>>> doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t1", "spanId": "s1",
...     "name": "execute_tool search", "startTimeUnixNano": "5",
...     "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
...                    {"key": "n", "value": {"intValue": "3"}}]}]}]}]}
>>> [(s.name, s.attributes) for s in spans_from_document(doc, "traces.json")]
[('execute_tool search', {'gen_ai.tool.name': 'search', 'n': 3})]
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jurist._files import read_utf8
from jurist._json import TooDeep, loads
from jurist.errors import DataError

__all__ = ["Span", "read_spans", "spans_from_document"]


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """An event recorded on a span: its name, time and attributes."""

    name: str
    time: int
    attributes: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Span:
    """One span, its attributes decoded; ``where`` names it for error messages."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    end: int
    attributes: dict[str, Any]
    events: tuple[SpanEvent, ...] = ()
    status_error: str | None = None
    where: str = field(default="", compare=False)


def read_spans(path: str | Path) -> list[Span]:
    """Every span in the file at ``path`` (OTLP JSON or SDK JSON, a document or JSON Lines)."""
    p = Path(path)
    text = read_utf8(p, what="the trace file", error=DataError)
    stripped = text.strip()
    if not stripped:
        raise DataError(f"{p}: the trace file is empty")
    try:
        docs: list[tuple[str, Any]] = [(str(p), loads(stripped))]
    except TooDeep as e:
        raise DataError(f"{p}: cannot read the trace file: {e}") from None
    except ValueError:
        docs = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                docs.append((f"{p}:{n}", loads(line)))
            except TooDeep as e:
                raise DataError(f"{p}:{n}: cannot read the trace file: {e}") from None
            except ValueError as e:
                raise DataError(
                    f"{p}:{n}: not JSON (OTLP JSON or JSON Lines expected): {e}"
                ) from None
    spans: list[Span] = []
    for where, doc in docs:
        spans.extend(spans_from_document(doc, where))
    if not spans:
        raise DataError(
            f"{p}: the trace file holds no spans (an export with nothing in it); "
            "check that the exporter flushed, or leave the file out"
        )
    return spans


def spans_from_document(doc: Any, where: str) -> list[Span]:
    """The spans of one decoded JSON document (OTLP JSON, an SDK span, or a list of either)."""
    if isinstance(doc, list):
        return [s for i, d in enumerate(doc) for s in spans_from_document(d, f"{where}[{i}]")]
    if not isinstance(doc, Mapping):
        raise DataError(
            f"{where}: expected an OTLP JSON object or a span, got {type(doc).__name__}"
        )
    if "resourceSpans" in doc:
        return list(_otlp_spans(doc, where))
    if "context" in doc and "name" in doc:
        return [_sdk_span(doc, where)]
    raise DataError(
        f"{where}: neither OTLP JSON (no 'resourceSpans') nor an SDK span (no 'context'); "
        f"keys: {sorted(doc)[:8]}"
    )


def _otlp_spans(doc: Mapping[str, Any], where: str) -> Iterator[Span]:
    for r, resource in enumerate(_list(doc.get("resourceSpans"), f"{where}: resourceSpans")):
        scopes = resource.get("scopeSpans", resource.get("instrumentationLibrarySpans"))
        for s, scope in enumerate(_list(scopes, f"{where}: resourceSpans[{r}].scopeSpans")):
            here = f"{where}: resourceSpans[{r}].scopeSpans[{s}]"
            for i, raw in enumerate(_list(scope.get("spans"), f"{here}.spans")):
                yield _otlp_span(raw, f"{here}.spans[{i}]")


def _list(value: Any, where: str) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise DataError(f"{where} must be a list of objects")
    return value


def _span_where(where: str, name: str, span_id: str) -> str:
    return f"{where} (span {name!r}, id {span_id})"


def _otlp_span(raw: Mapping[str, Any], where: str) -> Span:
    name = str(raw.get("name", ""))
    trace_id, span_id = raw.get("traceId"), raw.get("spanId")
    if not trace_id or not span_id:
        raise DataError(f"{where} (span {name!r}): traceId and spanId are required")
    here = _span_where(where, name, str(span_id))
    events = tuple(
        SpanEvent(
            str(e.get("name", "")),
            _int(e.get("timeUnixNano", 0), f"{here}: event {j} timeUnixNano"),
            _kv_attributes(e.get("attributes"), f"{here}: event {j}"),
        )
        for j, e in enumerate(_list(raw.get("events"), f"{here}: events"))
    )
    status = raw.get("status") or {}
    code = status.get("code") if isinstance(status, Mapping) else None
    failed = code in (2, "2", "STATUS_CODE_ERROR")
    return Span(
        trace_id=str(trace_id),
        span_id=str(span_id),
        parent_id=str(raw["parentSpanId"]) if raw.get("parentSpanId") else None,
        name=name,
        start=_int(raw.get("startTimeUnixNano", 0), f"{here}: startTimeUnixNano"),
        end=_int(raw.get("endTimeUnixNano", 0), f"{here}: endTimeUnixNano"),
        attributes=_kv_attributes(raw.get("attributes"), here),
        events=events,
        status_error=(str(status.get("message") or "error") if failed else None),
        where=here,
    )


def _sdk_span(raw: Mapping[str, Any], where: str) -> Span:
    name = str(raw.get("name", ""))
    context = raw.get("context")
    if (
        not isinstance(context, Mapping)
        or not context.get("trace_id")
        or not context.get("span_id")
    ):
        raise DataError(
            f"{where} (span {name!r}): context.trace_id and context.span_id are required"
        )
    here = _span_where(where, name, str(context["span_id"]))
    attrs = raw.get("attributes") or {}
    if not isinstance(attrs, Mapping):
        raise DataError(f"{here}: attributes must be an object")
    events = tuple(
        SpanEvent(str(e.get("name", "")), 0, dict(e.get("attributes") or {}))
        for e in _list(raw.get("events"), f"{here}: events")
    )
    status = raw.get("status") or {}
    failed = isinstance(status, Mapping) and status.get("status_code") == "ERROR"
    return Span(
        trace_id=str(context["trace_id"]),
        span_id=str(context["span_id"]),
        parent_id=str(raw["parent_id"]) if raw.get("parent_id") else None,
        name=name,
        start=_iso_order(raw.get("start_time")),
        end=_iso_order(raw.get("end_time")),
        attributes=dict(attrs),
        events=events,
        status_error=(str(status.get("description") or "error") if failed else None),
        where=here,
    )


def _iso_order(value: Any) -> int:
    """An ISO timestamp as a sortable integer (digits only); 0 when absent."""
    digits = "".join(ch for ch in str(value or "") if ch.isdigit())
    return int(digits.ljust(26, "0")[:26]) if digits else 0


def _int(value: Any, where: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: expected an integer, got {value!r}") from None


def _kv_attributes(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise DataError(f"{where}: attributes must be a list of {{key, value}} objects")
    out: dict[str, Any] = {}
    for kv in raw:
        if not isinstance(kv, Mapping) or not isinstance(kv.get("key"), str):
            raise DataError(f"{where}: an attribute without a string key: {kv!r}")
        out[kv["key"]] = _any_value(kv.get("value"), f"{where}: attribute {kv['key']!r}")
    return out


def _any_value(raw: Any, where: str) -> Any:
    """An OTLP ``AnyValue`` as a Python value."""
    if raw is None or raw == {}:
        return None
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise DataError(f"{where}: not an OTLP AnyValue: {raw!r}")
    kind, value = next(iter(raw.items()))
    if kind == "stringValue":
        return str(value)
    if kind == "boolValue":
        return bool(value)
    if kind == "intValue":
        return _int(value, where)
    if kind == "doubleValue":
        return float(value)
    if kind == "bytesValue":
        return base64.b64decode(str(value))
    if kind == "arrayValue":
        values = value.get("values", []) if isinstance(value, Mapping) else None
        if not isinstance(values, list):
            raise DataError(f"{where}: arrayValue needs a list of values")
        return [_any_value(v, where) for v in values]
    if kind == "kvlistValue":
        values = value.get("values", []) if isinstance(value, Mapping) else None
        return _kv_attributes(values, where)
    raise DataError(f"{where}: unknown OTLP value type {kind!r}")
