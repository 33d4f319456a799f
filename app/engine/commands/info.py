"""XINFO STREAM [FULL [COUNT n]], XINFO GROUPS, XINFO CONSUMERS, XINFO HELP."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from itertools import islice

from app.engine.commands.args import int_arg
from app.engine.commands.table import Flag, command, container, key_at, subcommand_syntax_error
from app.engine.consumer_groups import ConsumerGroup, PendingEntry, by_name
from app.engine.errors import NoGroup, NoSuchKey
from app.engine.ids import StreamID
from app.engine.int64 import elapsed_ms, i64
from app.engine.keyspace import Keyspace
from app.engine.listpack import utf8
from app.engine.pel import key_of
from app.engine.replies import (
    ConsumerFull,
    ConsumerInfo,
    GroupFull,
    GroupInfo,
    Help,
    PendingDelivery,
    StreamFullInfo,
    StreamHeader,
    StreamInfo,
)
from app.engine.stream import Entry, Stream

R = Flag.READONLY

container("xinfo")

XINFO_HELP = [
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
]


def _stream(ks: Keyspace, key: str) -> Stream:
    stream = ks.get(key)
    if stream is None:
        raise NoSuchKey()
    return stream


def _header(s: Stream, now_ms: int) -> StreamHeader:
    # Redis reports its radix tree's key and node counts; ours is a list of nodes.
    keys = len(s.nodes)
    return StreamHeader(
        length=s.length,
        radix_tree_keys=keys,
        radix_tree_nodes=keys + 1,
        last_generated_id=s.last_id,
        max_deleted_entry_id=s.max_deleted_id,
        entries_added=i64(s.entries_added),
        recorded_first_entry_id=s.first_id,
        idmp=None if s.idmp is None else s.idmp.info(now_ms),
    )


def _entry(s: Stream, sid: StreamID) -> Entry | None:
    fields = s.get(sid) if s.length else None
    return None if fields is None else Entry(sid, fields)


def stream_info(ks: Keyspace, key: str) -> StreamInfo:
    s = _stream(ks, key)
    # The two end entries by lookup, not by a range read: a range decodes a whole node, and
    # live SSE tails ask for XINFO STREAM once per batch (their count of entries_added).
    first = _entry(s, s.first_id)
    last = _entry(s, s.last_valid_id())
    return StreamInfo(
        header=_header(s, ks.clock.now_ms()),
        groups=len(s.groups),
        first_entry=first,
        last_entry=last,
    )


def _deliveries(items: Iterable[tuple[StreamID, PendingEntry]]) -> list[PendingDelivery]:
    out = []
    for sid, p in items:
        # A released entry (XNACK) has no owner: Redis shows "" and delivery time 0.
        owner = "" if p.consumer is None else p.consumer
        out.append(PendingDelivery(sid, owner, p.delivered_at_ms, i64(p.delivery_count)))
    return out


def stream_full_info(ks: Keyspace, key: str, count: int = 10) -> StreamFullInfo:
    """XINFO STREAM FULL: ``count`` bounds entries and each PEL listed (0: everything).

    As in Redis, ``count`` does not bound the groups and consumers listed: their rows
    together are held to ``max_reply_entries`` (refused past it) instead."""
    s = _stream(ks, key)
    rows = len(s.groups) + sum(len(g.consumers) for g in s.groups.values())
    ks.limits.check_listing("xinfo stream full", rows)
    groups = []
    for name in by_name(s.groups):
        g = s.groups[name]
        consumers = []
        for cname in by_name(g.consumers):
            c = g.consumers[cname]
            consumers.append(
                ConsumerFull(
                    c.name,
                    c.seen_time_ms,
                    len(c.pel),
                    _deliveries(
                        (sid, g.pel.entry(key_of(sid)))
                        for sid in islice(g.consumer_pending(c), count or None)
                    ),
                )
            )
        groups.append(
            GroupFull(
                name=g.name,
                last_delivered_id=g.last_id,
                entries_read=g.entries_read,
                lag=g.lag(s),
                pel_count=len(g.pel),
                pending=_deliveries(g.pel.items(count)),
                consumers=consumers,
                nacked_count=len(g.released),
            )
        )
    return StreamFullInfo(
        header=_header(s, ks.clock.now_ms()),
        entries=s.range(count=count),
        groups=groups,
    )


def group_info(stream: Stream, g: ConsumerGroup) -> GroupInfo:
    return GroupInfo(g.name, len(g.consumers), len(g.pel), g.last_id, g.entries_read, g.lag(stream))


def page(names: Iterable[str], start: str, count: int) -> list[str]:
    """The first ``count`` names from ``start`` on (inclusive), in ``by_name``'s order: one
    pass, no sort of the whole set, so a page costs about the set's size, not its sort."""
    first = utf8(start)
    return heapq.nsmallest(count, (n for n in names if utf8(n) >= first), key=utf8)


