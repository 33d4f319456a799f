"""The report job: traffic, inter-arrival gaps and common field values of archived streams.

Only aggregates reach the driver: every table is computed by Spark, so the report's cost on the
driver does not grow with the archive, only with streams x buckets and ``--top``.

Deliberate choices:

* The archive is read with an explicit schema, partition columns included, so a partition
  value that looks like a date or a number stays the string the archive job wrote (Spark would
  otherwise infer ``date`` as a DATE and a stream named ``2026`` as an INT), and an archive
  without data files reads as empty instead of failing schema inference.
* ``--stream``, ``--since`` and ``--until`` also filter the partition columns, so Spark lists
  only the folders that can match.
* Buckets are ``ms - ms mod width``: exact integer arithmetic, independent of any time zone.
* Entries whose ``ms`` is null (an ID part above 2^63 - 1) have no place in time: left out.
* The selection is persisted: the three tables and the emptiness check each scan it, and with
  ``--live`` a scan is a round of HTTP requests to the service.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from app.pipeline.report_model import (
    BucketRow,
    InterArrivalRow,
    NoEntriesError,
    ReportOptions,
    ReportTables,
    TopValueRow,
)
from app.pipeline.schema import ARCHIVE_PARTITIONS, entry_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType
    from rich.console import Console

__all__ = ["ReportResult", "archive_schema", "compute_report", "read_archive", "run_report"]

_ENTRY_COLUMNS = ("stream", "id", "ms", "seq", "fields")
_PERCENTILES = (0.5, 0.9, 0.99)
_NONE = (None, None, None)


@dataclass(frozen=True)
class ReportResult:
    """The tables and the files written from them."""

    tables: ReportTables
    entries_csv: Path
    inter_arrival_csv: Path
    top_values_csv: Path
    chart_png: Path


def archive_schema() -> StructType:
    """The entry columns the archive's files hold, then its partition columns as strings."""
    from pyspark.sql.types import StringType, StructField, StructType

    entry = entry_schema()
    files = [f for f in entry.fields if f.name not in ARCHIVE_PARTITIONS]
    return StructType([*files, *(StructField(name, StringType()) for name in ARCHIVE_PARTITIONS)])


def read_archive(spark: SparkSession, archive: str) -> DataFrame:
    """The archive's rows: entry columns plus ``stream`` and ``date`` as strings.

    Folders starting with ``_`` or ``.`` (the archive job's manifest, its staging area) are
    skipped by Spark's partition discovery itself.
    """
    from pyspark.errors import AnalysisException

    try:
        return spark.read.schema(archive_schema()).option("basePath", archive).parquet(archive)
    except AnalysisException as exc:
        if exc.getCondition() == "PATH_NOT_FOUND":
            raise NoEntriesError(f"no archived entries under {archive} (no such path)") from None
        raise


def _select(spark: SparkSession, archive: str, options: ReportOptions) -> DataFrame:
    """Archive rows (and live ones) within the streams and time window asked for."""
    from pyspark.sql import functions as F

    rows = read_archive(spark, archive)
    if options.streams:
        rows = rows.where(F.col("stream").isin(list(options.streams)))
    if options.since_ms is not None:
        rows = rows.where(F.col("date") >= _day(options.since_ms))
    if options.until_ms is not None:
        rows = rows.where(F.col("date") <= _day(options.until_ms - 1))
    rows = _in_window(rows.select(*_ENTRY_COLUMNS), options)
    if options.live_url is not None:
        live = _in_window(_read_live(spark, options.live_url, options), options)
        rows = rows.unionByName(live.select(*_ENTRY_COLUMNS))
        # An entry can be archived and still be in the stream: count it once.
        rows = rows.dropDuplicates(["stream", "id"])
    return rows.select("stream", "ms", "seq", "fields")


def _in_window(rows: DataFrame, options: ReportOptions) -> DataFrame:
    """Filtered on each side of the union, where Spark can still push it into the scan."""
    from pyspark.sql import functions as F

    rows = rows.where(F.col("ms").isNotNull())
    if options.since_ms is not None:
        rows = rows.where(F.col("ms") >= options.since_ms)
    if options.until_ms is not None:
        rows = rows.where(F.col("ms") < options.until_ms)
    return rows


