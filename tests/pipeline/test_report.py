"""The report job against a small archive whose every figure is worked out by hand below.

Timeline (UTC), one row per entry; gaps are to the previous entry of the same stream:

    orders    2026-11-01 22:59:00.000-0  status=paid      region=us
              2026-11-01 22:59:00.000-1  status=paid      region=eu   gap 0
              2026-11-01 22:59:01.000-0  status=new       region=us   gap 1000
              2026-11-01 23:00:01.000-0  status=paid      region=eu   gap 60000
              2026-11-01 23:10:00.000-0  status=new       region=ap   gap 599000
              2026-11-02 00:00:00.000-0  status=refunded  (no region) gap 3000000
    payments  2026-11-01 23:00:00.000-0  status=paid
    audit     2026-10-31 10:00:00.000-0  actor=root
              2026-10-31 10:00:00.250-0  actor=root                   gap 250

orders' gaps sorted: 0, 1000, 60000, 599000, 3000000. Exact percentiles interpolate between
closest ranks at position p * (n - 1): p50 = 60000; p90 = 599000 + 0.6 * 2401000 = 2039600;
p99 = 599000 + 0.96 * 2401000 = 2903960. An approximate percentile would return one of the gaps.
"""

from __future__ import annotations

import calendar
import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from rich.console import Console
from typer.testing import CliRunner

from app.cli import cli
from tests.pipeline.conftest import need

# app.pipeline imports pyarrow: without it, skip the module (or fail: see conftest).
need("pyarrow")

from app.pipeline.report import compute_report, run_report  # noqa: E402
from app.pipeline.report_model import (  # noqa: E402
    Bucket,
    NoEntriesError,
    ReportOptionError,
    ReportOptions,
    parse_instant,
    report_options,
)

ROWS_DDL = (
    "id string, ms long, seq long, fields map<string,string>, "
    "pairs array<struct<field:string,value:string>>, stream string, date string"
)


def ms(text: str) -> int:
    """Milliseconds of a UTC ``YYYY-MM-DDTHH:MM:SS[.fff]`` time, computed independently of
    the code under test (calendar.timegm, not datetime.fromisoformat)."""
    main, _, frac = text.partition(".")
    moment = datetime.strptime(main, "%Y-%m-%dT%H:%M:%S")
    return calendar.timegm(moment.timetuple()) * 1000 + int(frac or 0)


ENTRIES: list[tuple[str, str, int, dict[str, str]]] = [
    ("orders", "2026-11-01T22:59:00", 0, {"status": "paid", "region": "us"}),
    ("orders", "2026-11-01T22:59:00", 1, {"status": "paid", "region": "eu"}),
    ("orders", "2026-11-01T22:59:01", 0, {"status": "new", "region": "us"}),
    ("orders", "2026-11-01T23:00:01", 0, {"status": "paid", "region": "eu"}),
    ("orders", "2026-11-01T23:10:00", 0, {"status": "new", "region": "ap"}),
    ("orders", "2026-11-02T00:00:00", 0, {"status": "refunded"}),
    ("payments", "2026-11-01T23:00:00", 0, {"status": "paid"}),
    ("audit", "2026-10-31T10:00:00", 0, {"actor": "root"}),
    ("audit", "2026-10-31T10:00:00.250", 0, {"actor": "root"}),
]


def utc(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)


def write_archive(
    spark: Any, path: Path, entries: list[tuple[str, str, int, dict[str, str]]]
) -> None:
    rows = []
    for stream, when, seq, fields in entries:
        entry_ms = ms(when)
        pairs = list(fields.items())
        rows.append((f"{entry_ms}-{seq}", entry_ms, seq, fields, pairs, stream, when[:10]))
    spark.createDataFrame(rows, ROWS_DDL).write.partitionBy("stream", "date").parquet(str(path))


