"""The ``xstreams`` command line (Typer)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from app.cli import archive, keys, report, settings_reference, storage
from app.cli.serve_help import ServeCommand
from app.cli.serve_options import with_settings_flags
from app.observe.logs import LogFormat

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
    """Start the HTTP service. Each flag overrides its XSTREAMS_* variable, which overrides
    the default; `xstreams settings` prints what is in force."""
    if supervisor is not None:  # first, before anything is built (app/cli/workers.py)
        from app.cli.workers import die_with_parent

        die_with_parent(supervisor)
    import socket

    import uvicorn
    from pydantic import ValidationError
    from uvicorn.config import LOGGING_CONFIG

    from app.api.services import app_services
    from app.backends import workers_refusal
    from app.cli.addresses import announce
    from app.cli.connections import Limits, fit_open_files, protocol_class
    from app.cli.serve_options import FlagError
    from app.cli.serve_options import overrides as flag_overrides
    from app.cli.server import Server
    from app.main import create_app
    from app.observe import configure_logging
    from app.redaction import redact_logs
    from app.settings import Settings

    try:
        overrides = flag_overrides(flags)
        settings = Settings(**overrides)
    except FlagError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}"
            for err in e.errors()
        )
        typer.echo(f"error: {problems}", err=True)
        raise typer.Exit(2) from None
    refusal = workers_refusal(settings)
    if refusal is not None:
        typer.echo(f"error: {refusal}", err=True)
        raise typer.Exit(2)
    configure_logging(settings.log_level, settings.log_format)
    if settings.workers > 1 and fd is None:
        from app.cli.workers import supervise

        if not settings.embedded:
            _migrate_keys(settings)
        tls = settings.ssl_certfile is not None
        raise typer.Exit(
            supervise(settings.host, settings.port, settings.workers, overrides, tls=tls)
        )
    if settings.embedded:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    server: Server | None = None  # built below, around the app

    def stop() -> None:
        """A failed recovery stops the server instead of serving a wrong state (exit 1)."""
        if server is not None:
            server.should_exit = True

    app = create_app(settings, on_fatal=stop)
    services = app_services(app)
    limits = Limits(
        header_timeout_ms=settings.header_timeout_ms,
        body_timeout_ms=settings.body_timeout_ms,
        keepalive_timeout_ms=settings.keepalive_timeout_ms,
        max_connections=fit_open_files(settings.max_connections),
    )
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        # In JSON, uvicorn's loggers go through the root's one handler; in text, uvicorn
        # keeps its own. Its access log is replaced by ours (app.observe.middleware).
        log_config=None if settings.log_format is LogFormat.JSON else LOGGING_CONFIG,
        access_log=False,
        timeout_graceful_shutdown=5,
        http=protocol_class(limits),  # head and body deadlines, the connection cap
        ssl_certfile=settings.ssl_certfile,
        ssl_keyfile=settings.ssl_keyfile,
    )
    redact_logs()  # after uvicorn.Config, which installs its log handlers
    tls = settings.ssl_certfile is not None
    server = Server(
        config,
        on_shutdown=services.sse.close_all,  # end event streams first
        # The supervisor of --workers announces the addresses, once, not each worker.
        on_started=(lambda port: announce(settings.host, port, tls)) if fd is None else None,
    )
    # A worker (``--fd``) accepts from the socket its parent bound (app/cli/workers.py).
    server.run(sockets=[socket.socket(fileno=fd)] if fd is not None else None)
    if services.readiness.error is not None:
        typer.echo(f"error: {services.readiness.error}", err=True)
        raise typer.Exit(1)


def _migrate_keys(settings: Any) -> None:
    """Migrate the API keys' database once, before the workers start, so that they do not
    race to create its tables. A failure is left to them: each says it (log and /readyz) and
    keeps trying, as a single front-end does."""
    import contextlib

    from app.storage.keys import KeyStore

    keys = KeyStore.at(settings.resolved_database_url())
    try:
        with contextlib.suppress(Exception):
            keys.open_now()
    finally:
        keys.close()


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
    if check:
        current = output.read_text() if output.exists() else None
        if current != text:
            typer.echo(f"{output} is out of date: run `xstreams openapi`", err=True)
            raise typer.Exit(1)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    typer.echo(f"wrote {output}")


def main() -> None:
    cli()