def groups_info(ks: Keyspace, key: str, start: str = "", count: int = 0) -> list[GroupInfo]:
    """XINFO GROUPS (``count`` 0: every group, refused past ``max_reply_entries``), or one
    page of it by name: at most ``count`` groups from ``start`` on (REST's pages)."""
    s = _stream(ks, key)
    if not count:
        ks.limits.check_listing("xinfo groups", len(s.groups))
        names = by_name(s.groups)
    else:
        names = page(s.groups, start, count)
    return [group_info(s, s.groups[name]) for name in names]


def consumers_info(
    ks: Keyspace, key: str, group_name: str, start: str = "", count: int = 0
) -> list[ConsumerInfo]:
    """XINFO CONSUMERS, whole or one page by name, as ``groups_info``."""
    s = _stream(ks, key)
    g = s.groups.get(group_name)
    if g is None:
        raise NoGroup(f"NOGROUP No such consumer group '{group_name}' for key name '{key}'")
    if not count:
        ks.limits.check_listing("xinfo consumers", len(g.consumers))
        names = by_name(g.consumers)
    else:
        names = page(g.consumers, start, count)
    now = ks.clock.now_ms()
    out = []
    for name in names:
        c = g.consumers[name]
        out.append(ConsumerInfo(c.name, len(c.pel), max(elapsed_ms(now, c.seen_time_ms), 0)))
    return out


def full_count(argv: list[str]) -> int | None:
    """XINFO STREAM's entries per list: None without FULL, else its COUNT (10 when none is
    given or a negative one is)."""
    rest = argv[3:]
    if not rest:
        return None
    if rest[0].lower() != "full" or len(rest) not in (1, 3):
        raise subcommand_syntax_error(argv)
    count = 10
    if len(rest) > 1:
        if rest[1].lower() != "count":
            raise subcommand_syntax_error(argv)
        count = int_arg(rest[2])
        if count < 0:
            count = 10
    return count


@command("xinfo|stream", -3, R, keys=key_at(2))
def _xinfo_stream(ks: Keyspace, argv: list[str]) -> StreamInfo | StreamFullInfo:
    _stream(ks, argv[2])
    count = full_count(argv)
    if count is None:
        return stream_info(ks, argv[2])
    limit = ks.limits.reply_entries
    if ks.limits.past(count):
        s = _stream(ks, argv[2])
        if s.length > limit or any(len(g.pel) > limit for g in s.groups.values()):
            raise ks.limits.too_large("xinfo stream full")
    return stream_full_info(ks, argv[2], count)


@command("xinfo|groups", 3, R, keys=key_at(2))
def _xinfo_groups(ks: Keyspace, argv: list[str]) -> list[GroupInfo]:
    return groups_info(ks, argv[2])


@command("xinfo|consumers", 4, R, keys=key_at(2))
def _xinfo_consumers(ks: Keyspace, argv: list[str]) -> list[ConsumerInfo]:
    return consumers_info(ks, argv[2], argv[3])


@command("xinfo|help", 2, R)
def _xinfo_help(ks: Keyspace, argv: list[str]) -> Help:
    return Help(XINFO_HELP)
