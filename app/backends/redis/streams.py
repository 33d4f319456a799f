"""Streams and entries: the typed operations, as Redis replies to them.

``append`` of several entries is all-or-none: the IDs are decided by the engine's own batch
rule (``bulk.xadd_batch`` on a scratch stream that starts at the real stream's last ID, with
Redis's clock), then one Lua script checks the stream has not moved and adds them with
explicit IDs (in a cluster the script runs on the key's slot); if it moved, it is retried.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.exceptions import (
    ResponseError,
)

from app.backends.base import Gone
from app.backends.errors import (
    RedisUnavailable,
)
from app.backends.redis import caps
from app.backends.redis.parse import (
    Arg,
    _b,
    _entries,
    _error,
    _id,
    _map,
    _opt_int,
    _opt_sid,
    _read_reply,
    _s,
    _sid,
    _stream_header,
    _stream_info,
)
from app.backends.redis.reads import (
    Reads,
)
from app.backends.redis.routing import (
    _UNREACHABLE,
    _cancellable,
)
from app.backends.redis.scripts import (
    APPEND,
    DELETE_STREAM,
    PROBE,
)
from app.engine.clock import ManualClock
from app.engine.commands.args import block_ms_arg
from app.engine.commands.bulk import xadd_batch
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import (
    DEFAULT_LIMIT,
    RangeArgs,
    XAddArgs,
    XSetIdArgs,
)
from app.engine.errors import CommandError, NoSuchKey, WrongType
from app.engine.ids import StreamID
from app.engine.keyspace import Keyspace
from app.engine.replies import (
    ConsumerFull,
    GroupFull,
    PendingDelivery,
    ScanPage,
    StreamFullInfo,
    StreamInfo,
    StreamRead,
)
from app.engine.stream import Entry, TrimSpec, TrimStrategy

APPEND_RETRIES = 32


class Streams(Reads):
    """SCAN, XINFO STREAM, XTRIM, XSETID, XADD, XRANGE, XDEL and XREAD as typed calls."""

    async def scan(self, cursor: int, match: str | None, count: int | None) -> ScanPage:
        options: list[Arg] = []
        if match is not None:
            options += ["MATCH", _b(match)]
        if count is not None:
            options += ["COUNT", count]
        options += ["TYPE", "stream"]
        if self._cluster:
            nxt, keys = await self._cluster_scan(str(cursor), options)
        else:
            nxt, keys = await self._call(None, "SCAN", cursor, *options)
        return ScanPage(int(nxt), [_s(k) for k in keys])

    async def stream_info(self, key: str) -> StreamInfo:
        return _stream_info(await self._call(key, "XINFO", "STREAM", _b(key)))

    async def stream_infos(self, keys: Sequence[str]) -> list[StreamInfo | None]:
        """XINFO STREAM for each key in one pipeline, not a transaction: on redis-server one
        connection and one round trip; in a cluster redis-py's cluster pipeline sends each
        master its keys' commands at once, all masters concurrently, and resends one by one
        any a MOVED / ASK / TRYAGAIN answered (a slot on the move). A key missing or of
        another type is None; any other error reply raises, as ``stream_info`` would."""
        if not keys:
            return []
        try:
            if self._cluster:
                cpipe = self._c.pipeline()
                for key in keys:
                    cpipe.execute_command("XINFO", "STREAM", _b(key), target_nodes=self._node(key))
                replies = await _cancellable(cpipe.execute(raise_on_error=False))
            else:
                assert isinstance(self._client, Redis)
                async with self._client.pipeline(transaction=False) as pipe:
                    for key in keys:
                        pipe.execute_command("XINFO", "STREAM", _b(key))
                    replies = await _cancellable(pipe.execute(raise_on_error=False))
        except _UNREACHABLE as e:
            raise RedisUnavailable(str(e)) from None
        out: list[StreamInfo | None] = []
        for raw in replies:
            if isinstance(raw, ResponseError):
                error = _error(raw)
                if not isinstance(error, NoSuchKey | WrongType):
                    raise error
                out.append(None)
            elif isinstance(raw, _UNREACHABLE):
                raise RedisUnavailable(str(raw))
            else:
                out.append(_stream_info(raw))
        return out

    async def stream_full_info(self, key: str, count: int) -> StreamFullInfo:
        if self.limits.reply_entries:
            line, finish = caps.full_info(self.limits, _b(key), count)
            raw = finish(await self._call(key, *line))
        else:
            raw = await self._call(key, "XINFO", "STREAM", _b(key), "FULL", "COUNT", count)
        m = _map(raw)
        groups = []
        for raw in m["groups"]:
            g = _map(raw)
            consumers = []
            for craw in g["consumers"]:
                c = _map(craw)
                name = _s(c["name"])
                consumers.append(
                    ConsumerFull(
                        name,
                        int(c["seen-time"]),
                        int(c["pel-count"]),
                        [
                            PendingDelivery(_sid(p[0]), name, int(p[1]), int(p[2]))
                            for p in c["pending"]
                        ],
                    )
                )
            groups.append(
                GroupFull(
                    name=_s(g["name"]),
                    last_delivered_id=_sid(g["last-delivered-id"]),
                    entries_read=_opt_int(g["entries-read"]),
                    lag=_opt_int(g["lag"]),
                    pel_count=int(g["pel-count"]),
                    pending=[
                        PendingDelivery(_sid(p[0]), _s(p[1]), int(p[2]), int(p[3]))
                        for p in g["pending"]
                    ],
                    consumers=consumers,
                )
            )
        return StreamFullInfo(
            header=_stream_header(m),
            entries=_entries(m["entries"]),
            groups=groups,
        )

    async def delete_stream(self, key: str) -> bool:
        return bool(await self._script(DELETE_STREAM, key, write=True))

    async def trim(self, key: str, spec: TrimSpec) -> int:
        return int(await self._write(key, "XTRIM", _b(key), *_trim_args(spec)))

    async def set_id(self, args: XSetIdArgs) -> None:
        argv: list[Arg] = ["XSETID", _b(args.key), _id(args.last_id)]
        if args.entries_added is not None:
            argv += ["ENTRIESADDED", args.entries_added]
        if args.max_deleted_id is not None:
            argv += ["MAXDELETEDID", _id(args.max_deleted_id)]
        await self._write(args.key, *argv)

    async def append(self, batch: Sequence[XAddArgs]) -> list[StreamID | None]:
        if not batch:
            return []
        if len(batch) == 1:
            a = batch[0]  # one entry: XADD's own reply and error, as the embedded engine
            raw = await self._write(a.key, "XADD", _b(a.key), *_xadd_args(a))
            return [_opt_sid(raw)]
        key = batch[0].key
        if any(a.key != key for a in batch):
            raise ValueError("a batch appends to one stream")
        for _ in range(APPEND_RETRIES):
            last_raw, sec, usec = await self._script(PROBE, key)
            last_text = _s(last_raw)
            if last_text == "WRONGTYPE":
                raise WrongType()
            ids = _decide_ids(batch, last_text, int(sec) * 1000 + int(usec) // 1000)
            if all(i is None for i in ids):
                return ids  # NOMKSTREAM on a missing stream: nothing happens
            argv: list[Arg] = [last_raw, len(batch)]
            for a, sid in zip(batch, ids, strict=True):
                one = _xadd_args(a, sid, nomkstream=False)
                argv += [len(one), *one]
            raw = await self._script(APPEND, key, *argv, write=True)
            if isinstance(raw, list):
                return [_sid(x) for x in raw]
        raise CommandError.err("the stream kept changing; the batch was not appended")

    async def range(self, args: RangeArgs, rev: bool = False) -> list[Entry]:
        if rev:
            argv: list[Arg] = ["XREVRANGE", _b(args.key), _id(args.end), _id(args.start)]
        else:
            argv = ["XRANGE", _b(args.key), _id(args.start), _id(args.end)]
        if args.count is not None:
            argv += ["COUNT", args.count]
        return _entries(await self._call(args.key, *argv))

    async def delete_entries(self, key: str, ids: Sequence[StreamID]) -> int:
        if not ids:
            return 0
        return int(await self._write(key, "XDEL", _b(key), *map(_id, ids)))

    async def read(self, args: ReadRequest, gone: Gone | None = None) -> list[StreamRead]:
        if args.block_ms is not None:
            # The engine's range check, on this host's clock: Redis 7.0 adds the timeout to
            # its clock unchecked, and a sum past 2**63 would block for ever.
            block_ms_arg(args.block_ms, int(time.time() * 1000))
        return _read_reply(await self._read(args, gone))


def _trim_args(spec: TrimSpec) -> list[Arg]:
    args: list[Arg] = [spec.strategy.value, "~" if spec.approx else "="]
    args.append(spec.maxlen if spec.strategy is TrimStrategy.MAXLEN else _id(spec.minid))
    if spec.approx and spec.limit != DEFAULT_LIMIT:  # none given: Redis's own default
        args += ["LIMIT", spec.limit]
    return args


def _xadd_args(a: XAddArgs, sid: StreamID | None = None, *, nomkstream: bool = True) -> list[Arg]:
    """XADD's arguments after the key; ``sid`` replaces the ID (an ID already decided)."""
    args: list[Arg] = []
    if a.nomkstream and nomkstream:
        args.append("NOMKSTREAM")
    if a.trim is not None:
        args += _trim_args(a.trim)
    if sid is not None:
        args.append(_id(sid))
    elif a.id is None:
        args.append("*")
    elif a.seq_given:
        args.append(_id(a.id))
    else:
        args.append(f"{a.id.ms}-*")
    args += [_b(f) for f in a.fields]
    return args


def _decide_ids(batch: Sequence[XAddArgs], last_text: str, now_ms: int) -> list[StreamID | None]:
    """The IDs a batch takes on a stream whose last ID is ``last_text`` ('' when there is no
    stream) at ``now_ms``, or the batch's error: the engine's own rule (``xadd_batch``) on a
    scratch stream, so Redis then only stores what was decided."""
    ks = Keyspace(ManualClock(now_ms))
    if last_text:
        ks.create(batch[0].key).last_id = _sid(last_text)
    return xadd_batch(ks, list(batch))
