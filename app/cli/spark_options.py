"""The Spark options every pipeline command takes, spelled once (as spark-submit spells them)."""

from __future__ import annotations

from typing import Annotated

import typer

Master = Annotated[str | None, typer.Option(help="Spark master URL (default: local[*]).")]
Conf = Annotated[list[str] | None, typer.Option(help="Spark setting key=value (repeatable).")]


def require_pipeline() -> None:
    """Exit with one line, not a traceback, where the optional pipeline extra is missing."""
    import importlib.util

    missing = [m for m in ("pyspark", "pyarrow", "httpx") if importlib.util.find_spec(m) is None]
    if missing:
        typer.echo(
            f"error: {', '.join(missing)} not installed: pip install 'xstreams[pipeline]' "
            "(or make setup-pipeline)",
            err=True,
        )
        raise typer.Exit(2)
