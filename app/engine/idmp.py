"""A stream's idempotent-append state (Redis 8.6: XADD IDMP / IDMPAUTO, XCFGSET).

Each producer has a map from idempotent ID (iid) to the ID of the entry the first XADD with
that iid appended. A repeat answers that ID and appends nothing, even when the entry has
since been deleted or trimmed (redis-server 8.6 does the same). A producer keeps at most
``maxsize`` iids, oldest evicted first; an iid is forgotten once it is ``duration`` seconds
or more old.

Two bounds go beyond Redis, so memory follows what is tracked:

- An iid's age counts from the clock when it was recorded (``stamp``), where Redis compares
  its entry ID's millisecond with the clock. The two are the same whenever the stream's last
  ID is not ahead of the clock (``*`` then takes the clock's millisecond). A stream whose
  last ID is in the future gives every ``*`` entry that future millisecond, so Redis never
  expires its iids (redis/redis#15836); here they still expire on time.
- A stream keeps at most ``max_producers`` producers (a service setting). Past it, the
  producer that appended least recently is forgotten, all its iids with it, and
  ``pids_evicted`` counts it. Redis keeps every producer until its iids expire.

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
DEFAULT_MAX_PRODUCERS = 10_000
# Stale records the expiry queue may hold beyond twice the live ones before it is rebuilt.
_SLACK = 64

Held = tuple[str, str, StreamID, int]
"""One recorded iid: (producer, iid, entry ID, stamp: the clock's millisecond then, or the
ID's when that is earlier)."""


@dataclass(frozen=True, slots=True)
class IdmpInfo:
    """The IDMP fields of XINFO STREAM (and FULL), in redis-server 8.6's order, then the
    producers this service evicted past its cap (``pids-evicted``, not Redis's)."""

    idmp_duration: int
    idmp_maxsize: int
    pids_tracked: int
    iids_tracked: int
    iids_added: int
    iids_duplicates: int
    pids_evicted: int = 0


@dataclass(slots=True)
class Idmp:
    """One stream's producers, their iids, the stream's window and size, and the counters."""

    duration_s: int = DEFAULT_DURATION_S
    maxsize: int = DEFAULT_MAXSIZE
    # Producers to their iids, the one that appended least recently first; each producer's
    # iids oldest first.
    producers: dict[str, dict[str, StreamID]] = field(default_factory=dict)
    # Every iid recorded, oldest first, for expiry. One evicted or cleared since is stale
    # (``_current``): skipped, and dropped when the queue is rebuilt (``_compact``), so the
    # queue never holds more than about twice what is tracked.
    order: deque[Held] = field(default_factory=deque)
    iids: int = 0  # iids held, over every producer
    iids_added: int = 0
    iids_duplicates: int = 0
    pids_evicted: int = 0

    def _current(self, producer: str, iid: str, sid: StreamID) -> bool:
        iids = self.producers.get(producer)
        return iids is not None and iids.get(iid) == sid

    def _expired(self, stamp: int, now_ms: int) -> bool:
        return stamp <= now_ms - self.duration_s * 1000

    def expire(self, now_ms: int) -> None:
        """Forget every iid recorded ``duration`` or more before ``now_ms``."""
        order = self.order
        while order:
            producer, iid, sid, stamp = order[0]
            if self._current(producer, iid, sid):
                if not self._expired(stamp, now_ms):
                    break
                iids = self.producers[producer]
                del iids[iid]
                self.iids -= 1
                if not iids:
                    del self.producers[producer]
            order.popleft()

    def lookup(self, producer: str, iid: str) -> StreamID | None:
        iids = self.producers.get(producer)
        return None if iids is None else iids.get(iid)

    def record(
        self, producer: str, iid: str, sid: StreamID, now_ms: int, max_producers: int
    ) -> None:
        """Remember a new iid at ``now_ms``: the producer's oldest goes if it now holds more
        than maxsize, and the least recent producers if the stream holds more than
        ``max_producers``."""
        iids = self.hold(producer, iid, sid, sid.ms if sid.ms <= now_ms else now_ms)
        while len(iids) > self.maxsize:
            del iids[next(iter(iids))]
            self.iids -= 1
        producers = self.producers
        while len(producers) > max(max_producers, 1):
            oldest = next(iter(producers))
            self.iids -= len(producers.pop(oldest))
            self.pids_evicted = u64(self.pids_evicted + 1)
        self.iids_added = u64(self.iids_added + 1)
        if len(self.order) > 2 * self.iids + _SLACK:
            self._compact()

    def hold(self, producer: str, iid: str, sid: StreamID, stamp: int) -> dict[str, StreamID]:
        """Hold ``iid`` as the producer's newest and the producer as the most recent; its
        map. Recording and loading a snapshot both come here, so both build one order."""
        iids = self.producers.pop(producer, None)
        if iids is None:
            iids = {}
        self.producers[producer] = iids
        if iids.pop(iid, None) is None:
            self.iids += 1
        iids[iid] = sid
        self.order.append((producer, iid, sid, stamp))
        return iids

    def _compact(self) -> None:
        self.order = deque(h for h in self.order if self._current(h[0], h[1], h[2]))

    def held(self) -> list[Held]:
        """Every iid held, oldest first (a snapshot's copy)."""
        return [h for h in self.order if self._current(h[0], h[1], h[2])]

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
        self.iids = 0

    def tracked(self, now_ms: int) -> tuple[int, int]:
        """(producers, iids) still live at ``now_ms``, without forgetting anything: a read
        changes no state. It walks the queue as ``expire`` would."""
        gone: dict[str, int] = {}
        for producer, iid, sid, stamp in self.order:
            if not self._current(producer, iid, sid):
                continue
            if not self._expired(stamp, now_ms):
                break
            gone[producer] = gone.get(producer, 0) + 1
        iids = self.iids - sum(gone.values())
        pids = len(self.producers) - sum(1 for p, n in gone.items() if n == len(self.producers[p]))
        return pids, iids

    def info(self, now_ms: int) -> IdmpInfo:
        pids, iids = self.tracked(now_ms)
        return IdmpInfo(
            self.duration_s,
            self.maxsize,
            pids,
            iids,
            self.iids_added,
            self.iids_duplicates,
            self.pids_evicted,
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
