"""What the client prints: JSON for scripts (``--json``), tables and lines for people.

rich decides colour: only on a terminal, never with ``NO_COLOR`` set. Errors go to stderr as
``error: <detail>``, so stdout holds only the answer."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def _fields_text(fields: Any) -> str:
    if fields is None:
        return "(deleted)"
    pairs = fields.items() if isinstance(fields, dict) else fields
    return " ".join(f"{k}={v}" for k, v in pairs)


class Output:
    """The rendering a command chose: ``as_json`` for machines, else for a person."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        # A wide width when piped: a line is never wrapped in a file.
        self.console = Console(highlight=False, soft_wrap=True)
        self.errors = Console(stderr=True, highlight=False, soft_wrap=True)

    def document(self, value: Any) -> None:
        """One JSON document (``--json``) on stdout."""
        sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def entry(self, entry: dict[str, Any]) -> None:
        """One stream entry: a JSON line, or ``id  field=value ...``."""
        if self.as_json:
            self.document(entry)
        else:
            text = escape(_fields_text(entry.get("fields")))
            self.console.print(f"[bold cyan]{entry['id']}[/]  {text}")

    def table(self, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        table = Table(*columns, box=None, header_style="bold", pad_edge=False)
        for row in rows:
            table.add_row(*("" if v is None else escape(str(v)) for v in row))
        self.console.print(table)

    def pairs(self, values: dict[str, Any]) -> None:
        """A record as ``key  value`` lines (a stream's info)."""
        rows = []
        for key, value in values.items():
            if isinstance(value, dict) and "id" in value and "fields" in value:
                value = f"{value['id']}  {_fields_text(value['fields'])}"
            elif isinstance(value, dict | list):
                value = json.dumps(value, ensure_ascii=False)
            rows.append((key, value))
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column(style="bold")
        table.add_column()
        for key, value in rows:
            table.add_row(escape(key), "" if value is None else escape(str(value)))
        self.console.print(table)

    def note(self, text: str) -> None:
        """A remark for the person, on stderr (never mixed into machine output)."""
        self.errors.print(f"[dim]{escape(text)}[/]")

    def error(self, text: str) -> None:
        self.errors.print(f"[bold red]error:[/] {escape(text)}")
