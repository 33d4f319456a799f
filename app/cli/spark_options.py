"""The Spark options every pipeline command takes, spelled once (as spark-submit spells them)."""

from __future__ import annotations

from typing import Annotated

import typer

Master = Annotated[str | None, typer.Option(help="Spark master URL (default: local[*]).")]
Conf = Annotated[list[str] | None, typer.Option(help="Spark setting key=value (repeatable).")]