@pytest.fixture(scope="module")
def archive(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("archive") / "archive"
    write_archive(spark, path, ENTRIES)
    # Bookkeeping the report must not read: a manifest, and staged files of a stream that
    # would show up in every table if they were read.
    (path / "_xstreams").mkdir()
    (path / "_xstreams" / "manifest.json").write_text(json.dumps({"streams": ["orders"]}))
    write_archive(spark, path / "_staging", [("ghost", "2026-11-01T22:00:00", 0, {"a": "b"})])
    return str(path)


def quiet() -> Console:
    return Console(file=io.StringIO(), width=120)


# --- since / until parsing: a table of cases -------------------------------------------------

NOW_MS = ms("2026-11-22T12:00:00")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-01", ms("2026-11-01T00:00:00")),
        ("2026-11-01T12:00:00", ms("2026-11-01T12:00:00")),
        ("2026-11-01T12:00:00Z", ms("2026-11-01T12:00:00")),
        ("2026-11-01T14:30:00+02:30", ms("2026-11-01T12:00:00")),
        ("2026-11-01T12:00:00.125", ms("2026-11-01T12:00:00.125")),
        ("7d", NOW_MS - 7 * 86_400_000),
        ("12h", NOW_MS - 12 * 3_600_000),
        ("30m", NOW_MS - 30 * 60_000),
        ("45s", NOW_MS - 45_000),
        ("0s", NOW_MS),
    ],
)
def test_parse_instant(text: str, expected: int) -> None:
    assert parse_instant(text, "--since", NOW_MS) == expected


@pytest.mark.parametrize("text", ["yesterday", "7y", "", "-5d", "2026-13-01", "12 h", "1.5h"])
def test_parse_instant_rejects_with_the_option_named(text: str) -> None:
    with pytest.raises(ReportOptionError, match=r"^--until: expected an ISO date"):
        parse_instant(text, "--until", NOW_MS)


def test_since_must_precede_until() -> None:
    with pytest.raises(ReportOptionError, match="--since"):
        report_options(now_ms=NOW_MS, since="2026-11-02", until="2026-11-01")
    with pytest.raises(ReportOptionError, match="--top"):
        ReportOptions(top=0)


# --- the tables --------------------------------------------------------------------------------


def test_entries_per_hour_across_midnight(spark: Any, archive: str) -> None:
    tables = compute_report(spark, archive, ReportOptions())
    assert tables.entries_per_bucket == [
        {"stream": "audit", "bucket_start": utc("2026-10-31T10:00:00"), "entries": 2},
        {"stream": "orders", "bucket_start": utc("2026-11-01T22:00:00"), "entries": 3},
        {"stream": "orders", "bucket_start": utc("2026-11-01T23:00:00"), "entries": 2},
        {"stream": "orders", "bucket_start": utc("2026-11-02T00:00:00"), "entries": 1},
        {"stream": "payments", "bucket_start": utc("2026-11-01T23:00:00"), "entries": 1},
    ]
    assert tables.top_values == []  # no field asked for


def test_entries_per_minute(spark: Any, archive: str) -> None:
    options = ReportOptions(streams=("orders",), bucket=Bucket.MINUTE)
    tables = compute_report(spark, archive, options)
    assert [(r["bucket_start"], r["entries"]) for r in tables.entries_per_bucket] == [
        (utc("2026-11-01T22:59:00"), 3),
        (utc("2026-11-01T23:00:00"), 1),
        (utc("2026-11-01T23:10:00"), 1),
        (utc("2026-11-02T00:00:00"), 1),
    ]


def test_inter_arrival_percentiles_are_exact(spark: Any, archive: str) -> None:
    tables = compute_report(spark, archive, ReportOptions())
    assert tables.inter_arrival == [
        {
            "stream": "audit",
            "entries": 2,
            "p50_ms": 250.0,
            "p90_ms": 250.0,
            "p99_ms": 250.0,
            "max_ms": 250,
        },
        {
            "stream": "orders",
            "entries": 6,
            "p50_ms": 60000.0,
            "p90_ms": 2039600.0,
            "p99_ms": 2903960.0,
            "max_ms": 3000000,
        },
        {
            "stream": "payments",
            "entries": 1,
            "p50_ms": None,
            "p90_ms": None,
            "p99_ms": None,
            "max_ms": None,
        },
    ]


