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

from app.engine.errors import CommandError
from app.engine.ids import StreamID, format_id, parse_strict_id
from app.pipeline.client import Client, SourceError
from app.pipeline.files import Files
from app.pipeline.options import GLOB_CHARS
from app.pipeline.schema import ARCHIVE_PARTITIONS

RUNS = "_xstreams/runs"
STAGING = "_staging"
_AGE = re.compile(r"^(\d+)(ms|s|m|h|d|w)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


class ArchiveError(RuntimeError):
    """The run stopped before committing; the archive and the stream are as they were."""


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


def parse_cutoff(text: str, now_ms: int) -> StreamID:
    """``--before``: an entry ID (``ms`` or ``ms-seq``) or an age such as ``7d``, ``12h``."""
    value = text.strip()
    age = _AGE.match(value)
    if age:
        return StreamID(max(0, now_ms - int(age.group(1)) * _UNIT_MS[age.group(2)]), 0)
    try:
        return parse_strict_id(value)
    except CommandError:
        raise ArchiveError(
            f"--before must be an entry ID (1700000000000 or 1700000000000-0) or an age "
            f"such as 30m, 12h, 7d; got {text!r}"
        ) from None


def glob_escape(name: str) -> str:
    """A pattern that matches exactly ``name`` (Redis globs take backslash escapes)."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", name)


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


class Archive:
    """The archive folder: committed runs, and recovery from a run that died."""

    def __init__(self, spark: Any, out: str) -> None:
        self.spark = spark
        self.files = Files(spark, out)

    def manifests(self) -> list[dict[str, Any]]:
        runs = self.files.join(RUNS)
        return [
            self.files.read_json(f"{runs}/{name}")
            for name in self.files.children(runs)
            if name.endswith(".json")
        ]

    def archived_through(self, stream: str) -> StreamID | None:
        marks = [parse_strict_id(m["through"]) for m in self.manifests() if m["stream"] == stream]
        return max(marks, default=None)

    def recover(self) -> list[str]:
        """Roll committed runs forward and uncommitted ones back; the runs touched."""
        touched: list[str] = []
        committed = {m["run"]: m for m in self.manifests()}
        for run, manifest in committed.items():
            staged = self.files.join(STAGING, run)
            moved = False
            for rel in manifest["files"]:
                final, source = self.files.join(rel), f"{staged}/{rel}"
                if self.files.exists(source):
                    self.files.rename(source, final)
                    moved = True
                elif not self.files.exists(final):
                    raise ArchiveError(f"run {run}: file {rel} is missing from the archive")
            if self.files.exists(staged):
                self.files.delete(staged)
                moved = True
            if moved:
                touched.append(run)
        for run in self.files.children(self.files.join(STAGING)):
            if run not in committed:
                self.files.delete(self.files.join(STAGING, run))
                touched.append(run)
        return touched

    def publish(self, run: str, files: list[str]) -> None:
        staged = self.files.join(STAGING, run)
        for rel in files:
            self.files.rename(f"{staged}/{rel}", self.files.join(rel))
        self.files.delete(staged)


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
    result = ArchiveResult(stream, format_id(cutoff))
    store = Archive(spark, out)
    result.recovered = store.recover()
    if result.recovered:
        log(f"finished or undone earlier runs: {', '.join(result.recovered)}")
    with Client(url, token) as client:
        kind = client("TYPE", stream)
        if kind not in ("stream", "none"):
            raise ArchiveError(f"key {stream!r} is a {kind}, not a stream")
        if kind == "none":
            raise ArchiveError(f"stream {stream!r} does not exist at {url}")
        mark = store.archived_through(stream)
        tail = client("XREVRANGE", stream, "+", "-", "COUNT", 1)
        last = parse_strict_id(tail[0][0]) if tail else None
        below = cutoff.decr()
        lower = mark.incr() if mark is not None else StreamID(0, 0)
        upper = min(below, last) if below is not None and last is not None else None
        if lower is not None and upper is not None and lower <= upper:
            _archive_range(spark, store, url, token, stream, lower, upper, result,
                           partitions, page_size, log)  # fmt: skip
            mark = upper
        else:
            log(f"nothing new below {format_id(cutoff)} in {stream!r}")
        result.archived_through = format_id(mark) if mark is not None else None
        if trim:
            result.trimmed = _trim(client, stream, mark, cutoff)
            log(f"trimmed {result.trimmed} entries from {stream!r}")
    return result


def _archive_range(
    spark: Any,
    store: Archive,
    url: str,
    token: str | None,
    stream: str,
    lower: StreamID,
    upper: StreamID,
    result: ArchiveResult,
    partitions: int,
    page_size: int,
    log: Callable[[str], None],
) -> None:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    run = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    reader = (
        spark.read.format("xstreams")
        .option("url", url)
        .option("stream", glob_escape(stream))
        .option("start", format_id(lower))
        .option("end", format_id(upper))
        .option("partitions", str(partitions))
        .option("pageSize", str(page_size))
    )
    if token:
        reader = reader.option("token", token)
    rows = reader.load().withColumn("date", F.date_format(F.timestamp_millis("ms"), "yyyy-MM-dd"))
    rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        read = rows.count()
        log(f"read {read} entries of {stream!r} from {format_id(lower)} to {format_id(upper)}")
        if read == 0:
            return
        staged = store.files.join(STAGING, run)
        rows.write.partitionBy(*ARCHIVE_PARTITIONS).parquet(staged)
    finally:
        rows.unpersist()
    first, through = _verify(spark, staged, read, lower, upper)
    files = store.files.data_files(staged)
    manifest = {
        "run": run,
        "stream": stream,
        "first": first,
        "through": format_id(upper),
        "rows": read,
        "files": files,
        "committed_at": datetime.now(UTC).isoformat(),
    }
    store.files.write_json(store.files.join(RUNS, f"{run}.json"), manifest)
    log(f"committed run {run}: {read} entries in {len(files)} files")
    store.publish(run, files)
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
