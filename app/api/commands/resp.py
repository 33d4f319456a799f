"""Shape engine replies the way the Upstash REST protocol carries Redis replies.

RESP2 arrays become JSON arrays, bulk and simple strings JSON strings, integers numbers and
nils null. With ``Upstash-Encoding: base64`` every bulk string and every simple string but
``OK`` is base64-encoded, recursively; integers and nulls stay raw.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, cast

from app.api.encoding import resp_entries
from app.engine.ids import StreamID
from app.engine.listpack import utf8
from app.engine.replies import (
    AutoClaim,
    ClaimedEntry,
    CommandReply,
    ConsumerFull,
    ConsumerInfo,
    GroupFull,
    GroupInfo,
    Help,
    Info,
    MissingEntry,
    PendingDelivery,
    PendingRow,
    PendingSummary,
    ScanPage,
    Status,
    StreamFullInfo,
    StreamHeader,
    StreamInfo,
    StreamRead,
)
from app.engine.stream import Entry


def _b64(s: str) -> str:
    return base64.b64encode(utf8(s)).decode()


def info_text(info: Info) -> str:
    """INFO's bulk string as redis-server writes it (``genRedisInfoString``): each section a
    ``# Title`` line and ``field:value`` lines, CRLF-terminated, a blank line between."""
    parts = []
    for section in info.sections:
        lines = [f"# {section.title}\r\n"]
        lines += [f"{k}:{v}\r\n" for k, v in section.fields]
        parts.append("".join(lines))
    return "\r\n".join(parts)


_ENTRIES = {Entry}


