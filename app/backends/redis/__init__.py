"""The Redis backend: the Backend protocol served by redis-server or Redis Cluster.

Redis decides every semantic rule; this module only builds Redis argv from the engine's
typed arguments (the one place allowed to) and parses Redis's raw replies into the engine's
reply objects, so REST, SSE and the command endpoint shape them exactly as they shape the
embedded engine's. Front-ends keep no state: any number of them may share one Redis.

Bytes are bytes: names and values are ``str`` holding non-UTF-8 bytes as lone surrogates
(``surrogateescape``, app/api/binary.py); they are encoded that way on the way out and decoded
that way on the way back. redis-py runs without response callbacks, so a reply is RESP as
sent (bulk and simple strings as bytes, integers, nils, arrays, errors), in RESP2 as the
command endpoint answers (redis-py 8 would speak RESP3, whose maps and sets shape otherwise).

Choices a caller may rely on:

- ``append`` of several entries is all-or-none: the IDs are decided by the engine's own batch
  rule (``bulk.xadd_batch`` on a scratch stream that starts at the real stream's last ID,
  with Redis's clock), then one Lua script checks the stream has not moved and adds them with
  explicit IDs (in a cluster the script runs on the key's slot); if it moved, it is retried.
- Blocking reads (``read`` with ``block_ms``, XREAD / XREADGROUP BLOCK through ``command``)
  each hold a connection of their own from a bounded set (``block_connections``); none free
  raises ``BlockPoolExhausted`` at once. A read whose client left, or that was cancelled, has
  its connection closed, never reused: Redis may still answer on it.
- Redis Cluster: a multi-key XREAD / XREADGROUP is split by slot and the parts merged, keys in
  the order given. A blocking one over several slots waits on all and answers with the first
  that has something (plus any that are ready by then); an XREADGROUP ``>`` raced out that way
  may have been delivered by Redis all the same: its entries stay pending (XCLAIM them).
  KEYS, DBSIZE, FLUSHDB / FLUSHALL run on every master (KEYS concatenated, DBSIZE summed).
  SCAN walks the masters one after another (sorted by address); the cursor carries the
  master's index in its low 10 bits and that master's own cursor above them, so a cursor is
  valid while the set of masters stays the same. DEL / EXISTS over several slots are summed
  per slot; any other multi-key command is Redis's (CROSSSLOT). A /multi-exec must name keys
  of one slot only, else the whole transaction is refused with Redis's CROSSSLOT text.
- FLUSHALL runs as FLUSHDB: the backend's keyspace is its database, not the whole server.
- ``limits`` (``max_read_keys``, ``max_reply_entries``): the engine's rules and texts
  (app/engine/limits.py), enforced in front of Redis so that no reply past the limit is ever
  built here. XREAD naming too many streams is refused before it is sent. A range or read
  that could pass the limit is sent with COUNT limit+1 and refused when limit+1 came back
  (XRANGE, XREVRANGE, XREAD, XPENDING); XREADGROUP, XAUTOCLAIM and XINFO STREAM FULL, which
  change state or have no COUNT that bounds them, run as a script that counts first (one
  past the limit at most) and only then runs the command, so a refused one changed nothing.
  With COUNT at most the limit (per stream) the command goes to Redis as given. Two edges:
  an XREADGROUP ``>`` that blocks (nothing was there) waits with COUNT limit/streams, so a
  wake-up is served within the limit, not refused; over several cluster slots the count and
  the reads are one script per slot, so a write racing in between may leave a slot's part
  unread (never a reply past the limit). XINFO GROUPS / CONSUMERS / STREAM FULL and the caps
  on groups and consumers (``max_stream_groups``, ``max_group_consumers``): by the scripts of
  app/backends/redis_caps.py.
- A caller cancelled while a command is on its way sees ``CancelledError``, even if the
  reply came back meanwhile: on Python 3.11 redis-py's send (``asyncio.wait_for``) may drop
  a cancellation that lands as the send completes (CPython gh-86296), and a task that
  ignores being cancelled (an event stream whose client left) would run on (``_cancellable``).
- ``wait_replicas`` > 0: each write is followed, on the same connection, by ``WAIT n
  timeout``; fewer confirmations raise ``ReplicasUnavailable`` (the write itself stays).
- Redis's trouble is never the request's: an error reply for a passing state of the server
  (CLUSTERDOWN, TRYAGAIN, MASTERDOWN, LOADING, READONLY... ``FAULT_CODES``) raises
  ``RedisFault`` with Redis's text, and no connection, no answer in time or no master known
  for a slot raise ``RedisUnavailable``: both ``BackendUnavailable``, which every surface
  answers 503 with ``Retry-After``. ``shards()`` reports each master's state for /readyz.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import AbstractConnection, SSLConnection
from redis.exceptions import (
    AskError,
    MovedError,
    RedisClusterException,
    ResponseError,
    SlotNotCoveredError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.backends.base import Gone, JsonReply
from app.backends.errors import (
    BackendUnavailable,
    BlockPoolExhausted,
    RedisUnavailable,
    ReplicasUnavailable,
    classify_reply,
)
from app.backends.redis import caps
from app.backends.redis.caps import LUA_HELPERS
from app.backends.shards import ShardHealth, assess, unreachable
from app.engine.clock import ManualClock
from app.engine.commands.args import block_ms_arg
from app.engine.commands.bulk import xadd_batch
from app.engine.commands.groups import (
    AutoClaimArgs,
    ClaimArgs,
    PendingArgs,
    no_such_group,
    parse_xautoclaim,
    parse_xpending,
)
from app.engine.commands.info import full_count
from app.engine.commands.reads import ReadRequest, parse_read_request
from app.engine.commands.streams import (
    DEFAULT_LIMIT,
    RangeArgs,
    XAddArgs,
    XSetIdArgs,
    parse_range,
)
from app.engine.commands.table import COMMANDS, Command, lookup, streams_keys
from app.engine.errors import CommandError, NoSuchKey, WrongType
from app.engine.ids import StreamID
from app.engine.keyspace import Keyspace
from app.engine.limits import Limits
from app.engine.replies import (
    AutoClaim,
    ConsumerFull,
    ConsumerInfo,
    GroupFull,
    GroupInfo,
    MissingEntry,
    PendingDelivery,
    PendingRow,
    PendingSummary,
    ScanPage,
    Status,
    StreamFullInfo,
    StreamInfo,
    StreamRead,
)
from app.engine.stream import Entry, TrimSpec, TrimStrategy
from app.engine.waiting import ClientGone

T = TypeVar("T")
Raw = Any  # a RESP reply as redis-py's parser gives it without callbacks
Arg = str | bytes | int

SCAN_NODE_BITS = 10  # a cluster SCAN cursor: master index in the low bits (up to 1024)
APPEND_RETRIES = 32
CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"
# Redis out of reach for a command: no connection, no answer in time, or (a cluster) no
# master known for the slot and the slot map could not be learnt again.
_UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError, RedisClusterException)

# Decide nothing here: these scripts only make a sequence of Redis commands atomic.
_PROBE = """
local t = redis.call('TYPE', KEYS[1])['ok']
local now = redis.call('TIME')
if t == 'none' then return {'', now[1], now[2]} end
if t ~= 'stream' then return {'WRONGTYPE', now[1], now[2]} end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then return {info[i + 1], now[1], now[2]} end
end
return redis.error_reply('ERR no last-generated-id in XINFO STREAM')
"""
_APPEND = """
local key = KEYS[1]
local t = redis.call('TYPE', key)['ok']
if ARGV[1] == '' then
  if t ~= 'none' then return 0 end
else
  if t ~= 'stream' then return 0 end
  local info = redis.call('XINFO', 'STREAM', key)
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' and info[i + 1] ~= ARGV[1] then return 0 end
  end
