"""XGROUP, XACK, XPENDING: consumer-group commands (claims are in ``claims``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from app.engine.commands.args import eq, int_arg
from app.engine.commands.table import (
    Access,
    Flag,
    command,
    container,
    key_at,
    subcommand_syntax_error,
)
from app.engine.consumer_groups import ConsumerGroup, by_name
from app.engine.effects import (
    Acked,
    ConsumerDeleted,
    GroupCreated,
    GroupDestroyed,
    consumer_seen,
    group_updated,
)
from app.engine.errors import (
    BusyGroup,
    NoGroup,
    NotFound,
    SyntaxError_,
    WrongArgument,
)
from app.engine.ids import (
    MIN_ID,
    StreamID,
    parse_id,
    parse_range_end,
    parse_range_start,
    parse_strict_id,
)
from app.engine.int64 import elapsed_ms, i64
from app.engine.keyspace import Keyspace
from app.engine.pel import key_of, sid_of
from app.engine.replies import OK, Help, PendingRow, PendingSummary, Status
from app.engine.stream import Stream

W, R = Flag.WRITE, Flag.READONLY

container("xgroup")

XGROUP_HELP = [
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
]


def no_such_group(key: str, group: str) -> NoGroup:
    return NoGroup(f"NOGROUP No such key '{key}' or consumer group '{group}'")


XGROUP_NEEDS_KEY = (
    "The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use "
    "the MKSTREAM option to create an empty stream automatically."
)


def _xgroup_target(
    ks: Keyspace, argv: list[str], *, create: bool = False
) -> tuple[Stream | None, ConsumerGroup | None, bool, int | None]:
    """The checks common to XGROUP subcommands, in ``xgroupCommand``'s order."""
    mkstream = False
    entries_read: int | None = None
    sub = argv[1].lower()
    if sub in ("create", "setid"):
        i = 5
        while i < len(argv):
            if create and eq(argv[i], "mkstream"):
                mkstream = True
                i += 1
            elif eq(argv[i], "entriesread") and i + 1 < len(argv):
                entries_read = int_arg(argv[i + 1])
                if entries_read < 0 and entries_read != -1:
                    raise WrongArgument.err("value for ENTRIESREAD must be positive or -1")
                if entries_read == -1:
                    entries_read = None
                i += 2
            else:
                raise subcommand_syntax_error(argv)
    stream, group = xgroup_target(ks, sub, argv[2], argv[3], mkstream)
    return stream, group, mkstream, entries_read


def xgroup_target(
    ks: Keyspace, sub: str, key: str, name: str, mkstream: bool = False
) -> tuple[Stream | None, ConsumerGroup | None]:
    """The key (and, but for CREATE and DESTROY, the group) an XGROUP subcommand needs, with
    Redis's errors: the typed operations check through here too, so a caller that never
    parsed argv (REST, a backend) gets what redis-server answers."""
    stream = ks.get(key)
    group = stream.groups.get(name) if stream is not None else None
    if not mkstream:
        if stream is None:
            raise NotFound.err(XGROUP_NEEDS_KEY)
        if group is None and sub in ("setid", "createconsumer", "delconsumer"):
            raise NoGroup(f"NOGROUP No such consumer group '{name}' for key name '{key}'")
    return stream, group


def xgroup_create(
    ks: Keyspace, key: str, name: str, id_text: str, mkstream: bool, entries_read: int | None
) -> Status:
    stream, _ = xgroup_target(ks, "create", key, name, mkstream)
    if id_text == "$":
        sid = stream.last_id if stream is not None else MIN_ID
    else:
        sid = parse_strict_id(id_text)
    if stream is not None:
        if name in stream.groups:
            raise BusyGroup()
        ks.limits.check_new_group(key, len(stream.groups))
    else:
        stream = ks.create(key)
    stream.groups[name] = ConsumerGroup(name, sid, entries_read)
    ks.record(GroupCreated(key=key, group=name, last_id=sid, entries_read=entries_read))
    return OK


@command("xgroup|create", -5, W, keys=key_at(2))
def _create(ks: Keyspace, argv: list[str]) -> Status:
    _, _, mkstream, entries_read = _xgroup_target(ks, argv, create=True)
    if len(argv) > 8:
        raise subcommand_syntax_error(argv)
    return xgroup_create(ks, argv[2], argv[3], argv[4], mkstream, entries_read)


