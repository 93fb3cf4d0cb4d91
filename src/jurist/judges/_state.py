"""A judge's decisions of one run, as data an engine records and a resumed run restores.

While a run goes on, a judge's models learn things about their servers that change the
requests sent after them (:mod:`jurist.models._decisions`): the openai backend's JSON form
(``json_form``: a server refused ``json_schema``, the schema goes as ``json_object``) and,
for ``output="auto"``, that a model answers requests for JSON in text (``output``: JSON
output off, the template's text format asked for). :class:`JudgeState` gathers them over
the judge's models, in the order of ``models()``:

- :meth:`JudgeState.snapshot`: what is decided, ``[{"model": spec, "decisions": {name:
  data}}, ...]``, one entry per model position (JSON, for the run store);
- :meth:`JudgeState.restore`: takes a snapshot back before the first item of a resumed
  session, so the session builds the very requests the killed one would have;
- :meth:`JudgeState.listen`: calls a function each time a decision is taken, so the engine
  records it at once (the engine hands the function in; nothing here knows an engine).

>>> from jurist._sync import run_sync
>>> from jurist.judges import LLMJudge
>>> from jurist.models import MockModel
>>> judge = LLMJudge(MockModel("j", json_schema=True, outputs=["Correct"] * 3))
>>> state, heard = JudgeState(judge), []
>>> stop = state.listen(lambda: heard.append(state.snapshot()))
>>> [run_sync(judge.judge({"prompt": "2+2?", "response": "4"})).score for _ in range(3)]
[1.0, 1.0, 1.0]
>>> stop(); heard
[[{'model': 'mock:j', 'decisions': {'output': {'json_off': True}}}]]
>>> again = LLMJudge(MockModel("j", json_schema=True))
>>> JudgeState(again).restore(heard[0])
['mock:j: output restored (JSON output off)']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jurist._secrets import get_logger
from jurist.judges._output import OutputState, output_state
from jurist.judges._protocol import models_of
from jurist.models import Model
from jurist.models._decisions import Decider, Listener

__all__ = ["JudgeState", "decision_lines"]

logger = get_logger("jurist.judges")


def _deciders(model: Model) -> dict[str, Decider]:
    """Every decider about ``model``: its backend's, and the judges' output state."""
    return {**model.deciders(), "output": output_state(model)}


class JudgeState:
    """The run decisions of ``judge``'s models (see the module's docs)."""

    def __init__(self, judge: Any) -> None:
        self.models = models_of(judge)
        self._deciders = [_deciders(m) for m in self.models]

    def snapshot(self) -> list[dict[str, Any]]:
        """What each model position has decided so far (``[]`` when nothing is)."""
        out: list[dict[str, Any]] = []
        for model, deciders in zip(self.models, self._deciders, strict=True):
            taken = {name: d.decisions() for name, d in deciders.items()}
            out.append({"model": model.spec, "decisions": {k: v for k, v in taken.items() if v}})
        return out if any(entry["decisions"] for entry in out) else []

    def restore(self, kept: Any) -> list[str]:
        """Take back a :meth:`snapshot` of an earlier session of the run; one line per
        decision, restored or not (a model at that position with another spec, a setting
        changed since: the new setting wins). ``None`` or ``[]``: nothing to restore."""
        lines: list[str] = []
        if not isinstance(kept, list):
            return lines
        for position, entry in enumerate(kept):
            decisions = entry.get("decisions") if isinstance(entry, dict) else None
            if not decisions:
                continue
            spec = str(entry.get("model"))
            if position >= len(self.models) or self.models[position].spec != spec:
                lines.append(f"{spec}: not restored (the judge has no such model there now)")
                continue
            deciders = self._deciders[position]
            for name, data in decisions.items():
                decider = deciders.get(name)
                done = (
                    decider is not None
                    and isinstance(data, dict)
                    and decider.restore_decisions(data)
                )
                what = _what(name, data) if isinstance(data, dict) else str(data)
                lines.append(
                    f"{spec}: {name} restored ({what})"
                    if done
                    else f"{spec}: {name} not restored ({what}; its setting changed since)"
                )
        for line in lines:
            logger.info("resumed run: %s", line)
        return lines

    def hold(self, on: bool) -> None:
        """Hold the judges' output decisions (``True``): a model that answers in text is
        still recorded as one, but the requests stay as they are built now, so an engine
        that finds its earlier requests again by their identity (the batch API, replaying
        a killed session) builds every one of them again alike; ``False`` acts on what was
        held. The JSON form is never held: a refused form cannot be sent again."""
        for deciders in self._deciders:
            output = deciders["output"]
            if isinstance(output, OutputState):
                output.hold(on)

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` after each decision any of the models takes; returns the way
        to stop (each decider is listened to once, however many positions share it)."""
        stops: list[Callable[[], None]] = []
        seen: set[int] = set()
        for deciders in self._deciders:
            for decider in deciders.values():
                if id(decider) not in seen:
                    seen.add(id(decider))
                    stops.append(decider.listen(listener))

        def stop() -> None:
            for one in stops:
                one()

        return stop


def _what(name: str, data: dict[str, Any]) -> str:
    """A decision in words.

    >>> _what("json_form", {"form": "json_object", "refused": {"json_schema": "HTTP 500"}})
    'JSON schemas sent as json_object; refused: json_schema'
    """
    if name == "output" and data.get("json_off"):
        return "JSON output off"
    if name == "json_form":
        form = data.get("form")
        sent = (
            "requests sent without response_format"
            if form == "text"
            else f"JSON schemas sent as {form}"
        )
        refused = ", ".join(data.get("refused") or {})
        return f"{sent}; refused: {refused}" if refused else sent
    return ", ".join(f"{k}={v}" for k, v in data.items())


def decision_lines(kept: Any) -> list[str]:
    """A stored :meth:`JudgeState.snapshot` in words, one line per decision (for the run
    summary and ``jurist report``).

    >>> decision_lines([{"model": "openai:x", "decisions": {"output": {"json_off": True},
    ...     "json_form": {"start": "json_schema", "form": "json_schema", "refused": {}}}}])
    ['openai:x: JSON output off']
    """
    if not isinstance(kept, list):
        return []
    return [
        f"{entry.get('model')}: {_what(name, data) if isinstance(data, dict) else data}"
        for entry in kept
        if isinstance(entry, dict)
        for name, data in (entry.get("decisions") or {}).items()
        if not _as_configured(name, data)
    ]


def _as_configured(name: str, data: Any) -> bool:
    """A JSON form the server took as configured (recorded so a resumed run does not
    probe it again; nothing to tell)."""
    return name == "json_form" and isinstance(data, dict) and not data.get("refused")
