"""The ``xstreams`` command line (Typer)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

cli = typer.Typer(help="xstreams: Redis stream semantics over HTTP.", no_args_is_help=True)


@cli.callback()
def _root() -> None:
    """xstreams: Redis stream semantics over HTTP."""


@cli.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="TCP port to listen on.")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Folder for the service's data.")] = None,
    token: Annotated[
        str | None, typer.Option(help="Bearer token every request must carry.")
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="uvicorn log level.")] = None,
) -> None:
    """Start the HTTP service. Flags override the XSTREAMS_* environment."""
    import uvicorn

    from app.main import create_app
    from app.settings import Settings

    overrides: dict[str, Any] = {
        k: v
        for k, v in {
            "host": host,
            "port": port,
            "data_dir": data_dir,
            "token": token,
            "log_level": log_level,
        }.items()
        if v is not None
    }
    settings = Settings(**overrides)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        timeout_graceful_shutdown=5,
    )


def main() -> None:
    cli()