def xgroup_setid(
    ks: Keyspace, key: str, name: str, id_text: str, entries_read: int | None
) -> Status:
    """Move a group's last-delivered ID (XGROUP SETID); ``$`` is the stream's last ID."""
    xgroup_target(ks, "setid", key, name)
    stream, group = _group_or_nogroup(ks, key, name)
    group.last_id = stream.last_id if id_text == "$" else parse_id(id_text)[0]
    group.entries_read = entries_read
    ks.record(group_updated(key, group))
    return OK


@command("xgroup|setid", -5, W, keys=key_at(2))
def _setid(ks: Keyspace, argv: list[str]) -> Status:
    _, _, _, entries_read = _xgroup_target(ks, argv)
    if len(argv) not in (5, 7):
        raise subcommand_syntax_error(argv)
    return xgroup_setid(ks, argv[2], argv[3], argv[4], entries_read)


def xgroup_destroy(ks: Keyspace, key: str, name: str) -> int:
    stream, _ = xgroup_target(ks, "destroy", key, name)
    if stream is None or stream.groups.pop(name, None) is None:
        return 0
    ks.record(GroupDestroyed(key=key, group=name))
    ks.blocked.signal(key)  # blocked XREADGROUP consumers get NOGROUP
    return 1


@command("xgroup|destroy", 4, W, keys=key_at(2))
def _destroy(ks: Keyspace, argv: list[str]) -> int:
    _xgroup_target(ks, argv)
    return xgroup_destroy(ks, argv[2], argv[3])


def xgroup_createconsumer(ks: Keyspace, key: str, name: str, consumer: str) -> int:
    """Create a consumer (XGROUP CREATECONSUMER): 1 if created, 0 if it existed."""
    xgroup_target(ks, "createconsumer", key, name)
    _, group = _group_or_nogroup(ks, key, name)
    if consumer in group.consumers:
        return 0
    ks.limits.check_new_consumer(name, group.consumers, consumer)
    c = group.consumer(consumer, ks.clock.now_ms())
    ks.record(consumer_seen(key, group, c))
    return 1


@command("xgroup|createconsumer", 5, W, keys=key_at(2))
def _createconsumer(ks: Keyspace, argv: list[str]) -> int:
    _xgroup_target(ks, argv)
    return xgroup_createconsumer(ks, argv[2], argv[3], argv[4])


def xgroup_delconsumer(ks: Keyspace, key: str, name: str, consumer: str) -> int:
    """Delete a consumer and its pending entries (XGROUP DELCONSUMER); returns how many
    pending entries it had."""
    xgroup_target(ks, "delconsumer", key, name)
    _, group = _group_or_nogroup(ks, key, name)
    pending = group.remove_consumer(consumer)
    if pending is None:
        return 0
    ks.record(ConsumerDeleted(key=key, group=name, consumer=consumer))
    return pending


@command("xgroup|delconsumer", 5, W, keys=key_at(2))
def _delconsumer(ks: Keyspace, argv: list[str]) -> int:
    _xgroup_target(ks, argv)
    return xgroup_delconsumer(ks, argv[2], argv[3], argv[4])


@command("xgroup|help", 2, R)
def _xgroup_help(ks: Keyspace, argv: list[str]) -> Help:
    return Help(XGROUP_HELP)


def _group_or_nogroup(ks: Keyspace, key: str, name: str) -> tuple[Stream, ConsumerGroup]:
    """XGROUP's lookup: a missing key or group is a NOGROUP error naming both."""
    stream = ks.get(key)
    group = stream.groups.get(name) if stream is not None else None
    if stream is None or group is None:
        raise NoGroup(f"NOGROUP No such consumer group '{name}' for key name '{key}'")
    return stream, group


def find_group(ks: Keyspace, key: str, name: str) -> tuple[Stream, ConsumerGroup]:
    """The stream and its group, or NOGROUP naming both (XPENDING, XCLAIM ...; REST, SSE)."""
    stream = ks.get(key)
    group = stream.groups.get(name) if stream is not None else None
    if stream is None or group is None:
        raise no_such_group(key, name)
    return stream, group


