"""Files the project generates from its own code (the OpenAPI document, the settings page).

Each is written by one command and checked by the same command with ``--check``, which a test
runs so a committed file never drifts from the code it describes.
"""

from __future__ import annotations

from pathlib import Path

import typer


def write_or_check(output: Path, text: str, command: str, *, check: bool) -> None:
    """Write ``text`` to ``output``; with ``check``, only compare and exit 1 on a difference."""
    if check:
        current = output.read_text() if output.exists() else None
        if current != text:
            typer.echo(f"{output} is out of date: run `{command}`", err=True)
            raise typer.Exit(1)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    typer.echo(f"wrote {output}")
