"""The keyspace: stream names to streams, and the keyspace commands' rules (SCAN, KEYS).

xstreams holds only streams, so a key is a stream; ``TYPE`` answers ``stream`` or ``none``.
"""

from __future__ import annotations

import zlib
from bisect import bisect_left
from dataclasses import dataclass, field

from app.engine.blocking import BlockedClients
from app.engine.clock import Clock, SystemClock
from app.engine.effects import Effect, Flushed, KeyDeleted, Record, StreamCreated
from app.engine.glob import glob_match
from app.engine.limits import Limits
from app.engine.replies import ScanPage
from app.engine.stream import Stream


@dataclass(slots=True)
class StreamConfig:
    """Redis's stream-node-max-entries / stream-node-max-bytes."""

    node_max_entries: int = 100
    node_max_bytes: int = 4096


@dataclass(slots=True)
class Keyspace:
    clock: Clock = field(default_factory=SystemClock)
    config: StreamConfig = field(default_factory=StreamConfig)
    streams: dict[str, Stream] = field(default_factory=dict)
    blocked: BlockedClients = field(default_factory=BlockedClients)
    limits: Limits = field(default_factory=Limits)  # the service's bounds on one command
    # The running command's effects while a journal is attached (see effects.py), else None.
    effects: Record | None = None

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

    def flush(self) -> None:
        keys = list(self.streams)
        self.streams.clear()
        self.record(Flushed())
        for key in keys:
            self.blocked.signal(key)

    def keys(self, pattern: str) -> list[str]:
        if pattern == "*":
            return list(self.streams)
        return [k for k in self.streams if glob_match(pattern, k)]

    def scan(self, cursor: int, count: int, match: str | None, type_: str | None) -> ScanPage:
        """One SCAN page. Keys are visited in a stable hash order and the cursor is the next
        hash, so a key present for the whole iteration is returned at least once however
        the keyspace changes in between — SCAN's guarantee."""
        order = sorted((_scan_hash(k), k) for k in self.streams)
        i = bisect_left(order, (cursor, ""))
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


def _scan_hash(key: str) -> int:
    # +1 keeps 0 free to mean "iteration complete"
    return zlib.crc32(key.encode("utf-8", "surrogateescape")) + 1