def test_top_values_ties_go_to_the_smaller_value(spark: Any, archive: str) -> None:
    options = ReportOptions(fields=("status", "region", "absent"), top=2)
    tables = compute_report(spark, archive, options)
    assert [
        (r["stream"], r["field"], r["value"], r["count"], r["rank"]) for r in tables.top_values
    ] == [
        # region: eu 2 and us 2 tie, ap 1 is cut by --top 2; the entry without region is absent
        ("orders", "region", "eu", 2, 1),
        ("orders", "region", "us", 2, 2),
        ("orders", "status", "paid", 3, 1),
        ("orders", "status", "new", 2, 2),
        ("payments", "status", "paid", 1, 1),
    ]


def test_since_inclusive_until_exclusive(spark: Any, archive: str) -> None:
    # payments' entry sits exactly at --since (kept); orders' last one exactly at --until (not).
    options = report_options(
        now_ms=NOW_MS, since="2026-11-01T23:00:00Z", until="2026-11-02", fields=("status",)
    )
    tables = compute_report(spark, archive, options)
    assert [(r["stream"], r["bucket_start"], r["entries"]) for r in tables.entries_per_bucket] == [
        ("orders", utc("2026-11-01T23:00:00"), 2),
        ("payments", utc("2026-11-01T23:00:00"), 1),
    ]
    # Gaps are measured within the window: orders keeps one gap, 23:00:01 -> 23:10:00.
    assert [
        (r["stream"], r["entries"], r["p50_ms"], r["max_ms"]) for r in tables.inter_arrival
    ] == [
        ("orders", 2, 599000.0, 599000),
        ("payments", 1, None, None),
    ]
    assert [(r["stream"], r["value"], r["count"]) for r in tables.top_values] == [
        ("orders", "new", 1),
        ("orders", "paid", 1),
        ("payments", "paid", 1),
    ]


def test_age_window_relative_to_now(spark: Any, archive: str) -> None:
    # now = 2026-11-02T00:05:00Z; the last 10 minutes hold orders' entry at midnight only.
    options = report_options(now_ms=ms("2026-11-02T00:05:00"), since="10m")
    tables = compute_report(spark, archive, options)
    assert [(r["stream"], r["entries"]) for r in tables.entries_per_bucket] == [("orders", 1)]


def test_selection_with_no_entries(spark: Any, archive: str) -> None:
    with pytest.raises(NoEntriesError, match="match the streams and time window"):
        compute_report(spark, archive, ReportOptions(streams=("ghost",)))


@pytest.mark.parametrize("kind", ["bookkeeping only", "missing"])
def test_empty_archive_gives_a_clear_error(spark: Any, tmp_path: Path, kind: str) -> None:
    path = tmp_path / "archive"
    if kind == "bookkeeping only":
        (path / "_xstreams").mkdir(parents=True)
        (path / "_xstreams" / "manifest.json").write_text("{}")
    with pytest.raises(NoEntriesError, match=f"^no archived entries under {path}"):
        compute_report(spark, str(path), ReportOptions())


# --- files -------------------------------------------------------------------------------------


def read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="") as f:
        return list(csv.reader(f))


def test_csv_files_and_chart(spark: Any, archive: str, tmp_path: Path) -> None:
    options = ReportOptions(fields=("status",), top=1)
    result = run_report(spark, archive, options, tmp_path / "out", quiet())

    assert result.entries_csv == tmp_path / "out" / "entries_per_hour.csv"
    assert read_csv(result.entries_csv) == [
        ["stream", "bucket_start", "entries"],
        ["audit", "2026-10-31T10:00:00Z", "2"],
        ["orders", "2026-11-01T22:00:00Z", "3"],
        ["orders", "2026-11-01T23:00:00Z", "2"],
        ["orders", "2026-11-02T00:00:00Z", "1"],
        ["payments", "2026-11-01T23:00:00Z", "1"],
    ]
    assert read_csv(result.inter_arrival_csv) == [
        ["stream", "entries", "p50_ms", "p90_ms", "p99_ms", "max_ms"],
        ["audit", "2", "250", "250", "250", "250"],
        ["orders", "6", "60000", "2039600", "2903960", "3000000"],
        ["payments", "1", "", "", "", ""],
    ]
    assert read_csv(result.top_values_csv) == [
        ["stream", "field", "value", "count", "rank"],
        ["orders", "status", "paid", "3", "1"],
        ["payments", "status", "paid", "1", "1"],
    ]

    png = result.chart_png
    assert png == tmp_path / "out" / "report.png"
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert png.stat().st_size > 20_000  # two panels of lines, bars and text, not a blank image
    with Image.open(png) as image:
        image.verify()
    with Image.open(png) as image:
        assert image.size == (1000, 800)
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
        assert colours is not None and len(colours) > 10


