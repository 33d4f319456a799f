"""The reads that the batch and the streaming source share: which streams a read covers,
and an executor's paging through its slices.

``source`` (batch) and ``streaming`` (micro-batches by offsets) plan differently but read the
same way, so both call these.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from app.engine.ids import format_id
from app.pipeline.client import Client, MissingStream, ReplyError, SourceError
from app.pipeline.options import Options
from app.pipeline.schema import entries_batch
from app.pipeline.slices import Slice, id_of


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
