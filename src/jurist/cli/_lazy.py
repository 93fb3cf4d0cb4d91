"""Commands imported when they are used: start-up in proportion to the work.

The ``jurist`` app knows its commands by name (:class:`LazyCommand`: the module that
defines the command, its one-line help and its help panel) and imports a command's module
only when that command runs or shows its own help. ``jurist --version`` and
``jurist --help`` import no command; ``jurist judge --help`` imports ``judge``'s module
alone, and that module imports the engines, the run store and the models only inside the
functions that use them.

A command module registers on the app as before (``@app.command("judge")``);
:class:`LazyGroup` imports the module on first use of the name and builds the click
command from what the module registered, as typer builds every command of an app.
``group.commands`` is a mapping whose keys cost nothing and whose values import, so code
that walks every command (a test that checks every flag) still sees them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
import typer.main

from jurist.cli._help import HelpGroup, JuristTyper

__all__ = ["LazyCommand", "LazyGroup", "LazyTyper"]


@dataclass(frozen=True)
class LazyCommand:
    """A command known by name before its module is imported."""

    name: str
    """The command's name on the command line (``eval-model``)."""
    module: str
    """The module that registers it on the app (``jurist.cli._eval_model``)."""
    help: str
    """Its one-line help in ``jurist --help``: the first paragraph of its own help."""
    panel: str
    """The group of commands it is listed under in ``jurist --help``."""


class _Commands(MutableMapping[str, Any]):
    """A group's commands: the names of the lazy ones and those already built; reading a
    lazy one imports its module."""

    def __init__(self, group: LazyGroup, built: MutableMapping[str, Any]) -> None:
        self._group = group
        self._built = dict(built)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._group.lazy:
                raise KeyError(name)
            self._built[name] = self._group.load(name)
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._group.lazy
        yield from (n for n in self._built if n not in self._group.lazy)

    def __len__(self) -> int:
        return len({*self._group.lazy, *self._built})

    def __contains__(self, name: object) -> bool:
        return name in self._group.lazy or name in self._built


class LazyGroup(HelpGroup):
    """The click group of a :class:`LazyTyper`: names from the registry, commands built
    from their modules when first asked for. (Subclassed once per app, which sets
    :attr:`source` and :attr:`lazy`.)"""

    source: ClassVar[typer.Typer]
    """The typer app the command modules register on."""
    lazy: ClassVar[dict[str, LazyCommand]]
    """The registry, in the order ``jurist --help`` lists it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands(self, self.commands)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # the names only: nothing is imported

    def rows(self, ctx: Any) -> list[tuple[str, str, str]]:
        """``(panel, name, one-line help)`` per command, in order, importing none of the
        registered ones."""
        out = []
        for name in self.list_commands(ctx):
            entry = self.lazy.get(name)
            row = (entry.panel, name, entry.help) if entry is not None else self.row(ctx, name)
            if row is not None:
                out.append(row)
        return out

    def load(self, name: str) -> Any:
        """Import the module of command ``name`` and build the click command it registered."""
        entry = self.lazy[name]
        importlib.import_module(entry.module)
        app = self.source
        for info in app.registered_commands:
            assert info.callback is not None
            if (info.name or typer.main.get_command_name(info.callback.__name__)) == name:
                return typer.main.get_command_from_info(
                    info,
                    pretty_exceptions_short=app.pretty_exceptions_short,
                    rich_markup_mode=app.rich_markup_mode,
                )
        for group in app.registered_groups:
            built = typer.main.get_group_from_info(
                group,
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode,
                suggest_commands=app.suggest_commands,
            )
            if built.name == name:
                return built
        raise LookupError(f"{entry.module} registers no command {name!r} on the app")


class LazyTyper(JuristTyper):
    """A :class:`~jurist.cli._help.JuristTyper` whose commands are ``commands``, each
    imported on first use."""

    def __init__(self, *args: Any, commands: Sequence[LazyCommand], **kwargs: Any) -> None:
        registry = {c.name: c for c in commands}
        if len(registry) != len(commands):
            raise ValueError("a command name is registered twice")
        group = type("LazyGroup", (LazyGroup,), {"source": self, "lazy": registry})
        super().__init__(*args, cls=group, **kwargs)
