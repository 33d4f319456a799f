"""Streams and entries: the typed operations, as Redis replies to them.

``append`` of several entries is all-or-none: the IDs are decided by the engine's own batch
rule (``bulk.xadd_batch`` on a scratch stream that starts at the real stream's last ID, with
Redis's clock), then one Lua script checks the stream has not moved and adds them with
explicit IDs (in a cluster the script runs on the key's slot); if it moved, it is retried.

A batch with IDMP entries (Redis 8.6) cannot name its IDs: IDMP takes only ``*``, and only
Redis knows which iids repeat. The same rule checks the batch as if every entry were
appended (a repeat appends nothing, so the real run only takes smaller IDs and passes too);
then the script, after the same guard, sends each entry's own XADD. The one check that
depends on the clock, an explicit ID after a ``*`` one, holds up to a millisecond the script
is given (``_deadline``); past it the script does nothing and the batch is planned again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from redis.exceptions import (
    ResponseError,
)

from app.backends.base import Gone
from app.backends.errors import (
    RedisUnavailable,
)
from app.backends.redis import caps, newer
from app.backends.redis.features import IDMP, REF_POLICIES, Features
from app.backends.redis.limits import Bounded
from app.backends.redis.parse import (
    Arg,
    Raw,
    as_map,
    decode,
    encode,
    id_arg,
    opt_int,
    parse_entries,
    parse_id,
    parse_opt_id,
    parse_read,
    parse_stream_header,
    parse_stream_info,
    redis_error,
    trim_args,
    xadd_args,
)
from app.backends.redis.reads import Reads
from app.backends.redis.routing import Router
from app.backends.redis.scripts import (
    APPEND,
    APPEND_DELREF,
    APPEND_GUARDED,
    APPEND_IDMP,
    DELETE_STREAM,
    PROBE,
    eval_keys,
)
from app.engine.clock import ManualClock
from app.engine.commands import guarded
from app.engine.commands.args import block_ms_arg
from app.engine.commands.bulk import xadd_batch
from app.engine.commands.guarded import Guard
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs, XAddArgs, XSetIdArgs
from app.engine.commands.xcfgset import XCfgSetArgs
from app.engine.errors import CommandError, NoSuchKey, WrongType
from app.engine.glob import escape
from app.engine.ids import StreamID
from app.engine.keyspace import Keyspace
from app.engine.limits import Limits
from app.engine.refs import RefPolicy
from app.engine.replies import (
    ConsumerFull,
    GroupFull,
    PendingDelivery,
    ScanPage,
    Storage,
    StreamFullInfo,
    StreamInfo,
    StreamRead,
)
from app.engine.stream import Entry, TrimSpec, TrimStrategy

APPEND_RETRIES = 32
DEADLINE_SPAN_MS = 60_000  # an IDMP batch's plan is checked this far ahead at most


class Streams:
    """SCAN, XINFO STREAM, XTRIM, XSETID, XADD, XRANGE, XDEL and XREAD as typed calls, on
    ``_router``; XREAD through ``_reads``. A part of ``RedisBackend``, which sets them."""

    _router: Router
    _reads: Reads
    _limits: Limits

    async def scan(self, cursor: int, match: str | None, count: int | None) -> ScanPage:
        options: list[Arg] = []
        if match is not None:
            options += ["MATCH", encode(match)]
        if count is not None:
            options += ["COUNT", count]
        options += ["TYPE", "stream"]
        if self._router.cluster:
            nxt, keys = await self._router.cluster_scan(str(cursor), options)
        else:
            nxt, keys = await self._router.call(None, "SCAN", cursor, *options)
        return ScanPage(int(nxt), [decode(k) for k in keys])

    async def storage(self, prefix: str) -> Storage:
        """SCAN for the prefix's streams (every master on a cluster), then XLEN and MEMORY
        USAGE of each page in one round trip."""
        streams = entries = size = 0
        cursor = 0
        while True:
            page = await self.scan(cursor, escape(prefix) + "*", 1000)
            if page.keys:
                lines: list[tuple[str, list[Arg]]] = []
                for k in page.keys:
                    lines += [(k, ["XLEN", encode(k)]), (k, ["MEMORY", "USAGE", encode(k)])]
                replies = await self._router.pipelined(lines)
                for n, used in zip(replies[::2], replies[1::2], strict=True):
                    # Deleted since the page was listed (no MEMORY USAGE), or no longer a
                    # stream (XLEN's error): left out.
                    if isinstance(n, int) and isinstance(used, int):
                        streams += 1
                        entries += n
                        size += used
            cursor = page.cursor
            if not cursor:
                return Storage(streams, entries, size)

    async def stream_info(self, key: str) -> StreamInfo:
        return parse_stream_info(await self._router.call(key, "XINFO", "STREAM", encode(key)))

    async def stream_infos(self, keys: Sequence[str]) -> list[StreamInfo | None]:
        """XINFO STREAM for each key in one pipeline (``Router.pipelined``), not a
        transaction. A key missing or of another type is None; any other error reply
        raises, as ``stream_info`` would."""
        if not keys:
            return []
        replies = await self._router.pipelined([(k, ["XINFO", "STREAM", encode(k)]) for k in keys])
        out: list[StreamInfo | None] = []
        for raw in replies:
            if isinstance(raw, ResponseError):
                error = redis_error(raw)
                if not isinstance(error, NoSuchKey | WrongType):
                    raise error
                out.append(None)
            elif isinstance(raw, RedisUnavailable):
                raise raw
            else:
                out.append(parse_stream_info(raw))
        return out

    async def stream_full_info(self, key: str, count: int) -> StreamFullInfo:
        if self._limits.reply_entries:
            line, finish = caps.full_info(self._limits, encode(key), count)
            raw = finish(await self._router.call(key, *line))
        else:
            raw = await self._router.call(
                key, "XINFO", "STREAM", encode(key), "FULL", "COUNT", count
            )
        m = as_map(raw)
        groups = []
        for raw in m["groups"]:
            g = as_map(raw)
            consumers = []
            for craw in g["consumers"]:
                c = as_map(craw)
                name = decode(c["name"])
                consumers.append(
                    ConsumerFull(
                        name,
                        int(c["seen-time"]),
                        int(c["pel-count"]),
                        [
                            PendingDelivery(parse_id(p[0]), name, int(p[1]), int(p[2]))
                            for p in c["pending"]
                        ],
                    )
                )
            groups.append(
                GroupFull(
                    name=decode(g["name"]),
                    last_delivered_id=parse_id(g["last-delivered-id"]),
                    entries_read=opt_int(g["entries-read"]),
                    lag=opt_int(g["lag"]),
                    pel_count=int(g["pel-count"]),
                    pending=[
                        PendingDelivery(parse_id(p[0]), decode(p[1]), int(p[2]), int(p[3]))
                        for p in g["pending"]
                    ],
                    consumers=consumers,
                )
            )
        return StreamFullInfo(
            header=parse_stream_header(m),
            entries=parse_entries(m["entries"]),
            groups=groups,
        )

    async def delete_stream(self, key: str) -> bool:
        return bool(await self._router.script(DELETE_STREAM, key, write=True))

    async def trim(self, key: str, spec: TrimSpec) -> int:
        if spec.policy is not RefPolicy.KEEPREF:
            features = await self._router.server_features()
            if not features.ref_policies:
                return int(await self._send(key, newer.trim(features, key, spec)))
        return int(await self._router.write(key, "XTRIM", encode(key), *trim_args(spec)))

    async def _send(self, key: str, bounded: Bounded) -> Raw:
        """A command sent as newer.py made it, for a server that lacks it."""
        return bounded.finish(await self._router.write(key, *bounded.line))

    async def set_id(self, args: XSetIdArgs) -> None:
        argv: list[Arg] = ["XSETID", encode(args.key), id_arg(args.last_id)]
        if args.entries_added is not None:
            argv += ["ENTRIESADDED", args.entries_added]
        if args.max_deleted_id is not None:
            argv += ["MAXDELETEDID", id_arg(args.max_deleted_id)]
        await self._router.write(args.key, *argv)

    async def configure_idmp(self, args: XCfgSetArgs) -> None:
        features = await self._router.server_features()
        if not features.idmp:
            raise features.refuse("XCFGSET", IDMP)
        argv: list[Arg] = ["XCFGSET", encode(args.key)]
        if args.duration_s is not None:
            argv += ["IDMP-DURATION", args.duration_s]
        if args.maxsize is not None:
            argv += ["IDMP-MAXSIZE", args.maxsize]
        await self._router.write(args.key, *argv)

    async def append(self, batch: Sequence[XAddArgs]) -> list[StreamID | None]:
        if not batch:
            return []
        policies = {a.trim.policy for a in batch if a.trim is not None} - {RefPolicy.KEEPREF}
        idmp = next((a for a in batch if a.idmp is not None), None)
        features = await self._router.server_features() if policies or idmp else None
        if idmp is not None and features is not None and not features.idmp:
            raise newer.idmp_refusal(features, idmp)
        old = features is not None and not features.ref_policies
        if len(batch) == 1:
            a = batch[0]  # one entry: XADD's own reply and error, as the embedded engine
            if old and a.trim is not None:
                assert features is not None
                return [
                    parse_opt_id(await self._send(a.key, newer.trim(features, a.key, a.trim, a)))
                ]
            raw = await self._router.write(a.key, "XADD", encode(a.key), *xadd_args(a))
            return [parse_opt_id(raw)]
        key = batch[0].key
        if any(a.key != key for a in batch):
            raise ValueError("a batch appends to one stream")
        delref: list[Arg] = []
        if old:
            assert features is not None
            delref = _batch_delref(features, batch)
        for _ in range(APPEND_RETRIES):
            last_raw, last_text, now_ms = await self._probe(key)
            ids = _decide_ids(batch, last_text, now_ms)
            if all(i is None for i in ids):
                return ids  # NOMKSTREAM on a missing stream: nothing happens
            if idmp is not None:
                deadline = _deadline(batch, last_text, now_ms)
                argv: list[Arg] = [last_raw, len(batch), "" if deadline is None else deadline]
                for a in batch:
                    one = xadd_args(a, nomkstream=False)
                    argv += [len(one), *one]
                script = APPEND_IDMP
            else:
                argv = [last_raw, len(batch), *delref]
                for a, sid in zip(batch, ids, strict=True):
                    one = xadd_args(a, sid, nomkstream=False, trim=not delref)
                    argv += [len(one), *one]
                script = APPEND_DELREF if delref else APPEND
            raw = await self._router.script(script, key, *argv, write=True)
            if isinstance(raw, list):
                return [parse_id(x) for x in raw]
            if raw == -4:
                assert features is not None
                raise features.refuse("XADD with DELREF and ~ past its LIMIT", REF_POLICIES)
        raise CommandError.err("the stream kept changing; the batch was not appended")

    async def _probe(self, key: str) -> tuple[Raw, str, int]:
        """The stream's last ID as Redis gave it and as text ('' : no key), and the server's
        clock in ms: what a batch is planned on (``_decide_ids``)."""
        last_raw, sec, usec = await self._router.script(PROBE, key)
        last_text = decode(last_raw)
        if last_text == "WRONGTYPE":
            raise WrongType()
        return last_raw, last_text, int(sec) * 1000 + int(usec) // 1000

    async def append_guarded(
        self, batch: Sequence[XAddArgs], guard: Guard, record: XAddArgs | None = None
    ) -> list[StreamID | None] | None:
        """One script checks the guard and writes (lua/append_guarded.lua). A batch of plain
        ``*`` entries, which nothing can refuse, is sent as it is; any other is planned on
        the stream first (``_decide_ids``), as ``append`` plans one."""
        guarded.check(batch, guard, record)
        key = batch[0].key if batch else guard.key
        tail: list[Arg] = ["" if guard.last_id is None else id_arg(guard.last_id)]
        if record is None:
            tail.append(0)
        else:
            one = xadd_args(record, nomkstream=False)
            tail += [len(one), *one]
        plain = all(a.id is None for a in batch)
        for _ in range(APPEND_RETRIES):
            argv: list[Arg] = ["*", len(batch)]
            if plain:
                for a in batch:
                    one = xadd_args(a, nomkstream=False)
                    argv += [len(one), *one]
            else:
                last_raw, last_text, now_ms = await self._probe(key)
                argv[0] = last_raw
                for a, sid in zip(batch, _decide_ids(batch, last_text, now_ms), strict=True):
                    one = xadd_args(a, sid, nomkstream=False)
                    argv += [len(one), *one]
            line = eval_keys(APPEND_GUARDED, [key, guard.key], [*argv, *tail])
            raw = await self._router.write(key, *line)
            if isinstance(raw, list):
                return [parse_id(x) for x in raw]
            if raw == -1:
                return None
        raise CommandError.err("the stream kept changing; the batch was not appended")

    async def range(self, args: RangeArgs, rev: bool = False) -> list[Entry]:
        if rev:
            argv: list[Arg] = ["XREVRANGE", encode(args.key), id_arg(args.end), id_arg(args.start)]
        else:
            argv = ["XRANGE", encode(args.key), id_arg(args.start), id_arg(args.end)]
        if args.count is not None:
            argv += ["COUNT", args.count]
        return parse_entries(await self._router.call(args.key, *argv))

    async def delete_entries(self, key: str, ids: Sequence[StreamID]) -> int:
        if not ids:
            return 0
        return int(await self._router.write(key, "XDEL", encode(key), *map(id_arg, ids)))

    async def delete_with_policy(
        self, key: str, ids: Sequence[StreamID], policy: RefPolicy
    ) -> list[int]:
        if not (await self._router.server_features()).ref_policies:
            raw = await self._send(key, newer.deletes(key, None, policy, list(map(id_arg, ids))))
            return [int(code) for code in raw]
        raw = await self._router.write(
            key, "XDELEX", encode(key), policy.value, "IDS", len(ids), *map(id_arg, ids)
        )
        return [int(code) for code in raw]

    async def read(self, args: ReadRequest, gone: Gone | None = None) -> list[StreamRead]:
        if args.block_ms is not None:
            # The engine's range check, on this host's clock: Redis 7.0 adds the timeout to
            # its clock unchecked, and a sum past 2**63 would block for ever.
            block_ms_arg(args.block_ms, int(time.time() * 1000))
        return parse_read(await self._reads.read(args, gone))


def _batch_delref(features: Features, batch: Sequence[XAddArgs]) -> list[Arg]:
    """The one DELREF trim of a batch, as ``APPEND_DELREF`` takes it, on a server older than
    8.2 (empty: no policy to emulate; KEEPREF is the plain trim). Refused when the entries
    ask for ACKED, or for different trims (each would run after its own entry)."""
    specs = {a.trim for a in batch}
    spec = next(iter(specs))
    if spec is None or spec.policy is RefPolicy.KEEPREF:
        if any(s is not None and s.policy is not RefPolicy.KEEPREF for s in specs):
            raise features.refuse("a batch of XADD with different trims", REF_POLICIES)
        return []
    if len(specs) > 1:
        raise features.refuse("a batch of XADD with different trims", REF_POLICIES)
    bounded = newer.trim(features, batch[0].key, spec)
    if spec.policy is RefPolicy.ACKED or bounded.line == ["PING"]:
        bounded.finish(None)  # raises its refusal
    node = features.node_entries[1] if features.node_entries is not None else 0
    limit = features.default_limit if spec.limit < 0 else spec.limit
    threshold: Arg = spec.maxlen if spec.strategy is TrimStrategy.MAXLEN else id_arg(spec.minid)
    return [spec.strategy.value, threshold, limit if spec.approx else 0, node]


def _deadline(batch: Sequence[XAddArgs], last_text: str, now_ms: int) -> int | None:
    """The last millisecond at which an IDMP batch planned at ``now_ms`` still passes its
    checks (None: at any time). Only an explicit ID after a ``*`` one depends on the clock:
    the ``*`` entries take later IDs as time goes on, and a later clock never helps, so the
    checks pass up to one millisecond, found by halving."""
    after_auto = False
    for a in batch:
        if a.id is None:
            after_auto = True
        elif after_auto:
            break
    else:
        return None

    def passes(ms: int) -> bool:
        try:
            _decide_ids(batch, last_text, ms)
        except CommandError:
            return False
        return True

    lo, hi = now_ms, now_ms + DEADLINE_SPAN_MS
    if passes(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if passes(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _decide_ids(batch: Sequence[XAddArgs], last_text: str, now_ms: int) -> list[StreamID | None]:
    """The IDs a batch takes on a stream whose last ID is ``last_text`` ('' when there is no
    stream) at ``now_ms``, or the batch's error: the engine's own rule (``xadd_batch``) on a
    scratch stream, so Redis then only stores what was decided."""
    ks = Keyspace(ManualClock(now_ms))
    if last_text:
        ks.create(batch[0].key).last_id = parse_id(last_text)
    return xadd_batch(ks, list(batch))
