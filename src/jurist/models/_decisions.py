"""Decisions a model (or a judge, about a model) takes during a run, as data.

Some choices are made from a server's answers while a run goes on, and change the
requests sent after them: the openai backend steps its JSON form down when a server
refuses one (:class:`~jurist.models._json_form.JsonFormDecision`), and a judge with
``output="auto"`` stops asking for JSON after a model answered in text a few times
(:mod:`jurist.judges._output`). A resumed run must start from what the killed one had
learnt, or it builds other requests (other prompts, other cache keys) and pays again for
what was already found out.

Each such holder is a :class:`Decider`: :meth:`Decider.decisions` gives what it decided
as JSON (``{}`` while nothing is decided), :meth:`Decider.restore_decisions` takes such
data back (a resumed run, another process), and :meth:`Decider.listen` calls a function
each time a decision is taken, so an engine can record it at once. A model names its
deciders with :meth:`~jurist.models.Model.deciders` (a wrapper gives its wrapped model's);
nothing reads their fields.

>>> class Switch(Announcer):
...     def __init__(self) -> None:
...         super().__init__()
...         self.on = False
...     def decisions(self) -> dict[str, Any]:
...         return {"on": True} if self.on else {}
...     def restore_decisions(self, kept: Mapping[str, Any]) -> bool:
...         self.on = bool(kept.get("on"))
...         return True
>>> switch, heard = Switch(), []
>>> stop = switch.listen(lambda: heard.append(switch.decisions()))
>>> switch.on = True; switch.announce()
>>> stop(); switch.announce()
>>> heard
[{'on': True}]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["Announcer", "Decider", "Listener"]

Listener = Callable[[], None]
"""Called (with no arguments) after a decider took a decision; it reads what it needs."""


@runtime_checkable
class Decider(Protocol):
    """Something that takes decisions during a run and gives them as data."""

    def decisions(self) -> dict[str, Any]:
        """What was decided, as JSON-able data (``{}``: nothing yet)."""
        ...

    def restore_decisions(self, kept: Mapping[str, Any]) -> bool:
        """Take back what :meth:`decisions` gave (in another session or process);
        ``False`` when it does not apply to this object's configuration (kept as is)."""
        ...

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` after each decision from now on; returns the way to stop."""
        ...


class Announcer:
    """The listeners of a :class:`Decider`: ``listen`` and ``announce``. Listeners stay
    in this process: a copy pickled elsewhere (a Ray actor) starts with none."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._listeners_lock = threading.Lock()

    def listen(self, listener: Listener) -> Callable[[], None]:
        with self._listeners_lock:
            self._listeners.append(listener)

        def stop() -> None:
            with self._listeners_lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return stop

    def announce(self) -> None:
        """Tell every listener a decision was taken (outside any lock of the decider)."""
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def _without_listeners(self, state: dict[str, Any]) -> dict[str, Any]:
        """``state`` (a ``vars()`` copy for pickling) less the listeners and their lock."""
        return {k: v for k, v in state.items() if k not in ("_listeners", "_listeners_lock")}

    def _fresh_listeners(self) -> None:
        self._listeners = []
        self._listeners_lock = threading.Lock()