def xack(ks: Keyspace, key: str, group_name: str, ids: list[StreamID]) -> int:
    stream = ks.get(key)
    group = stream.groups.get(group_name) if stream is not None else None
    if group is None:
        return 0
    acked = group.ack_many(ids)
    if acked:
        ks.record(Acked(key=key, group=group_name, ids=tuple(acked)))
        # Wakes readers waiting for a consumer's pending count to drop (SSE max_unacked);
        # Redis's own blocked readers only look at new entries, so they keep waiting.
        ks.blocked.signal(key)
    return len(acked)


@command("xack", -4, W, keys=key_at(1), access=Access.CONSUME)
def _xack(ks: Keyspace, argv: list[str]) -> int:
    stream = ks.get(argv[1])
    if stream is None or argv[2] not in stream.groups:
        return 0
    return xack(ks, argv[1], argv[2], [parse_strict_id(a) for a in argv[3:]])


@dataclass(frozen=True, slots=True)
class PendingArgs:
    key: str
    group: str
    start: StreamID
    end: StreamID
    count: int
    consumer: str | None = None
    min_idle_ms: int = 0


def xpending_summary(ks: Keyspace, key: str, group_name: str) -> PendingSummary:
    _, group = find_group(ks, key, group_name)
    if not group.pel:
        return PendingSummary(0, None, None, [])
    owners = (group.consumers[name] for name in by_name(group.consumers))
    consumers = [(c.name, len(c.pel)) for c in owners if c.pel]
    return PendingSummary(len(group.pel), group.pel.first(), group.pel.last(), consumers)


def xpending_range(ks: Keyspace, a: PendingArgs) -> list[PendingRow]:
    _, group = find_group(ks, a.key, a.group)
    ids: Iterator[StreamID]
    if a.consumer is not None:
        consumer = group.consumers.get(a.consumer)
        if consumer is None:
            return []
        ids = group.consumer_pending(consumer, a.start, a.end)
    else:
        ids = map(sid_of, group.pel.keys(a.start, a.end))
    now = ks.clock.now_ms()
    out: list[PendingRow] = []
    count = a.count
    if count <= 0 or a.start > a.end:
        return out
    for sid in ids:
        pending = group.pel.entry(key_of(sid))
        if pending.consumer is None:  # released (XNACK): no owner, idle -1, claimable now
            out.append(PendingRow(sid, "", -1, i64(pending.delivery_count)))
        else:
            idle = elapsed_ms(now, pending.delivered_at_ms)
            if a.min_idle_ms and idle < a.min_idle_ms:
                continue
            out.append(PendingRow(sid, pending.consumer, max(idle, 0), i64(pending.delivery_count)))
        if len(out) >= count:
            break
    return out


def parse_xpending(argv: list[str]) -> PendingArgs | None:
    """XPENDING's extended form (None: the summary form)."""
    n = len(argv)
    if n != 3 and (n < 6 or n > 9):
        raise SyntaxError_()
    if n == 3:
        return None
    startidx = 3
    min_idle = 0
    if eq(argv[3], "idle"):
        min_idle = int_arg(argv[4])
        if n < 8:
            raise SyntaxError_()
        startidx += 2
    count = max(int_arg(argv[startidx + 2]), 0)
    start = parse_range_start(argv[startidx])
    end = parse_range_end(argv[startidx + 1])
    consumer = argv[startidx + 3] if startidx + 3 < n else None
    return PendingArgs(argv[1], argv[2], start, end, count, consumer, min_idle)


@command("xpending", -3, R, keys=key_at(1), access=Access.CONSUME)
def _xpending(ks: Keyspace, argv: list[str]) -> PendingSummary | list[PendingRow]:
    a = parse_xpending(argv)
    if a is None:
        return xpending_summary(ks, argv[1], argv[2])
    count = a.count
    cap = ks.limits.reply_cap(count)
    if cap is None or count == 0:  # COUNT 0 (or negative): an empty reply
        return xpending_range(ks, a)
    rows = xpending_range(ks, replace(a, count=cap))  # read-only: look one past the limit
    if len(rows) >= cap:
        raise ks.limits.too_large(argv[0])
    return rows
