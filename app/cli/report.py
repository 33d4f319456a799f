"""``xstreams report``: the report job of the command line.

PySpark is imported inside the command only: the rest of the ``xstreams`` command line must
start where the optional pipeline dependencies are not installed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from app.cli.spark_options import Conf, Master, require_pipeline
from app.pipeline.report_model import Bucket


def report(
    archive: Annotated[str, typer.Argument(help="The archive's folder (any path Spark reads).")],
    stream: Annotated[
        list[str] | None, typer.Option(help="Report on this stream only (repeatable).")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(help="From this UTC time, inclusive: 2026-11-01, 2026-11-01T12:00:00Z, 7d."),
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Up to this UTC time, exclusive (same forms as --since).")
    ] = None,
    bucket: Annotated[Bucket, typer.Option(help="Width of the time buckets.")] = Bucket.HOUR,
    field: Annotated[
        list[str] | None, typer.Option(help="Show this field's most frequent values (repeatable).")
    ] = None,
    top: Annotated[int, typer.Option(help="How many values per field and stream.")] = 10,
    out: Annotated[Path, typer.Option(help="Folder for the CSV files and report.png.")] = Path(
        "report"
    ),
    live: Annotated[
        str | None,
        typer.Option(help="Also read the streams from this running service (base URL)."),
    ] = None,
    token: Annotated[str | None, typer.Option(help="Bearer token for --live.")] = None,
    master: Master = None,
    conf: Conf = None,
) -> None:
    """Entries per bucket, inter-arrival percentiles and top field values of archived streams."""
    require_pipeline()
    from app.pipeline.report_model import NoEntriesError, ReportError, report_options
    from app.pipeline.session import PipelineSetupError, failure_text, parse_conf, spark_session

    try:
        options = report_options(
            now_ms=time.time_ns() // 1_000_000,
            streams=tuple(stream or ()),
            since=since,
            until=until,
            bucket=bucket,
            fields=tuple(field or ()),
            top=top,
            live_url=live,
            token=token,
        )
        spark = spark_session("xstreams-report", master, parse_conf(conf or ()))
    except (PipelineSetupError, ReportError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e

    from app.pipeline.report import run_report

    try:
        result = run_report(spark, archive, options, out)
    except NoEntriesError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from e
    except Exception as e:  # a Spark job failed (e.g. --live): its cause, not the JVM's stack
        typer.echo(f"error: {failure_text(e)}", err=True)
        raise typer.Exit(1) from e
    typer.echo(
        f"wrote {result.entries_csv}, {result.inter_arrival_csv}, {result.top_values_csv},"
        f" {result.chart_png}"
    )
