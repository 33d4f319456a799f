"""How a stream's ID range becomes slices that Spark tasks read in parallel.

A slice is an inclusive ID interval of one stream. Ranges are cut on millisecond boundaries
(the time half of the ID), so slices never overlap and together cover the range exactly; a
stream busy at one moment and quiet at another gives slices of uneven size, which Spark's
scheduling absorbs when there are more slices than cores.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from app.engine.ids import StreamID, format_id, parse_strict_id


@dataclass(frozen=True)
class Slice:
    """Entries of ``stream`` with ``start <= id <= end``; with ``group``, only those pending
    for ``consumer`` in that group (read through XREADGROUP's history form)."""

    stream: str
    start: str
    end: str
    group: str | None = None
    consumer: str | None = None


class Slices(InputPartition):
    """What one Spark task reads: one slice of each stream (picklable)."""

    def __init__(self, slices: tuple[Slice, ...]) -> None:
        super().__init__(slices)
        self.slices = slices


def split_range(lo: StreamID, hi: StreamID, parts: int) -> list[tuple[StreamID, StreamID]]:
    """Cut ``[lo, hi]`` into at most ``parts`` adjacent intervals on millisecond boundaries."""
    if lo > hi:
        return []
    span = hi.ms - lo.ms + 1
    parts = max(1, min(parts, span))
    out: list[tuple[StreamID, StreamID]] = []
    current = lo
    for k in range(1, parts):
        boundary = StreamID(lo.ms + span * k // parts, 0)
        before = boundary.decr()
        assert before is not None  # boundary.ms > lo.ms >= 0
        out.append((current, before))
        current = boundary
    out.append((current, hi))
    return out


def plan(
    ranges: dict[str, tuple[StreamID, StreamID]],
    parts: int,
    group: str | None = None,
    consumer: str | None = None,
) -> list[Slices]:
    """Task ``k`` reads slice ``k`` of every stream, so ``parts`` tasks share the work."""
    buckets: list[list[Slice]] = [[] for _ in range(parts)]
    for stream, (lo, hi) in sorted(ranges.items()):
        for k, (a, b) in enumerate(split_range(lo, hi, parts)):
            buckets[k].append(Slice(stream, format_id(a), format_id(b), group, consumer))
    return [Slices(tuple(b)) for b in buckets if b]


def id_of(text: str) -> StreamID:
    return parse_strict_id(text)
