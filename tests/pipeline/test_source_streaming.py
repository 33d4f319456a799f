"""Streaming reads: offsets are entry IDs, so a restarted query neither loses nor repeats."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Commands, Server
from tests.support.targets import every_target
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(300)


def stream_of(spark: Any, url: str, stream: str, **options: Any) -> Any:
    reader = spark.readStream.format("xstreams").option("url", url).option("stream", stream)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def batches_with_data(query: Any) -> int:
    return sum(1 for p in query.recentProgress if p["numInputRows"] > 0)


class Writer:
    """Keeps appending to several streams from another thread until stopped."""

    def __init__(self, url: str, streams: list[str]) -> None:
        self.client = Commands(url)
        self.streams = list(streams)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        i = 0
        while not self.done.is_set():
            for s in list(self.streams):
                self.client("XADD", s, "*", "i", i, "s", s)
            i += 1
            time.sleep(0.003)  # paced: a steady trickle across micro-batches

    def stop(self) -> None:
        self.done.set()
        self.thread.join()
        self.client.client.close()


@pytest.fixture
def writer(server: Server, xs: Commands) -> Iterator[Writer]:
    w = Writer(server.url, ["s1", "s2"])
    yield w
    if not w.done.is_set():
        w.stop()


def all_ids(xs: Commands, streams: list[str]) -> list[tuple[str, str]]:
    return sorted((s, e[0]) for s in streams for e in xs("XRANGE", s, "-", "+"))


@every_target
def test_a_restarted_query_writes_every_entry_exactly_once(
    spark: Any, server: Server, xs: Commands, writer: Writer, tmp_path: Path
) -> None:
    sink, checkpoint = str(tmp_path / "sink"), str(tmp_path / "checkpoint")
    progress: list[dict[str, Any]] = []

    def start() -> Any:
        df = stream_of(spark, server.url, "s*", startingPosition="earliest",
                       maxEntriesPerBatch=200, partitions=2)  # fmt: skip
        return (
            df.select("stream", "id", "fields")
            .writeStream.format("parquet")
            .option("path", sink)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="200 milliseconds")
            .start()
        )

    for restart in range(2):
        query = start()
        if restart == 1:
            writer.streams.append("s3")  # a stream the glob matches from now on
        until(lambda q=query: batches_with_data(q) >= 2, 60, "two micro-batches")
        progress += query.recentProgress
        query.stop()  # mid-stream: entries keep arriving while it is down
    writer.stop()
    query = start()
    query.processAllAvailable()
    progress += query.recentProgress
    query.stop()

    rows = spark.read.parquet(sink).collect()
    got = sorted((r.stream, r.id) for r in rows)
    assert len(got) == len(set(got)), "an entry was written twice"
    assert got == all_ids(xs, ["s1", "s2", "s3"])
    assert {r.stream for r in rows} == {"s1", "s2", "s3"}
    assert all(r.fields["s"] == r.stream for r in rows)
    assert max(p["numInputRows"] for p in progress) <= 200  # the per-batch limit


def test_starting_position_latest_or_after_an_id(
    spark: Any, server: Server, xs: Commands, tmp_path: Path
) -> None:
    for i in range(1, 6):
        xs("XADD", "pos", f"{i}-0", "i", i)
    seen: dict[str, list[str]] = {"latest": [], "3-0": []}

    def collect(name: str) -> Callable[[Any, int], None]:
        return lambda batch, _: seen[name].extend(r.id for r in batch.collect())

    queries = [
        stream_of(spark, server.url, "pos", startingPosition=name)
        .writeStream.foreachBatch(collect(name))
        .option("checkpointLocation", str(tmp_path / name.replace("-", "_")))
        .trigger(processingTime="200 milliseconds")
        .start()
        for name in seen
    ]
    try:
        for q in queries:
            q.processAllAvailable()
        xs("XADD", "pos", "9-0", "i", 9)
        for q in queries:
            q.processAllAvailable()
    finally:
        for q in queries:
            q.stop()
    assert seen == {"latest": ["9-0"], "3-0": ["4-0", "5-0", "9-0"]}


def test_group_mode_acknowledges_only_after_the_batch_commits(
    spark: Any, server: Server, xs: Commands, tmp_path: Path
) -> None:
    for i in range(1, 301):
        xs("XADD", "jobs", f"{i}-1", "i", i)
    assert xs("XGROUP", "CREATE", "jobs", "workers", "0") == "OK"
    # Delivered to this consumer by a run that died before acknowledging: read again.
    early = xs("XREADGROUP", "GROUP", "workers", "spark", "COUNT", 5, "STREAMS", "jobs", ">")
    assert len(early[0][1]) == 5
    pending_during: list[tuple[int, int]] = []
    read: list[str] = []

    def sink(batch: Any, _: int) -> None:
        ids = [r.id for r in batch.collect()]
        pending = xs("XPENDING", "jobs", "workers", "-", "+", 1000, "spark")
        pending_during.append((len(ids), len(pending)))
        assert set(ids) <= {p[0] for p in pending}  # still pending while the batch runs
        read.extend(ids)

    query = (
        stream_of(
            spark, server.url, "jobs", group="workers", consumer="spark", maxEntriesPerBatch=120
        )
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        until(lambda: xs("XPENDING", "jobs", "workers")[0] == 0, 30, "the last ack")
    finally:
        query.stop()
    assert sorted(read, key=lambda i: int(i.split("-")[0])) == [f"{i}-1" for i in range(1, 301)]
    assert all(0 < n <= 120 for n, _ in pending_during if n)
    other = xs("XREADGROUP", "GROUP", "workers", "other", "STREAMS", "jobs", ">")
    assert other is None  # the group delivered everything once, to the query
    info = dict(zip(*[iter(xs("XINFO", "GROUPS", "jobs")[0])] * 2, strict=True))
    assert (info["pending"], info["last-delivered-id"], info["lag"]) == (0, "300-1", 0)


def test_a_missing_group_stops_the_query_with_its_reason(
    spark: Any, server: Server, xs: Commands, tmp_path: Path
) -> None:
    xs("XADD", "jobs", "1-1", "i", 1)
    query = (
        stream_of(spark, server.url, "jobs", group="nogroup")
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    with pytest.raises(Exception) as info:
        query.awaitTermination(60)
    text = str(info.value)
    assert "NOGROUP" in text and "XGROUP CREATE jobs nogroup 0" in text


def test_a_small_budget_is_shared_fairly_between_busy_streams(server: Server, xs: Commands) -> None:
    """Driver side only: which offsets each micro-batch would cover."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    from app.pipeline.options import parse_options
    from app.pipeline.streaming import StreamReader

    for s in ("a", "b", "c"):
        for i in range(1, 11):
            xs("XADD", s, f"{i}-0", "i", i)
    reader = StreamReader(parse_options({"url": server.url, "stream": "?",
                                         "startingPosition": "earliest"}))  # fmt: skip
    offset = reader.initialOffset()
    assert offset == {"a": "0-0", "b": "0-0", "c": "0-0"}
    read = dict.fromkeys(offset, 0)
    for _ in range(6):
        end = reader.latestOffset(offset, ReadMaxRows(2))
        taken = {s: int(end[s].split("-")[0]) - int(offset[s].split("-")[0]) for s in end}
        assert sum(taken.values()) == 2
        read = {s: read[s] + taken[s] for s in read}
        offset = end
    assert read == {"a": 4, "b": 4, "c": 4}  # every stream had its turns
    assert reader.latestOffset(offset, ReadAllAvailable()) == dict.fromkeys(offset, "10-0")
    reader.stop()


