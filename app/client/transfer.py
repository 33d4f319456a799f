"""``xstreams export`` / ``import``: a stream as JSON lines and back.

One line an entry, ``{"id": ..., "fields": ...}`` (the form ``range --json`` prints), so an
export is a file any tool reads. Import appends in batches (each all or none) and keeps the IDs
unless told not to; a progress bar shows on a terminal only."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from app.client.commands import Stream, append_all, entries_between, stream_path
from app.client.session import DEFAULT_URL, Token, Url, session


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        transient=True, disable=not sys.stderr.isatty(),
        console=Console(stderr=True),  # stdout may be the export itself
    )  # fmt: skip


def export(
    stream: Stream,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here (default stdout).")
    ] = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
) -> None:
    """Write a stream's entries as JSON lines, oldest first."""
    with session(url, token, True) as (service, _out):
        total = service.get(stream_path(stream))["length"]
        sink: IO[str] = output.open("w", encoding="utf-8") if output else sys.stdout
        try:
            with _progress() as bar:
                task = bar.add_task(f"export {stream}", total=total)
                for entry in entries_between(service, stream, "-", "+", None):
                    sink.write(json.dumps(entry, ensure_ascii=False) + "\n")
                    bar.advance(task)
        finally:
            if output:
                sink.close()
            else:
                sink.flush()


def _lines(source: IO[str]) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(source, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise typer.BadParameter(f"line {number}: {exc}") from None
        if not isinstance(value, dict) or "fields" not in value:
            raise typer.BadParameter(f'line {number}: not {{"id": ..., "fields": ...}}')
        yield value


def import_(
    stream: Stream,
    input_file: Annotated[
        Path | None, typer.Option("--input", "-i", help="Read from here (default stdin).")
    ] = None,
    new_ids: Annotated[
        bool, typer.Option("--new-ids", help="Give entries new IDs (`*`) instead of theirs.")
    ] = False,
    batch: Annotated[int, typer.Option(min=1, help="Entries per request.")] = 500,
    url: Url = DEFAULT_URL,
    token: Token = None,
) -> None:
    """Append JSON lines (export's form) to a stream, in batches."""
    if input_file is None and sys.stdin.isatty():
        raise typer.BadParameter("give --input FILE, or JSON lines on stdin")
    with session(url, token, False) as (service, out):
        source: IO[str] = input_file.open(encoding="utf-8") if input_file else sys.stdin
        try:
            with _progress() as bar:
                task = bar.add_task(f"import {stream}", total=None)
                entries = (
                    {"id": "*" if new_ids else e.get("id", "*"), "fields": e["fields"]}
                    for e in _lines(source)
                )
                ids = append_all(
                    service, stream, entries, batch, progress=lambda n: bar.advance(task, n)
                )
        finally:
            if input_file:
                source.close()
        out.note(f"imported {len(ids)} entries into {stream}")
