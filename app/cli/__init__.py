"""The ``xstreams`` command line (Typer)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from app.cli import archive, keys, report, settings_reference, storage
from app.cli.generated import write_or_check
from app.cli.serve_help import ServeCommand
from app.cli.serve_options import with_settings_flags
from app.client.cli import register as register_client

cli = typer.Typer(help="xstreams: Redis stream semantics over HTTP.", no_args_is_help=True)


def _version(value: bool) -> None:
    if value:
        from app import __version__

        typer.echo(f"xstreams {__version__}")
        raise typer.Exit()


@cli.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """xstreams: Redis stream semantics over HTTP."""


@cli.command(cls=ServeCommand)
@with_settings_flags
def serve(
    fd: Annotated[
        int | None, typer.Option(hidden=True, help="A worker's inherited listening socket.")
    ] = None,
    supervisor: Annotated[
        int | None, typer.Option(hidden=True, help="A worker's supervisor: its process ID.")
    ] = None,
    **flags: Any,
) -> None:
    """Start the HTTP service.

    Each flag overrides its XSTREAMS_* variable, which overrides the default; `xstreams
    settings` prints what is in force."""
    from app.cli.serving import run

    run(flags, fd=fd, supervisor=supervisor)


cli.command()(storage.migrate)
cli.command()(storage.snapshot)
cli.command()(storage.check)
cli.command()(archive.archive)
cli.command()(report.report)
cli.command()(settings_reference.settings)
cli.add_typer(keys.keys, name="keys")


@cli.command()
def openapi(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the document.")
    ] = Path("openapi/openapi.json"),
    check: Annotated[
        bool, typer.Option(help="Only compare with the file; exit 1 if they differ.")
    ] = False,
) -> None:
    """Write the OpenAPI document of the REST resources (the contract SDKs are built from)."""
    from app.api.openapi import document
    from app.engine.store import Store
    from app.main import create_app
    from app.settings import Settings

    # An in-memory store: describing the API must not open or migrate a database.
    text = document(create_app(Settings(), store=Store()))
    write_or_check(output, text, "xstreams openapi", check=check)


# The client commands (add, range, tail, ...): HTTP only, no server module (app/client).
register_client(cli)


def main() -> None:
    cli()