class Shaper:
    """Turns a reply into JSON-ready values; ``b64`` selects Upstash's base64 encoding."""

    __slots__ = ("b64",)

    def __init__(self, b64: bool = False) -> None:
        self.b64 = b64

    def s(self, value: str) -> str:
        return _b64(value) if self.b64 else value

    def id(self, sid: StreamID) -> str:
        text = f"{sid.ms}-{sid.seq}"
        return _b64(text) if self.b64 else text

    def entry(self, e: Entry) -> list[Any]:
        """One entry, as ``encoding.resp_entries`` writes each."""
        if self.b64:
            return [self.id(e.id), [_b64(x) for x in e.fields]]
        return [f"{e.id.ms}-{e.id.seq}", e.fields]

    def map(self, pairs: list[tuple[str, Any]]) -> list[Any]:
        out: list[Any] = []
        for k, v in pairs:
            out.append(self.s(k))
            out.append(v)
        return out

    def __call__(self, r: CommandReply) -> Any:
        """``r`` in Upstash's JSON: every shape of ``CommandReply`` has its branch (mypy
        checks that none is left over, below), so both backends' replies are shaped alike."""
        if r is None or isinstance(r, bool):
            return r
        if isinstance(r, int):
            return r
        if isinstance(r, Status):
            return str(r) if (r == "OK" or not self.b64) else _b64(r)
        if isinstance(r, str):
            return self.s(r)
        if isinstance(r, StreamID):
            return self.id(r)
        if isinstance(r, Entry):
            return self.entry(r)
        if isinstance(r, list):
            return self._list(r)
        if isinstance(r, MissingEntry):
            return [self.id(r.id), None]
        if isinstance(r, ClaimedEntry):
            return [*self.entry(Entry(r.id, r.fields)), r.idle_ms, r.delivery_count]
        if isinstance(r, StreamRead):
            return [self.s(r.key), self._list(r.entries)]
        if isinstance(r, PendingSummary):
            consumers = (
                [[self.s(name), self.s(str(n))] for name, n in r.consumers] if r.count else None
            )
            first = self.id(r.first) if r.first is not None else None
            last = self.id(r.last) if r.last is not None else None
            return [r.count, first, last, consumers]
        if isinstance(r, PendingRow):
            return [self.id(r.id), self.s(r.consumer), r.idle_ms, r.delivery_count]
        if isinstance(r, AutoClaim):
            return [
                self.id(r.next_id),
                [self(x) for x in r.claimed],
                [self.id(x) for x in r.deleted],
            ]
        if isinstance(r, ScanPage):
            return [self.s(str(r.cursor)), [self.s(k) for k in r.keys]]
        if isinstance(r, StreamInfo):
            return self.map(
                [
                    *self._header(r.header),
                    ("groups", r.groups),
                    ("first-entry", self(r.first_entry)),
                    ("last-entry", self(r.last_entry)),
                ]
            )
        if isinstance(r, StreamFullInfo):
            return self.map(
                [
                    *self._header(r.header),
                    ("entries", [self.entry(e) for e in r.entries]),
                    ("groups", [self(g) for g in r.groups]),
                ]
            )
        if isinstance(r, GroupFull):
            return self.map(
                [
                    ("name", self.s(r.name)),
                    ("last-delivered-id", self.id(r.last_delivered_id)),
                    ("entries-read", r.entries_read),
                    ("lag", r.lag),
                    ("pel-count", r.pel_count),
                    ("pending", [self._delivery(p, with_consumer=True) for p in r.pending]),
                    ("consumers", [self(c) for c in r.consumers]),
                    *([("nacked-count", r.nacked_count)] if r.nacked_count else []),
                ]
            )
        if isinstance(r, ConsumerFull):
            return self.map(
                [
                    ("name", self.s(r.name)),
                    ("seen-time", r.seen_time_ms),
                    ("pel-count", r.pel_count),
                    ("pending", [self._delivery(p, with_consumer=False) for p in r.pending]),
                ]
            )
        if isinstance(r, GroupInfo):
            return self.map(
                [
                    ("name", self.s(r.name)),
                    ("consumers", r.consumers),
                    ("pending", r.pending),
                    ("last-delivered-id", self.id(r.last_delivered_id)),
                    ("entries-read", r.entries_read),
                    ("lag", r.lag),
                ]
            )
        if isinstance(r, ConsumerInfo):
            return self.map([("name", self.s(r.name)), ("pending", r.pending), ("idle", r.idle_ms)])
        if isinstance(r, Help):
            return [self(Status(line)) for line in r.lines]
        if isinstance(r, Info):
            return self.s(info_text(r))
        # Only an array that is not a list is left: a new kind of reply fails mypy here.
        left: Sequence[CommandReply] = r
        raise TypeError(f"no wire shape for {type(left).__name__}")

    def _list(self, items: Sequence[CommandReply]) -> list[Any]:
        """An array; a page of entries (XRANGE, XREAD) by the shared encoder, in one pass."""
        if not self.b64 and items and set(map(type, items)) == _ENTRIES:
            return resp_entries(cast("Sequence[Entry]", items))
        return [self(x) for x in items]

    def _header(self, h: StreamHeader) -> list[tuple[str, Any]]:
        """The pairs XINFO STREAM and XINFO STREAM FULL begin with (Redis 8.6's IDMP fields
        last, when the stream has IDMP state, then ``pids-evicted`` once the producers' cap
        evicted one: a stream Redis would answer for differently already)."""
        pairs: list[tuple[str, Any]] = [
            ("length", h.length),
            ("radix-tree-keys", h.radix_tree_keys),
            ("radix-tree-nodes", h.radix_tree_nodes),
            ("last-generated-id", self.id(h.last_generated_id)),
            ("max-deleted-entry-id", self.id(h.max_deleted_entry_id)),
            ("entries-added", h.entries_added),
            ("recorded-first-entry-id", self.id(h.recorded_first_entry_id)),
        ]
        if h.idmp is not None:
            m = h.idmp
            pairs += [
                ("idmp-duration", m.idmp_duration),
                ("idmp-maxsize", m.idmp_maxsize),
                ("pids-tracked", m.pids_tracked),
                ("iids-tracked", m.iids_tracked),
                ("iids-added", m.iids_added),
                ("iids-duplicates", m.iids_duplicates),
            ]
            if m.pids_evicted:  # xstreams's cap, not Redis's: shown once it took a producer
                pairs.append(("pids-evicted", m.pids_evicted))
        return pairs

    def _delivery(self, p: PendingDelivery, with_consumer: bool) -> list[Any]:
        if with_consumer:
            return [self.id(p.id), self.s(p.consumer), p.delivered_at_ms, p.delivery_count]
        return [self.id(p.id), p.delivered_at_ms, p.delivery_count]
