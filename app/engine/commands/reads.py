"""XREAD and XREADGROUP, including BLOCK: one parser and one serving rule for both, as in
Redis's ``xreadCommand``; a read that finds nothing and may block returns a ``Block``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter

from app.engine.blocking import Block, Retry
from app.engine.commands.args import block_ms_arg, int_arg, timeout_arg
from app.engine.commands.policy import due_count, next_due_ms, redeliver
from app.engine.commands.read_claims import (
    CLAIM_INVALID,
    as_claimed,
    claim_arg,
    claim_idle,
    claiming,
    entry_exists,
)
from app.engine.commands.table import Access, Flag, command, streams_keys
from app.engine.consumer_groups import ConsumerGroup
from app.engine.effects import Delivered, consumer_seen, group_updated, pending_set
from app.engine.errors import CommandError, NoGroup, SyntaxError_, Unblocked, WrongArgument
from app.engine.ids import MAX_ID, MIN_ID, StreamID, parse_strict_id
from app.engine.keyspace import Keyspace
from app.engine.pel import key_of
from app.engine.replies import ClaimedEntry, MissingEntry, StreamRead
from app.engine.stream import Entry, Stream

XREAD_BLOCKED_DEFAULT_COUNT = 1000
NEW = MAX_ID  # XREADGROUP's ">" is carried as the maximum ID, as Redis does


@dataclass(frozen=True, slots=True)
class ReadArgs:
    keys: list[str]
    ids: list[StreamID]  # `$` already resolved; `>` is NEW
    count: int = 0  # 0: no limit
    block_ms: int | None = None  # None: don't block; 0: forever
    group: str | None = None
    consumer: str | None = None
    noack: bool = False
    claim_ms: int | None = None  # CLAIM min-idle-time (Redis 8.4); None: no claim
    # Positions read with XREAD's ``+`` (the last entry, Redis 7.4): their ID is the one
    # before the last entry, and they answer one entry whatever COUNT says.
    last: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class ReadRequest:
    """XREAD / XREADGROUP as a caller states it, before the keyspace is consulted: IDs as
    text (``$``, ``>``, ``ms-seq``). Surfaces and backends pass this; ``resolve_read`` is the
    one place that turns it into ``ReadArgs`` (Redis's checks, in Redis's order)."""

    keys: list[str]
    ids: list[str]
    count: int = 0  # 0: no limit
    block_ms: int | None = None  # None: don't block; 0: forever
    group: str | None = None
    consumer: str | None = None
    noack: bool = False
    claim_ms: int | None = None  # CLAIM min-idle-time (Redis 8.4); None: no claim

    def __post_init__(self) -> None:
        if len(self.keys) != len(self.ids):
            raise _unbalanced()

    @property
    def command(self) -> str:
        return "XREAD" if self.group is None else "XREADGROUP"


def any_may_block(commands: Sequence[Sequence[str]]) -> bool:
    """Whether any line ``may_block``; a pipeline without an XREAD or XREADGROUP line (the
    command names gathered in one C pass) is not looked at line by line."""
    try:
        names = set(map(_FIRST, commands))
    except IndexError:  # an empty line
        return any(map(may_block, commands))
    if not any(name.lower() in _READS for name in names):
        return False
    return any(map(may_block, commands))


_FIRST = itemgetter(0)
_READS = frozenset({"xread", "xreadgroup"})


def may_block(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is an XREAD or XREADGROUP with BLOCK among its options (before
    STREAMS: after it come keys and IDs, which may be called anything)."""
    if not argv or argv[0].lower() not in ("xread", "xreadgroup"):
        return False
    i = 1
    while i < len(argv):
        low = argv[i].lower()
        if low in ("streams", "block"):
            return low == "block"
        i += 3 if low == "group" else 2 if low in ("count", "claim") else 1
    return False


def _unbalanced() -> CommandError:
    return WrongArgument.err(
        "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
    )


def parse_read(ks: Keyspace, argv: list[str]) -> ReadArgs:
    return resolve_read(ks, parse_read_request(ks, argv))


