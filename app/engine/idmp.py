"""A stream's idempotent-append state (Redis 8.6: XADD IDMP / IDMPAUTO, XCFGSET).

Each producer has a map from idempotent ID (iid) to the ID of the entry the first XADD with
that iid appended. A repeat answers that ID and appends nothing, even when the entry has
since been deleted or trimmed (redis-server 8.6 does the same). A producer keeps at most
``maxsize`` iids, oldest evicted first; an iid is forgotten once its entry ID's millisecond is
``duration`` seconds or more behind the clock, as Redis's expiry cron compares them.

Expiry only happens on a write, at the time the write's effect carries, so replay forgets
exactly what the live engine forgot; reads count only iids that are still live at their own
time (``tracked``). A stream has this state (``Stream.idmp``) only once an IDMP XADD or
XCFGSET gave it some: a stream without it answers exactly as Redis 7.0 does.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass, field

from app.engine.ids import StreamID
from app.engine.int64 import u64

DEFAULT_DURATION_S = 100
DEFAULT_MAXSIZE = 100
MIN_DURATION_S, MAX_DURATION_S = 1, 86400
MIN_MAXSIZE, MAX_MAXSIZE = 1, 10000


@dataclass(frozen=True, slots=True)
class IdmpInfo:
    """The IDMP fields of XINFO STREAM (and FULL), in redis-server 8.6's order."""

    idmp_duration: int
    idmp_maxsize: int
    pids_tracked: int
    iids_tracked: int
    iids_added: int
    iids_duplicates: int


@dataclass(slots=True)
class Idmp:
    """One stream's producers, their iids, the stream's window and size, and the counters."""

    duration_s: int = DEFAULT_DURATION_S
    maxsize: int = DEFAULT_MAXSIZE
    producers: dict[str, dict[str, StreamID]] = field(default_factory=dict)
    # Every iid recorded, oldest first, for expiry; an entry whose iid was evicted or cleared
    # since is stale and skipped (``_current``).
    order: deque[tuple[str, str, StreamID]] = field(default_factory=deque)
    iids_added: int = 0
    iids_duplicates: int = 0

    def _current(self, producer: str, iid: str, sid: StreamID) -> bool:
        iids = self.producers.get(producer)
        return iids is not None and iids.get(iid) == sid

    def _expired(self, sid: StreamID, now_ms: int) -> bool:
        return sid.ms <= now_ms - self.duration_s * 1000

    def expire(self, now_ms: int) -> None:
        """Forget every iid whose entry is ``duration`` or more old at ``now_ms``."""
        order = self.order
        while order and (not self._current(*order[0]) or self._expired(order[0][2], now_ms)):
            producer, iid, sid = order.popleft()
            if self._current(producer, iid, sid):
                iids = self.producers[producer]
                del iids[iid]
                if not iids:
                    del self.producers[producer]

    def lookup(self, producer: str, iid: str) -> StreamID | None:
        iids = self.producers.get(producer)
        return None if iids is None else iids.get(iid)

    def record(self, producer: str, iid: str, sid: StreamID) -> None:
        """Remember a new iid; the producer's oldest goes if it now holds more than maxsize."""
        iids = self.producers.setdefault(producer, {})
        iids[iid] = sid
        self.order.append((producer, iid, sid))
        while len(iids) > self.maxsize:
            del iids[next(iter(iids))]
        self.iids_added = u64(self.iids_added + 1)

    def duplicate(self) -> None:
        self.iids_duplicates = u64(self.iids_duplicates + 1)

    def configure(self, duration_s: int, maxsize: int) -> None:
        """XCFGSET: a change of either setting forgets every producer's iids (the counters
        stay); setting the values already in force changes nothing."""
        if (duration_s, maxsize) == (self.duration_s, self.maxsize):
            return
        self.duration_s, self.maxsize = duration_s, maxsize
        self.producers.clear()
        self.order.clear()

    def tracked(self, now_ms: int) -> tuple[int, int]:
        """(producers, iids) still live at ``now_ms``, without forgetting anything: a read
        changes no state."""
        gone: dict[str, int] = {}
        for producer, iid, sid in self.order:
            if not self._expired(sid, now_ms):
                break
            if self._current(producer, iid, sid):
                gone[producer] = gone.get(producer, 0) + 1
        iids = sum(len(m) for m in self.producers.values()) - sum(gone.values())
        pids = sum(1 for p, m in self.producers.items() if len(m) > gone.get(p, 0))
        return pids, iids

    def info(self, now_ms: int) -> IdmpInfo:
        pids, iids = self.tracked(now_ms)
        return IdmpInfo(
            self.duration_s, self.maxsize, pids, iids, self.iids_added, self.iids_duplicates
        )


def auto_iid(fields: tuple[str, ...]) -> str:
    """IDMPAUTO's iid, derived from the entry's content: the same field-value pairs in any
    order give the same iid, and a pair's boundary and each pair's count matter (as
    redis-server 8.6 answers: ``a 1 b 2`` = ``b 2 a 1``; ``ab 1`` ≠ ``a b1``; ``a 1`` ≠
    ``a 1 a 1``). Redis hashes with XXH3; which hash is used cannot be seen from outside
    (the iid is never shown), so the standard library's BLAKE2b stands in: each pair hashed
    with its lengths, the hashes summed modulo 2**128. The 16 bytes are kept as the key's
    characters are (``surrogateescape``)."""
    total = 0
    for i in range(0, len(fields), 2):
        f = fields[i].encode("utf-8", "surrogateescape")
        v = fields[i + 1].encode("utf-8", "surrogateescape")
        h = hashlib.blake2b(digest_size=16)
        h.update(len(f).to_bytes(8, "little"))
        h.update(f)
        h.update(v)
        total += int.from_bytes(h.digest(), "little")
    return (total % (1 << 128)).to_bytes(16, "little").decode("utf-8", "surrogateescape")
