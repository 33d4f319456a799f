"""The timed reads: the ``xstreams`` Spark source (full read and bare count) and the anchors
measured beside it, spawned HTTP readers paging with the source's own client and redis-py
paging redis-server."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from typing import Any

from app.engine.ids import format_id, parse_strict_id
from app.pipeline.client import Client
from bench.pipeline.meter import Meter, Sample


def spark_full_read(spark: Any, url: str, stream: str, partitions: int, page_size: int) -> int:
    """Every row and every column through the source, nothing big written: the aggregate
    touches the id string, the map and the pair array, so Spark must convert each batch in
    full (a bare ``count()`` may skip converting the columns). Returns the row count."""
    from pyspark.sql import functions as F

    row = (
        _frame(spark, url, stream, partitions, page_size)
        .select(
            F.count("*").alias("rows"),
            F.sum(F.length("id")).alias("id_chars"),
            F.sum(F.size("fields")).alias("map_entries"),
            F.sum(F.size("pairs")).alias("pairs"),
            F.sum(F.length(F.col("fields")["kind"])).alias("kind_chars"),
        )
        .collect()[0]
    )
    if row.map_entries != row.pairs or row.map_entries != 3 * row.rows:
        raise RuntimeError(f"unexpected read: {row}")
    return int(row.rows)


def spark_count(spark: Any, url: str, stream: str, partitions: int, page_size: int) -> int:
    """The bare ``count()``, measured once beside the full read to show whether Spark skips
    converting columns when none is needed."""
    return int(_frame(spark, url, stream, partitions, page_size).count())


def _frame(spark: Any, url: str, stream: str, partitions: int, page_size: int) -> Any:
    return (
        spark.read.format("xstreams")
        .option("url", url)
        .option("stream", stream)
        .option("partitions", str(partitions))
        .option("pageSize", str(page_size))
        .load()
    )


def _reader(url: str, stream: str, start: str, end: str, page_size: int, arrow: bool,
            ready: Any, go: Any, out: Any, done: Any) -> None:  # fmt: skip
    """A spawned anchor reader: imports and connects first, then pages once told to go."""
    from app.pipeline.schema import entries_batch

    with Client(url) as client:
        client("PING")  # the connection is open before the clock starts
        if arrow:  # pyarrow's first array costs ~0.3 s of one-off setup: not a per-entry cost
            entries_batch(stream, [["0-1", ["f", "v"]]])
        ready.put(os.getpid())
        go.wait()
        rows = 0
        for page in client.xrange_pages(stream, start, end, page_size):
            rows += len(page)
            if arrow:
                entries_batch(stream, page)
        out.put((rows, time.monotonic()))
        done.wait(60)  # stay alive until the meter has read this process's CPU


def http_read(url: str, stream: str, ranges: list[tuple[str, str]], page_size: int,
              meter: Meter, arrow: bool = False) -> Sample:  # fmt: skip
    """``len(ranges)`` separate processes page their ranges with ``Client.xrange_pages``; the
    wall time runs from the go signal to the last one's end (process start is not timed).

    Processes, not threads: two threads would share one GIL and measure one core. Spawned, not
    forked: this process runs Spark's JVM gateway threads, which fork would copy mid-state.
    """
    ctx = mp.get_context("spawn")
    ready, out, go, done = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Event()
    procs = [
        ctx.Process(
            target=_reader, args=(url, stream, lo, hi, page_size, arrow, ready, go, out, done)
        )
        for lo, hi in ranges
    ]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            ready.get(timeout=60)
        figures: list[float] = []
        with meter.measure(figures):
            t0 = time.monotonic()
            go.set()
            results = [out.get(timeout=600) for _ in procs]
        rows = sum(r for r, _ in results)
        wall = max(t for _, t in results) - t0
    finally:
        done.set()
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
    _, server, client, machine = figures
    return Sample(round(wall, 3), rows, round(rows / wall, 1), round(server, 2),
                  round(client, 2), round(machine, 2))  # fmt: skip


def halves(url: str, stream: str, parts: int) -> list[tuple[str, str]]:
    """The stream's range cut the way the source cuts it (``slices.split_range``)."""
    from app.pipeline.slices import split_range

    with Client(url) as client:
        first = parse_strict_id(client("XRANGE", stream, "-", "+", "COUNT", 1)[0][0])
        last = parse_strict_id(client("XREVRANGE", stream, "+", "-", "COUNT", 1)[0][0])
    return [(format_id(a), format_id(b)) for a, b in split_range(first, last, parts)]


def redis_read(r: Any, stream: str, page_size: int) -> int:
    """redis-py paging XRANGE the way ``Client.xrange_pages`` does: exclusive ``(id`` resume."""
    rows, lower = 0, "-"
    while True:
        page = r.xrange(stream, lower, "+", count=page_size)
        rows += len(page)
        if len(page) < page_size:
            return rows
        lower = "(" + page[-1][0]