def parse_read_request(ks: Keyspace, argv: list[str]) -> ReadRequest:
    """The options of XREAD / XREADGROUP, checked as ``xreadCommand`` checks them."""
    xreadgroup = len(argv[0]) == 10
    block: int | None = None
    count = 0
    streams_arg = 0
    nstreams = 0
    group = consumer = None
    noack = False
    claim: int | None = None
    i = 1
    n = len(argv)
    while i < n:
        moreargs = n - i - 1
        o = argv[i].lower()
        if o == "block" and moreargs:
            i += 1
            block = timeout_arg(argv[i], ks.clock.now_ms())
        elif o == "count" and moreargs:
            i += 1
            count = max(int_arg(argv[i]), 0)
        elif o == "streams" and moreargs:
            streams_arg = i + 1
            nstreams = n - streams_arg
            if nstreams % 2:
                raise _unbalanced()
            nstreams //= 2
            break
        elif o == "group" and moreargs >= 2:
            if not xreadgroup:
                raise WrongArgument.err(
                    "The GROUP option is only supported by XREADGROUP. You called XREAD instead."
                )
            group, consumer = argv[i + 1], argv[i + 2]
            i += 2
        elif o == "noack":
            if not xreadgroup:
                raise WrongArgument.err(
                    "The NOACK option is only supported by XREADGROUP. You called XREAD instead."
                )
            noack = True
        elif o == "claim" and moreargs:
            if not xreadgroup:
                raise WrongArgument.err(
                    "The CLAIM option is only supported by XREADGROUP. You called XREAD instead."
                )
            i += 1
            claim = claim_arg(int_arg(argv[i], CLAIM_INVALID))
        else:
            raise SyntaxError_()
        i += 1
    if streams_arg == 0:
        raise SyntaxError_()
    if xreadgroup and group is None:
        raise WrongArgument.err("Missing GROUP option for XREADGROUP")
    keys = argv[streams_arg : streams_arg + nstreams]
    texts = argv[streams_arg + nstreams :]
    return ReadRequest(keys, texts, count, block, group, consumer, noack, claim)


def resolve_read(ks: Keyspace, r: ReadRequest) -> ReadArgs:
    """The IDs against the keyspace: ``$`` is the stream's last ID now, ``>`` is NEW; the
    group must exist on every key."""
    xreadgroup = r.group is not None
    if r.block_ms is not None:  # checked by the parser already when it came as text
        block_ms_arg(r.block_ms, ks.clock.now_ms())
    ks.limits.check_read_keys(r.command, len(r.keys))
    ids: list[StreamID] = []
    last: set[int] = set()
    for i, (key, text) in enumerate(zip(r.keys, r.ids, strict=True)):
        stream = ks.get(key)
        if xreadgroup and (stream is None or r.group not in stream.groups):
            raise NoGroup(
                f"NOGROUP No such key '{key}' or consumer group '{r.group}' in XREADGROUP "
                "with GROUP option"
            )
        if text == "$":
            if xreadgroup:
                raise WrongArgument.err(
                    "The $ ID is meaningless in the context of XREADGROUP: you want to read the "
                    "history of this consumer by specifying a proper ID, or use the > ID to get "
                    "new messages. The $ ID would just return an empty result set."
                )
            ids.append(stream.last_id if stream is not None else MIN_ID)
        elif text == ">":
            if not xreadgroup:
                raise WrongArgument.err(
                    "The > ID can be specified only when calling XREADGROUP using the GROUP "
                    "<group> <consumer> option."
                )
            ids.append(NEW)
        elif text == "+" and ks.config.xread_last_entry:
            if xreadgroup:
                raise WrongArgument.err(
                    "The + ID is meaningless in the context of XREADGROUP: you want to read the "
                    "history of this consumer by specifying a proper ID, or use the > ID to get "
                    "new messages. The + ID would just return an empty result set."
                )
            ids.append(_before_last(stream))
            last.add(i)
        else:
            ids.append(parse_strict_id(text))
    claim = r.claim_ms
    if claim is not None:
        claim_arg(claim)
    return ReadArgs(
        r.keys, ids, r.count, r.block_ms, r.group, r.consumer, r.noack, claim, frozenset(last)
    )


def _before_last(stream: Stream | None) -> StreamID:
    """XREAD's ``+`` as redis-server 7.4 and later resolve it: the ID before the last live
    entry, so the entry is served; the last ID of a stream without entries; 0-0 for a
    missing key (both then wait, when blocking, for the next entry)."""
    if stream is None:
        return MIN_ID
    if stream.length:
        before = stream.last_valid_id().decr()
        assert before is not None  # an entry's ID is never 0-0
        return before
    return stream.last_id


