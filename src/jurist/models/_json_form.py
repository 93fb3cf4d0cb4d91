"""How the openai backend sends ``Request.json_schema``, and what it does when a server
refuses that form.

Servers take a JSON schema in different forms (``response_format``):

- ``json_schema``: OpenAI's ``{"type": "json_schema", "json_schema": {"name", "schema",
  "strict"}}``, which OpenAI, vLLM and llama.cpp's ``llama-server`` take;
- ``json_object``: ``{"type": "json_object", "schema": ...}``, the form llama-cpp-python's
  server takes (it answers the other with an HTTP 500 naming ``json_schema``);
- ``text``: no ``response_format`` at all; the reply is not constrained (the judge's
  prompt still asks for JSON).

A backend starts at the form it was configured with (``json_mode``) and falls back one
step, ``json_schema`` -> ``json_object`` -> ``text``, when its server refuses a form: an
HTTP 400, 422, 500 or 501 whose message names both ``response_format`` and the refused
type (see :func:`refuses`). A refusal is deterministic
(:class:`~jurist.errors.UnsupportedRequestError`, never retried); the request is sent
again at once in the next form, and that refused request counts in its ``attempts``.

The decision is taken once per backend object and shared by all its calls: until a form
has been answered once (a 2xx), one request at a time per event loop is sent in it (the
probe) and the others wait for its answer, so a thousand concurrent items cost one
refused request per refused form, not a thousand. Each step is logged once, with the
``json_mode`` that starts there, and every completion sent in a fallback form carries
:attr:`~jurist.types.Completion.format_note`, which judges copy to their
``output_note`` (so the run summary counts it). A form the server has answered is never
given up: a later error naming it is the error it is.

:class:`JsonFormDecision` holds that decision (``form``, ``answered``, ``refused``), and
nothing else does.

>>> decision = JsonFormDecision("openai:tiny", "json_schema")
>>> refuses(500, "('body', 'response_format', 'type') ... input: 'json_schema'", "json_schema")
True
>>> refuses(500, "CUDA out of memory", "json_schema")
False
>>> decision.fall_back("json_schema", "openai:tiny: URL refuses response_format json_schema")
'json_object'
>>> decision.note_for("json_object")
'openai:tiny: the server refuses response_format json_schema; the JSON schema was sent as json_object (json_mode="json_object", --json-mode json_object, starts there)'
"""  # noqa: E501

from __future__ import annotations

import asyncio
import re
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from jurist._secrets import get_logger
from jurist.errors import ModelError, UnsupportedRequestError
from jurist.models._decisions import Announcer
from jurist.types import Completion

__all__ = ["JsonForm", "JsonFormDecision", "one_line", "refuses", "response_format"]

JsonForm = Literal["json_schema", "json_object", "text"]
"""How a JSON schema travels: OpenAI's form, llama-cpp-python's form, or not at all."""

# How long a call waits for the probe of an unproven form before it goes out as a probe of
# its own. A refusal is a validation error, answered before any generation (milliseconds on
# a local server, a round trip on a remote one); a probe still out after this is most likely
# being generated, so holding the other calls longer would only make a slow or hung first
# request (a judgment's own deadline, a server hiccup) everyone's. A call that goes ahead
# and is refused too falls back like the probe: at most the calls started in that window.
PROBE_WAIT_S = 0.1

_NEXT: dict[JsonForm, JsonForm] = {"json_schema": "json_object", "json_object": "text"}
_REFUSAL_STATUS = frozenset({400, 422, 500, 501})
_SCHEMA_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_HINT: dict[JsonForm, str] = {
    "json_object": 'json_mode="json_object", --json-mode json_object',
    "text": "json_mode=None, --json-mode none",
}

logger = get_logger("jurist.models")  # its filter scrubs keys from every record

SendAs = Callable[[JsonForm, bool], Awaitable[Completion]]
"""Sends one request with its schema in a form; ``True``: read a refusal as one."""