end
local out = {}
local i = 3
for j = 1, tonumber(ARGV[2]) do
  local n = tonumber(ARGV[i])
  out[j] = redis.call('XADD', key, unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return out
"""
_DELETE_STREAM = """
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'none' then return 0 end
if t ~= 'stream' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
return redis.call('DEL', KEYS[1])
"""

# Limits (see the module's docstring): count at most ARGV[2] entries the read would answer
# (KEYS of one slot; ``>``: after the group's last-delivered-id; an ID: the consumer's
# pending after it), then, unless counting only, run XREADGROUP when they are fewer. A key,
# group or ID that is not there or not valid counts 0: XREADGROUP then gives Redis's error.
# ARGV: mode ('count' | 'read'), cap, group, consumer, n, the n words of XREADGROUP's head,
# the IDs, and max_group_consumers (0: none). Replies {1, XREADGROUP's reply}, {0, how many}
# when refused, or how many ('count'); {2} (-1 counting) when the consumer would be one too
# many in one of the groups.
_GROUP_READ = (
    LUA_HELPERS
    + """
local mode, cap, group, consumer = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local nhead = tonumber(ARGV[5])
local ccap = tonumber(ARGV[6 + nhead + #KEYS] or '0')
for i = 1, #KEYS do
  if full(KEYS[i], group, consumer, ccap) then
    if mode == 'count' then return -1 end
    return {2}
  end
end
local total = 0
for i = 1, #KEYS do
  local left = cap - total
  if left <= 0 then break end
  local key, id = KEYS[i], ARGV[5 + nhead + i]
  local ok, rows = false, nil
  if id == '>' then
    local found, groups = pcall(redis.call, 'XINFO', 'GROUPS', key)
    if found then
      for _, g in ipairs(groups) do
        local name, last = nil, nil
        for j = 1, #g, 2 do
          if g[j] == 'name' then name = g[j + 1] end
          if g[j] == 'last-delivered-id' then last = g[j + 1] end
        end
        if name == group and last then
          ok, rows = pcall(redis.call, 'XRANGE', key, '(' .. last, '+', 'COUNT', left)
        end
      end
    end
  else
    ok, rows = pcall(redis.call, 'XPENDING', key, group, '(' .. id, '+', left, consumer)
  end
  if ok then total = total + #rows end
end
if mode == 'count' then return total end
if total >= cap then return {0, total} end
local argv = {}
for j = 1, nhead do argv[j] = ARGV[5 + j] end
argv[#argv + 1] = 'STREAMS'
for i = 1, #KEYS do argv[#argv + 1] = KEYS[i] end
for i = 1, #KEYS do argv[#argv + 1] = ARGV[5 + nhead + i] end
local reply = redis.pcall(unpack(argv))
if type(reply) == 'table' and reply.err then return reply end
return {1, reply}
"""
)
# XAUTOCLAIM with a COUNT past the limit (ARGV[1]): refused ({0}) when more than the limit
# are pending from its start ID on, or ({2}) when its consumer would be one more than
# ARGV[2] in the group (0: no cap). ARGV[3..]: the command's words after the key.
_AUTOCLAIM = (
    LUA_HELPERS
    + """
local limit = tonumber(ARGV[1])
if full(KEYS[1], ARGV[3], ARGV[4], tonumber(ARGV[2])) then return {2} end
local ok, rows = pcall(redis.call, 'XPENDING', KEYS[1], ARGV[3], ARGV[6], '+', limit + 1)
if ok and #rows > limit then return {0} end
local reply = redis.pcall('XAUTOCLAIM', KEYS[1], unpack(ARGV, 3))
if type(reply) == 'table' and reply.err then return reply end
return {1, reply}
"""
)


# --- bytes, IDs and errors ----------------------------------------------------------------
def _b(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _s(b: Raw) -> str:
    if isinstance(b, bytes):
        return b.decode("utf-8", "surrogateescape")
    return str(b)


def _id(sid: StreamID) -> bytes:
    return f"{sid.ms}-{sid.seq}".encode()


def _sid(raw: Raw) -> StreamID:
    ms, _, seq = _s(raw).partition("-")
    return StreamID(int(ms), int(seq))


def _opt_sid(raw: Raw) -> StreamID | None:
    return None if raw is None else _sid(raw)


def _text(exc: ResponseError) -> str:
    """Redis's error text: redis-py strips a known code (``ERR``) into ``status_code``."""
    msg = str(exc.args[0]) if exc.args else ""
    code = getattr(exc, "status_code", None)
    return f"{code} {msg}" if code else msg


def _error(exc: ResponseError | str, args: Sequence[Arg] = ()) -> CommandError:
    """The engine's class for a Redis error text (``classify``: one table for both
    backends), so every surface answers an error alike whichever backend made it. ``args``:
    the command that failed, whose names the text may quote (``_quoted_bytes``). A refusal
    for a passing state of Redis's (CLUSTERDOWN, LOADING, READONLY...) is ``RedisFault``:
    the backend's trouble, not the request's."""
    return classify_reply(_quoted_bytes(exc if isinstance(exc, str) else _text(exc), args))


def _quoted_bytes(text: str, args: Sequence[Arg]) -> str:
    """hiredis decodes an error reply with ``errors="replace"``: a key or group name that is
    not UTF-8, quoted in the text ("No such key 's\ufffd'"), lost its bytes. Each argument
    that is not UTF-8 is put back as the embedded engine quotes it (surrogateescape). UTF-8
    decoding resynchronises on the ASCII quotes around a name, so the argument decoded alone
    with "replace" is exactly what the text holds."""
    if "\ufffd" not in text:
        return text
    for a in args:
        raw = _b(a) if isinstance(a, str) else a
        if not isinstance(raw, bytes):
            continue
        lossy = raw.decode("utf-8", "replace")
        if "\ufffd" in lossy:
            text = text.replace(lossy, raw.decode("utf-8", "surrogateescape"))
    return text


def _scan_count(options: Sequence[Arg]) -> int:
    """SCAN's COUNT among its options (name and value pairs; the last one given, as Redis
    reads them), else Redis's 10. A malformed one is Redis's to refuse, on the first call."""
    want = 10
    for opt, value in zip(options[::2], options[1::2], strict=False):
        name = _b(opt) if isinstance(opt, str) else opt
        if isinstance(name, bytes) and name.lower() == b"count":
            with contextlib.suppress(ValueError, TypeError):
                want = int(value)
    return want


def _reply(name: str, args: Sequence[Arg], r: Raw) -> JsonReply:
    """A command's raw reply in the command endpoint's shape. redis-py does not say whether a
    string came as a simple string (``+OK``) or a bulk one, and the endpoint must (Upstash's
    base64 encoding leaves simple strings alone): TYPE, PING without a message and every
    top-level ``OK`` (XGROUP CREATE, XSETID, RESTORE, FLUSHDB...) are simple strings, as the
    engine's commands answer them; a bulk ``OK`` at the top level only comes from PING or
    ECHO with that message."""
    if isinstance(r, bytes) and (
        name == "type"
        or (name == "ping" and len(args) == 1)
        or (r == b"OK" and name not in ("ping", "echo"))
    ):
        return Status(_s(r))
    return _json(r)


def _json(r: Raw) -> JsonReply:
    """A raw reply in the command endpoint's JSON shape: bulk and simple strings as text,
    integers, nil as None, arrays as lists; an error inside an array as ``CommandError``."""
    if isinstance(r, bytes):
        return _s(r)
    if isinstance(r, list):
        return [_json(x) for x in r]
    if isinstance(r, ResponseError):
        return _error(r)
    return r


def _map(raw: Raw) -> dict[str, Raw]:
    it = iter(raw)
    return {_s(k): v for k, v in zip(it, it, strict=True)}


def _entry(raw: Raw) -> Entry:
    return Entry(_sid(raw[0]), tuple(_s(x) for x in raw[1]))


def _entries(raw: Raw) -> list[Entry]:
    return [_entry(e) for e in raw or []]


def _stream_header(m: dict[str, Raw]) -> dict[str, Any]:
    """The fields XINFO STREAM and XINFO STREAM FULL share, in their reply types' names."""
    return {
        "length": int(m["length"]),
        "radix_tree_keys": int(m["radix-tree-keys"]),
        "radix_tree_nodes": int(m["radix-tree-nodes"]),
        "last_generated_id": _sid(m["last-generated-id"]),
        "max_deleted_entry_id": _sid(m["max-deleted-entry-id"]),
        "entries_added": int(m["entries-added"]),
        "recorded_first_entry_id": _sid(m["recorded-first-entry-id"]),
    }


def _stream_info(raw: Raw) -> StreamInfo:
    """An XINFO STREAM reply."""
    m = _map(raw)
    first, last = m["first-entry"], m["last-entry"]
    return StreamInfo(
        **_stream_header(m),
        groups=int(m["groups"]),
        first_entry=None if first is None else _entry(first),
        last_entry=None if last is None else _entry(last),
    )


def _opt_int(raw: Raw) -> int | None:
    return None if raw is None else int(raw)


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


def _read_reply(raw: Raw) -> list[StreamRead]:
    out = []
    for key, entries in raw or []:
        items: list[Entry | MissingEntry] = [
            MissingEntry(_sid(e[0])) if e[1] is None else _entry(e) for e in entries
        ]
        out.append(StreamRead(_s(key), items))
    return out


def _claimed(raw: Raw, justid: bool) -> list[Entry | StreamID]:
    if justid:
        return [_sid(x) for x in raw]
    return [_entry(e) for e in raw if e is not None]


# --- the backend --------------------------------------------------------------------------
class RedisBackend:
    """The Backend protocol over redis-py's asyncio clients (standalone or cluster)."""

    stateless = True

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        block_pools: Callable[[ClusterNode | None], ConnectionPool],
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        block_connections: int = 64,
        limits: Limits | None = None,
    ) -> None:
        self._client = client
        self.limits = limits or Limits()
        self._cluster = isinstance(client, RedisCluster)
        self.name = "redis-cluster" if self._cluster else "redis"
        self._new_block_pool = block_pools
        self._block_pools: dict[str, ConnectionPool] = {}
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        self.block_connections = block_connections
        self._blocking = 0  # connections held by blocking reads now
        _raw_replies(client)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        block_connections: int = 64,
        limits: Limits | None = None,
    ) -> RedisBackend:
        """``redis://[user:pass@]host:port/db``, ``rediss://`` (TLS), and for Redis Cluster
        ``redis+cluster://[user:pass@]host:port,host:port`` or ``rediss+cluster://``."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme in ("redis", "rediss"):
            client = Redis.from_url(url, protocol=2)

            def standalone(node: ClusterNode | None) -> ConnectionPool:
                return ConnectionPool.from_url(url, max_connections=block_connections, protocol=2)

            return cls(
                client,
                block_pools=standalone,
                wait_replicas=wait_replicas,
                wait_timeout_ms=wait_timeout_ms,
                block_connections=block_connections,
                limits=limits,
            )
        if scheme not in ("redis+cluster", "rediss+cluster"):
            raise ValueError(f"unsupported Redis URL scheme {parts.scheme!r}")
        addresses, auth = cluster_address(url)
        tls = scheme == "rediss+cluster"
        nodes = [ClusterNode(host, port) for host, port in addresses]
        cluster = RedisCluster(
            startup_nodes=nodes,
            ssl=tls,
            protocol=2,
            username=auth.get("username"),
            password=auth.get("password"),
        )

        def per_node(node: ClusterNode | None) -> ConnectionPool:
            assert node is not None
            kwargs: dict[str, Any] = dict(auth)
            if tls:
                kwargs["connection_class"] = SSLConnection
            return ConnectionPool(
                host=node.host,
                port=node.port,
                max_connections=block_connections,
                protocol=2,
                **kwargs,
            )

        return cls(
            cluster,
            block_pools=per_node,
            wait_replicas=wait_replicas,
            wait_timeout_ms=wait_timeout_ms,
            block_connections=block_connections,
            limits=limits,
        )

    async def start(self) -> None:
        """Connect (a cluster learns its slots) and check Redis answers."""
        if self._cluster:
            await self._c.initialize()
        await self._call(None, "PING")

    async def close(self) -> None:
        for pool in self._block_pools.values():
            await pool.disconnect()
        self._block_pools.clear()
        await self._client.aclose()

    async def shards(self, timeout_s: float) -> list[ShardHealth]:
        """Each master's health (app/backends/shards.py), probed at once on a connection of
        its own (no retry, no slot-map refresh: a probe must not disturb the traffic): its
        INFO replication and CLUSTER INFO. A master that does not answer within
        ``timeout_s`` is unreachable."""
        masters: list[ClusterNode | None] = list(self._masters()) if self._cluster else [None]
        return list(await asyncio.gather(*(self._shard(m, timeout_s) for m in masters)))

    async def _shard(self, node: ClusterNode | None, timeout_s: float) -> ShardHealth:
        if node is not None:
            name = node.name
        else:
            assert isinstance(self._client, Redis)
            kw = self._client.connection_pool.connection_kwargs
            name = f"{kw.get('host', 'localhost')}:{kw.get('port', 6379)}"
            name = kw.get("path") or name  # a unix socket
        # CLUSTER INFO on a server without cluster support is an error: no cluster state.
        probe: list[list[Arg]] = [["INFO", "replication"], ["CLUSTER", "INFO"]]
        try:
            info, cluster = await asyncio.wait_for(self._on_connection(node, probe), timeout_s)
        except TimeoutError:
            return unreachable(name, f"no answer in {timeout_s:g} s")
        except RedisUnavailable as e:
            return unreachable(name, e.text.removeprefix("ERR the Redis backend is unavailable: "))
        if isinstance(info, ResponseError):  # it answers, but not this (NOAUTH...)
            return ShardHealth(name, None, _error(info).text)
        state = None if isinstance(cluster, ResponseError) else _s(cluster)
        return assess(name, _s(info), state, self.wait_replicas)

    # --- plumbing -------------------------------------------------------------------------
    @property
    def _c(self) -> RedisCluster:
        assert isinstance(self._client, RedisCluster)
        return self._client

    def _node(self, key: str | None) -> ClusterNode | None:
        """The master serving ``key`` (cluster), the default node for no key, None standalone."""
        if not self._cluster:
            return None
        if key is None:
            return self._c.get_default_node()
        try:
            # keyslot() hashes bytes as they are (the stub says str): a key need not be UTF-8.
            return self._c.get_node_from_key(_b(key))  # type: ignore[arg-type]
        except SlotNotCoveredError as e:  # no master known for it (a failover under way)
            raise RedisUnavailable(str(e)) from None

    def _slot(self, key: str) -> int:
        return self._c.keyslot(_b(key)) if self._cluster else 0

    def _masters(self) -> list[ClusterNode]:
        return sorted(self._c.get_primaries(), key=lambda n: n.name)

    async def _call(self, key: str | None, *args: Arg, node: ClusterNode | None = None) -> Raw:
        """One command, routed by ``key`` (or to ``node``); an error reply raises its class."""
        try:
            if self._cluster:
                target = node if node is not None else self._node(key)
                return await _cancellable(self._c.execute_command(*args, target_nodes=target))
            return await _cancellable(self._client.execute_command(*args))
        except ResponseError as e:
            raise _error(e, args) from None
        except _UNREACHABLE as e:
            raise RedisUnavailable(str(e)) from None

    async def _sequence(self, key: str | None, commands: list[list[Arg]]) -> list[Raw]:
        """Several commands on one connection, back to back (MULTI ... EXEC, a write then
        WAIT) on the node serving ``key``: every reply in order, an error reply as its
        ``ResponseError``. In a cluster, a MOVED / ASK reply (the slot moved: nothing ran)
        refreshes the slot map and the sequence is sent once more to the new owner."""
        for attempt in range(2):
            replies = await self._on_connection(self._node(key), commands)
            moved = any(isinstance(r, MovedError | AskError) for r in _flat(replies))
            if not (self._cluster and moved) or attempt:
                return replies
            await self._c.nodes_manager.initialize()
        raise AssertionError("unreachable")

    async def _on_connection(
        self, node: ClusterNode | None, commands: list[list[Arg]]
    ) -> list[Raw]:
        """``commands`` on one connection; one left with replies unread (a timeout, a
        cancelled caller) is closed, never reused."""
        # WAIT may take its whole timeout: reads allow that much more than redis-py's 5 s.
        timeout = 5.0 + self.wait_timeout_ms / 1000
        try:
            if node is None:
                assert isinstance(self._client, Redis)
                pool = self._client.connection_pool
                conn = await pool.get_connection()  # type: ignore[no-untyped-call]
                try:
                    return await _cancellable(_exchange(conn, commands, timeout))
                finally:
                    await pool.release(conn)
            conn = node.acquire_connection()
            try:
                return await _cancellable(_exchange(conn, commands, timeout))
            finally:
                node.release(conn)
        except _UNREACHABLE as e:
            raise RedisUnavailable(str(e)) from None

    async def _write(self, key: str | None, *args: Arg) -> Raw:
        """A write; with ``wait_replicas``, followed by WAIT on the same connection."""
        if not self.wait_replicas:
            return await self._call(key, *args)
        reply, acked = await self._sequence(key, [list(args), self._wait_args()])
        if isinstance(reply, ResponseError):
            raise _error(reply, args)
        self._check_acked(acked)
        return reply

    def _wait_args(self) -> list[Arg]:
        return ["WAIT", self.wait_replicas, self.wait_timeout_ms]

    def _check_acked(self, acked: Raw) -> None:
        if isinstance(acked, ResponseError):
            raise _error(acked)
        if int(acked) < self.wait_replicas:
            raise ReplicasUnavailable(int(acked), self.wait_replicas)

    async def _script(self, script: str, key: str, *args: Arg, write: bool = False) -> Raw:
        return await self._eval(script, [key], *args, write=write)

    async def _eval(self, script: str, keys: list[str], *args: Arg, write: bool = False) -> Raw:
        """``script`` over ``keys`` (of one slot in a cluster: routed by the first)."""
        line = _eval_line(script, keys, args)
        if write:
            return await self._write(keys[0], *line)
        return await self._call(keys[0], *line)

    # --- blocking reads -------------------------------------------------------------------
    def _reserve(self, n: int) -> None:
        if self._blocking + n > self.block_connections:
            raise BlockPoolExhausted(self.block_connections)
        self._blocking += n

    def _block_pool(self, node: ClusterNode | None) -> ConnectionPool:
        name = node.name if node is not None else ""
        pool = self._block_pools.get(name)
        if pool is None:
            pool = self._block_pools[name] = self._new_block_pool(node)
        return pool

    async def _blocking_call(self, key: str, args: list[Arg]) -> Raw:
        """One blocking command on a connection of its own (the caller reserved it), on the
        node serving ``key`` (once more after a MOVED / ASK: nothing ran)."""
        for attempt in range(2):
            try:
                return await self._block_on(self._node(key), args)
            except (MovedError, AskError) as e:
                if attempt or not self._cluster:
                    raise _error(e) from None
                await self._c.nodes_manager.initialize()
        raise AssertionError("unreachable")

    async def _block_on(self, node: ClusterNode | None, args: list[Arg]) -> Raw:
        """Unless Redis answered, the connection is closed before it goes back to its pool:
        a late reply must never reach the next command sent on it."""
        pool = self._block_pool(node)
        try:
            conn = await pool.get_connection()  # type: ignore[no-untyped-call]
        except _UNREACHABLE as e:
            raise RedisUnavailable(str(e)) from None
        answered = False
        try:
            await _cancellable(conn.send_command(*args))  # not blocked for BLOCK's time
            try:
                # BLOCK decides how long: no socket timeout (redis-py's default is 5 s).
                reply = await _cancellable(conn.read_response(timeout=math.inf))
            except (MovedError, AskError):
                answered = True
                raise
            except ResponseError as e:
                answered = True
                raise _error(e, args) from None
            answered = True
            return reply
        except _UNREACHABLE as e:
            raise RedisUnavailable(str(e)) from None
        finally:
            if not answered:
                await conn.disconnect()
            await pool.release(conn)

    async def _until_gone(self, aw: Awaitable[T], gone: Gone | None) -> T:
        """``aw``, unless the client leaves first (then ``ClientGone``; ``aw`` is cancelled)."""
        if gone is None:
            return await aw  # a cancelled caller cancels the read: its connection is closed
        task = asyncio.ensure_future(aw)
        left = asyncio.ensure_future(gone())
        try:
            done, _ = await asyncio.wait({task, left}, return_when=asyncio.FIRST_COMPLETED)
            if task in done:
                return task.result()
            raise ClientGone()
        finally:
            left.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    # --- XREAD / XREADGROUP ---------------------------------------------------------------
    async def _xread(
        self,
        head: list[Arg],
        keys: list[str],
        ids: list[Arg],
        block: bool,
        group: bool,
        gone: Gone | None,
    ) -> Raw:
        """XREAD / XREADGROUP: ``head`` is the command and its options (BLOCK included when
        ``block``), then ``STREAMS keys ids``. Split by slot in a cluster, merged in key order."""
        parts: dict[int, list[int]] = {}
        for i, key in enumerate(keys):
            parts.setdefault(self._slot(key), []).append(i)

        def argv(idx: list[int], h: list[Arg]) -> list[Arg]:
            return [*h, "STREAMS", *(_b(keys[i]) for i in idx), *(ids[i] for i in idx)]

        groups = list(parts.values())
        if not block:
            replies = await asyncio.gather(
                *(self._call(keys[idx[0]], *argv(idx, head)) for idx in groups)
            )
            return _merge(keys, replies)
        if len(groups) > 1 and group:
            # Serve what is there now first: a raced-out XREADGROUP may lose a delivery.
            now = _without_block(head)
            replies = await asyncio.gather(
                *(self._call(keys[idx[0]], *argv(idx, now)) for idx in groups)
            )
            merged = _merge(keys, replies)
            if merged is not None:
                return merged
        self._reserve(len(groups))
        try:
            calls = [self._blocking_call(keys[idx[0]], argv(idx, head)) for idx in groups]
            return await self._until_gone(_first_answer(keys, calls), gone)
        finally:
            self._blocking -= len(groups)

    # --- command endpoint -----------------------------------------------------------------
    async def command(self, argv: Sequence[str]) -> JsonReply:
        args = list(argv)
        cmd = _known(args)
        return _reply(cmd.name, args, await self._run(cmd, args))

    async def _run(self, cmd: Command, args: list[str]) -> Raw:
        name = cmd.name
        if name in ("xread", "xreadgroup"):
            return await self._command_read(args)
        if name == "flushall":
            args = ["FLUSHDB", *args[1:]]
            name = "flushdb"
        bounded = _bounded(self.limits, cmd, args)
        if bounded is not None:  # one key (or keys of one slot): routed by the first
            key = (cmd.keys(args) or [args[1]])[0]
            each = self._write if cmd.writes or bounded.writes else self._call
            return bounded.finish(await each(key, *bounded.line))
        raw = _argv(args)
        keys = cmd.keys(args)
        if not self._cluster or keys == []:
            if cmd.writes:
                return await self._write(keys[0] if keys else None, *raw)
            return await self._call(keys[0] if keys else None, *raw)
        if keys is None:
            return await self._everywhere(name, args, raw)
        if name in ("del", "exists") and len({self._slot(k) for k in keys}) > 1:
            each = self._write if cmd.writes else self._call
            total = 0
            for key in keys:
                total += int(await each(key, raw[0], _b(key)))
            return total
        if cmd.writes:
            return await self._write(keys[0], *raw)
        return await self._call(keys[0], *raw)

    async def _everywhere(self, name: str, args: list[str], raw: list[Arg]) -> Raw:
        """A whole-keyspace command in a cluster (see the module's docstring)."""
        masters = self._masters()
        if name == "scan":
            return await self._cluster_scan(args[1], raw[2:])
        if name in ("info", "config|get"):
            return await self._call(None, *raw)
        replies = [await self._call(None, *raw, node=n) for n in masters]
        if name == "keys":
            return [k for r in replies for k in r]
        if name == "dbsize":
            return sum(int(r) for r in replies)
        return replies[0]  # FLUSHDB, CONFIG SET / RESETSTAT: the same answer from each

    async def _cluster_scan(self, cursor_text: str, options: list[Arg]) -> Raw:
        masters = self._masters()
        try:
            cursor = int(cursor_text)
        except ValueError:
            raise CommandError.err("invalid cursor") from None
        index, node_cursor = cursor & ((1 << SCAN_NODE_BITS) - 1), cursor >> SCAN_NODE_BITS
        if cursor < 0 or index >= len(masters):
            raise CommandError.err("invalid cursor")
        # A master done before the page holds COUNT keys hands over to the next at once: an
        # empty keyspace ends in one call and a MATCH page is not cut at a node's edge.
        want = _scan_count(options)
        found: list[Raw] = []
        while True:
            nxt, keys = await self._call(None, "SCAN", node_cursor, *options, node=masters[index])
            found += keys
            if int(nxt):
                return [str((int(nxt) << SCAN_NODE_BITS) | index).encode(), found]
            index += 1
            if index == len(masters):
                return [b"0", found]
            if len(found) >= want:
                return [str(index).encode(), found]
            node_cursor = 0

    async def _command_read(self, args: list[str]) -> Raw:
        request = _read_request(args)
        if request is None:  # malformed: Redis gives its error
            return await self._call(None, *_argv(args))
        return await self._read(request, None)

    async def _read(self, r: ReadRequest, gone: Gone | None) -> Raw:
        """XREAD / XREADGROUP within the limits (the module's docstring), as Redis replies."""
        self.limits.check_read_keys(r.command, len(r.keys))
        keys = list(r.keys)
        ids: list[Arg] = [_b(text) for text in r.ids]  # `$`, `>` or an ID: Redis resolves
        group = r.group is not None
        block = r.block_ms is not None
        cap = self.limits.reply_cap(r.count, len(keys))
        if group and cap is None and self.limits.group_consumers:
            await self._room_for(r)
        if cap is not None and group:
            raw = await self._group_read(r, cap)
            if raw is not None or not block:
                return raw
            # Nothing to serve now: wait, each stream's part within its share of the limit.
            share = max(1, self.limits.reply_entries // len(keys))
            count = min(r.count, share) if r.count else share
            return await self._xread(_read_head(r, count), keys, ids, True, True, gone)
        head = _read_head(r, r.count if cap is None else cap)
        if not self._cluster and not block:
            raw = await self._call(None, *head, "STREAMS", *map(_b, keys), *ids)
        else:
            raw = await self._xread(head, keys, ids, block, group, gone)
        if cap is not None:
            raw = _capped_read(self.limits, r.command, cap)(raw)
        return raw

    async def _room_for(self, r: ReadRequest) -> None:
        """An XREADGROUP that ``_GROUP_READ`` does not run: its consumer checked against
        ``max_group_consumers`` first, on each slot (see app/backends/redis_caps.py)."""
        assert r.group is not None and r.consumer is not None
        slots: dict[int, list[str]] = {}
        for key in r.keys:
            slots.setdefault(self._slot(key), []).append(key)
        for keys in slots.values():
            line, finish = caps.room_then(
                self.limits, [_b(k) for k in keys], r.group, _b(r.consumer), []
            )
            finish(await self._call(keys[0], *line))

    async def _group_read(self, r: ReadRequest, cap: int) -> Raw:
        """XREADGROUP (not blocking) counted first, by ``_GROUP_READ``: refused with nothing
        delivered when ``cap`` entries would be. Over several cluster slots, every slot is
        counted (read-only) before any reads, each within what the others left."""
        keys = list(r.keys)
        parts: dict[int, list[int]] = {}
        for i, key in enumerate(keys):
            parts.setdefault(self._slot(key), []).append(i)
        ccap = self.limits.group_consumers
        if len(parts) == 1:
            return _group_reply(self.limits, r)(
                await self._write(keys[0], *_group_line(r, keys, list(r.ids), cap, "read", ccap))
            )
        chunks = [([keys[i] for i in idx], [r.ids[i] for i in idx]) for idx in parts.values()]
        counts = await asyncio.gather(
            *(
                self._call(part[0], *_group_line(r, part, ids, cap, "count", ccap))
                for part, ids in chunks
            )
        )
        if any(int(n) < 0 for n in counts):
            assert r.group is not None
            raise self.limits.too_many_consumers(r.group)
        total = sum(int(n) for n in counts)
        if total >= cap:
            raise self.limits.too_large(r.command)
        replies = []
        for (part, part_ids), n in zip(chunks, counts, strict=True):
            line = _group_line(r, part, part_ids, cap - total + int(n), "read", ccap)
            raw = await self._write(part[0], *line)
            if isinstance(raw, list) and raw[0] == 1:
                replies.append(raw[1])  # else a write raced in: that part stays unread
        return _merge(keys, replies)

    async def pipeline(self, commands: Sequence[Sequence[str]]) -> list[JsonReply | CommandError]:
        """Not atomic. On redis-server, sent on one connection in one round trip (unless one
        of them may block: those wait their turn one by one, as the embedded endpoint's do);
        in a cluster, one by one, each routed to its slot. Too few replicas for
        ``wait_replicas`` fails the whole request (``ReplicasUnavailable``) after every
        command ran, and so does a command Redis refused for a passing state of its own
        (``RedisFault``: CLUSTERDOWN, LOADING...): the service's trouble, not one command's.
        Redis being unreachable, or no connection for a blocking read, fails it at once."""
        parsed = [list(c) for c in commands]
        if self._cluster or any(_may_block(a) for a in parsed):
            out: list[JsonReply | CommandError] = []
            for argv in parsed:
                try:
                    out.append(await self.command(argv))
                except (RedisUnavailable, BlockPoolExhausted):
                    raise  # the service's trouble, not one command's: the request fails
                except CommandError as e:
                    out.append(e)
            return _unless_unavailable(out)
        answers: list[JsonReply | CommandError] = [None] * len(parsed)
        finish: dict[int, Callable[[Raw], Raw]] = {}
        sent: list[int] = []
        lines: list[list[Arg]] = []
        writes = False
        for i, args in enumerate(parsed):
            try:
                cmd = _known(args)
            except CommandError as e:
                answers[i] = e
                continue
            if cmd.name == "flushall":
                args = ["FLUSHDB", *args[1:]]
            bounded = _bounded(self.limits, cmd, args)
            if bounded is not None:
                finish[i] = bounded.finish
            writes = writes or cmd.writes or (bounded is not None and bounded.writes)
            sent.append(i)
            lines.append(_argv(args) if bounded is None else bounded.line)
        wait = bool(self.wait_replicas and writes)
        if wait:
            lines.append(self._wait_args())
        replies = await self._sequence(None, lines) if lines else []
        for i, line, r in zip(sent, lines, replies, strict=False):
            answers[i] = _answer(parsed[i], line, r, finish.get(i))
        if wait:
            self._check_acked(replies[-1])
        return _unless_unavailable(answers)

    async def multi_exec(self, commands: Sequence[Sequence[str]]) -> list[JsonReply | CommandError]:
        parsed = [list(c) for c in commands]
        cmds = []
        for args in parsed:
            try:
                cmds.append(_known(args))
            except CommandError as e:
                raise CommandError(
                    "EXECABORT Transaction discarded because of previous errors."
                ) from e
        first: str | None = None
        if self._cluster:
            slots: set[int] = set()
            for cmd, args in zip(cmds, parsed, strict=True):
                for key in cmd.keys(args) or []:
                    slots.add(self._slot(key))
                    first = first or key
            if len(slots) > 1:
                raise CommandError(CROSSSLOT)
        lines: list[list[Arg]] = [["MULTI"]]
        finish: list[Callable[[Raw], Raw] | None] = []
        writes = False
        for cmd, args in zip(cmds, parsed, strict=True):
            if cmd.name == "flushall":
                args = ["FLUSHDB", *args[1:]]
            bounded = _bounded(self.limits, cmd, args)
            finish.append(None if bounded is None else bounded.finish)
            writes = writes or cmd.writes or (bounded is not None and bounded.writes)
            lines.append(_argv(args) if bounded is None else bounded.line)
        lines.append(["EXEC"])
        writes = bool(self.wait_replicas) and writes
        if writes:
            lines.append(self._wait_args())
        replies = await self._sequence(first, lines)
        result = replies[len(parsed) + 1]
        if isinstance(result, ResponseError):
            # EXECABORT for a command refused as it was queued: when Redis refused it for a
            # passing state (CLUSTERDOWN...), that is the transaction's answer.
            for queued in replies[1 : len(parsed) + 1]:
                if isinstance(queued, ResponseError):
                    _unless_unavailable([_error(queued)])
            raise _error(result)
        if writes:
            self._check_acked(replies[-1])
        return [
            _answer(args, line, r, f)
            for args, line, r, f in zip(parsed, lines[1:], result or [], finish, strict=False)
        ]

    # --- streams --------------------------------------------------------------------------
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
            **_stream_header(m),
            entries=_entries(m["entries"]),
            groups=groups,
        )

    async def delete_stream(self, key: str) -> bool:
        return bool(await self._script(_DELETE_STREAM, key, write=True))

    async def trim(self, key: str, spec: TrimSpec) -> int:
        return int(await self._write(key, "XTRIM", _b(key), *_trim_args(spec)))

    async def set_id(self, args: XSetIdArgs) -> None:
        argv: list[Arg] = ["XSETID", _b(args.key), _id(args.last_id)]
        if args.entries_added is not None:
            argv += ["ENTRIESADDED", args.entries_added]
        if args.max_deleted_id is not None:
            argv += ["MAXDELETEDID", _id(args.max_deleted_id)]
        await self._write(args.key, *argv)

    # --- entries --------------------------------------------------------------------------
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
            last_raw, sec, usec = await self._script(_PROBE, key)
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
            raw = await self._script(_APPEND, key, *argv, write=True)
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

    # --- groups and consumers -------------------------------------------------------------
    async def groups(self, key: str, start: str = "", count: int = 0) -> list[GroupInfo]:
        rows = await self._listing(key, None, start, count)
        out = []
        for raw in rows:
            g = _map(raw)
            out.append(
                GroupInfo(
                    _s(g["name"]),
                    int(g["consumers"]),
                    int(g["pending"]),
                    _sid(g["last-delivered-id"]),
                    _opt_int(g["entries-read"]),
                    _opt_int(g["lag"]),
                )
            )
        return out

    async def _listing(self, key: str, group: str | None, start: str, count: int) -> Raw:
        """XINFO GROUPS / CONSUMERS rows: whole, or a page cut by Redis (redis_caps)."""
        if not (count or self.limits.reply_entries):
            line: list[Arg] = ["XINFO", "GROUPS", _b(key)]
            if group is not None:
                line = ["XINFO", "CONSUMERS", _b(key), _b(group)]
            return await self._call(key, *line)
        raw_group = None if group is None else _b(group)
        line, finish = caps.listing(self.limits, _b(key), raw_group, _b(start), count)
        return finish(await self._call(key, *line))

    async def group(self, key: str, name: str) -> GroupInfo:
        try:
            found = [g for g in await self.groups(key, name, 1) if g.name == name]
        except NoSuchKey:
            found = []
        if not found:
            raise no_such_group(key, name)
        return found[0]

    async def create_group(
        self, key: str, name: str, id_text: str, mkstream: bool, entries_read: int | None
    ) -> None:
        argv: list[Arg] = ["XGROUP", "CREATE", _b(key), _b(name), _b(id_text)]
        if mkstream:
            argv.append("MKSTREAM")
        if entries_read is not None:
            argv += ["ENTRIESREAD", entries_read]
        if self.limits.stream_groups:
            line, finish = caps.new_group(self.limits, key, argv)
            finish(await self._write(key, *line))
            return
        await self._write(key, *argv)

    async def set_group_id(
        self, key: str, name: str, id_text: str, entries_read: int | None
    ) -> None:
        argv: list[Arg] = ["XGROUP", "SETID", _b(key), _b(name), _b(id_text)]
        if entries_read is not None:
            argv += ["ENTRIESREAD", entries_read]
        await self._group_admin(key, name, argv)

    async def destroy_group(self, key: str, name: str) -> bool:
        return bool(await self._write(key, "XGROUP", "DESTROY", _b(key), _b(name)))

    async def consumers(
        self, key: str, group: str, start: str = "", count: int = 0
    ) -> list[ConsumerInfo]:
        out = []
        for raw in await self._listing(key, group, start, count):
            c = _map(raw)
            out.append(ConsumerInfo(_s(c["name"]), int(c["pending"]), int(c["idle"])))
        return out

    async def create_consumer(self, key: str, group: str, consumer: str) -> bool:
        argv: list[Arg] = ["XGROUP", "CREATECONSUMER", _b(key), _b(group), _b(consumer)]
        if self.limits.group_consumers:
            line, finish = caps.new_consumer(self.limits, group, argv)
            return bool(finish(await self._write(key, *line)))
        return bool(await self._group_admin(key, group, argv))

    async def delete_consumer(self, key: str, group: str, consumer: str) -> int:
        argv: list[Arg] = ["XGROUP", "DELCONSUMER", _b(key), _b(group), _b(consumer)]
        return int(await self._group_admin(key, group, argv))

    async def _group_admin(self, key: str, group: str, argv: list[Arg]) -> Raw:
        """XGROUP SETID / CREATECONSUMER / DELCONSUMER, with Redis's own errors."""
        return await self._write(key, *argv)

    # --- pending entries ------------------------------------------------------------------
    async def ack(self, key: str, group: str, ids: Sequence[StreamID]) -> int:
        if not ids:
            return 0
        return int(await self._write(key, "XACK", _b(key), _b(group), *map(_id, ids)))

    async def pending_summary(self, key: str, group: str) -> PendingSummary:
        count, first, last, consumers = await self._call(key, "XPENDING", _b(key), _b(group))
        return PendingSummary(
            int(count),
            _opt_sid(first),
            _opt_sid(last),
            [(_s(name), int(n)) for name, n in consumers or []],
        )

    async def pending(self, args: PendingArgs) -> list[PendingRow]:
        argv: list[Arg] = ["XPENDING", _b(args.key), _b(args.group)]
        if args.min_idle_ms:
            argv += ["IDLE", args.min_idle_ms]
        argv += [_id(args.start), _id(args.end), max(args.count, 0)]
        if args.consumer is not None:
            argv.append(_b(args.consumer))
        rows = await self._call(args.key, *argv)
        return [PendingRow(_sid(r[0]), _s(r[1]), int(r[2]), int(r[3])) for r in rows]

    async def claim(self, args: ClaimArgs) -> list[Entry | StreamID]:
        if not args.ids:
            await self.pending_summary(args.key, args.group)  # NOGROUP when there is none
            return []
        argv: list[Arg] = [
            "XCLAIM",
            _b(args.key),
            _b(args.group),
            _b(args.consumer),
            args.min_idle_ms,
            *map(_id, args.ids),
        ]
        if args.idle_ms is not None:
            argv += ["IDLE", args.idle_ms]
        if args.time_ms is not None:
            argv += ["TIME", args.time_ms]
        if args.retry_count is not None:
            argv += ["RETRYCOUNT", args.retry_count]
        if args.force:
            argv.append("FORCE")
        if args.justid:
            argv.append("JUSTID")
        if args.last_id is not None:
            argv += ["LASTID", _id(args.last_id)]
        return _claimed(
            await self._with_room(args.key, args.group, args.consumer, argv), args.justid
        )

    async def autoclaim(self, args: AutoClaimArgs) -> AutoClaim:
        argv: list[Arg] = [
            "XAUTOCLAIM",
            _b(args.key),
            _b(args.group),
            _b(args.consumer),
            args.min_idle_ms,
            _id(args.start),
            "COUNT",
            args.count,
        ]
        if args.justid:
            argv.append("JUSTID")
        nxt, claimed, deleted = await self._with_room(args.key, args.group, args.consumer, argv)
        return AutoClaim(_sid(nxt), _claimed(claimed, args.justid), [_sid(x) for x in deleted])

    async def _with_room(self, key: str, group: str, consumer: str, argv: list[Arg]) -> Raw:
        """XCLAIM / XAUTOCLAIM, refused when ``consumer`` would be one too many."""
        if not self.limits.group_consumers:
            return await self._write(key, *argv)
        line, finish = caps.room_then(self.limits, [_b(key)], group, _b(consumer), argv)
        return finish(await self._write(key, *line))


# --- limits -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Bounded:
    """A command sent in another form so that it stays within the limits: ``line`` goes to
    Redis (one command, on the command's key), ``finish`` turns its reply into the command's
    reply or raises the engine's ``too_large``."""

    line: list[Arg]
    finish: Callable[[Raw], Raw]
    writes: bool = False  # a script that may write (XREADGROUP, XAUTOCLAIM)


def _bounded(limits: Limits, cmd: Command, args: list[str]) -> _Bounded | None:
    """How ``args`` must be sent to stay within ``limits``, or None: as given (within them
    already, no limit set, or malformed: Redis's own error then). XREAD / XREADGROUP here
    are the forms one connection can send (a pipeline's, a transaction's, not blocking)."""
    name = cmd.name
    try:
        capped = _capped(limits, name, args)
        if capped is not None:
            return capped
        if not (limits.read_keys or limits.reply_entries):
            return None
        if name in ("xread", "xreadgroup"):
            return _bounded_read(limits, args)
        if name in ("xrange", "xrevrange"):
            count = parse_range(args, name == "xrevrange").count
            cap = limits.reply_cap(count)
            if cap is None or count == 0:
                return None
            line = [*_argv(args[:4]), "COUNT", cap]
            return _Bounded(line, _capped_list(limits, args[0], cap))
        if name == "xpending":
            pending = parse_xpending(args)
            cap = None if pending is None else limits.reply_cap(pending.count)
            if pending is None or cap is None or pending.count == 0:
                return None
            at = 7 if args[3].lower() == "idle" else 5
            line = _argv(args)
            line[at] = cap
            return _Bounded(line, _capped_list(limits, args[0], cap))
        if name == "xautoclaim":
            if not limits.past(parse_xautoclaim(args).count):
                return None
            ccap = limits.group_consumers
            line = _eval_line(_AUTOCLAIM, [args[1]], [limits.reply_entries, ccap, *_argv(args)[2:]])
            return _Bounded(line, _script_reply(limits, args[0], args[2]), writes=True)
        if name == "xinfo|stream":
            count = full_count(args)
            if count is None or not limits.reply_entries:
                return None
            return _Bounded(*caps.full_info(limits, _b(args[2]), count))
        if name in ("xinfo|groups", "xinfo|consumers") and limits.reply_entries:
            group = _b(args[3]) if name == "xinfo|consumers" else None
            return _Bounded(*caps.listing(limits, _b(args[2]), group, b"", 0))
    except CommandError:
        return None
    return None


def _capped(limits: Limits, name: str, args: list[str]) -> _Bounded | None:
    """How a command that may add a group or a consumer is sent to stay within the caps
    (app/backends/redis_caps.py), or None (no cap, or nothing to add). XAUTOCLAIM past the
    reply limit, and XREADGROUP, are capped by their limit scripts (``_bounded``)."""
    if name == "xgroup|create" and limits.stream_groups and len(args) >= 5:
        return _Bounded(*caps.new_group(limits, args[2], _argv(args)), writes=True)
    if not limits.group_consumers:
        if name == "restore" and limits.stream_groups:
            return _Bounded(*caps.restore(limits, _argv(args)), writes=True)
        return None
    if name == "restore":
        return _Bounded(*caps.restore(limits, _argv(args)), writes=True)
    if name == "xgroup|createconsumer" and len(args) == 5:
        return _Bounded(*caps.new_consumer(limits, args[3], _argv(args)), writes=True)
    claims = name == "xclaim" or (
        name == "xautoclaim" and not limits.past(parse_xautoclaim(args).count)
    )
    if claims and len(args) >= 6:
        room = caps.room_then(limits, [_b(args[1])], args[2], _b(args[3]), _argv(args))
        return _Bounded(*room, writes=True)
    return None


def _bounded_read(limits: Limits, args: list[str]) -> _Bounded | None:
    r = _read_request(args)
    if r is None:
        return None
    try:
        limits.check_read_keys(r.command, len(r.keys))
    except CommandError as e:
        refused = e
        return _Bounded(["PING"], lambda _: _raise(refused))  # sent all the same: in order
    cap = limits.reply_cap(r.count, len(r.keys))
    if cap is None:
        if r.group is not None and r.consumer is not None and limits.group_consumers:
            keys = [_b(k) for k in r.keys]
            room = caps.room_then(limits, keys, r.group, _b(r.consumer), _argv(args))
            return _Bounded(*room, writes=True)
        return None
    if r.group is not None:
        line = _group_line(r, list(r.keys), list(r.ids), cap, "read", limits.group_consumers)
        return _Bounded(line, _group_reply(limits, r), writes=True)
    line = [*_read_head(r, cap), "STREAMS", *map(_b, r.keys), *map(_b, r.ids)]
    return _Bounded(line, _capped_read(limits, r.command, cap))


def _raise(e: CommandError) -> Raw:
    raise e


def _read_request(args: list[str]) -> ReadRequest | None:
    """XREAD / XREADGROUP parsed by the engine (None when it is malformed)."""
    if not streams_keys(args):
        return None
    try:
        return parse_read_request(Keyspace(ManualClock(int(time.time() * 1000))), args)
    except CommandError:
        return None


def _read_head(r: ReadRequest, count: int) -> list[Arg]:
    """XREAD / XREADGROUP up to STREAMS, with ``count`` (0: none)."""
    head: list[Arg] = [r.command]
    if r.group is not None:
        assert r.consumer is not None
        head += ["GROUP", _b(r.group), _b(r.consumer)]
    if count:
        head += ["COUNT", count]
    if r.block_ms is not None:
        head += ["BLOCK", r.block_ms]
    if r.noack:
        head.append("NOACK")
    return head


def _group_line(
    r: ReadRequest, keys: list[str], ids: list[str], cap: int, mode: str, consumers: int
) -> list[Arg]:
    """``_GROUP_READ`` over ``keys`` (one slot) and their IDs; XREADGROUP without BLOCK;
    ``consumers``: max_group_consumers (0: none)."""
    assert r.group is not None and r.consumer is not None
    head = _without_block(_read_head(r, r.count))
    args: list[Arg] = [mode, cap, _b(r.group), _b(r.consumer), len(head), *head, *map(_b, ids)]
    return _eval_line(_GROUP_READ, keys, [*args, consumers])


def _group_reply(limits: Limits, r: ReadRequest) -> Callable[[Raw], Raw]:
    return _script_reply(limits, r.command, r.group)


def _script_reply(limits: Limits, command: str, group: str | None = None) -> Callable[[Raw], Raw]:
    """A limit script's reply: ``{1, reply}`` is the command's, ``{0, ...}`` refused past
    the reply limit, ``{2}`` a consumer too many in ``group``."""

    def finish(raw: Raw) -> Raw:
        if raw[0] == 2 and group is not None:
            raise limits.too_many_consumers(group)
        if raw[0] != 1:
            raise limits.too_large(command)
        return raw[1] if len(raw) > 1 else None

    return finish


def _capped_list(limits: Limits, command: str, cap: int) -> Callable[[Raw], Raw]:
    """A range sent with COUNT ``cap`` (one past the limit): refused when it came full."""

    def finish(raw: Raw) -> Raw:
        if isinstance(raw, list) and len(raw) >= cap:
            raise limits.too_large(command)
        return raw

    return finish


def _capped_read(limits: Limits, command: str, cap: int) -> Callable[[Raw], Raw]:
    """XREAD sent with COUNT ``cap`` per stream: refused when ``cap`` came in all."""

    def finish(raw: Raw) -> Raw:
        if sum(len(entries or []) for _, entries in raw or []) >= cap:
            raise limits.too_large(command)
        return raw

    return finish


def _unless_unavailable(answers: list[JsonReply | CommandError]) -> list[JsonReply | CommandError]:
    """``answers``, unless one of them is the backend's trouble (``BackendUnavailable``):
    then that is the whole request's error, raised."""
    for r in answers:
        if isinstance(r, BackendUnavailable):
            raise r
    return answers


def _eval_line(script: str, keys: list[str], args: Sequence[Arg]) -> list[Arg]:
    return ["EVAL", script, len(keys), *map(_b, keys), *args]


def _answer(
    args: list[str], line: list[Arg], r: Raw, finish: Callable[[Raw], Raw] | None
) -> JsonReply | CommandError:
    """One reply of a pipeline or a transaction, in the command endpoint's shape."""
    if isinstance(r, ResponseError):
        return _error(r, line)
    if finish is not None:
        try:
            r = finish(r)
        except CommandError as e:
            return e
    return _reply(args[0].lower(), line, r)


# --- helpers ------------------------------------------------------------------------------
def cluster_address(url: str) -> tuple[list[tuple[str, int]], dict[str, str]]:
    """``redis+cluster://[user:pass@]host[:port],host[:port]``: the startup nodes (port
    6379 when none is given; an IPv6 address in brackets) and the credentials, if any."""
    netloc = urlsplit(url).netloc
    userinfo, _, hosts = netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    auth: dict[str, str] = {}
    if user:
        auth["username"] = unquote(user)
    if password:
        auth["password"] = unquote(password)
    nodes = []
    for item in hosts.split(","):
        item = item.strip()
        if not item:
            continue
        if item.startswith("["):  # [::1]:7000
            host, _, rest = item[1:].partition("]")
            port = rest.removeprefix(":")
        elif item.count(":") == 1:
            host, _, port = item.partition(":")
        else:
            host, port = item, ""
        if port and not port.isdigit():
            raise ValueError(f"bad port in Redis Cluster address {item!r}")
        nodes.append((host or "127.0.0.1", int(port) if port else 6379))
    if not nodes:
        raise ValueError("a Redis Cluster URL names at least one host:port")
    return nodes, auth


def _raw_replies(client: Redis | RedisCluster) -> None:
    """Drop redis-py's reply parsing for every command this backend sends, so replies come
    as Redis sent them. A cluster client keeps the callbacks it needs itself (CLUSTER SLOTS,
    COMMAND)."""
    names = {name.upper() for name in COMMANDS} | {"EVAL", "TIME", "WAIT", "MULTI", "EXEC"}
    for table in (client.response_callbacks, getattr(client, "result_callbacks", {})):
        for name in list(table):
            if name.upper() in names or name.upper().split(" ")[0] in names:
                del table[name]


def _argv(args: list[str]) -> list[Arg]:
    """A command line for redis-py: the command's name as text (its cluster routing looks
    names up as text; only names the table knows get here), arguments as bytes."""
    return [args[0], *(_b(a) for a in args[1:])]


def _known(args: list[str]) -> Command:
    """The embedded command table decides what may run, with its errors (unknown, arity)."""
    if not args:
        raise CommandError.err("empty command")
    return lookup(args)


def _key_required(e: CommandError) -> bool:
    return e.text.startswith("ERR The XGROUP subcommand requires the key to exist")


def _decide_ids(batch: Sequence[XAddArgs], last_text: str, now_ms: int) -> list[StreamID | None]:
    """The IDs a batch takes on a stream whose last ID is ``last_text`` ('' when there is no
    stream) at ``now_ms``, or the batch's error: the engine's own rule (``xadd_batch``) on a
    scratch stream, so Redis then only stores what was decided."""
    ks = Keyspace(ManualClock(now_ms))
    if last_text:
        ks.create(batch[0].key).last_id = _sid(last_text)
    return xadd_batch(ks, list(batch))


async def _cancellable(aw: Awaitable[T]) -> T:
    """``aw``, except that a cancellation requested meanwhile is raised even when ``aw``
    returned: redis-py sends through ``asyncio.wait_for``, which on Python 3.11 returns the
    send's result and drops a cancellation that arrives as the send completes (CPython
    gh-86296, fixed in 3.12). The reply was read in full, so the connection stays usable."""
    task = asyncio.current_task()
    before = task.cancelling() if task is not None else 0
    result = await aw
    if task is not None and task.cancelling() > before:
        raise asyncio.CancelledError
    return result


async def _exchange(
    conn: AbstractConnection, commands: list[list[Arg]], timeout: float
) -> list[Raw]:
    out: list[Raw] = []
    try:
        await conn.send_packed_command(conn.pack_commands(commands))
        for _ in commands:
            try:
                out.append(await conn.read_response(timeout=timeout))
            except ResponseError as e:
                out.append(e)
    except BaseException:
        await conn.disconnect()  # replies may still be on their way: never reuse it
        raise
    return out


def _may_block(args: list[str]) -> bool:
    return (
        bool(args)
        and args[0].lower() in ("xread", "xreadgroup")
        and any(a.lower() == "block" for a in args[1:])
    )


def _flat(replies: list[Raw]) -> list[Raw]:
    """Replies and the replies inside them one level down (EXEC's array)."""
    out = list(replies)
    for r in replies:
        if isinstance(r, list):
            out += r
    return out


def _without_block(head: list[Arg]) -> list[Arg]:
    out: list[Arg] = []
    skip = False
    for h in head:
        if skip:
            skip = False
            continue
        if isinstance(h, str | bytes) and _s(h).lower() == "block":
            skip = True
            continue
        out.append(h)
    return out


def _merge(keys: list[str], replies: Sequence[Raw]) -> Raw:
    """Parts of an XREAD reply from several slots, as one reply: streams in the order of
    ``keys``; nil when no part has anything."""
    found: dict[str, Raw] = {}
    for reply in replies:
        for item in reply or []:
            found[_s(item[0])] = item
    if not found:
        return None
    return [found[k] for k in dict.fromkeys(keys) if k in found]


async def _first_answer(keys: list[str], calls: Sequence[Awaitable[Raw]]) -> Raw:
    """Blocking reads on several slots: the first non-nil answer, with any others already
    in; nil when all timed out. The rest are cancelled (their connections closed)."""
    tasks = [asyncio.ensure_future(c) for c in calls]
    try:
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            ready = [t.result() for t in done]  # an error reply raises here
            if any(r is not None for r in ready):
                ready += [t.result() for t in pending if t.done()]
                return _merge(keys, ready)
        return None
    finally:
        for t in tasks:
            if not t.done():
                t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