def xread(ks: Keyspace, a: ReadArgs, *, may_block: bool = True) -> list[StreamRead] | Block | None:
    """Serve what can be served now (XREAD / XREADGROUP); else a ``Block`` or nil."""
    now = ks.clock.now_ms()
    cap = ks.limits.reply_cap(a.count, len(a.keys))
    if cap is not None and _reply_size(ks, a, cap) >= cap:
        raise ks.limits.too_large("xreadgroup" if a.group is not None else "xread")
    if a.group is not None:
        assert a.consumer is not None
        for key in a.keys:  # a new consumer in a full group: refused before any delivery
            stream = ks.get(key)
            found = stream.groups.get(a.group) if stream is not None else None
            if found is not None:
                ks.limits.check_new_consumer(a.group, found.consumers, a.consumer)
    out: list[StreamRead] = []
    claims = claiming(gt == NEW for gt in a.ids)
    for i, (key, gt, claim) in enumerate(zip(a.keys, a.ids, claims, strict=True)):
        claim_ms = a.claim_ms if claim else None
        stream = ks.get(key)
        if stream is None:
            continue
        if a.group is not None:
            group = stream.groups[a.group]
            assert a.consumer is not None
            if gt != NEW:
                consumer = group.consumer(a.consumer, now)
                ks.record(consumer_seen(key, group, consumer))
                history = group.read_history(stream, consumer, gt, a.count, now)
                for sid, fields in history:
                    if fields is not None:
                        ks.record(pending_set(key, group, sid, group.pel.entry(key_of(sid))))
                out.append(
                    StreamRead(
                        key,
                        [Entry(i, f) if f is not None else MissingEntry(i) for i, f in history],
                    )
                )
                continue
            claimed: list[Entry | MissingEntry | ClaimedEntry] = []
            if claim_ms is not None:
                claimed.extend(claim_idle(ks, key, group, a.consumer, claim_ms, a.count))
            elif group.policy is not None and a.claim_ms is None:
                claimed.extend(redeliver(ks, key, group, a.consumer, a.count))
            left = a.count - len(claimed) if a.count else 0
            if (a.count and not left) or (
                not stream.length or stream.last_valid_id() <= group.last_id
            ):
                if claimed:
                    out.append(StreamRead(key, claimed))
                continue
            fresh = deliver_new(ks, key, group, a.consumer, left, a.noack)
            claimed.extend(fresh if claim_ms is None else as_claimed(fresh))
            out.append(StreamRead(key, claimed))
        else:
            if not stream.length or stream.last_valid_id() <= gt:
                continue
            start = gt.incr()
            assert start is not None
            count = 1 if i in a.last else a.count
            out.append(StreamRead(key, list(stream.range(start, MAX_ID, count))))
    if out:
        return out
    if a.block_ms is not None and may_block:
        return _blocked(ks, a, a.block_ms)
    return None


def _claim_wake(ks: Keyspace, a: ReadArgs) -> int | None:
    """When a blocked CLAIM read (or a read of a group with a delivery policy) should look
    again although nothing was written: the earliest time a pending entry of one of its
    groups turns idle enough (due again, under a policy)."""
    if a.group is None:
        return None
    times = []
    for key in a.keys:
        stream = ks.get(key)
        group = stream.groups.get(a.group) if stream is not None else None
        if stream is None or group is None:
            continue
        if a.claim_ms is not None:
            at = group.next_claimable_ms(a.claim_ms, entry_exists(stream))
        elif group.policy is not None:
            at = next_due_ms(ks, key, group)
        else:
            continue
        if at is not None:
            times.append(at)
    return min(times, default=None)


def _timed(ks: Keyspace, a: ReadArgs) -> bool:
    """Whether a blocked read is also woken by time: CLAIM, or a group with a policy."""
    if a.group is None:
        return False
    if a.claim_ms is not None:
        return True
    for key in a.keys:
        stream = ks.get(key)
        group = stream.groups.get(a.group) if stream is not None else None
        if group is not None and group.policy is not None:
            return True
    return False


def _reply_size(ks: Keyspace, a: ReadArgs, cap: int) -> int:
    """How many entries ``xread`` would answer now, counting no further than ``cap``: a
    read past ``max_reply_entries`` is refused before it records any delivery."""
    total = 0
    for i, (key, gt) in enumerate(zip(a.keys, a.ids, strict=True)):
        stream = ks.get(key)
        if stream is None or total >= cap:
            continue
        left = min(cap - total, 1 if i in a.last else a.count or cap)
        if a.group is not None:
            group = stream.groups[a.group]
            if gt != NEW:
                consumer = group.consumers.get(a.consumer or "")
                start = gt.incr()
                if consumer is not None and start is not None:
                    for _ in group.consumer_pending(consumer, start):
                        total += 1
                        left -= 1
                        if not left:
                            break
                continue
            claimed = 0
            if a.claim_ms is not None:
                now = ks.clock.now_ms()
                claimed = len(group.claimable(a.claim_ms, now, left, entry_exists(stream)))
            elif group.policy is not None:
                claimed = due_count(ks, key, group, left)
            total += claimed
            left -= claimed
            if not left:
                continue
            gt = group.last_id
        start = gt.incr()
        if start is not None:
            total += len(stream.range(start, MAX_ID, left))
    return total


