"""A recorded rubric judge for the flight-booking traces of tests/fixtures/traces, served as an
OpenAI-compatible endpoint on 127.0.0.1: its verdicts on the two LLM criteria of
``flight_rubric.yaml`` (c1 cheapest_direct, c2 grounded_answer), read off the trajectory
it is shown. It keeps every request body, to check what it received."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from tests._fault_server import _completion
from tests._loopback import Loopback

__all__ = ["FlightJudge"]


class FlightJudge(Loopback):
    """A recorded rubric judge: its verdicts on the two LLM criteria, read off the
    trajectory it is shown; it keeps every request body to check what it received."""

    def __init__(self) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.bodies: list[dict[str, Any]] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        user = body["messages"][-1]["content"]
        cheapest = 'book_flight({"flight_id": "IB3234"' in user
        false_claim = "FR8312, a direct flight" in user or "AZ61 on 3 April, the cheapest" in user
        answer = {
            "c1": {"explanation": "books IB3234" if cheapest else "not the 89 EUR IB3234",
                   "verdict": "MET" if cheapest else "UNMET"},
            "c2": {"explanation": "claims what the results contradict" if false_claim
                   else "matches the results", "verdict": "UNMET" if false_claim else "MET"},
        }  # fmt: skip
        return web.json_response(_completion(body, json.dumps(answer)))
