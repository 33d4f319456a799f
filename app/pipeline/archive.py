"""The archive job (``xstreams archive``): entries older than a cutoff to Parquet, then trim.

The invariant: the archive plus what remains in the stream always equals the original entries,
whatever point a run dies at. How:

* Every committed run has a manifest in ``OUT/_xstreams/runs/``: the stream, the inclusive ID
  range it covers and its files. The manifest is written by one atomic rename; it is the
  commit point. A stream's *archived-through* mark is the highest ``through`` among them.
* A run reads only entries after that mark, so a rerun never archives an entry twice.
* Spark writes into ``OUT/_staging/RUN/`` (invisible to readers of OUT: Spark skips folders
  starting with ``_``); the rows are counted there and compared with what the source read
  before the manifest is written. Then the files move into ``OUT/stream=S/date=D/``.
* The next run first finishes what a dead one left: a run with a manifest has its files moved
  (roll forward); staging without a manifest is deleted (roll back).
* ``--trim`` removes entries up to the archived-through mark only (``XTRIM MINID``), never
  past the cutoff, and only after the manifest is committed; trimming twice is harmless.
  Entries newer than the mark cannot be trimmed, even if they arrive during the run.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from app.durations import parse_duration_ms
from app.engine.errors import CommandError
from app.engine.glob import escape
from app.engine.ids import StreamID, format_id, parse_strict_id
from app.pipeline.archive_folder import STAGING, Archive, ArchiveError, now_iso
from app.pipeline.client import Client, SourceError
from app.pipeline.options import GLOB_CHARS
from app.pipeline.schema import ARCHIVE_PARTITIONS


@dataclass
class ArchiveResult:
    stream: str
    cutoff: str  # entries with IDs below this were to be archived
    run: str | None = None  # None: nothing new to archive
    first: str | None = None
    through: str | None = None  # last ID this run archived
    rows: int = 0
    archived_through: str | None = None  # the stream's mark after the run
    trimmed: int | None = None  # entries XTRIM removed (None without --trim)
    recovered: list[str] = field(default_factory=list)  # runs finished or undone first


__all__ = ["ArchiveError", "ArchiveResult", "archive", "parse_cutoff", "streams_matching"]


def parse_cutoff(text: str, now_ms: int) -> StreamID:
    """``--before``: an entry ID (``ms`` or ``ms-seq``) or an age such as ``7d``, ``12h``."""
    value = text.strip()
    age_ms = parse_duration_ms(value)
    if age_ms is not None:
        return StreamID(max(0, now_ms - age_ms), 0)
    try:
        return parse_strict_id(value)
    except CommandError:
        raise ArchiveError(
            f"--before must be an entry ID (1700000000000 or 1700000000000-0) or an age "
            f"such as 30m, 12h, 7d; got {text!r}"
        ) from None


def streams_matching(url: str, token: str | None, pattern: str) -> list[str]:
    """The streams a command-line ``--stream`` names: each one a glob matches, else the name
    (with its backslash escapes removed), so a missing stream still gets its own error."""
    if not any(c in GLOB_CHARS for c in re.sub(r"\\.", "", pattern)):
        return [re.sub(r"\\(.)", r"\1", pattern)]
    with Client(url, token) as client:
        found = client.scan(pattern)
    if not found:
        raise SourceError(f"no stream matches {pattern!r} at {url}")
    return found


@dataclass(frozen=True)
class _Job:
    """One stream's run: where to read, what to keep, how to report."""

    spark: Any
    store: Archive
    url: str
    token: str | None
    stream: str
    cutoff: StreamID
    partitions: int
    page_size: int
    log: Callable[[str], None]


def archive(
    spark: Any,
    url: str,
    stream: str,
    before: str,
    out: str,
    *,
    trim: bool = False,
    token: str | None = None,
    partitions: int = 4,
    page_size: int = 5000,
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    log: Callable[[str], None] = lambda _: None,
) -> ArchiveResult:
    """Archive ``stream``'s entries below the cutoff into ``out``, then optionally trim them."""
    cutoff = parse_cutoff(before, now_ms())
    store = Archive(spark, out)
    job = _Job(spark, store, url, token, stream, cutoff, partitions, page_size, log)
    store.lock()
    try:
        return _run(job, trim)
    finally:
        store.unlock()