def deliver_new(
    ks: Keyspace, key: str, group: ConsumerGroup, consumer_name: str, count: int, noack: bool
) -> list[Entry]:
    """XREADGROUP ``>`` for one stream: deliver, record as pending, journal the effects."""
    stream = ks.streams[key]
    now = ks.clock.now_ms()
    # A blocked read woken after its group filled up: refused as a new read would be.
    ks.limits.check_new_consumer(group.name, group.consumers, consumer_name)
    consumer = group.consumer(consumer_name, now)
    ks.record(consumer_seen(key, group, consumer))
    entries = group.read_new(stream, consumer, count, noack, now)
    if entries:
        ks.record(group_updated(key, group))
        if not noack:
            ids = tuple(e.id for e in entries)
            ks.record(
                Delivered(
                    key=key, group=group.name, consumer=consumer_name, delivered_at_ms=now, ids=ids
                )
            )
    return list(entries)


def _blocked(ks: Keyspace, a: ReadArgs, timeout_ms: int) -> Block:
    """The wait of a read that found nothing: served by ``retry`` when one of its keys is
    signalled (``serveClientsBlockedOnKey``), and with CLAIM also woken by time."""
    block = Block(list(a.keys), timeout_ms, _retry(ks, a), _claim_wake(ks, a))
    if _timed(ks, a):
        serve = block.retry

        def retry(key: str) -> list[StreamRead] | None:
            served = serve(key)
            if served is None:
                wake_at = _claim_wake(ks, a)  # the next entry to turn idle enough
                if wake_at != block.wake_at_ms:
                    block.wake_at_ms = wake_at
                    if block.rearm is not None:
                        block.rearm()
            return served

        block.retry = retry
    return block


def _retry(ks: Keyspace, a: ReadArgs) -> Retry:
    """What a blocked read does when one of its keys is signalled."""
    count = a.count or XREAD_BLOCKED_DEFAULT_COUNT
    positions = dict(zip(a.keys, a.ids, strict=True))
    last = {key: i in a.last for i, key in enumerate(a.keys)}

    def retry(key: str) -> list[StreamRead] | None:
        stream = ks.get(key)
        if a.group is None:
            if stream is None:
                return None
            if last[key]:  # ``+``: the last entry now, as Redis runs the read again
                if not stream.length:
                    return None
                tail = stream.last_valid_id()
                return [StreamRead(key, list(stream.range(tail, MAX_ID, 1)))]
            gt = positions[key]
            if stream.last_id <= gt:
                return None
            start = gt.incr()
            assert start is not None
            return [StreamRead(key, list(stream.range(start, MAX_ID, count)))]
        if stream is None:
            raise Unblocked("UNBLOCKED the stream key no longer exists")
        group: ConsumerGroup | None = stream.groups.get(a.group)
        if group is None:
            raise NoGroup("NOGROUP the consumer group this client was blocked on no longer exists")
        assert a.consumer is not None
        claimed: list[Entry | MissingEntry | ClaimedEntry] = []
        if a.claim_ms is not None:
            claimed.extend(claim_idle(ks, key, group, a.consumer, a.claim_ms, count))
        elif group.policy is not None:
            claimed.extend(redeliver(ks, key, group, a.consumer, count))
        left = count - len(claimed)
        if left and stream.last_id > group.last_id:
            fresh = deliver_new(ks, key, group, a.consumer, left, a.noack)
            claimed.extend(fresh if a.claim_ms is None else as_claimed(fresh))
        return [StreamRead(key, claimed)] if claimed else None

    return retry


@command("xread", -4, Flag.READONLY, Flag.MAY_BLOCK, keys=streams_keys)
def _xread(ks: Keyspace, argv: list[str]) -> list[StreamRead] | Block | None:
    return xread(ks, parse_read(ks, argv))


@command("xreadgroup", -7, Flag.WRITE, Flag.MAY_BLOCK, keys=streams_keys, access=Access.CONSUME)
def _xreadgroup(ks: Keyspace, argv: list[str]) -> list[StreamRead] | Block | None:
    return xread(ks, parse_read(ks, argv))
