"""The ``xstreams`` command line (Typer)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from app.cli import archive, keys, report, storage
from app.client.cli import register as register_client
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


@cli.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="TCP port to listen on.")] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="Folder of the default SQLite database: streams and API keys (with a Redis"
            " backend, the API keys only)."
        ),
    ] = None,
    token: Annotated[
        str | None, typer.Option(help="Bearer token every request must carry.")
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="uvicorn log level.")] = None,
    log_format: Annotated[
        LogFormat | None, typer.Option(help="Log lines as text, or one JSON object a line.")
    ] = None,
    database_url: storage.DatabaseUrl = None,
    fsync: storage.Fsync = None,
    max_connections: Annotated[
        int | None, typer.Option(help="Open connections served at once; past it, 503.")
    ] = None,
    header_timeout_ms: Annotated[
        int | None, typer.Option(help="Time allowed for a request's head, in ms.")
    ] = None,
    body_timeout_ms: Annotated[
        int | None, typer.Option(help="Time allowed for a request's whole body, in ms.")
    ] = None,
    jwt_secret: Annotated[
        str | None, typer.Option(help="HS256 secret of JWTs your application mints.")
    ] = None,
    jwt_public_key: Annotated[
        Path | None, typer.Option(help="PEM public key of RS256/ES256 JWTs (a file).")
    ] = None,
    jwt_audience: Annotated[str | None, typer.Option(help="Required JWT `aud`.")] = None,
    jwt_max_lifetime_ms: Annotated[
        int | None,
        typer.Option(min=1, help="Furthest a JWT's `exp` may lie ahead, in ms (default a day)."),
    ] = None,
    auth_cookie: Annotated[
        str | None, typer.Option(help="Name of a cookie carrying a key or JWT.")
    ] = None,
    cors_origin: Annotated[
        list[str] | None, typer.Option(help="A browser origin allowed by CORS (repeatable).")
    ] = None,
    insecure_no_auth: Annotated[
        bool, typer.Option(help="Serve a non-loopback address with no credentials anyway.")
    ] = False,
    webhook_allow_host: Annotated[
        list[str] | None,
        typer.Option(help="A host glob webhooks may POST to (repeatable; none: no host)."),
    ] = None,
    webhook_allow_http: Annotated[
        bool, typer.Option(help="Let webhooks POST over plain http (default: https only).")
    ] = False,
    webhook_allow_private: Annotated[
        bool,
        typer.Option(
            help="Let webhooks reach loopback, private and link-local addresses (never the"
            " cloud metadata ones)."
        ),
    ] = False,
    ssl_certfile: Annotated[Path | None, typer.Option(help="TLS certificate (PEM).")] = None,
    ssl_keyfile: Annotated[Path | None, typer.Option(help="TLS private key (PEM).")] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            help="embedded (default), or a Redis URL: redis://[user:pass@]host:port/db,"
            " rediss://... (TLS), redis+cluster://host:port,host:port, rediss+cluster://..."
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(min=1, help="Worker processes on the one port (needs a Redis backend)."),
    ] = None,
    wait_replicas: Annotated[
        int | None,
        typer.Option(min=0, help="Redis: WAIT for this many replicas after each write."),
    ] = None,
    wait_timeout: Annotated[
        int | None, typer.Option(min=1, help="Redis: how long WAIT may take, in ms.")
    ] = None,
    fd: Annotated[
        int | None, typer.Option(hidden=True, help="A worker's inherited listening socket.")
    ] = None,
    supervisor: Annotated[
        int | None, typer.Option(hidden=True, help="A worker's supervisor: its process ID.")
    ] = None,
) -> None:
    """Start the HTTP service. Flags override the XSTREAMS_* environment."""
    if supervisor is not None:  # first, before anything is built (app/cli/workers.py)
        from app.cli.workers import die_with_parent

        die_with_parent(supervisor)
    import socket

    import uvicorn
    from pydantic import ValidationError
    from uvicorn.config import LOGGING_CONFIG

    from app.api.services import app_services
    from app.backends import workers_refusal
    from app.cli.connections import Limits, fit_open_files, protocol_class
    from app.cli.server import Server
    from app.main import create_app
    from app.observe import configure_logging
    from app.redaction import redact_logs
    from app.settings import Settings

    overrides: dict[str, Any] = {
        k: v
        for k, v in {
            "host": host,
            "port": port,
            "data_dir": data_dir,
            "token": token,
            "log_level": log_level,
            "log_format": log_format,
            "database_url": database_url,
            "fsync": fsync,
            "max_connections": max_connections,
            "header_timeout_ms": header_timeout_ms,
            "body_timeout_ms": body_timeout_ms,
            "jwt_secret": jwt_secret,
            "jwt_public_key_file": jwt_public_key,
            "jwt_audience": jwt_audience,
            "jwt_max_lifetime_ms": jwt_max_lifetime_ms,
            "auth_cookie": auth_cookie,
            "cors_origins": cors_origin or None,
            "insecure_no_auth": insecure_no_auth or None,
            "webhook_allow_hosts": webhook_allow_host or None,
            "webhook_allow_http": webhook_allow_http or None,
            "webhook_allow_private": webhook_allow_private or None,
            "ssl_certfile": ssl_certfile,
            "ssl_keyfile": ssl_keyfile,
            "backend": backend,
            "workers": workers,
            "wait_replicas": wait_replicas,
            "wait_timeout_ms": wait_timeout,
        }.items()
        if v is not None
    }
    try:
        settings = Settings(**overrides)
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
        raise typer.Exit(supervise(settings.host, settings.port, settings.workers, overrides))
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
    server = Server(config, on_shutdown=services.sse.close_all)  # end event streams first
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


# The client commands (add, range, tail, ...): HTTP only, no server module (app/client).
register_client(cli)


def main() -> None:
    cli()
