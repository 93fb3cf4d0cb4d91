"""Command help that reads at 80 columns: every name, default and choice in full.

Typer's help puts each option on one table row (names, type, help side by side); at 80
columns the names and defaults are cut (``true_false_uncer…``) and every flag shows a
``<bool>``. Here each option takes a line of its own, ``--name METAVAR`` (a flag shows
``--name / --no-name``, an option with fixed values lists them: ``--scoring
parse|logprobs|auto``), with its help, default and range wrapped below it, in the same
panels (``rich_help_panel``). Nothing is truncated: long words fold.

:class:`HelpCommand` is the command class of every ``jurist`` command
(:class:`JuristTyper`, the class of :data:`jurist.cli._app.app`, makes it the default).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import typer.core
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.text import Text

from jurist.cli._choices import BUILTIN_TEMPLATES

__all__ = [
    "HelpCommand",
    "HelpGroup",
    "JuristTyper",
    "choices_metavar",
    "render_help",
    "template_help",
]

_F = TypeVar("_F", bound=Callable[..., Any])
_TYPES = {"str": "TEXT", "int": "INT", "float": "NUMBER", "path": "PATH", "bool": "BOOL"}


def choices_metavar(choices: tuple[str, ...] | list[str]) -> str:
    """The metavar listing an option's fixed values: ``a|b|c``."""
    return "|".join(choices)


def template_help(kind: str, lead: str = "Template name (see `jurist templates`).") -> str:
    """``lead`` and the built-in templates of ``kind`` (``single`` or ``pairwise``)."""
    names = BUILTIN_TEMPLATES[kind]
    return f"{lead} Built in: {', '.join(names)}; or a .yaml template file."


def _metavar(param: Any, ctx: Any) -> str:
    if param.metavar is not None:
        return str(param.metavar)
    display = getattr(param, "display_type", None)
    raw = str(display(ctx)) if display is not None else "text"
    raw = raw.strip("<>")
    if raw.startswith("list[") and raw.endswith("]"):
        raw = raw[5:-1]
    raw = raw.removesuffix(" range")
    if "|" in raw:  # a Choice / Literal type: its values
        return raw
    return _TYPES.get(raw, raw.upper())


def _is_flag(param: Any) -> bool:
    return bool(getattr(param, "is_flag", False)) or bool(param.secondary_opts)


def _default(param: Any, ctx: Any) -> str | None:
    if isinstance(param.show_default, str):
        return param.show_default
    if not (param.show_default or ctx.show_default) or param.required:
        return None
    value = param.default
    if callable(value):
        return None
    if _is_flag(param):
        if not param.secondary_opts:
            return None
        names = param.opts if value else param.secondary_opts
        return str(names[0]).lstrip("-")
    if value is None or value == "" or (isinstance(value, list | tuple) and not value):
        return None
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(getattr(value, "value", value))


def _range(param: Any) -> str | None:
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is None and high is None:
        return None
    if low is not None and high is not None:
        return f"{low}<=x<={high}"
    return f"x>={low}" if low is not None else f"x<={high}"


def _entry(param: Any, ctx: Any) -> RenderableType:
    head = Text(overflow="fold")
    if isinstance(param, typer.core.TyperArgument):
        head.append(str(param.metavar or param.name).upper(), style="bold cyan")
    else:
        head.append(", ".join(param.opts), style="bold cyan")
        if param.secondary_opts:
            head.append(" / ")
            head.append(", ".join(param.secondary_opts), style="bold magenta")
        if not _is_flag(param):
            head.append(" ")
            head.append(_metavar(param, ctx), style="yellow")
    if param.required:
        head.append(" (required)", style="red")
    body = Text(overflow="fold")
    if param.help:
        body.append(" ".join(inspect.cleandoc(param.help).split()))
    notes = []
    if (span := _range(param)) is not None:
        notes.append(f"[{span}]")
    if (default := _default(param, ctx)) is not None:
        notes.append(f"[default: {default}]")
    if notes:
        if body:
            body.append(" ")
        body.append(" ".join(notes), style="dim")
    if not body:
        return head
    return Group(head, Padding(body, (0, 0, 0, 4)))


def _paragraphs(text: str) -> list[str]:
    out = []
    for block in inspect.cleandoc(text).split("\n\n"):
        if block.startswith("\b"):
            out.append(block.strip("\b\n"))
        else:
            out.append(" ".join(block.split()))
    return out


