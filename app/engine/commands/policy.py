"""Delivery policies, redrive and retention as engine operations (rules: app/engine/delivery.py).

Each function is one atomic step, journaled by the effects it records, like a command: a
dead-lettering appends to the dead-letter stream and acknowledges in the group in the same
record, so a crash keeps both or neither. None of these is a Redis command; the surfaces
reach them through the Backend's typed methods.
"""

from __future__ import annotations

from collections.abc import Callable

from app.engine.commands.groups import find_group
from app.engine.commands.streams import XAddArgs, xadd, xdel, xtrim
from app.engine.consumer_groups import ConsumerGroup
from app.engine.delivery import (
    DeadLetter,
    DeadLetterReason,
    DeliveryPolicy,
    DeliveryStats,
    RedriveArgs,
    Redriven,
    Retention,
    dead_letter_fields,
    split_dead_letter,
)
from app.engine.effects import Acked, PolicySet, RetentionSet, consumer_seen, pending_set
from app.engine.errors import NoSuchKey
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.int64 import u64
from app.engine.keyspace import Keyspace
from app.engine.pel import key_of, sid_of
from app.engine.refpolicy import RefPolicy
from app.engine.stream import Entry, Stream, TrimSpec, TrimStrategy

__all__ = [
    "delivery_stats",
    "enforce_retention",
    "next_due_ms",
    "redeliver",
    "redrive",
    "set_policy",
    "set_retention",
    "trim_by_age",
]

_NEVER = 1 << 62  # a min-idle-time no owned entry reaches: no visibility timeout


# -- the policy --------------------------------------------------------------------------------


def set_policy(ks: Keyspace, key: str, group: str, policy: DeliveryPolicy | None) -> bool:
    """Set or remove the group's policy; whether it had one. The counters go with the
    policy: kept while one is set (a change keeps them), cleared when it is removed. A
    policy whose dead letters would come back to ``key`` is refused; replay sets what the
    journal holds without asking again."""
    _, g = find_group(ks, key, group)
    if policy is not None:
        policy.check_for(key)
        policy.check_chain(key, lambda name: _dead_letter_streams(ks, name))
    had = g.policy is not None
    g.policy = policy
    if policy is None:
        g.redelivered = g.dead_lettered = 0
    ks.record(PolicySet(key=key, group=group, policy=policy))
    if policy is not None:
        ks.blocked.signal(key)  # a blocked read may have entries due at once now
    return had


def _dead_letter_streams(ks: Keyspace, key: str) -> list[str]:
    """The dead-letter streams the policies of ``key``'s groups name: the next links of a
    dead-letter chain (``DeliveryPolicy.check_chain``)."""
    stream = ks.get(key)
    if stream is None:
        return []
    out = []
    for g in stream.groups.values():
        if g.policy is not None and g.policy.dead_letter_stream is not None:
            out.append(g.policy.dead_letter_stream)
    return out


def _due(
    stream: Stream, g: ConsumerGroup, policy: DeliveryPolicy, now: int
) -> Callable[[int], bool]:
    """Whether a pending entry (packed ID) is due again: released and past its back-off,
    or owned and idle past the visibility timeout and its back-off. An entry the policy
    dead-letters waits for no back-off (no delivery follows); an entry gone from the stream
    is never due (it stays pending, as a claim leaves it)."""
    vt = policy.visibility_timeout_ms or 0
    entries = g.pel

    def due(pkey: int) -> bool:
        pending = entries.entry(pkey)
        count = pending.delivery_count
        wait = 0 if policy.exhausted(count) else policy.backoff(count)
        if pending.consumer is not None:
            wait = max(wait, vt)
        return now - pending.delivered_at_ms >= wait and stream.exists(sid_of(pkey))

    return due