# --- the command line --------------------------------------------------------------------------


def test_cli_report(spark: Any, archive: str, tmp_path: Path) -> None:
    out = tmp_path / "cli-out"
    args = ["report", archive, "--master", "local[2]", "--out", str(out), "--bucket", "minute"]
    args += ["--stream", "orders", "--stream", "payments", "--field", "region", "--top", "1"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "Entries per minute" in result.stdout
    assert "2039600" in result.stdout  # orders' p90 in the inter-arrival table
    assert sorted(p.name for p in out.iterdir()) == [
        "entries_per_minute.csv",
        "inter_arrival.csv",
        "report.png",
        "top_values.csv",
    ]
    assert read_csv(out / "top_values.csv")[1:] == [["orders", "region", "eu", "2", "1"]]
    assert {row[0] for row in read_csv(out / "entries_per_minute.csv")[1:]} == {
        "orders",
        "payments",
    }


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--since", "last tuesday"], 2, "error: --since: expected an ISO date"),
        (["--until", "3y"], 2, "error: --until: expected"),
        (["--conf", "nonsense"], 2, "error: --conf expects key=value"),
    ],
)
def test_cli_bad_options(tmp_path: Path, args: list[str], status: int, message: str) -> None:
    result = CliRunner().invoke(cli, ["report", str(tmp_path), "--master", "local[2]", *args])
    assert result.exit_code == status
    assert result.stderr.startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1  # one line, no traceback


def test_cli_empty_archive(spark: Any, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["report", str(tmp_path), "--master", "local[2]", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 1
    assert result.stderr == f"error: no archived entries under {tmp_path}\n"


# --- live entries through the xstreams data source ---------------------------------------------


def test_live_entries_join_the_archive_once(spark: Any, archive: str, xs: Any, server: Any) -> None:
    # The service still holds orders' last two archived entries, and one entry that is not
    # archived yet: each must be counted once.
    xs("XADD", "orders", f"{ms('2026-11-01T23:10:00')}-0", "status", "new", "region", "ap")
    xs("XADD", "orders", f"{ms('2026-11-02T00:00:00')}-0", "status", "refunded")
    xs("XADD", "orders", f"{ms('2026-11-02T00:00:30')}-0", "status", "paid")
    options = ReportOptions(streams=("orders",), fields=("status",), live_url=server.url)
    tables = compute_report(spark, archive, options)
    assert [(r["bucket_start"], r["entries"]) for r in tables.entries_per_bucket] == [
        (utc("2026-11-01T22:00:00"), 3),
        (utc("2026-11-01T23:00:00"), 2),
        (utc("2026-11-02T00:00:00"), 2),
    ]
    [orders] = tables.inter_arrival
    assert (orders["entries"], orders["p50_ms"], orders["max_ms"]) == (7, 45000.0, 3000000)
    assert [(r["value"], r["count"]) for r in tables.top_values] == [
        ("paid", 4),
        ("new", 2),
        ("refunded", 1),
    ]

    # The window also narrows the live read (XRANGE start/end), and the archive's.
    options = report_options(
        now_ms=NOW_MS, streams=("orders",), since="2026-11-02", live_url=server.url
    )
    tables = compute_report(spark, archive, options)
    assert [(r["bucket_start"], r["entries"]) for r in tables.entries_per_bucket] == [
        (utc("2026-11-02T00:00:00"), 2),
    ]


def test_cli_live_missing_stream_is_one_line(
    spark: Any, archive: str, xs: Any, server: Any, tmp_path: Path
) -> None:
    args = ["report", archive, "--stream", "gone", "--live", server.url,
            "--master", "local[2]", "--out", str(tmp_path / "o")]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert result.stderr == f"error: stream 'gone' does not exist at {server.url}\n"
