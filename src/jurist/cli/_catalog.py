"""``jurist catalog``: list the named judges, templates and rubrics; show, add, remove."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jurist._files import read_utf8
from jurist._secrets import scrub
from jurist.catalog._names import SECTIONS
from jurist.cli._app import app
from jurist.cli._help import JuristTyper, choices_metavar

catalog_app = JuristTyper(
    name="catalog",
    help="Named judges, templates and rubrics (built in, and yours in $JURIST_CATALOG).",
    no_args_is_help=False,
    invoke_without_command=True,
)
app.add_typer(catalog_app)

CatalogDir = Annotated[
    Path | None,
    typer.Option(
        "--catalog",
        help="User catalog folder; default $JURIST_CATALOG, else ~/.config/jurist/catalog.",
    ),
]


def refuse_existing(name: str, catalog_dir: Path | None) -> None:
    """Refuse (a usage error, naming ``--overwrite``) a catalog name that exists: the
    command-line twin of the library's ``overwrite=True``."""
    from jurist.catalog._store import find_entry
    from jurist.errors import ConfigError

    try:
        _, existing = find_entry(name, catalog_dir)
    except ConfigError:
        existing = None
    if existing is not None:
        raise ConfigError(
            f"catalog entry {name!r} already exists at {existing}; pass --overwrite to replace it"
        )


def _console() -> Console:
    return Console(width=max(120, Console().width))


@catalog_app.callback()
def catalog(
    ctx: typer.Context,
    section: Annotated[
        str | None,
        typer.Option(
            metavar=choices_metavar(tuple(SECTIONS)),
            help="Only this section: judges, templates or rubrics.",
        ),
    ] = None,
    catalog_dir: CatalogDir = None,
) -> int:
    """List every entry with its kind, where it comes from and a one-line description."""
    if ctx.invoked_subcommand is not None:
        return 0
    from jurist import catalog as cat

    entries = cat.list_entries(root=catalog_dir, section=section)
    table = Table(title="jurist catalog")
    table.add_column("name", style="bold", no_wrap=True, overflow="fold")
    table.add_column("kind")
    table.add_column("source")
    table.add_column("description")
    for e in entries:
        source = e.source + (" (shadows built-in)" if e.shadows_builtin else "")
        text = f"[red]unreadable: {escape(e.error)}[/]" if e.error else escape(e.description)
        table.add_row(escape(e.name), escape(e.kind), escape(source), text)
    console = _console()
    console.print(table)
    console.print(
        f"user catalog: {cat.default_root() if catalog_dir is None else catalog_dir}",
        highlight=False,
        markup=False,
    )
    return 0


@catalog_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Entry name, inline overrides allowed.")],
    catalog_dir: CatalogDir = None,
) -> int:
    """Show an entry's file and what it builds (fields it reads, configuration)."""
    import json

    from jurist import catalog as cat
    from jurist.catalog._store import find_entry

    bare, _ = cat.parse_name(name)
    source, path = find_entry(bare, catalog_dir)
    console = _console()
    console.print(f"[bold]{escape(bare)}[/] ({escape(f'{source}: {path}')})", highlight=False)
    text = scrub(read_utf8(path, what="the catalog entry"))  # never print a key
    console.print(text, highlight=False, markup=False)
    obj = cat.get(name, root=catalog_dir)
    fields = getattr(obj, "required_fields", None) or getattr(obj, "fields", None)
    if fields:
        console.print(f"[bold]fields:[/] {escape(', '.join(fields))}", highlight=False)
    describe = getattr(obj, "describe", None)
    if callable(describe) and fields is not None and hasattr(obj, "judge"):
        console.print("[bold]configuration:[/]")
        console.print(json.dumps(describe(), indent=2, default=str), highlight=False, markup=False)
    return 0


@catalog_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="Entry name, e.g. judges.likert.my_server.")],
    file: Annotated[Path, typer.Argument(help="A YAML entry file (see docs/catalog.md).")],
    overwrite: Annotated[bool, typer.Option(help="Replace an entry of that name.")] = False,
    catalog_dir: CatalogDir = None,
) -> int:
    """Check that FILE builds, then store it as NAME in the user catalog."""
    from jurist import catalog as cat
    from jurist.catalog._names import name_to_relpath
    from jurist.catalog._resolve import build_entry
    from jurist.catalog._store import read_entry_file, roots, write_entry

    cat.parse_name(name)
    entry = read_entry_file(file, name=name, source="file")
    build_entry(entry, root=catalog_dir)
    if not overwrite:
        refuse_existing(name, catalog_dir)
    target = dict(roots(catalog_dir))["user"] / name_to_relpath(name)
    write_entry(target, entry.data)
    Console().print(f"added {name} -> {target}", highlight=False, markup=False)
    return 0


@catalog_app.command("remove")
def remove(
    name: Annotated[str, typer.Argument(help="A user entry name.")],
    catalog_dir: CatalogDir = None,
) -> int:
    """Delete an entry from the user catalog (built-in entries stay)."""
    from jurist import catalog as cat

    path = cat.remove(name, root=catalog_dir)
    Console().print(f"removed {name} ({path})", highlight=False, markup=False)
    return 0
