"""Streaming reads: offsets are the last entry ID read from each stream.

An offset ``{"orders": "1700000000000-3"}`` means "everything up to and including that ID has
been planned". Spark checkpoints offsets before a micro-batch runs and replays the same
``(start, end]`` range after a failure, and an ID range of a stream always reads the same
entries (IDs only grow), so a restarted query continues exactly where it stopped.

With ``group``, the query reads as one consumer of a consumer group: ``latestOffset`` takes new
entries with XREADGROUP ``>`` (so other consumers of the group never get them), the batch
reads them back from the consumer's pending list, and ``commit`` acknowledges them only once
Spark has committed the batch. A query that dies before that leaves them pending, and its
restart reads them again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows

from app.engine.ids import StreamID
from app.pipeline.client import Client, MissingStream, ReplyError, SourceError
from app.pipeline.options import Options
from app.pipeline.reading import connect, matching_streams, read_slices
from app.pipeline.slices import Slices, id_of, plan

log = logging.getLogger("xstreams.pipeline")
ORIGIN = "0-0"  # no entry has this ID, so "after 0-0" is the whole stream
# Without maxEntriesPerBatch a group read still takes at most this many per stream per batch.
GROUP_BATCH_CAP = 100_000


class StreamReader(DataSourceStreamReader):
    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self._client: Client | None = None
        self._turn = 0
        self._warned: set[tuple[str, str]] = set()

    def __getstate__(self) -> dict[str, Any]:
        # executors open their own connections and plan nothing
        return {"opts": self.opts, "_client": None, "_turn": 0, "_warned": set()}

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = connect(self.opts)
        return self._client

    def _streams(self) -> list[str]:
        if self.opts.is_glob:
            streams = self.client.scan(self.opts.stream)
            return streams if self.opts.group is None else self._with_group(streams)
        try:
            return matching_streams(self.client, self.opts)
        except MissingStream:
            if self.opts.group is not None:
                raise
            return []  # a named stream may be created after the query starts

    def _with_group(self, streams: list[str]) -> list[str]:
        """A glob in group mode covers the matching streams that have the group: a stream a
        producer creates later joins once someone creates the group on it (XGROUP CREATE)."""
        replies = self.client.pipeline([["XINFO", "GROUPS", s] for s in streams], errors=False)
        return [
            s
            for s, groups in zip(streams, replies, strict=True)
            if isinstance(groups, list) and any(_info(g)["name"] == self.opts.group for g in groups)
        ]

    def initialOffset(self) -> dict[str, str]:
        streams = self._streams()
        if self.opts.group is not None or self.opts.starting_position == "earliest":
            return dict.fromkeys(streams, ORIGIN)
        if self.opts.starting_position != "latest":
            return dict.fromkeys(streams, self.opts.starting_position)
        infos = self.client.pipeline([["XINFO", "STREAM", s] for s in streams])
        return {s: _info(i)["last-generated-id"] for s, i in zip(streams, infos, strict=True)}

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_entries_per_batch
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def latestOffset(self, start: dict[str, str], limit: ReadLimit) -> dict[str, str]:
        streams = sorted(set(self._streams()) | set(start))
        begin = {s: start.get(s, ORIGIN) for s in streams}
        budget = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if self.opts.group is None:
            self._check_loss(begin)
        if self.opts.group is not None:
            # Spark asks for the next batch only once the batch ending at ``start`` has
            # committed, so acknowledging here too frees a quiet query's last batch at the next
            # trigger instead of whenever new data arrives (``commit`` alone waits for that).
            self.commit(begin)
            end = self._deliver(begin, budget)
        elif budget is None:
            end = self._tails(begin)
        else:
            end = self._advance(begin, budget)
        return dict(sorted(end.items()))

    def _check_loss(self, begin: dict[str, str]) -> None:
        """Entries after the offset deleted (XDEL) before the query read them, which Redis
        records as ``max-deleted-entry-id``, or a stream recreated below the offset: a warning
        once per occurrence, or the query's end with ``failOnDataLoss``. Trimming is not
        seen: Redis 7.0 records nothing about what XTRIM and MAXLEN removed."""
        streams = [s for s in begin if begin[s] != ORIGIN]
        infos = self.client.pipeline([["XINFO", "STREAM", s] for s in streams], errors=False)
        for s, reply in zip(streams, infos, strict=True):
            if not isinstance(reply, list):
                continue  # the stream is gone; it may come back
            info = _info(reply)
            offset = id_of(begin[s])
            deleted = id_of(info["max-deleted-entry-id"])
            if id_of(info["last-generated-id"]) < offset:
                problem = (
                    f"stream {s!r} ends at {info['last-generated-id']}, before the query's "
                    f"offset {begin[s]}: it was deleted and created again"
                )
            elif deleted > offset:
                problem = (
                    f"entries of {s!r} after {begin[s]}, up to {info['max-deleted-entry-id']}, "
                    "were deleted before the query read them"
                )
            else:
                continue
            if self.opts.fail_on_data_loss:
                raise SourceError(problem + " (failOnDataLoss=true)")
            if (s, problem) not in self._warned:
                self._warned.add((s, problem))
                log.warning("%s", problem)

    def _tails(self, begin: dict[str, str]) -> dict[str, str]:
        """Everything available: each stream's last entry."""
        streams = list(begin)
        replies = self.client.pipeline([["XREVRANGE", s, "+", "-", "COUNT", 1] for s in streams])
        end = dict(begin)
        for s, reply in zip(streams, replies, strict=True):
            if reply and id_of(reply[0][0]) > id_of(begin[s]):
                end[s] = reply[0][0]
        return end

    def _rotated(self, streams: list[str]) -> list[str]:
        """The streams in an order that moves on by one every micro-batch, so that with a
        budget smaller than the number of busy streams each still gets its turn."""
        if not streams:
            return streams
        k = self._turn % len(streams)
        self._turn += 1
        return streams[k:] + streams[:k]

    def _advance(self, begin: dict[str, str], budget: int) -> dict[str, str]:
        """At most ``budget`` entries in all, shared evenly; what a stream leaves unused goes
        to the streams after it."""
        end = dict(begin)
        order = self._rotated(list(begin))
        for i, s in enumerate(order):
            if budget <= 0:
                break
            share = max(1, budget // (len(order) - i))
            page = self.client("XRANGE", s, "(" + begin[s], "+", "COUNT", share)
            if page:
                end[s] = page[-1][0]
                budget -= len(page)
        return end

    def _deliver(self, begin: dict[str, str], budget: int | None) -> dict[str, str]:
        """Group mode: the consumer's own pending entries after ``begin`` (delivered before a
        restart), then new ones taken with ``>``, shared like ``_advance`` shares."""
        opts = self.opts
        group, consumer = opts.group or "", opts.consumer
        end = dict(begin)
        order = self._rotated(list(begin))
        for i, s in enumerate(order):
            if budget is None:
                share = GROUP_BATCH_CAP
            elif budget <= 0:
                break
            else:
                share = max(1, budget // (len(order) - i))
            try:
                pending = self.client("XPENDING", s, group, "(" + begin[s], "+", share, consumer)
                taken = len(pending)
                if pending:
                    end[s] = pending[-1][0]
                if taken < share:
                    reply = self.client(
                        "XREADGROUP", "GROUP", group, consumer, "COUNT", share - taken,
                        "STREAMS", s, ">",
                    )  # fmt: skip
                    fresh = reply[0][1] if reply else []
                    if fresh:
                        end[s] = fresh[-1][0]
                        taken += len(fresh)
            except ReplyError as exc:
                raise SourceError(
                    f"reading {s!r} as consumer {consumer!r} of group {group!r}: {exc} "
                    f"(create the group first: XGROUP CREATE {s} {group} 0)"
                ) from None
            if budget is not None:
                budget -= taken
        return end

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> list[InputPartition]:
        ranges: dict[str, tuple[StreamID, StreamID]] = {}
        for s, last in end.items():
            after = id_of(start.get(s, ORIGIN))
            first = after.incr()
            if first is not None and id_of(last) > after:
                ranges[s] = (first, id_of(last))
        opts = self.opts
        return list(plan(ranges, opts.partitions, opts.group, opts.consumer))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, Slices):  # an empty plan still gets one placeholder task
            yield from read_slices(self.opts, partition.slices)

    def commit(self, end: dict[str, str]) -> None:
        """Group mode: acknowledge everything the consumer has pending up to ``end``."""
        if self.opts.group is None:
            return
        group, consumer = self.opts.group, self.opts.consumer
        for s, last in end.items():
            if last == ORIGIN:
                continue
            while True:
                pending = self.client("XPENDING", s, group, "-", last, 1000, consumer)
                if not pending:
                    break
                self.client("XACK", s, group, *[p[0] for p in pending])
                if len(pending) < 1000:
                    break

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _info(reply: list[Any]) -> dict[str, Any]:
    return dict(zip(reply[0::2], reply[1::2], strict=True))
