"""``xstreams archive``: move a stream's old entries to Parquet, then optionally trim them.

PySpark is imported inside the command only, so the rest of the command line starts where the
optional pipeline dependencies are not installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.spark_options import Conf, Master, require_pipeline

if TYPE_CHECKING:
    from app.pipeline.archive import ArchiveResult


def archive(
    stream: Annotated[
        str,
        typer.Option(
            help="The stream to archive, or a glob (orders-*) for each matching stream; "
            "a backslash escapes * ? [ in a name."
        ),
    ],
    before: Annotated[
        str,
        typer.Option(help="Archive entries older than this: an ID or an age (30m, 12h, 7d)."),
    ],
    out: Annotated[
        str, typer.Option(help="The archive folder: a path or URL Spark writes (file, hdfs, s3a).")
    ],
    trim: Annotated[
        bool, typer.Option(help="After the archive is committed, XTRIM what it holds.")
    ] = False,
    url: Annotated[
        str, typer.Option(envvar="XSTREAMS_URL", help="The service's base URL.")
    ] = "http://127.0.0.1:8000",
    token: Annotated[
        str | None, typer.Option(envvar="XSTREAMS_TOKEN", help="The service's bearer token.")
    ] = None,
    partitions: Annotated[int, typer.Option(min=1, help="Parallel reads of the range.")] = 4,
    master: Master = None,
    conf: Conf = None,
) -> None:
    """Write the entries before the cutoff as Parquet partitioned by stream and UTC date."""
    require_pipeline()
    from app.pipeline.archive import ArchiveError, parse_cutoff
    from app.pipeline.client import SourceError
    from app.pipeline.session import PipelineSetupError, failure_text, parse_conf, spark_session

    def say(line: str) -> None:
        typer.echo(line, err=True)

    try:
        parse_cutoff(before, 0)  # a malformed --before fails before Spark starts
        spark = spark_session("xstreams-archive", master, parse_conf(conf or ()))
    except (PipelineSetupError, ArchiveError) as e:
        say(f"error: {e}")
        raise typer.Exit(2) from e

    from app.pipeline.archive import archive as run
    from app.pipeline.archive import streams_matching

    try:
        names = streams_matching(url, token, stream)
    except SourceError as e:
        say(f"error: {e}")
        raise typer.Exit(1) from e
    failed = False
    for name in names:
        try:
            result = run(
                spark, url, name, before, out,
                trim=trim, token=token, partitions=partitions, log=say,
            )  # fmt: skip
        except (ArchiveError, SourceError) as e:
            say(f"error: {e}")
            failed = True
            continue
        except Exception as e:  # a Spark job failed: show its cause, not the JVM's stack
            say(f"error: {name!r}: {failure_text(e)}")
            failed = True
            continue
        typer.echo(_summary(result))
    if failed:
        raise typer.Exit(1)


def _summary(result: ArchiveResult) -> str:
    text = f"archived {result.rows} entries of {result.stream!r}"
    if result.run:
        text += f" ({result.first} .. {result.through}) in run {result.run}"
    text += f"; archived through {result.archived_through or 'nothing yet'}"
    if result.trimmed is not None:
        text += f"; trimmed {result.trimmed}"
    return text
