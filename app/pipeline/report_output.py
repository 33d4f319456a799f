"""The report's tables as CSV files and as terminal tables.

The CSV files hold the same rows the terminal shows, written with the csv module from the
collected aggregates: times as ISO 8601 UTC with a ``Z``, a missing value (the percentiles of a
stream with one entry) as an empty cell, so spreadsheet tools and pandas read them as such.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from app.pipeline.report_model import ReportTables

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

ENTRIES_COLUMNS = ("stream", "bucket_start", "entries")
INTER_ARRIVAL_COLUMNS = ("stream", "entries", "p50_ms", "p90_ms", "p99_ms", "max_ms")
TOP_VALUES_COLUMNS = ("stream", "field", "value", "count", "rank")


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 1000.0 ms reads better as 1000
    return str(value)


def _write(path: Path, columns: Sequence[str], rows: Iterable[Mapping[str, object]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        writer.writerows([_cell(row[c]) for c in columns] for row in rows)
    return path


def write_csv_files(tables: ReportTables, out: Path) -> tuple[Path, Path, Path]:
    """``entries_per_<bucket>.csv``, ``inter_arrival.csv`` and ``top_values.csv`` in ``out``.

    ``top_values.csv`` is written even without ``--field`` (header only), so a script reading
    the folder finds the same three files every time.
    """
    return (
        _write(
            out / f"entries_per_{tables.bucket.value}.csv",
            ENTRIES_COLUMNS,
            tables.entries_per_bucket,
        ),
        _write(out / "inter_arrival.csv", INTER_ARRIVAL_COLUMNS, tables.inter_arrival),
        _write(out / "top_values.csv", TOP_VALUES_COLUMNS, tables.top_values),
    )


def _table(
    title: str, columns: Sequence[str], rows: Iterable[Mapping[str, object]], numeric: set[str]
) -> Table:
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="right" if column in numeric else "left")
    for row in rows:
        table.add_row(*(_cell(row[c]) or "-" for c in columns))
    return table


def print_tables(tables: ReportTables, console: Console | None = None) -> None:
    """The three tables on the terminal (rich), in the order of the CSV files."""
    from rich.console import Console

    console = console or Console()
    console.print(
        _table(
            f"Entries per {tables.bucket.value} (UTC)",
            ENTRIES_COLUMNS,
            tables.entries_per_bucket,
            {"entries"},
        )
    )
    console.print(
        _table(
            "Inter-arrival gaps (ms, exact percentiles)",
            INTER_ARRIVAL_COLUMNS,
            tables.inter_arrival,
            set(INTER_ARRIVAL_COLUMNS[1:]),
        )
    )
    if tables.top_values:
        console.print(
            _table(
                "Most frequent field values",
                TOP_VALUES_COLUMNS,
                tables.top_values,
                {"count", "rank"},
            )
        )
    else:
        console.print(
            "Most frequent field values: none (no --field given, or no entry has those fields)"
        )
