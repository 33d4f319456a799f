"""What ``xstreams serve`` does once its flags are parsed: build the settings (the flags over
the ``XSTREAMS_*`` environment over the defaults), report what is wrong with them, then hand
them to the server (app/server/run.py)."""

from __future__ import annotations

from typing import Any

import typer


def run(flags: dict[str, Any], fd: int | None = None, supervisor: int | None = None) -> None:
    """Serve with ``flags`` (by field name, ``None``: not given); ``fd`` and ``supervisor``
    are a worker's (its inherited socket, its parent)."""
    if supervisor is not None:  # first, before anything is built (app/server/workers.py)
        from app.server.workers import die_with_parent

        die_with_parent(supervisor)
    from pydantic import ValidationError

    from app.backends import workers_refusal
    from app.cli.serve_options import FlagError
    from app.cli.serve_options import overrides as flag_overrides
    from app.server.run import serve
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
    status = serve(settings, overrides, fd)
    if status:
        raise typer.Exit(status)