def test_a_glob_in_group_mode_covers_the_streams_that_have_the_group(
    server: Server, xs: Commands
) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from app.pipeline.options import parse_options
    from app.pipeline.streaming import StreamReader

    for s in ("jobs-a", "jobs-b"):
        xs("XADD", s, "1-1", "i", 1)
    xs("XGROUP", "CREATE", "jobs-a", "g", "0")
    opts = parse_options({"url": server.url, "stream": "jobs-*", "group": "g"})
    reader = StreamReader(opts)
    start = reader.initialOffset()
    assert start == {"jobs-a": "0-0"}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"jobs-a": "1-1"}
    xs("XGROUP", "CREATE", "jobs-b", "g", "0")  # joins at the next micro-batch
    end = reader.latestOffset({"jobs-a": "1-1"}, ReadAllAvailable())
    assert end == {"jobs-a": "1-1", "jobs-b": "1-1"}
    assert xs("XPENDING", "jobs-b", "g")[0] == 1  # delivered to the query's consumer
    reader.stop()


def test_entries_deleted_before_the_query_read_them_are_reported(
    server: Server, xs: Commands, caplog: pytest.LogCaptureFixture
) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from app.pipeline.client import SourceError
    from app.pipeline.options import parse_options
    from app.pipeline.streaming import StreamReader

    for i in range(1, 11):
        xs("XADD", "t", f"{i}-0", "i", i)
    base = {"url": server.url, "stream": "t"}
    strict = StreamReader(parse_options({**base, "failOnDataLoss": "true"}))
    lenient = StreamReader(parse_options(base))
    read_up_to = {"t": "3-0"}
    assert strict.latestOffset(read_up_to, ReadAllAvailable()) == {"t": "10-0"}  # no loss yet
    assert xs("XDEL", "t", "2-0", "4-0", "5-0") == 3  # 2-0 was read; 4-0 and 5-0 never were
    with pytest.raises(SourceError, match=r"entries of 't' after 3-0, up to 5-0, were deleted"):
        strict.latestOffset(read_up_to, ReadAllAvailable())
    with caplog.at_level("WARNING", logger="xstreams.pipeline"):
        assert lenient.latestOffset(read_up_to, ReadAllAvailable()) == {"t": "10-0"}
        lenient.latestOffset(read_up_to, ReadAllAvailable())
    assert [r.getMessage() for r in caplog.records] == [
        "entries of 't' after 3-0, up to 5-0, were deleted before the query read them"
    ]  # once, not at every trigger
    assert strict.latestOffset({"t": "5-0"}, ReadAllAvailable()) == {"t": "10-0"}  # read past

    xs("DEL", "t")
    xs("XADD", "t", "2-0", "i", 2)
    with pytest.raises(SourceError, match="it was deleted and created again"):
        strict.latestOffset({"t": "10-0"}, ReadAllAvailable())
    strict.stop()
    lenient.stop()


def test_a_named_stream_may_come_later_but_another_type_is_an_error(
    server: Server, xs: Commands
) -> None:
    from app.pipeline.client import Client, SourceError
    from app.pipeline.options import parse_options
    from app.pipeline.streaming import StreamReader

    reader = StreamReader(parse_options({"url": server.url, "stream": "later"}))
    assert reader.initialOffset() == {}  # not there yet: created after the query starts
    xs("XADD", "later", "1-1", "a", 1)
    assert reader.initialOffset() == {"later": "1-1"}

    class Typed(Client):  # what a Redis server with a string under that name answers
        def __call__(self, *args: str | int) -> Any:
            return "string" if args[0] == "TYPE" else super().__call__(*args)

    reader.stop()  # closes its connection; the next call opens the one below
    reader._client = Typed(server.url)
    with pytest.raises(SourceError, match="is a string, not a stream"):
        reader.initialOffset()
    reader.stop()
