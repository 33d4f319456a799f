"""What every client command shares: its global options and how a failure ends it.

Exit codes: 0 done, 1 the service answered with an error, 2 a usage error (typer's),
3 the service could not be reached. A script tells "wrong request" from "no service"."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from app.client.http import DEFAULT_URL, Service, ServiceError, Unreachable
from app.client.output import Output

EXIT_SERVICE_ERROR = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3

Url = Annotated[str, typer.Option("--url", envvar="XSTREAMS_URL", help="The service's base URL.")]
Token = Annotated[
    str | None,
    typer.Option("--token", envvar="XSTREAMS_TOKEN", help="Bearer token (API key or JWT)."),
]
Json = Annotated[
    bool,
    typer.Option("--json", help="Machine output: one JSON document, or JSON lines for entries."),
]


@contextmanager
def session(url: str, token: str | None, as_json: bool) -> Iterator[tuple[Service, Output]]:
    """A service and an output for one command; its failure becomes ``error:`` and an exit."""
    out = Output(as_json)
    service = Service(url, token)
    try:
        yield service, out
    except ServiceError as exc:
        out.error(exc.detail)
        raise typer.Exit(EXIT_SERVICE_ERROR) from None
    except Unreachable as exc:
        out.error(str(exc))
        raise typer.Exit(EXIT_UNREACHABLE) from None
    finally:
        service.close()


__all__ = ["DEFAULT_URL", "Json", "Token", "Url", "session"]
