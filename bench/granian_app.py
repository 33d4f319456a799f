"""xstreams, or the bare ceiling app, served by granian instead of uvicorn (issue 13, part 6).

granian is a Rust HTTP server (hyper + tokio) that calls an ASGI app on a Python event loop;
this launcher is what bench/servers.py starts to compare it with ``xstreams serve``. It builds
the app the way ``serve`` does, ``create_app(Settings())`` with the settings from the
``XSTREAMS_*`` environment (the harness passes the data folder and ``--fsync`` there), in
granian's worker process through ``--factory``. Options match ``serve`` where granian has one:
one worker, uvloop, HTTP/1 only, no access log, the header read timeout.

What ``serve`` adds around uvicorn and granian has no place for (the body deadline, the
connection cap with 503, ending event streams *before* the graceful wait, ``on_fatal``) is
*not* reproduced by granian's CLI server beyond one thing: ``_EndStreamsOnShutdown`` ends the
event streams when granian delivers ``lifespan.shutdown``, the only shutdown hook an ASGI app
gets (too late, it turned out: granian sends it only once every request has finished).
``--embed`` runs granian's (experimental) embedded server in this process instead, where
SIGTERM reaches our own handler first: the shutdown order and ``on_fatal`` of ``serve``. See
the "uvicorn vs granian" section of bench/REPORT.md for what each turned out to need.

    .venv/bin/python -m bench.granian_app --port 8001 [--bare | --embed]   # env: XSTREAMS_*
"""

from __future__ import annotations

import argparse
from typing import Any

from granian.constants import HTTPModes, Interfaces, Loops
from granian.http import HTTP1Settings
from granian.server import Server

from app.api.services import app_services

Scope = dict[str, Any]


class _EndStreamsOnShutdown:
    """The app, with its event streams ended when the server announces shutdown."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def receive_lifespan() -> Any:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                app_services(self.app).sse.close_all()
            return message

        await self.app(scope, receive_lifespan, send)


def xstreams() -> Any:
    """The factory granian calls in its worker: ``serve``'s app from the environment."""
    from app.main import create_app
    from app.settings import Settings

    settings = Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return _EndStreamsOnShutdown(create_app(settings))


def bare() -> Any:
    from bench.bare_app import app

    return app


def _serve_embedded(args: argparse.Namespace) -> None:
    """What ``serve`` would look like on granian: the server runs on this process's own loop,
    so SIGTERM reaches our handler first (end the event streams, then stop the server, which
    drains and sends ``lifespan.shutdown``), and a failed recovery can stop it (exit 1)."""
    import asyncio
    import signal

    import uvloop
    from granian.server.embed import Server as Embedded

    from app.main import create_app
    from app.settings import Settings

    settings = Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)

    def stop() -> None:
        app_services(app).sse.close_all()  # as `serve` does before uvicorn's graceful wait
        server.stop()

    app = create_app(settings, on_fatal=stop)
    server = Embedded(
        app,
        address=args.host,
        port=args.port,
        interface=Interfaces.ASGI,
        http=HTTPModes.http1,
        websockets=False,
        backpressure=args.backpressure,
        http1_settings=HTTP1Settings(header_read_timeout=args.header_timeout_ms),
        log_access=False,
    )

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop)
        await server.serve()

    uvloop.run(run())
    if app_services(app).readiness.error is not None:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--bare", action="store_true", help="serve bench/bare_app.py instead")
    parser.add_argument("--header-timeout-ms", type=int, default=10_000)
    parser.add_argument("--backpressure", type=int, default=None)
    parser.add_argument("--kill-timeout", type=int, default=30, help="seconds, then SIGKILL")
    parser.add_argument(
        "--embed",
        action="store_true",
        help="xstreams in granian's embedded server (experimental in granian), in this "
        "process, with serve's shutdown order and on_fatal",
    )
    args = parser.parse_args()
    if args.embed:
        _serve_embedded(args)
        return
    Server(
        "bench.granian_app:bare" if args.bare else "bench.granian_app:xstreams",
        factory=True,
        address=args.host,
        port=args.port,
        interface=Interfaces.ASGI,
        workers=1,
        loop=Loops.uvloop,
        http=HTTPModes.http1,
        websockets=False,
        backpressure=args.backpressure,
        http1_settings=HTTP1Settings(header_read_timeout=args.header_timeout_ms),
        log_access=False,
        workers_kill_timeout=args.kill_timeout,
    ).serve()


if __name__ == "__main__":
    main()
