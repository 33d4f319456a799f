"""One run of the benchmark: what it measures (``Plan``) and the sequence (``run``): load,
Spark reads, anchors, archive runs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.pipeline.archive_timing import archive_run
from bench.pipeline.data import STREAM, TRIM_STREAM, load_redis, load_xstreams, log_stderr
from bench.pipeline.meter import Cell, Meter, Sample, repeat, timed
from bench.pipeline.reads import halves, http_read, redis_read, spark_count, spark_full_read


@dataclass
class Plan:
    """What one run measures."""

    entries: int = 1_000_000
    rounds: int = 3
    warmups: int = 1
    page_size: int = 5000
    partitions: tuple[int, ...] = (1, 2, 4)
    trim: bool = True
    warm_archive: bool = True  # archive trim=False twice: cold (as the CLI runs) and warm
    quick: bool = False


def run(spark: Any, url: str, server_pid: int | None, redis_client: Any | None, plan: Plan,
        workdir: Path) -> dict[str, Any]:  # fmt: skip
    """Load, read, archive; every figure of one run, as the JSON holds it.

    Takes the session, server and redis client from the caller so the smoke test can run it
    on the test fixtures (one SparkSession per test run).
    """
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    t_start = time.monotonic()
    n, ps = plan.entries, plan.page_size
    exclude = {server_pid} if server_pid else set()
    meter = Meter(server_pid, exclude)
    figures: dict[str, Any] = {"started": started, "config": asdict(plan), "load": {}}

    log_stderr(f"loading {n:,} entries into xstreams ({url})")
    figures["load"]["xstreams"] = load_xstreams(url, STREAM, n)
    redis_pid: int | None = None
    if redis_client is not None:
        log_stderr("loading the same entries into redis-server")
        figures["load"]["redis"] = load_redis(redis_client, STREAM, n)
        redis_pid = int(redis_client.info("server")["process_id"])

    cells: list[Cell] = []
    for p in plan.partitions:
        log_stderr(f"Spark batch read, partitions={p}")
        cells.append(repeat(
            Cell(f"spark_p{p}", f"Spark read, {p} partition{'s' if p > 1 else ''}"), meter,
            lambda p=p: spark_full_read(spark, url, STREAM, p, ps), plan.rounds, plan.warmups,
        ))  # fmt: skip
    log_stderr("Spark bare count(), partitions=2 (once)")
    count_cell = Cell("spark_count_p2", "Spark bare count(), 2 partitions")
    count_cell.samples.append(timed(meter, lambda: spark_count(spark, url, STREAM, 2, ps)))
    cells.append(count_cell)

    full = halves(url, STREAM, 1)
    two = halves(url, STREAM, 2)
    anchors: list[tuple[str, str, Callable[[], Sample]]] = [
        ("http_1", "anchor a: 1 process, Client.xrange_pages",
         lambda: http_read(url, STREAM, full, ps, meter)),
        ("http_1_arrow", "anchor a': 1 process, xrange_pages + entries_batch",
         lambda: http_read(url, STREAM, full, ps, meter, arrow=True)),
        ("http_2", "anchor b: 2 processes, halves",
         lambda: http_read(url, STREAM, two, ps, meter)),
    ]  # fmt: skip
    for key, label, action in anchors:
        log_stderr(label)
        cell = Cell(key, label)
        for _ in range(plan.warmups):
            action()
        for _ in range(plan.rounds):
            cell.samples.append(action())
            log_stderr(f"  {label}: {cell.samples[-1].rate:,.0f} entries/s")
        cells.append(cell)
    if redis_client is not None:
        log_stderr("anchor c: redis-py XRANGE pages on redis-server")
        redis_meter = Meter(redis_pid, exclude)
        cells.append(repeat(Cell("redis_1", "anchor c: redis-py XRANGE, redis-server"),
                            redis_meter, lambda: redis_read(redis_client, STREAM, ps),
                            plan.rounds, plan.warmups))  # fmt: skip
    figures["cells"] = {c.key: c.summary() for c in cells}

    archives: list[dict[str, Any]] = []
    log_stderr("archive, trim=False (the first Parquet write of this JVM, as a CLI run sees it)")
    archives.append(archive_run(spark, url, STREAM, n, workdir / "archive", meter, trim=False,
                                label="archive trim=False, first in this JVM"))  # fmt: skip
    if plan.warm_archive:
        log_stderr("archive, trim=False again into a new folder (warm JVM)")
        archives.append(archive_run(spark, url, STREAM, n, workdir / "archive-warm", meter,
                                    trim=False, label="archive trim=False, warm JVM"))  # fmt: skip
    if plan.trim:
        log_stderr(f"loading a fresh copy into {TRIM_STREAM!r} for the trim run")
        figures["load"]["xstreams_trim_copy"] = load_xstreams(url, TRIM_STREAM, n)
        log_stderr("archive, trim=True")
        archives.append(
            archive_run(
                spark, url, TRIM_STREAM, n, workdir / "archive-trim", meter, trim=True,
                label="archive trim=True, fresh copy, warm JVM",
            )
        )  # fmt: skip
    figures["archive"] = archives
    figures["load_average_at_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    figures["load_average_at_start"] = load_start
    figures["seconds_total"] = round(time.monotonic() - t_start, 1)
    return figures
