"""The ``xstreams`` Spark data source: batch reads of ID ranges, streaming reads by offsets.

``spark.read.format("xstreams").option("url", ...).option("stream", "orders-*").load()`` plans on
the driver (which streams match, where each range starts and ends) and reads on the executors,
each task paging through its own slices with XRANGE. The upper end of ``+`` is fixed to each
stream's last entry when the read is planned, so every task reads the same snapshot of the
range even while entries keep arriving.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from app.engine.ids import StreamID, format_id
from app.pipeline.client import Client, MissingStream, ReplyError, SourceError
from app.pipeline.options import Options, parse_options
from app.pipeline.schema import entries_batch, entry_schema
from app.pipeline.slices import Slice, Slices, id_of, plan


class XStreamsDataSource(DataSource):
    """Streams of an xstreams service (or any Upstash-protocol server) as a DataFrame."""

    @classmethod
    def name(cls) -> str:
        return "xstreams"

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.parsed = parse_options(dict(options))

    def schema(self) -> StructType:
        return entry_schema(self.parsed.binary)

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(self.parsed)

    def streamReader(self, schema: StructType) -> Any:
        from app.pipeline.streaming import StreamReader

        return StreamReader(self.parsed)


def connect(opts: Options) -> Client:
    return Client(opts.url, opts.token, retries=opts.retries, timeout_s=opts.timeout_s)


def matching_streams(client: Client, opts: Options) -> list[str]:
    """The streams a read covers: every stream a glob matches, or the one named.

    A named stream that does not exist is an error (a typo must not read as "no data"); a glob
    that matches nothing is an empty read.
    """
    if opts.is_glob:
        return client.scan(opts.stream)
    kind = client("TYPE", opts.stream)
    if kind == "none":
        raise MissingStream(f"stream {opts.stream!r} does not exist at {opts.url}")
    if kind != "stream":
        raise SourceError(f"key {opts.stream!r} at {opts.url} is a {kind}, not a stream")
    return [opts.stream]


def stream_bounds(client: Client, streams: list[str]) -> dict[str, tuple[StreamID, StreamID]]:
    """First and last entry of each non-empty stream, in one round trip."""
    commands: list[list[str | int]] = []
    for s in streams:
        commands += [["XRANGE", s, "-", "+", "COUNT", 1], ["XREVRANGE", s, "+", "-", "COUNT", 1]]
    replies = client.pipeline(commands)
    bounds: dict[str, tuple[StreamID, StreamID]] = {}
    for i, s in enumerate(streams):
        first, last = replies[2 * i], replies[2 * i + 1]
        if first and last:
            bounds[s] = (id_of(first[0][0]), id_of(last[0][0]))
    return bounds


class BatchReader(DataSourceReader):
    def __init__(self, opts: Options) -> None:
        self.opts = opts

    def partitions(self) -> list[InputPartition]:
        opts = self.opts
        with connect(opts) as client:
            streams = matching_streams(client, opts)
            ranges: dict[str, tuple[StreamID, StreamID]] = {}
            for s, (first, last) in stream_bounds(client, streams).items():
                lo, hi = max(opts.start, first), min(opts.end, last)
                if lo <= hi:
                    ranges[s] = (lo, hi)
        slices: list[InputPartition] = list(plan(ranges, opts.partitions))
        return slices

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, Slices):  # an empty plan still gets one placeholder task
            yield from read_slices(self.opts, partition.slices)


def read_slices(opts: Options, slices: tuple[Slice, ...]) -> Iterator[pa.RecordBatch]:
    """Runs on an executor: page through each slice, one Arrow batch per page."""
    with connect(opts) as client:
        for sl in slices:
            if sl.group is None:
                for page in client.xrange_pages(sl.stream, sl.start, sl.end, opts.page_size):
                    yield entries_batch(sl.stream, page, opts.binary)
            else:
                yield from _read_pending(client, opts, sl)


def _read_pending(client: Client, opts: Options, sl: Slice) -> Iterator[pa.RecordBatch]:
    """A consumer's own pending entries in the slice, through XREADGROUP's history form
    (an explicit ID instead of ``>``), which re-reads what was delivered without taking more.
    Entries deleted since delivery come back without fields and are skipped (XACK at commit
    still clears them)."""
    end = id_of(sl.end)
    before = id_of(sl.start).decr()
    cursor = format_id(before) if before is not None else "0-0"
    while True:
        try:
            reply = client(
                "XREADGROUP", "GROUP", sl.group or "", sl.consumer or "",
                "COUNT", opts.page_size, "STREAMS", sl.stream, cursor,
            )  # fmt: skip
        except ReplyError as exc:
            raise SourceError(f"reading {sl.stream!r} as group {sl.group!r}: {exc}") from None
        entries = reply[0][1] if reply else []
        page = [e for e in entries if id_of(e[0]) <= end]
        rows = [e for e in page if e[1] is not None]
        if rows:
            yield entries_batch(sl.stream, rows, opts.binary)
        if len(page) < len(entries) or len(entries) < opts.page_size:
            return
        cursor = entries[-1][0]
