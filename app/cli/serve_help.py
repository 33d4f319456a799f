"""``xstreams serve --help``: every setting under its heading, readable at 80 columns.

Typer's own layout gives each option five columns (names, short names, ``--no-`` names, type,
help) and, when they do not fit, cuts the names (``--webhook-allow-…``). This one gives two:
the flag with its value's form, kept whole, and the text, wrapped, ending with the default
and the ``XSTREAMS_*`` variable. A word too long for its column is folded onto the next
line, never cut. It is drawn from ``serve_options.OPTIONS``, the model's fields.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand

from app.cli.serve_options import OPTIONS, Option

if TYPE_CHECKING:  # typer carries its own click, which its commands are built on
    from typer import _click as click


def _row(option: Option) -> tuple[Text, Text]:
    names = Text(option.names.replace(" / ", "\n"), style="bold cyan", no_wrap=True)
    text = Text(option.help, overflow="fold")
    text.append(f"\n[default: {option.default}]", style="dim")
    text.append(f"\n[env: {option.envvar}]", style="dim")
    return names, text


def render(console: Console, usage: str, doc: str) -> None:
    """Print the help of ``serve`` on ``console``."""
    console.print(Padding(Text(usage, style="bold"), (1, 1, 0, 1)))
    console.print(Padding(Text(doc), (1, 1, 1, 1)))
    panels: dict[str, list[Option]] = {}
    for option in OPTIONS:
        panels.setdefault(option.panel, []).append(option)
    for panel, options in panels.items():
        table = Table(show_header=False, box=None, padding=(0, 1), pad_edge=False, expand=True)
        table.add_column(no_wrap=True)
        table.add_column(ratio=1, overflow="fold")
        for option in options:
            table.add_row(*_row(option))
        console.print(Panel(table, title=panel, title_align="left", border_style="dim"))
    other = Table(show_header=False, box=None, padding=(0, 1), pad_edge=False, expand=True)
    other.add_column(no_wrap=True)
    other.add_column(ratio=1)
    other.add_row(Text("--help", style="bold cyan"), Text("Show this message and exit."))
    console.print(Panel(Group(other), title="Options", title_align="left", border_style="dim"))


class ServeCommand(TyperCommand):
    """A typer command whose help is ``render``'s."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        paragraphs = inspect.cleandoc(self.help or "").split("\n\n")
        doc = "\n\n".join(" ".join(p.split()) for p in paragraphs)
        render(Console(highlight=False), self.get_usage(ctx), doc)