def _read_live(spark: SparkSession, url: str, options: ReportOptions) -> DataFrame:
    """The same streams read from the running service through the ``xstreams`` data source.

    The time window becomes an XRANGE range, so the service sends only the entries asked for.
    """
    names = options.streams or ("*",)
    frames = []
    for name in names:
        reader = spark.read.format("xstreams").option("url", url)
        reader = reader.option("stream", name)
        if options.token is not None:
            reader = reader.option("token", options.token)
        if options.since_ms is not None:
            reader = reader.option("start", str(max(options.since_ms, 0)))
        if options.until_ms is not None and options.until_ms > 0:
            reader = reader.option("end", str(options.until_ms - 1))  # ms-max: all of that ms
        frames.append(reader.load())
    live = frames[0]
    for frame in frames[1:]:
        live = live.unionByName(frame)
    return live


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def _entries_per_bucket(entries: DataFrame, width_ms: int) -> list[BucketRow]:
    from pyspark.sql import functions as F

    start = (F.col("ms") - F.pmod(F.col("ms"), F.lit(width_ms))).alias("bucket_start_ms")
    rows = (
        entries.groupBy("stream", start)
        .agg(F.count(F.lit(1)).alias("entries"))
        .orderBy("stream", "bucket_start_ms")
        .collect()
    )
    return [
        BucketRow(
            stream=r["stream"],
            bucket_start=datetime.fromtimestamp(r["bucket_start_ms"] / 1000, UTC),
            entries=r["entries"],
        )
        for r in rows
    ]


def _inter_arrival(entries: DataFrame) -> list[InterArrivalRow]:
    """Gaps by exact ``percentile``: approximate answers would make the figures depend on
    Spark's sketch accuracy; its buffer is one counter per distinct gap, which stays small
    because gaps in whole milliseconds repeat."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    in_order = Window.partitionBy("stream").orderBy("ms", "seq")
    gaps = entries.select("stream", (F.col("ms") - F.lag("ms").over(in_order)).alias("gap_ms"))
    rows = (
        gaps.groupBy("stream")
        .agg(
            F.count(F.lit(1)).alias("entries"),
            F.percentile("gap_ms", list(_PERCENTILES)).alias("percentiles"),
            F.max("gap_ms").alias("max_ms"),
        )
        .orderBy("stream")
        .collect()
    )
    result: list[InterArrivalRow] = []
    for r in rows:
        # Rounded to the microsecond: interpolating whole milliseconds in floating point
        # leaves noise such as 2039600.0000000002 that no reader wants in a CSV file.
        p50, p90, p99 = (round(p, 3) for p in r["percentiles"]) if r["percentiles"] else _NONE
        result.append(
            InterArrivalRow(
                stream=r["stream"],
                entries=r["entries"],
                p50_ms=p50,
                p90_ms=p90,
                p99_ms=p99,
                max_ms=r["max_ms"],
            )
        )
    return result


def _top_values(entries: DataFrame, fields: tuple[str, ...], top: int) -> list[TopValueRow]:
    """Ties in count go to the smaller value, so the same archive always gives the same rows."""
    if not fields:
        return []
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    chosen = F.map_filter("fields", lambda key, _value: key.isin(list(fields)))
    pairs = entries.select("stream", F.explode(chosen).alias("field", "value"))
    counts = pairs.groupBy("stream", "field", "value").agg(F.count(F.lit(1)).alias("count"))
    by_count = Window.partitionBy("stream", "field").orderBy(F.desc("count"), F.asc("value"))
    rows = (
        counts.withColumn("rank", F.row_number().over(by_count))
        .where(F.col("rank") <= top)
        .orderBy("stream", "field", "rank")
        .collect()
    )
    return [
        TopValueRow(
            stream=r["stream"], field=r["field"], value=r["value"], count=r["count"], rank=r["rank"]
        )
        for r in rows
    ]


def compute_report(spark: SparkSession, archive: str, options: ReportOptions) -> ReportTables:
    """The three tables for the archive at ``archive`` (any path Spark reads: local, s3a://...).

    Raises ``NoEntriesError`` when there is nothing to report, rather than an empty report that
    looks like a quiet stream.
    """
    from pyspark import StorageLevel

    entries = _select(spark, archive, options).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        if entries.isEmpty():
            if options.live_url is None and read_archive(spark, archive).isEmpty():
                raise NoEntriesError(f"no archived entries under {archive}")
            raise NoEntriesError(
                f"no entries under {archive} match the streams and time window asked for"
            )
        return ReportTables(
            bucket=options.bucket,
            entries_per_bucket=_entries_per_bucket(entries, options.bucket.width_ms),
            inter_arrival=_inter_arrival(entries),
            top_values=_top_values(entries, options.fields, options.top),
        )
    finally:
        entries.unpersist()


def run_report(
    spark: SparkSession,
    archive: str,
    options: ReportOptions,
    out: Path,
    console: Console | None = None,
) -> ReportResult:
    """Compute the tables, print them, and save them as CSV files and one PNG chart in ``out``."""
    from app.pipeline.report_chart import draw_chart
    from app.pipeline.report_output import print_tables, write_csv_files

    tables = compute_report(spark, archive, options)
    out.mkdir(parents=True, exist_ok=True)
    entries_csv, inter_arrival_csv, top_values_csv = write_csv_files(tables, out)
    chart_png = draw_chart(tables, out / "report.png")
    print_tables(tables, console)
    return ReportResult(
        tables=tables,
        entries_csv=entries_csv,
        inter_arrival_csv=inter_arrival_csv,
        top_values_csv=top_values_csv,
        chart_png=chart_png,
    )
