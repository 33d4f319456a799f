"""What commands return: domain objects, never wire shapes.

The command endpoint turns these into Redis-style arrays, the REST layer into JSON
resources, the SSE layer into events — each from the same objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from app.engine.idmp import IdmpInfo
from app.engine.ids import StreamID
from app.engine.stream import Entry, Fields


class Status(str):
    """A Redis simple-string reply (``+OK``, ``+PONG``, ``+stream``)."""

    __slots__ = ()


OK = Status("OK")
PONG = Status("PONG")


@dataclass(frozen=True, slots=True)
class MissingEntry:
    """A pending entry whose stream entry was deleted: XREADGROUP history gives [id, nil]."""

    id: StreamID


@dataclass(frozen=True, slots=True)
class ClaimedEntry:
    """An idle pending entry an XREADGROUP ... CLAIM read took (Redis 8.4): the entry, then
    how long it was idle before (-1: released by XNACK) and its delivery count."""

    id: StreamID
    fields: Fields
    idle_ms: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StreamRead:
    """One stream's part of an XREAD / XREADGROUP reply."""

    key: str
    entries: list[Entry | MissingEntry | ClaimedEntry]


@dataclass(frozen=True, slots=True)
class PendingSummary:
    """XPENDING key group: count, smallest and greatest pending ID, count per consumer."""

    count: int
    first: StreamID | None
    last: StreamID | None
    consumers: list[tuple[str, int]]


@dataclass(frozen=True, slots=True)
class PendingRow:
    """One row of extended XPENDING."""

    id: StreamID
    consumer: str
    idle_ms: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AutoClaim:
    """XAUTOCLAIM: the cursor to continue from, what was claimed, and IDs found deleted."""

    next_id: StreamID
    claimed: list[Entry | StreamID]
    deleted: list[StreamID]


@dataclass(frozen=True, slots=True)
class ScanPage:
    cursor: int
    keys: list[str]


@dataclass(frozen=True, slots=True)
class Storage:
    """What the streams whose names begin with a prefix hold: how many streams, their
    entries, and their size in bytes as the backend keeps them (the engine's modelled
    listpacks; Redis's MEMORY USAGE: what it allocated, a node's listpack whole). What a
    storage quota counts (app/api/quotas.py)."""

    streams: int = 0
    entries: int = 0
    bytes: int = 0


@dataclass(frozen=True, slots=True)
class StreamHeader:
    """The fields XINFO STREAM and XINFO STREAM FULL both begin with, in Redis's order.

    One type, so each surface (engine, Redis backend, RESP, REST) builds or shapes it once."""

    length: int
    radix_tree_keys: int
    radix_tree_nodes: int
    last_generated_id: StreamID
    max_deleted_entry_id: StreamID
    entries_added: int
    recorded_first_entry_id: StreamID
    # Redis 8.6's IDMP fields, which follow; None for a stream with no IDMP state, whose
    # reply stays Redis 7.0's (redis-server 8.6 prints its defaults there too).
    idmp: IdmpInfo | None = None


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """XINFO STREAM: Redis's fields in Redis's order (the header's, then these)."""

    header: StreamHeader
    groups: int
    first_entry: Entry | None
    last_entry: Entry | None


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """XINFO GROUPS row."""

    name: str
    consumers: int
    pending: int
    last_delivered_id: StreamID
    entries_read: int | None
    lag: int | None


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    """XINFO CONSUMERS row (Redis 7.0: name, pending, idle)."""

    name: str
    pending: int
    idle_ms: int


@dataclass(frozen=True, slots=True)
class PendingDelivery:
    """A pending entry as XINFO STREAM FULL lists it."""

    id: StreamID
    consumer: str
    delivered_at_ms: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ConsumerFull:
    name: str
    seen_time_ms: int
    pel_count: int
    pending: list[PendingDelivery]


@dataclass(frozen=True, slots=True)
class GroupFull:
    name: str
    last_delivered_id: StreamID
    entries_read: int | None
    lag: int | None
    pel_count: int
    pending: list[PendingDelivery]
    consumers: list[ConsumerFull]
    # Released (XNACK) entries in the PEL: shown as "nacked-count" (Redis 8.8) only when
    # there are some, so a group Redis 7.0 could hold answers as 7.0 does.
    nacked_count: int = 0


@dataclass(frozen=True, slots=True)
class StreamFullInfo:
    """XINFO STREAM key FULL (the header's fields, then these)."""

    header: StreamHeader
    entries: list[Entry]
    groups: list[GroupFull]


@dataclass(frozen=True, slots=True)
class Help:
    """A HELP reply: lines sent as simple strings."""

    lines: list[str]


@dataclass(frozen=True, slots=True)
class InfoSection:
    """One INFO section: its title (``Server``) and ``field:value`` lines in order."""

    title: str
    fields: list[tuple[str, str | int]]


@dataclass(frozen=True, slots=True)
class Info:
    """INFO: the sections asked for, in Redis's order (the command endpoint writes Redis's
    text, ``# Title\\r\\nfield:value\\r\\n``, sections apart by a blank line)."""

    sections: list[InfoSection]


# What one command answers, as the command endpoint shapes it (app/api/commands/resp.py):
# every handler's reply (app/engine/commands) and every RESP tree a pass-through backend
# parses (``str`` a bulk string, ``Status`` a simple one, ``int``, ``None`` a nil, a sequence
# an array), and the parts the shaper meets inside them (``GroupFull``, ``ConsumerFull``).
CommandReply: TypeAlias = (
    int
    | str
    | Status
    | StreamID
    | Entry
    | MissingEntry
    | ClaimedEntry
    | StreamRead
    | PendingSummary
    | PendingRow
    | AutoClaim
    | ScanPage
    | StreamInfo
    | StreamFullInfo
    | GroupFull
    | ConsumerFull
    | GroupInfo
    | ConsumerInfo
    | Help
    | Info
    | Sequence["CommandReply"]
    | None
)
