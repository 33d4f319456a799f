"""The keyspace: stream names to streams, and the keyspace commands' rules (SCAN, KEYS,
RENAME), the run-time configuration (CONFIG SET) and what INFO counts.

xstreams holds only streams, so a key is a stream; ``TYPE`` answers ``stream`` or ``none``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sortedcontainers import SortedList

from app.engine.blocking import BlockedClients
from app.engine.clock import Clock, SystemClock
from app.engine.delivery import Retention
from app.engine.effects import (
    ConfigSet,
    Effect,
    Flushed,
    KeyDeleted,
    KeyRenamed,
    Record,
    StreamCreated,
)
from app.engine.glob import glob_match
from app.engine.idmp import DEFAULT_DURATION_S, DEFAULT_MAX_PRODUCERS, DEFAULT_MAXSIZE, Idmp
from app.engine.limits import Limits
from app.engine.replies import ScanPage
from app.engine.responses import Responses
from app.engine.stats import Stats
from app.engine.stream import Stream

InfoFields = list[tuple[str, str | int]]
InfoSource = Callable[[], InfoFields]
"""Fields of an INFO section the engine cannot know (the process, the database, the
connections), supplied by the service that runs it (``Keyspace.info``)."""


@dataclass(slots=True)
class StreamConfig:
    """Redis's stream-node-max-entries / stream-node-max-bytes, and the producers one
    stream's IDMP state may hold (a service setting, not Redis's: ``app.engine.idmp``).
    Replay applies them as commands did, so every way the state is rebuilt gets them."""

    node_max_entries: int = 100
    node_max_bytes: int = 4096
    idmp_max_producers: int = DEFAULT_MAX_PRODUCERS
    # The IDMP window and size a stream's IDMP state starts with (Redis 8.6's
    # stream-idmp-duration / stream-idmp-maxsize).
    idmp_duration_s: int = DEFAULT_DURATION_S
    idmp_maxsize: int = DEFAULT_MAXSIZE
    # XREAD's ``+`` ID, the last entry (Redis 7.4): a service setting, off by default because
    # Redis 7.0 refuses ``+`` there and every reply 7.0 gives stays as 7.0 gives it.
    xread_last_entry: bool = False

    def get(self, name: str) -> int:
        """The value of a CONFIG parameter (``app.engine.config``) by its name."""
        return int(getattr(self, _FIELDS[name]))

    def set(self, name: str, value: int) -> None:
        setattr(self, _FIELDS[name], value)

    def new_idmp(self) -> Idmp:
        """The IDMP state a stream gets on its first IDMP append, XIDMPRECORD or XCFGSET."""
        return Idmp(self.idmp_duration_s, self.idmp_maxsize)


# CONFIG parameters to the ``StreamConfig`` fields that hold them.
_FIELDS = {
    "stream-node-max-entries": "node_max_entries",
    "stream-node-max-bytes": "node_max_bytes",
    "stream-idmp-duration": "idmp_duration_s",
    "stream-idmp-maxsize": "idmp_maxsize",
}


class StreamMap(dict[str, Stream]):
    """Stream names to streams, with the names kept in SCAN's order as keys come and go.

    SCAN walks keys by a hash of their name. Sorting every key for each page cost O(n log n)
    per call (over a second per page with 100,000 streams, holding the event loop); the order
    is kept here instead, O(log n) per key created or deleted. Only the dict methods the
    engine uses are allowed, so no change can bypass the order.
    """

    __slots__ = ("names", "order")

    def __init__(self) -> None:
        super().__init__()
        self.order: SortedList = SortedList()  # (scan hash, name)
        self.names: SortedList = SortedList()  # name: KEYS with a literal prefix

    def __setitem__(self, key: str, value: Stream) -> None:
        if not isinstance(key, str):  # a damaged snapshot: refused as a malformed one
            raise TypeError(f"a stream name must be a string, not {type(key).__name__}")
        if key not in self:
            self.order.add((_scan_hash(key), key))
            self.names.add(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.order.remove((_scan_hash(key), key))
        self.names.remove(key)

    def pop(self, key: str, default: Stream | None = None) -> Stream | None:  # type: ignore[override]
        if key not in self:
            return default
        value = self[key]
        del self[key]
        return value

    def clear(self) -> None:
        super().clear()
        self.order.clear()
        self.names.clear()

    def with_prefix(self, prefix: str) -> Iterator[str]:
        """The names that start with ``prefix``, in code point order."""
        for name in self.names.irange(minimum=prefix):
            if not name.startswith(prefix):
                return
            yield name

    def _unsupported(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("StreamMap: use [key] =, del, pop or clear (they keep the SCAN order)")

    update = setdefault = popitem = __ior__ = _unsupported


@dataclass(slots=True)
class Keyspace:
    clock: Clock = field(default_factory=SystemClock)
    config: StreamConfig = field(default_factory=StreamConfig)
    streams: StreamMap = field(default_factory=StreamMap)
    blocked: BlockedClients = field(default_factory=BlockedClients)
    limits: Limits = field(default_factory=Limits)  # the service's bounds on one command
    # The running command's effects while a journal is attached (see effects.py), else None.
    effects: Record | None = None
    stats: Stats = field(default_factory=Stats)  # INFO stats, commandstats, errorstats
    # INFO sections (or fields of one) the service supplies: "server", "memory", "persistence".
    info: dict[str, InfoSource] = field(default_factory=dict)
    # Parameters CONFIG SET changed: journaled, so they outlive a restart and win over the
    # values the service was started with.
    config_set: dict[str, int] = field(default_factory=dict)
    started_ms: int = -1  # when the keyspace came up (INFO uptime); set from the clock
    # Responses kept for requests that carried an Idempotency-Key (not keys: FLUSHALL and
    # SCAN never see them).
    responses: Responses = field(default_factory=Responses)
    # Retention by stream name (app/engine/delivery.py): it outlives a DEL of the stream,
    # not a FLUSHALL.
    retention: dict[str, Retention] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.started_ms < 0:
            self.started_ms = self.clock.now_ms()

    def record(self, effect: Effect) -> None:
        if self.effects is not None:
            self.effects.append(effect)

    def get(self, key: str) -> Stream | None:
        return self.streams.get(key)

    def create(self, key: str) -> Stream:
        s = self.streams[key] = Stream(self.config.node_max_entries, self.config.node_max_bytes)
        self.record(StreamCreated(key=key))
        return s

    def delete(self, key: str) -> bool:
        if self.streams.pop(key, None) is None:
            return False
        self.record(KeyDeleted(key=key))
        self.blocked.signal(key)
        return True

    def rename(self, src: str, dst: str) -> None:
        """RENAME: ``src`` (which exists) becomes ``dst``, groups and all, replacing what
        ``dst`` held. Readers blocked on ``dst`` are offered the stream, as Redis's
        ``dbAdd`` signals the key ready (an XREADGROUP whose group the stream lacks gets
        NOGROUP); readers blocked on ``src`` see their key gone."""
        stream = self.streams[src]
        del self.streams[src]
        self.streams[dst] = stream
        self.record(KeyRenamed(key=src, new_key=dst))
        self.blocked.signal(src)
        self.blocked.signal(dst)

    def configure(self, values: dict[str, int]) -> None:
        """CONFIG SET: node limits apply to every stream's next append; the IDMP values to
        streams that get IDMP state from now on (a stream's own stay as they are)."""
        for name, value in values.items():
            self.config.set(name, value)
            self.config_set[name] = value
            self.record(ConfigSet(parameter=name, value=value))
        for stream in self.streams.values():
            stream.set_node_limits(self.config.node_max_entries, self.config.node_max_bytes)

    def flush(self) -> None:
        keys = list(self.streams)
        self.streams.clear()
        self.retention.clear()
        self.record(Flushed())
        for key in keys:
            self.blocked.signal(key)

    def keys(self, pattern: str) -> list[str]:
        """KEYS. A pattern that starts with literal ASCII characters (``orders:*``) looks only
        at the names with that prefix, found in the name order (Redis walks every key; its
        order is unspecified, and so is this one)."""
        if pattern == "*":
            return list(self.streams)
        prefix = _literal_prefix(pattern)
        names = self.streams.with_prefix(prefix) if prefix else self.streams
        return [k for k in names if glob_match(pattern, k)]

    def scan(self, cursor: int, count: int, match: str | None, type_: str | None) -> ScanPage:
        """One SCAN page. Keys are visited in a stable hash order and the cursor is the next
        hash, so a key present for the whole iteration is returned at least once however
        the keyspace changes in between — SCAN's guarantee."""
        order = self.streams.order
        i = order.bisect_left((cursor, ""))
        page: list[str] = []
        while i < len(order) and len(page) < count:
            h = order[i][0]
            while i < len(order) and order[i][0] == h:  # never split one hash between pages
                page.append(order[i][1])
                i += 1
        next_cursor = order[i][0] if i < len(order) else 0
        if match is not None and match != "*":
            page = [k for k in page if glob_match(match, k)]
        if type_ is not None and type_.lower() != "stream":
            page = []
        return ScanPage(next_cursor, page)


def _literal_prefix(pattern: str) -> str:
    """The ASCII characters a pattern starts with before any ``*?[\\``: every key it matches
    starts with them. ASCII only, since the glob compares bytes: a string prefix of other
    characters is not always a byte prefix of the key (a lone surrogate stands for a byte that
    may start a character of the key)."""
    for i, c in enumerate(pattern):
        if c in "*?[\\" or not c.isascii():
            return pattern[:i]
    return pattern


def _scan_hash(key: str) -> int:
    # +1 keeps 0 free to mean "iteration complete"
    return zlib.crc32(key.encode("utf-8", "surrogateescape")) + 1
