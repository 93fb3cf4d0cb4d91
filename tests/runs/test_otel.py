"""``--otel``: each judgment as a ``gen_ai.evaluation.result`` event, OTLP/JSON to a file or
OTLP/HTTP to a collector, read back with OpenTelemetry's own OTLP protobuf messages
(``opentelemetry-proto``'s ``ExportLogsServiceRequest``, parsed strictly by protobuf's
JSON parser), linked to the span it evaluated when the item came from ``jurist traces``."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests._cli_run import run as cli
from tests._cli_run import write
from tests._loopback import Loopback

logs_service = pytest.importorskip("opentelemetry.proto.collector.logs.v1.logs_service_pb2")
json_format = pytest.importorskip("google.protobuf.json_format")

TRACE_IDS = ["5b8efff798038103d269b633813fc60c", "0af7651916cd43dd8448eb211c80319c"]
ROOT_IDS = ["eee19b7ec3c1b174", "b7ad6b7169203331"]


def _attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _traces(path: Path) -> Path:
    spans = []
    for n, (trace, root) in enumerate(zip(TRACE_IDS, ROOT_IDS, strict=True)):
        answer = "Paris" if n == 0 else "Lyon"
        spans.append(
            {
                "traceId": trace,
                "spanId": root,
                "name": "invoke_agent",
                "startTimeUnixNano": "1",
                "endTimeUnixNano": "9",
                "attributes": [
                    _attr("openinference.span.kind", "AGENT"),
                    _attr("input.value", "Capital of France?"),
                    _attr("output.value", answer),
                ],
            }
        )
        spans.append(
            {
                "traceId": trace,
                "spanId": f"{n + 1:016x}",
                "parentSpanId": root,
                "name": "execute_tool search",
                "startTimeUnixNano": "2",
                "endTimeUnixNano": "3",
                "attributes": [
                    _attr("gen_ai.operation.name", "execute_tool"),
                    _attr("gen_ai.tool.name", "search"),
                ],
            }
        )
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    return path


GRADER = {
    "type": "string_check",
    "name": "capital",
    "operation": "eq",
    "input": "{{ sample.output_text }}",
    "reference": "Paris",
}


def parse_request(doc: dict[str, Any]) -> Any:
    """``doc`` as OTLP's ExportLogsServiceRequest: trace and span ids are hex in OTLP/JSON
    (not protobuf JSON's base64), as every OTLP receiver reads them; anything else must be
    a field of the message (unknown fields are refused)."""
    for rl in doc["resourceLogs"]:
        for sl in rl["scopeLogs"]:
            for rec in sl["logRecords"]:
                for key in ("traceId", "spanId"):
                    if key in rec:
                        rec[key] = base64.b64encode(bytes.fromhex(rec[key])).decode()
    return json_format.ParseDict(doc, logs_service.ExportLogsServiceRequest())


def _events(request: Any) -> list[Any]:
    return [r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]


def _attrs(record: Any) -> dict[str, Any]:
    out = {}
    for kv in record.attributes:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which)
    return out


def _items(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    items = tmp_path / "items.jsonl"
    code, text = cli(["traces", str(_traces(tmp_path / "spans.json")), "--out", str(items)], capsys)
    assert code == 0, text
    grader = tmp_path / "grader.json"
    grader.write_text(json.dumps(GRADER))
    return items, grader


def test_otel_file_is_otlp_json_linked_to_the_evaluated_spans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items, grader = _items(tmp_path, capsys)
    target = tmp_path / "otel" / "evals.jsonl"
    code, text = cli(
        [
            "judge",
            str(items),
            "--grader",
            str(grader),
            "--response-field",
            "final_answer",
            "--out",
            str(tmp_path / "run"),
            "--otel",
            str(target),
        ],
        capsys,
    )
    assert code == 0, text
    assert "2 gen_ai.evaluation.result events" in text
    [line] = target.read_text().splitlines()
    request = parse_request(json.loads(line))
    events = _events(request)
    assert [e.event_name for e in events] == ["gen_ai.evaluation.result"] * 2
    assert [e.trace_id.hex() for e in events] == TRACE_IDS
    assert [e.span_id.hex() for e in events] == ROOT_IDS
    first, second = (_attrs(e) for e in events)
    assert first["gen_ai.evaluation.name"] == "capital"
    assert (first["gen_ai.evaluation.score.value"], first["gen_ai.evaluation.score.label"]) == (
        1.0,
        "pass",
    )
    assert (second["gen_ai.evaluation.score.value"], second["gen_ai.evaluation.score.label"]) == (
        0.0,
        "fail",
    )
    assert first["gen_ai.evaluation.explanation"].startswith("capital: eq")
    assert first["jurist.item.id"] == TRACE_IDS[0]
    resource = {
        kv.key: kv.value.string_value for kv in request.resource_logs[0].resource.attributes
    }
    assert resource == {"service.name": "jurist"}


class OTLPReceiver(Loopback):
    """An OTLP/HTTP logs receiver: parses each body as ExportLogsServiceRequest and answers
    an ExportLogsServiceResponse (rejecting ``reject`` records in a partial success)."""

    def __init__(self, reject: int = 0) -> None:
        super().__init__(self._handle, path="/v1/logs", shutdown_timeout=0.5)
        self.requests: list[Any] = []
        self.reject = reject

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        assert request.content_type == "application/json"
        self.requests.append(parse_request(await request.json()))
        answer = logs_service.ExportLogsServiceResponse()
        if self.reject:
            answer.partial_success.rejected_log_records = self.reject
            answer.partial_success.error_message = "quota"
        return web.json_response(json_format.MessageToDict(answer))


def test_otel_url_posts_otlp_http_json_to_a_receiver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"answer": "Paris" if i % 3 else "Rome"} for i in range(2500)]
    data = write(tmp_path / "data.jsonl", rows)
    grader = tmp_path / "grader.json"
    grader.write_text(json.dumps(GRADER))
    with OTLPReceiver() as receiver:
        code, text = cli(
            [
                "judge",
                str(data),
                "--grader",
                str(grader),
                "--response-field",
                "answer",
                "--out",
                str(tmp_path / "run"),
                "--otel",
                receiver.base_url.removesuffix("/v1"),
            ],
            capsys,
        )
        requests = list(receiver.requests)
    assert code == 0, text
    assert [len(_events(r)) for r in requests] == [1000, 1000, 500]
    events = [e for r in requests for e in _events(r)]
    assert all(e.event_name == "gen_ai.evaluation.result" and not e.trace_id for e in events)
    values = [_attrs(e)["gen_ai.evaluation.score.value"] for e in events]
    assert values == [0.0 if i % 3 == 0 else 1.0 for i in range(2500)]


def test_a_collector_that_rejects_events_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write(tmp_path / "data.jsonl", [{"answer": "Paris"}])
    grader = tmp_path / "grader.json"
    grader.write_text(json.dumps(GRADER))
    with OTLPReceiver(reject=1) as receiver:
        code, text = cli(
            [
                "judge",
                str(data),
                "--grader",
                str(grader),
                "--response-field",
                "answer",
                "--out",
                str(tmp_path / "run"),
                "--otel",
                receiver.base_url + "/logs",
            ],
            capsys,
        )
    assert code != 0 and "rejected 1 events: quota" in text


def test_a_failed_judgment_carries_its_error_type(tmp_path: Path) -> None:
    from jurist.runs._otel import evaluation_record

    rec = evaluation_record(
        {"idx": 3, "item": {}, "score": None, "error": "parse: no verdict", "outcome": {}},
        "likert",
        1,
    )
    keys = {a["key"]: a["value"] for a in rec["attributes"]}
    assert keys["error.type"] == {"stringValue": "parse"}
    assert "gen_ai.evaluation.score.value" not in keys and "traceId" not in rec