def redeliver(
    ks: Keyspace, key: str, g: ConsumerGroup, consumer_name: str, count: int
) -> list[Entry]:
    """The policy's part of an XREADGROUP ``>`` read, before new entries: the group's due
    entries, released ones first (oldest release first), then owned ones longest idle
    first, each claimed for ``consumer_name`` or, when the policy says so, dead-lettered;
    at most ``count`` claimed (0: every due entry)."""
    policy = g.policy
    assert policy is not None
    stream = ks.streams[key]
    now = ks.clock.now_ms()
    min_idle = policy.visibility_timeout_ms or _NEVER
    out: list[Entry] = []
    consumer = None
    while True:
        want = count - len(out) if count else 0
        keys = g.claimable(min_idle, now, want, _due(stream, g, policy, now))
        moved = 0
        for pkey in keys:
            sid = sid_of(pkey)
            pending = g.pel.entry(pkey)
            fields = stream.get(sid)
            assert fields is not None
            reason = policy.exhausted(pending.delivery_count)
            if reason is not None:
                _dead_letter(ks, key, g, policy, sid, fields, reason)
                moved += 1
                continue
            if consumer is None:
                ks.limits.check_new_consumer(g.name, g.consumers, consumer_name)
                consumer = g.consumer(consumer_name, now)
                ks.record(consumer_seen(key, g, consumer))
            pending = g.set_pending(sid, consumer, now, u64(pending.delivery_count + 1))
            ks.record(pending_set(key, g, sid, pending))
            g.redelivered += 1
            out.append(Entry(sid, fields))
        if not count or not moved or not keys:
            return out


def _dead_letter(
    ks: Keyspace,
    key: str,
    g: ConsumerGroup,
    policy: DeliveryPolicy,
    sid: StreamID,
    fields: tuple[str, ...],
    reason: DeadLetterReason,
) -> None:
    """Append the entry to the dead-letter stream and acknowledge it, in this step."""
    assert policy.dead_letter_stream is not None
    pending = g.pel.entry(key_of(sid))
    holder = pending.consumer if pending.consumer is not None else g.released.get(key_of(sid))
    origin = DeadLetter(key, sid, g.name, holder or "", pending.delivery_count, reason.value)
    xadd(ks, XAddArgs(policy.dead_letter_stream, dead_letter_fields(fields, origin)))
    g.ack(sid)
    ks.record(Acked(key=key, group=g.name, ids=(sid,)))
    g.dead_lettered += 1


def next_due_ms(ks: Keyspace, key: str, g: ConsumerGroup) -> int | None:
    """When the group's next pending entry turns due (None: none will by time alone): what
    a blocked policy read wakes at."""
    policy = g.policy
    stream = ks.get(key)
    if policy is None or stream is None:
        return None
    best: int | None = None
    entries = g.pel
    for pkey in g.released:
        pending = entries.entry(pkey)
        count = pending.delivery_count
        wait = 0 if policy.exhausted(count) else policy.backoff(count)
        at = pending.delivered_at_ms + wait
        if (best is None or at < best) and stream.exists(sid_of(pkey)):
            best = at
    vt = policy.visibility_timeout_ms
    if vt is not None:
        for delivered, _, pkey in entries.by_time():
            if best is not None and delivered + vt >= best:
                break
            pending = entries.entry(pkey)
            if pending.consumer is None or not stream.exists(sid_of(pkey)):
                continue
            count = pending.delivery_count
            wait = 0 if policy.exhausted(count) else policy.backoff(count)
            at = delivered + max(vt, wait)
            if best is None or at < best:
                best = at
    return best


def due_count(ks: Keyspace, key: str, g: ConsumerGroup, cap: int) -> int:
    """How many entries ``redeliver`` would take now, counting no further than ``cap``
    (dead letters included: the reply-size check errs on the safe side)."""
    policy = g.policy
    assert policy is not None
    stream = ks.streams[key]
    now = ks.clock.now_ms()
    min_idle = policy.visibility_timeout_ms or _NEVER
    return len(g.claimable(min_idle, now, cap, _due(stream, g, policy, now)))


def delivery_stats(ks: Keyspace) -> list[DeliveryStats]:
    """Every policy group's counters, with its dead-letter stream's length."""
    out = []
    for key, stream in ks.streams.items():
        for g in stream.groups.values():
            policy = g.policy
            if policy is None:
                continue
            dead = policy.dead_letter_stream
            dead_stream = ks.get(dead) if dead is not None else None
            length = dead_stream.length if dead_stream is not None else None
            out.append(DeliveryStats(key, g.name, g.redelivered, g.dead_lettered, dead, length))
    return out


