"""JSON output that degrades instead of failing, for ``LLMJudge(output="auto")``.

With ``output="auto"`` a judge asks a backend that takes a JSON schema for one JSON object.
Some OpenAI-compatible servers ignore ``response_format`` (``transformers serve``, several
gateways and proxies) and answer in text. Under ``auto`` such a reply is read with the
template's text format instead of failing and being re-asked, and the judgment records
it: ``output_format="text"`` and an ``output_note``. After :data:`TEXT_REPLIES_TO_STOP`
text replies in a row from one model object, the judges holding that object stop asking
it for JSON (no schema, the template's text format in the system message), say so once
in the log, and note it on each judgment. A JSON reply resets the count. ``output="json"``
stays strict: a text reply is a parse failure.

The count lives here, keyed by the backend object under any wrappers (weakly, so it goes
with the model): judges are immutable configuration, and every judge built on one model,
paced, retried, cached or batched, shares what was learnt about its server. Turning JSON
off is a decision of the run (:class:`~jurist.models._decisions.Decider`): the engine
records it in the run store when it is taken and restores it on resume
(:mod:`jurist.judges._state`), so a resumed run asks in text from its first request.

>>> from jurist.models import MockModel
>>> model = MockModel(json_schema=True)
>>> state = output_state(model)
>>> [state.saw_text() for _ in range(TEXT_REPLIES_TO_STOP)]
[False, False, True]
>>> state.json_off, output_state(model) is state
(True, True)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jurist._secrets import get_logger
from jurist.models import Model, WrapperModel
from jurist.models._decisions import Announcer
from jurist.templates._json import find_json_object
from jurist.templates._parse import split_reasoning

__all__ = [
    "TEXT_REPLIES_TO_STOP",
    "OutputState",
    "holds_json",
    "joined_notes",
    "json_off_note",
    "output_state",
    "text_read_note",
]

TEXT_REPLIES_TO_STOP = 3
"""Text replies in a row (to requests for JSON) after which a model is asked for text."""

logger = get_logger("jurist.judges")


@dataclass
class OutputState(Announcer):
    """What one model object's replies showed about its JSON output."""

    spec: str
    text_in_a_row: int = 0
    json_off: bool = False
    held: bool = False
    """Decide, but keep building requests as before until :meth:`hold` ``(False)`` (an
    engine that replays its requests by identity: the batch API)."""
    _held_off: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        Announcer.__init__(self)

    def saw_text(self) -> bool:
        """Count a text reply to a request for JSON; True when this one turns JSON off
        (or, while held, decides to)."""
        with self._lock:
            self.text_in_a_row += 1
            if self.json_off or self._held_off or self.text_in_a_row < TEXT_REPLIES_TO_STOP:
                return False
            if self.held:
                self._held_off = True
            else:
                self.json_off = True
            held = self.held
        # a decision taken and recorded (in each judgment's output_note and the run's
        # decisions), not a fault: info, not a warning every framework run would print
        if held:
            logger.info(
                "%s answered %d requests for JSON in a row with text: recorded; the batch "
                "engine keeps asking for JSON in this run, so that a resumed run sends the "
                "very requests this one did",
                self.spec,
                TEXT_REPLIES_TO_STOP,
            )
        else:
            logger.info(json_off_note(self.spec))
        self.announce()
        return True

    def hold(self, on: bool) -> None:
        """Hold the decision (``True``): taken and recorded, not acted on; ``False``: act
        on one held since."""
        with self._lock:
            self.held = on
            if not on and self._held_off:
                self.json_off, self._held_off = True, False

    def decisions(self) -> dict[str, Any]:
        """``{"json_off": True}`` once JSON output is off for this model (or decided to
        be, while held), else ``{}``."""
        return {"json_off": True} if self.json_off or self._held_off else {}

    def restore_decisions(self, kept: Mapping[str, Any]) -> bool:
        """Take back :meth:`decisions` of an earlier session (JSON output off from the
        first request); the count of text replies starts again."""
        if not isinstance(kept.get("json_off"), bool):
            return False
        with self._lock:
            if self.held:
                self._held_off = kept["json_off"]
            else:
                self.json_off = kept["json_off"]
        return True

    def saw_json(self) -> None:
        """A JSON reply: the server honours the schema; the count starts again."""
        with self._lock:
            self.text_in_a_row = 0


_STATES: weakref.WeakKeyDictionary[Model, OutputState] = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()


def output_state(model: Model) -> OutputState:
    """The (shared) output state of ``model``'s backend, under any wrappers, created on
    first use.

    >>> from jurist.models import MockModel, RetryModel
    >>> backend = MockModel(json_schema=True)
    >>> output_state(RetryModel(backend)) is output_state(backend)
    True
    """
    backend = model.innermost if isinstance(model, WrapperModel) else model
    with _STATES_LOCK:
        state = _STATES.get(backend)
        if state is None:
            state = _STATES[backend] = OutputState(backend.spec)
        return state


def holds_json(text: str) -> bool:
    """Whether the answer in ``text`` (a ``<think>`` block aside) is a JSON object.

    >>> holds_json('```json\\n{"verdict": 4}\\n```'), holds_json("Score: 4")
    (True, False)
    """
    return find_json_object(split_reasoning(text)[0]) is not None


def joined_notes(*notes: str | None) -> str | None:
    """The notes that are set, in order, as one ``output_note`` (``None`` if none is).

    >>> joined_notes("the server refuses json_schema", None), joined_notes(None, None)
    ('the server refuses json_schema', None)
    """
    present = [n for n in notes if n]
    return "; ".join(present) if present else None


def text_read_note(spec: str) -> str:
    """The note on a judgment whose text reply (to a request for JSON) was read as text."""
    return (
        f"{spec} was asked for JSON and answered in text (does the server ignore "
        "response_format?): read with the template's text format"
    )


def json_off_note(spec: str) -> str:
    """The note on judgments made after JSON output was turned off for ``spec``."""
    return (
        f"{spec} answered {TEXT_REPLIES_TO_STOP} requests for JSON in a row with text: "
        "JSON output is off for this model, it is asked for the template's text format"
    )
