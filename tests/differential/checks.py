"""Every read of a stream, compared after each write of the differential runs.

A write can leave a stream in a state that only some reads reveal: a node holding only
deleted entries, a tombstone right after a group's last-delivered ID, a PEL entry whose
entry is gone. So after a write, the runs read each key it touched in every way a client
can without changing it, and compare every reply with redis-server's:

- XLEN; XRANGE and XREVRANGE whole, first and last entry, and from the max deleted ID;
  XREAD from the start and from the max deleted ID;
- XINFO STREAM, and FULL with the default count, COUNT 1 and COUNT 0 (everything);
- XINFO GROUPS; per group XINFO CONSUMERS and XPENDING (summary, extended, IDLE 0);
- per consumer XPENDING of its own and XREADGROUP of its history (ID 0): a read that only
  moves its seen-time, which the comparison masks;
- DUMP crossed both ways: each server RESTOREs the other's payload under another key, the
  copies must read alike, take one more entry alike, and are deleted again.

Past ``SHORT`` entries (the long runs of ``test_random_sequences``) the reads are bounded
(COUNT 10, no FULL COUNT 0) and DUMP is not crossed. Reads are sent to redis-server in one
pipeline per stage (length, stream, groups, consumers); the length and the names of groups
and consumers come from replies both servers already gave alike, so the reads are a
function of the state and a run stays reproducible.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import ReplyError
from tests.differential.exact import ExactPair

Command = tuple[str, ...]

COPY_SUFFIX = ":dumped"
# Streams up to SHORT entries are read whole (COUNT ALL); longer ones COUNT BOUNDED.
SHORT = 64
ALL = "1000"
BOUNDED = "10"
MAX_PART = 2**64 - 1


def _as_map(reply: Any) -> dict[str, Any]:
    """A flat key/value reply (XINFO's shape) as a dict; {} for an error or nil."""
    if not isinstance(reply, list):
        return {}
    return dict(zip(reply[0::2], reply[1::2], strict=True))


def stream_reads(key: str, n: str) -> list[Command]:
    """The reads of a stream that need nothing but its name; ``n`` bounds the long ones."""
    reads: list[Command] = [
        ("XRANGE", key, "-", "+", "COUNT", n),
        ("XREVRANGE", key, "+", "-", "COUNT", n),
        ("XRANGE", key, "-", "+", "COUNT", "1"),
        ("XREVRANGE", key, "+", "-", "COUNT", "1"),
        ("XREAD", "COUNT", n, "STREAMS", key, "0-0"),
        ("XINFO", "STREAM", key),
        ("XINFO", "STREAM", key, "FULL"),
        ("XINFO", "STREAM", key, "FULL", "COUNT", "1"),
        ("XINFO", "GROUPS", key),
    ]
    if n == ALL:
        reads.insert(-1, ("XINFO", "STREAM", key, "FULL", "COUNT", "0"))
    return reads


def tombstone_reads(key: str, max_deleted: str, n: str) -> list[Command]:
    """Reads that start at the max deleted ID: the edge of a run of tombstones."""
    return [
        ("XRANGE", key, max_deleted, "+", "COUNT", n),
        ("XRANGE", key, "(" + max_deleted, "+", "COUNT", "2"),
        ("XREVRANGE", key, max_deleted, "-", "COUNT", n),
        ("XREAD", "COUNT", n, "STREAMS", key, max_deleted),
    ]


def group_reads(key: str, group: str, n: str) -> list[Command]:
    return [
        ("XINFO", "CONSUMERS", key, group),
        ("XPENDING", key, group),
        ("XPENDING", key, group, "-", "+", n),
        ("XPENDING", key, group, "IDLE", "0", "-", "+", "3"),
    ]


def consumer_reads(key: str, group: str, consumer: str, n: str) -> list[Command]:
    return [
        ("XPENDING", key, group, "-", "+", n, consumer),
        ("XREADGROUP", "GROUP", group, consumer, "COUNT", n, "STREAMS", key, "0"),
    ]


def read_all(pair: ExactPair, key: str, dump: bool = True) -> list[Command]:
    """Compare every read of ``key`` (see the module docstring); returns the commands sent,
    for the run's history. Past ``SHORT`` entries the long reads are bounded and DUMP is
    not crossed: the long runs would spend their time copying whole streams. Without
    ``dump`` it is never crossed (redis-server 8 writes another RDB version)."""
    sent: list[Command] = [("XLEN", key)]
    (length,) = pair.many(sent)
    n = ALL if isinstance(length, int) and length <= SHORT else BOUNDED
    stage = stream_reads(key, n)
    sent += stage
    replies = pair.many(stage)
    info = _as_map(replies[5])
    if not info:  # no such key (or not a stream): the reads above said so alike
        return sent
    stage = tombstone_reads(key, str(info["max-deleted-entry-id"]), n)
    groups = [_as_map(g)["name"] for g in replies[-1]]
    for group in groups:
        stage += group_reads(key, group, n)
    sent += stage
    replies = pair.many(stage)
    stage = []
    for i, group in enumerate(groups):
        consumers = replies[4 + 4 * i]
        for c in consumers:
            stage += consumer_reads(key, group, _as_map(c)["name"], n)
    if stage:
        sent += stage
        pair.many(stage)
    if n == ALL and dump:
        sent += cross_dump(pair, key, str(info["last-generated-id"]))
    return sent


def cross_dump(pair: ExactPair, key: str, last_id: str) -> list[Command]:
    """Each server RESTOREs the other's DUMP of ``key``; the copies must read alike."""
    copy = key + COPY_SUFFIX
    theirs, ours = pair.both("DUMP", key)
    assert isinstance(theirs, str) and isinstance(ours, str), (theirs, ours)
    restored = (
        pair.resp("RESTORE", copy, "0", ours, "REPLACE"),
        pair.xs("RESTORE", copy, "0", theirs, "REPLACE"),
    )
    assert restored == ("OK", "OK"), restored
    sent: list[Command] = [
        ("XINFO", "STREAM", copy, "FULL", "COUNT", "0"),
        ("XINFO", "GROUPS", copy),
        ("XPENDING", copy, "g1", "-", "+", ALL),
    ]
    after = _next_id(last_id)
    if after is not None:  # one more entry lands where the node layout says
        sent += [("XADD", copy, after, "f", "v"), ("XINFO", "STREAM", copy, "FULL", "COUNT", "0")]
    sent.append(("DEL", copy))
    replies = pair.many(sent)
    assert replies[-1] == 1 and not isinstance(replies[0], ReplyError), replies
    return [("DUMP", key), ("RESTORE", copy, "0", "<payload>", "REPLACE"), *sent]


def _next_id(sid: str) -> str | None:
    """The smallest ID above ``sid``; None above the largest."""
    ms, seq = (int(part) for part in sid.split("-"))
    if seq < MAX_PART:
        return f"{ms}-{seq + 1}"
    return f"{ms + 1}-0" if ms < MAX_PART else None