def response_format(form: JsonForm, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` body field that carries ``schema`` in ``form``.

    >>> response_format("json_object", {"type": "object"})
    {'type': 'json_object', 'schema': {'type': 'object'}}
    >>> response_format("text", {"type": "object"}) is None
    True
    """
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    if form == "json_schema":
        title = schema.get("title")
        name = title if isinstance(title, str) and _SCHEMA_NAME.fullmatch(title) else "output"
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": True},
        }
    return None


def refuses(status: int, detail: str, form: JsonForm) -> bool:
    """Whether an error answer (``status``, message ``detail``) to a request sent with
    ``response_format`` in ``form`` says the server does not take that form.

    It must be a 400, 422, 500 or 501 whose message names both ``response_format`` and the
    type (``'json_schema'``): llama-cpp-python's HTTP 500, TGI's "unknown variant
    `json_schema`", OpenAI's "'response_format' of type 'json_schema' is not supported
    with this model". A plain 500, an overload, or a schema the server finds invalid
    (OpenAI's "Invalid schema for response_format 'output'") is not a refusal.

    >>> refuses(400, "Invalid schema for response_format 'output': 'x' is required", "json_schema")
    False
    >>> refuses(503, "response_format json_schema: busy", "json_schema")
    False
    """
    return (
        form != "text"
        and status in _REFUSAL_STATUS
        and "response_format" in detail
        and form in detail
    )


class JsonFormDecision(Announcer):
    """The JSON form one backend object sends, and what its server's answers decided.

    ``form``: the form sent now; ``answered``: the form a server has answered (2xx), or
    ``None`` before the first answer; ``refused``: each refused form with the server's
    reason. Thread-safe; :meth:`send` coordinates the calls of one event loop. A
    :class:`~jurist.models._decisions.Decider`: a run records :meth:`decisions` as they
    are taken and a resumed run restores them, so it sends no request a server refused.
    """

    def __init__(self, spec: str, start: JsonForm) -> None:
        super().__init__()
        self.spec = spec
        self.start: JsonForm = start
        self.form: JsonForm = start
        self.answered: JsonForm | None = None
        self.refused: dict[JsonForm, str] = {}
        self._lock = threading.Lock()
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    def __getstate__(self) -> dict[str, object]:
        """A copy in another process keeps what was decided, not the locks or listeners."""
        kept = self._without_listeners(vars(self))
        return {k: v for k, v in kept.items() if k not in ("_lock", "_gates")}

    def __setstate__(self, state: dict[str, object]) -> None:
        vars(self).update(state)
        self._lock = threading.Lock()
        self._gates = weakref.WeakKeyDictionary()
        self._fresh_listeners()

    def __repr__(self) -> str:
        return f"JsonFormDecision({self.spec!r}, form={self.form!r}, answered={self.answered!r})"

    # -- the calls -------------------------------------------------------------------------

    async def send(self, send_as: SendAs, *, probe: bool = True) -> Completion:
        """Send one request that carries a JSON schema through ``send_as(form, probing)``,
        falling back a form each time the server refuses one.

        ``probe=False`` (a batch engine collects the request) sends it in the current
        form without waiting for a probe. The refused requests count in the completion's
        ``attempts`` (or in the error's, when the last try fails).
        """
        refused = 0
        try:
            while True:
                form = self.form
                if not probe or self._settled(form):
                    return self._marked(await send_as(form, False), form, refused)
                gate = self._gate()
                held = await _acquire_within(gate, PROBE_WAIT_S)
                try:
                    form = self.form
                    if self._settled(form):
                        continue  # the probe before this call decided
                    try:
                        done = await send_as(form, True)
                    except UnsupportedRequestError as error:
                        refused += 1
                        self.fall_back(form, str(error))
                        continue
                    with self._lock:
                        first = self.answered is None
                        self.answered = self.answered or form
                    if first:
                        self.announce()
                finally:
                    if held:
                        gate.release()
                return self._marked(done, form, refused)
        except ModelError as error:
            error.attempts += refused
            raise

    def _settled(self, form: JsonForm) -> bool:
        return form == "text" or self.answered == form

    def _gate(self) -> asyncio.Lock:
        """This event loop's probe lock: one request in an unproven form at a time."""
        loop = asyncio.get_running_loop()
        with self._lock:
            gate = self._gates.get(loop)
            if gate is None:
                gate = self._gates[loop] = asyncio.Lock()
            return gate

    def _marked(self, done: Completion, form: JsonForm, refused: int) -> Completion:
        note = self.note_for(form)
        if note is None and not refused:
            return done
        return done.model_copy(update={"attempts": done.attempts + refused, "format_note": note})

    # -- the decision ----------------------------------------------------------------------

    def fall_back(self, form: JsonForm, reason: str) -> JsonForm:
        """Record that the server refused ``form`` (for ``reason``) and step to the next
        form; log it once. Returns the form sent from now on."""
        with self._lock:
            if self.form != form or form == "text" or self.answered == form:
                return self.form  # another loop's probe decided already
            self.refused[form] = reason
            self.form = _NEXT[form]
            now = self.form
        what = (
            "JSON schemas are sent as json_object from now on"
            if now == "json_object"
            else "requests are sent without response_format from now on (not constrained)"
        )
        logger.warning("%s; %s. Set %s to start there.", one_line(reason), what, _HINT[now])
        self.announce()
        return now

    # -- as data (a run records it; a resumed run restores it) -----------------------------

    def decisions(self) -> dict[str, Any]:
        """What the server's answers decided: ``{}`` before any, else the form started
        at, the form sent now, the form answered and the refused forms with reasons.

        >>> decision = JsonFormDecision("openai:x", "json_schema")
        >>> decision.decisions()
        {}
        >>> _ = decision.fall_back("json_schema", "refused")
        >>> decision.decisions()["form"], decision.decisions()["refused"]
        ('json_object', {'json_schema': 'refused'})
        """
        with self._lock:
            if self.answered is None and not self.refused:
                return {}
            return {
                "start": self.start,
                "form": self.form,
                "answered": self.answered,
                "refused": dict(self.refused),
            }

    def restore_decisions(self, kept: Mapping[str, Any]) -> bool:
        """Take back :meth:`decisions` from an earlier session: the calls go out in the
        form it had reached, without probing the forms it saw refused. ``False`` (nothing
        changed) when this backend starts at another form (``json_mode`` changed since:
        the new setting wins) or ``kept`` is not such data.

        >>> decision = JsonFormDecision("openai:x", "json_schema")
        >>> decision.restore_decisions({"start": "json_schema", "form": "json_object",
        ...     "answered": "json_object", "refused": {"json_schema": "HTTP 500"}})
        True
        >>> decision.form, decision.note_for("json_object") is not None
        ('json_object', True)
        >>> JsonFormDecision("openai:x", "json_object").restore_decisions(
        ...     {"start": "json_schema", "form": "json_object"})
        False
        """
        start, form, answered = kept.get("start"), kept.get("form"), kept.get("answered")
        refused = kept.get("refused") or {}
        forms = ("json_schema", "json_object", "text")
        if (
            start != self.start
            or form not in forms
            or (answered is not None and answered not in forms)
            or not isinstance(refused, Mapping)
            or any(f not in forms for f in refused)
        ):
            return False
        with self._lock:
            self.form = form
            self.answered = answered
            self.refused = {f: str(why) for f, why in refused.items()}
        return True

    def note_for(self, form: JsonForm) -> str | None:
        """The note on a completion sent in ``form``: ``None`` for the configured form.

        >>> JsonFormDecision("openai:x", "json_object").note_for("json_object") is None
        True
        """
        if form == self.start:
            return None
        refused = [f for f in ("json_schema", "json_object") if f in self.refused]
        sent = (
            "the JSON schema was sent as json_object"
            if form == "json_object"
            else "requests were sent without a JSON schema (replies not constrained)"
        )
        return (
            f"{self.spec}: the server refuses response_format {' and '.join(refused)}; "
            f"{sent} ({_HINT[form]}, starts there)"
        )


async def _acquire_within(lock: asyncio.Lock, seconds: float) -> bool:
    """Take ``lock`` if it comes free within ``seconds``; whether it was taken."""
    try:
        async with asyncio.timeout(seconds):  # no lost wake-up: a lock taken stays taken
            await lock.acquire()
    except TimeoutError:
        return False
    return True


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line, cut to ``limit`` characters (a server's message may hold a
    traceback).

    >>> one_line("1 validation error:\\n  {'loc': ('body', 'response_format')}\\n  File ...", 50)
    "1 validation error: {'loc': ('body', 'response_..."
    """
    line = " ".join(text.split()) or "no reason given"
    return line if len(line) <= limit else line[: limit - 3] + "..."