def _run(job: _Job, trim: bool) -> ArchiveResult:
    result = ArchiveResult(job.stream, format_id(job.cutoff))
    result.recovered = job.store.recover()
    if result.recovered:
        job.log(f"finished or undone earlier runs: {', '.join(result.recovered)}")
    with Client(job.url, job.token) as client:
        kind = client("TYPE", job.stream)
        if kind not in ("stream", "none"):
            raise ArchiveError(f"key {job.stream!r} is a {kind}, not a stream")
        if kind == "none":
            raise ArchiveError(f"stream {job.stream!r} does not exist at {job.url}")
        mark = job.store.archived_through(job.stream)
        tail = client("XREVRANGE", job.stream, "+", "-", "COUNT", 1)
        last = parse_strict_id(tail[0][0]) if tail else None
        below = job.cutoff.decr()
        lower = mark.incr() if mark is not None else StreamID(0, 0)
        # Every entry up to ``upper`` exists now; later ones get higher IDs.
        upper = min(below, last) if below is not None and last is not None else None
        if lower is not None and upper is not None and lower <= upper:
            _archive_range(job, lower, upper, result)
            mark = upper
        else:
            job.log(f"nothing new below {format_id(job.cutoff)} in {job.stream!r}")
        result.archived_through = format_id(mark) if mark is not None else None
        if trim:
            result.trimmed = _trim(client, job.stream, mark, job.cutoff)
            job.log(f"trimmed {result.trimmed} entries from {job.stream!r}")
    return result


def _archive_range(job: _Job, lower: StreamID, upper: StreamID, result: ArchiveResult) -> None:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    run = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    reader = (
        job.spark.read.format("xstreams")
        .option("url", job.url)
        .option("stream", escape(job.stream))
        .option("start", format_id(lower))
        .option("end", format_id(upper))
        .option("partitions", str(job.partitions))
        .option("pageSize", str(job.page_size))
    )
    if job.token:
        reader = reader.option("token", job.token)
    rows = reader.load().withColumn("date", F.date_format(F.timestamp_millis("ms"), "yyyy-MM-dd"))
    rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        read = rows.count()
        job.log(
            f"read {read} entries of {job.stream!r} from {format_id(lower)} to {format_id(upper)}"
        )
        if read == 0:
            return
        staged = job.store.files.join(STAGING, run)
        rows.write.partitionBy(*ARCHIVE_PARTITIONS).parquet(staged)
    finally:
        rows.unpersist()
    first, through = _verify(job.spark, staged, read, lower, upper)
    files = job.store.files.data_files(staged)
    job.store.commit(
        {
            "run": run,
            "stream": job.stream,
            "first": first,
            "through": format_id(upper),
            "rows": read,
            "files": files,
            "committed_at": now_iso(),
        }
    )
    job.log(f"committed run {run}: {read} entries in {len(files)} files")
    job.store.publish(run, files)
    result.run, result.first, result.through, result.rows = run, first, through, read


def _verify(
    spark: Any, staged: str, expected: int, lower: StreamID, upper: StreamID
) -> tuple[str, str]:
    """Count what landed in staging against what the source read: every row once, in range."""
    from pyspark.sql import functions as F

    known = F.col("ms").isNotNull() & F.col("seq").isNotNull()
    stats = (
        spark.read.parquet(staged)
        .agg(
            F.count("*").alias("rows"),
            F.countDistinct("id").alias("ids"),
            F.min(F.when(known, F.struct("ms", "seq"))).alias("lo"),
            F.max(F.when(known, F.struct("ms", "seq"))).alias("hi"),
        )
        .first()
    )
    problems = []
    if stats.rows != expected or stats.ids != expected:
        problems.append(f"read {expected} entries but wrote {stats.rows} ({stats.ids} IDs)")
    # IDs beyond a long (null ms/seq) sit at the top of the range; the bounds check skips them.
    lo = StreamID(*stats.lo) if stats.lo is not None else upper
    hi = StreamID(*stats.hi) if stats.hi is not None else upper
    if lo < lower or hi > upper:
        problems.append(f"IDs {format_id(lo)}..{format_id(hi)} outside the range")
    if problems:
        raise ArchiveError("verification failed, nothing committed: " + "; ".join(problems))
    return format_id(lo), format_id(hi)


def _trim(client: Client, stream: str, mark: StreamID | None, cutoff: StreamID) -> int:
    """XTRIM MINID: keep everything after the archived-through mark, and all from the cutoff."""
    if mark is None:
        return 0
    after = mark.incr()
    keep_from = cutoff if after is None else min(after, cutoff)
    return int(client("XTRIM", stream, "MINID", "=", format_id(keep_from)))