def render_help(command: Any, ctx: Any, console: Console) -> None:
    """Print ``command``'s help for ``ctx`` on ``console``."""
    arguments = [p for p in command.get_params(ctx) if isinstance(p, typer.core.TyperArgument)]
    usage = Text(overflow="fold")
    usage.append("Usage: ", style="yellow")
    usage.append(f"{ctx.command_path} [OPTIONS]", style="bold")
    for arg in arguments:
        name = str(arg.metavar or arg.name).upper()
        usage.append(f" {name}" if arg.required else f" [{name}]", style="bold")
    if isinstance(command, HelpGroup):
        usage.append(" COMMAND [ARGS]...", style="bold")
    console.print(Padding(usage, (1, 1, 1, 1)))
    if command.help:
        paragraphs = _paragraphs(command.help)
        texts = [Text(paragraphs[0], overflow="fold")]
        texts += [Text(p, style="dim", overflow="fold") for p in paragraphs[1:]]
        console.print(Padding(Group(*texts), (0, 1, 1, 1)))
    panels: dict[str, list[Any]] = {}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        default_panel = "Arguments" if isinstance(param, typer.core.TyperArgument) else "Options"
        panel = getattr(param, "rich_help_panel", None) or default_panel
        panels.setdefault(panel, []).append(param)
    order = sorted(panels, key=lambda p: (p != "Arguments", p != "Options"))
    for name in order:
        entries = [_entry(p, ctx) for p in panels[name]]
        console.print(Panel(Group(*entries), title=name, title_align="left", border_style="dim"))
    if isinstance(command, HelpGroup):
        from rich.table import Table  # a group's help only

        rows = command.rows(ctx)
        width = max((len(name) for _, name, _ in rows), default=0)
        grouped: dict[str, list[tuple[str, str]]] = {}
        for panel, name, first in rows:
            grouped.setdefault(panel, []).append((name, first))
        for title, listed in grouped.items():
            table = Table(box=None, show_header=False, expand=True, padding=(0, 1), pad_edge=False)
            table.add_column(no_wrap=True, style="bold cyan", min_width=width)
            table.add_column(ratio=1, overflow="fold")
            for name, first in listed:
                table.add_row(name, first)
            console.print(Panel(table, title=title, title_align="left", border_style="dim"))


class _HelpFlag:
    """``--help`` not given is ``False``, not ``None``: typer then takes the flag's value
    as it is, where for ``None`` it first builds a pydantic adapter, which imports
    pydantic (a tenth of a second of start-up) for a flag that was not given."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None and option.default is None:
            option.default = False
        return option


class HelpCommand(_HelpFlag, typer.core.TyperCommand):
    """A Typer command whose help is :func:`render_help`'s."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        render_help(self, ctx, Console(highlight=False))


class HelpGroup(_HelpFlag, typer.core.TyperGroup):
    """A Typer group (``jurist``, ``jurist catalog``) whose help is :func:`render_help`'s:
    its commands listed by help panel (``rich_help_panel``, else "Commands"), in order."""

    def rows(self, ctx: Any) -> list[tuple[str, str, str]]:
        """``(panel, name, one-line help)`` for each command the help lists, in order."""
        return [row for name in self.list_commands(ctx) if (row := self.row(ctx, name))]

    def row(self, ctx: Any, name: str) -> tuple[str, str, str] | None:
        """Command ``name``'s ``(panel, name, one-line help)``; ``None``: not listed."""
        sub = self.get_command(ctx, name)
        if sub is None or getattr(sub, "hidden", False):
            return None
        first = _paragraphs(sub.help)[0] if sub.help else ""
        return getattr(sub, "rich_help_panel", None) or "Commands", name, first

    def format_help(self, ctx: Any, formatter: Any) -> None:
        render_help(self, ctx, Console(highlight=False))


class JuristTyper(typer.Typer):
    """A Typer app of :class:`HelpGroup` whose commands default to :class:`HelpCommand`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, cls=kwargs.pop("cls", None) or HelpGroup, **kwargs)

    def command(
        self, name: str | None = None, *, cls: Any = None, **kwargs: Any
    ) -> Callable[[_F], _F]:
        return super().command(name, cls=cls or HelpCommand, **kwargs)
