"""Serving one set of settings: the app, uvicorn's config around it, and the server, in this
process or, with ``--workers``, in several (app/server/workers.py).

The command line (app/cli/serving.py) turns flags into ``Settings`` and reports their errors;
everything after that is here, so the server can be started without the command line.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping
from typing import Any

import uvicorn
from uvicorn.config import LOGGING_CONFIG

from app.api.services import app_services
from app.main import create_app
from app.observe import configure_logging
from app.observe.logs import LogFormat
from app.redaction import redact_logs
from app.server.addresses import announce
from app.server.connections import Limits, fit_open_files, protocol_class
from app.server.server import Server
from app.settings import Settings


def serve(settings: Settings, overrides: Mapping[str, Any], fd: int | None = None) -> int:
    """Serve ``settings`` until told to stop; the exit status. ``overrides`` are the values
    given on the command line, handed to workers; ``fd`` is a worker's inherited socket."""
    configure_logging(settings.log_level, settings.log_format)
    if settings.workers > 1 and fd is None:
        from app.server.workers import supervise

        if not settings.embedded:
            _migrate_keys(settings)
        tls = settings.ssl_certfile is not None
        return supervise(settings.host, settings.port, settings.workers, overrides, tls=tls)
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
    # A worker (``--fd``) accepts from the socket its parent bound (app/server/workers.py).
    server.run(sockets=[socket.socket(fileno=fd)] if fd is not None else None)
    if services.readiness.error is not None:
        print(f"error: {services.readiness.error}", file=sys.stderr)
        return 1
    return 0


def _migrate_keys(settings: Settings) -> None:
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