# -- redrive -----------------------------------------------------------------------------------


def redrive(ks: Keyspace, a: RedriveArgs) -> Redriven:
    """Move dead-letter entries back, each appended to its target and deleted from the
    dead-letter stream in this step (so as one record: both or neither)."""
    stream = ks.get(a.key)
    if stream is None:
        raise NoSuchKey()
    oldest = a.ids is None
    ids = [e.id for e in stream.range(MIN_ID, MAX_ID, a.count)] if oldest else list(a.ids or ())
    moved: list[tuple[StreamID, str, StreamID]] = []
    skipped: list[StreamID] = []
    for sid in ids:
        fields = stream.get(sid)
        split = split_dead_letter(fields) if fields is not None else None
        if split is None:
            skipped.append(sid)
            continue
        original, origin = split
        target = a.target if a.target is not None else origin.stream
        new_id = xadd(ks, XAddArgs(target, original))
        assert new_id is not None
        # Deleted as XDEL deletes (max_deleted_id kept for lag).
        xdel(ks, a.key, [sid])
        moved.append((sid, target, new_id))
    return Redriven(moved, skipped)


# -- retention ---------------------------------------------------------------------------------


def set_retention(ks: Keyspace, key: str, retention: Retention | None) -> bool:
    """Set or remove the retention kept for the name ``key``; whether one was set."""
    had = key in ks.retention
    if retention is None:
        ks.retention.pop(key, None)
    else:
        ks.retention[key] = retention
    ks.record(RetentionSet(key=key, retention=retention))
    return had


def enforce_retention(ks: Keyspace, key: str, retention: Retention, limit: int) -> int:
    """One bounded step of trimming ``key`` to ``retention`` with its reference policy:
    entries removed. By age, entries older than ``max_age_ms`` go exactly (``trim_by_age``);
    by length and bytes, whole nodes (MAXLEN ``~`` LIMIT ``limit``). Journaled as XTRIM is."""
    stream = ks.get(key)
    if stream is None:
        return 0
    removed = 0
    ref = retention.policy
    if retention.max_age_ms is not None:
        cutoff = ks.clock.now_ms() - retention.max_age_ms
        if cutoff > 0:
            removed += trim_by_age(ks, key, stream, StreamID(cutoff, 0), limit, ref)
    if retention.max_len is not None:
        spec = TrimSpec(
            TrimStrategy.MAXLEN, maxlen=retention.max_len, approx=True, limit=limit, policy=ref
        )
        removed += xtrim(ks, key, spec)
    if retention.max_bytes is not None and stream.length:
        size = sum(node.lp_bytes for node in stream.nodes)
        if size > retention.max_bytes:
            keep = stream.length * retention.max_bytes // size
            spec = TrimSpec(TrimStrategy.MAXLEN, maxlen=keep, approx=True, limit=limit, policy=ref)
            removed += xtrim(ks, key, spec)
    return removed


def trim_by_age(
    ks: Keyspace, key: str, stream: Stream, minid: StreamID, limit: int, ref: RefPolicy
) -> int:
    """Remove at most ``limit`` entries below ``minid``, each trim an XTRIM of its own.

    Whole nodes go first and cheaply (MINID ``~`` LIMIT ``limit``). ``~`` alone never
    touches the node holding the boundary, so a quiet stream would keep its old entries
    until that node fills. What is left of the budget then goes to an exact XTRIM MINID,
    its threshold moved back to the entry just past the budget when more entries are
    older: a huge backlog is removed in steps of ``limit``, never in one."""
    approx = TrimSpec(TrimStrategy.MINID, minid=minid, approx=True, limit=limit, policy=ref)
    removed = xtrim(ks, key, approx)
    room = limit - removed
    before = minid.decr()
    if room <= 0 or before is None:
        return removed
    older = stream.range(MIN_ID, before, room + 1)
    if not older:
        return removed
    if len(older) > room:
        minid = older[room].id
    return removed + xtrim(ks, key, TrimSpec(TrimStrategy.MINID, minid=minid, policy=ref))
