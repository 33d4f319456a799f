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

from app.engine.ids import StreamID
from app.pipeline.client import Client
from app.pipeline.options import Options, parse_options
from app.pipeline.reading import connect, matching_streams, read_slices
from app.pipeline.schema import entry_schema
from app.pipeline.slices import Slices, id_of, plan
from app.pipeline.streaming import StreamReader


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
        return StreamReader(self.parsed)


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
