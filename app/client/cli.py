"""The client's commands, put on the ``xstreams`` command by ``register``."""

from __future__ import annotations

import typer

from app.client import commands, tail, transfer


def register(cli: typer.Typer) -> None:
    """Add the client commands (see docs/cli.md) beside the server's own."""
    cli.command(rich_help_panel="Client")(commands.add)
    cli.command("range", rich_help_panel="Client")(commands.range_)
    cli.command(rich_help_panel="Client")(tail.tail)
    cli.add_typer(commands.groups, name="groups", rich_help_panel="Client")
    cli.command(rich_help_panel="Client")(commands.pending)
    cli.command(rich_help_panel="Client")(commands.claim)
    cli.command(rich_help_panel="Client")(commands.ls)
    cli.command(rich_help_panel="Client")(commands.info)
    cli.command(rich_help_panel="Client")(transfer.export)
    cli.command("import", rich_help_panel="Client")(transfer.import_)
