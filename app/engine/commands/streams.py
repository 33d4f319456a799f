"""XADD, XTRIM, XRANGE, XREVRANGE, XLEN, XDEL, XSETID: parsing and the operations behind them.

Each command is a typed operation (``xadd(ks, XAddArgs)``) plus a parser from Redis
arguments; the REST layer builds the same argument objects and calls the same operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from app.engine.commands.args import eq, int_arg
from app.engine.commands.table import Flag, command, key_at
from app.engine.commands.xadd_options import (
    IdmpKey,
    parse_trim_options,
    with_default_limit,
)
from app.engine.effects import (
    EntriesDeleted,
    EntryAdded,
    IdmpDuplicate,
    IdmpRecorded,
    LastIdSet,
    Trimmed,
)
from app.engine.errors import (
    Conflict,
    NoSuchKey,
    SyntaxError_,
    TooLarge,
    WrongArgument,
)
from app.engine.idmp import auto_iid
from app.engine.ids import (
    MAX_ID,
    MIN_ID,
    UINT64_MAX,
    StreamID,
    parse_range_end,
    parse_range_start,
    parse_strict_id,
)
from app.engine.keyspace import Keyspace
from app.engine.listpack import fields_bytes
from app.engine.refs import trim_stream
from app.engine.replies import OK, Status
from app.engine.stream import (
    STREAM_LISTPACK_MAX_SIZE,
    Entry,
    Fields,
    TrimSpec,
    id_follows,
)

W, R = Flag.WRITE, Flag.READONLY


class XAddArgs(NamedTuple):
    """XADD's arguments, parsed. An immutable tuple rather than a frozen dataclass: a batch
    builds one per entry, and a frozen dataclass's ``__init__`` costs several times more."""

    key: str
    fields: Fields
    id: StreamID | None = None  # None: `*`
    seq_given: bool = True  # False for `ms-*`
    nomkstream: bool = False
    trim: TrimSpec | None = None
    idmp: IdmpKey | None = None  # IDMP / IDMPAUTO (Redis 8.6)


def parse_xadd(ks: Keyspace, argv: list[str]) -> XAddArgs:
    o = parse_trim_options(ks, argv, xadd=True)
    nfields = len(argv) - (o.end + 1)
    if nfields < 2 or nfields % 2:
        raise WrongArgument.err("wrong number of arguments for 'xadd' command")
    return XAddArgs(
        key=argv[1],
        fields=tuple(argv[o.end + 1 :]),
        id=o.id,
        seq_given=o.seq_given,
        nomkstream=o.nomkstream,
        trim=o.trim,
        idmp=o.idmp,
    )


def next_auto_id(last: StreamID, now_ms: int) -> StreamID | None:
    """``streamNextID``: the clock's millisecond, or the last ID plus one if the clock is
    behind (so IDs never go backwards even when the clock does)."""
    if now_ms > last.ms:
        return StreamID(now_ms, 0)
    return last.incr()


XADD_ID_TOO_SMALL = "The ID specified in XADD is equal or smaller than the target stream top item"


def resolve_id(a: XAddArgs, last: StreamID, now_ms: int) -> StreamID | None:
    """The ID an XADD would take after ``last`` (None: ``ms-*`` with no sequence left)."""
    if a.id is None:
        return next_auto_id(last, now_ms)
    if a.seq_given:
        return a.id
    if last.ms == a.id.ms:
        return None if last.seq == UINT64_MAX else StreamID(last.ms, last.seq + 1)
    return a.id


XADD_ZERO_ID = "The ID specified in XADD must be greater than 0-0"
XADD_EXHAUSTED = "The stream has exhausted the last possible ID, unable to add more items"
XADD_TOO_LARGE = "Elements are too large to be stored"


def check_not_zero(a: XAddArgs) -> None:
    """XADD's first check, made before the key is looked up: an explicit ``0-0``."""
    if a.id is not None and a.seq_given and a.id == MIN_ID:
        raise WrongArgument.err(XADD_ZERO_ID)


def too_large(fields: Fields) -> bool:
    """Whether an entry is too large to store; a character is at most 4 bytes, so only a
    huge entry is measured in bytes."""
    if sum(map(len, fields)) * 4 <= STREAM_LISTPACK_MAX_SIZE:
        return False
    return fields_bytes(fields) > STREAM_LISTPACK_MAX_SIZE


def next_id(a: XAddArgs, last: StreamID, now_ms: int) -> StreamID:
    """The ID XADD gives ``a`` on a stream whose last ID is ``last``, or Redis's error, in
    ``xaddCommand``'s order: IDs exhausted, ``ms-*`` with no sequence left, an ID not greater
    than the top, an entry too large. XADD and the bulk appends (``commands.bulk``) share it."""
    if last == MAX_ID:
        raise Conflict.err(XADD_EXHAUSTED)
    sid = resolve_id(a, last, now_ms)
    if sid is None:
        # `ms-*` with that millisecond's sequence used up: redis-server 7.0 answers this.
        raise TooLarge.err(XADD_TOO_LARGE)
    if not id_follows(last, sid):
        raise Conflict.err(XADD_ID_TOO_SMALL)
    if too_large(a.fields):
        raise TooLarge.err(XADD_TOO_LARGE)
    return sid


def xadd(ks: Keyspace, a: XAddArgs) -> StreamID | None:
    """Append an entry (XADD); None when NOMKSTREAM met a missing key. With IDMP / IDMPAUTO
    (Redis 8.6) an iid the producer already used answers the ID it appended then, and nothing
    else happens: no entry, no trim (``idmp`` module)."""
    check_not_zero(a)
    stream = ks.get(a.key)
    if stream is None:
        if a.nomkstream:
            return None
        stream = ks.create(a.key)
    now = ks.clock.now_ms()
    iid = None
    if a.idmp is not None:
        idmp = stream.idmp
        iid = a.idmp.iid if a.idmp.iid is not None else auto_iid(a.fields)
        if idmp is not None:
            idmp.expire(now)
            seen = idmp.lookup(a.idmp.producer, iid)
            if seen is not None:
                idmp.duplicate()
                ks.record(IdmpDuplicate(key=a.key, now_ms=now))
                return seen
    sid = next_id(a, stream.last_id, now)
    stream.append(sid, a.fields)
    ks.record(EntryAdded(key=a.key, id=sid, fields=a.fields))
    if a.idmp is not None and iid is not None:
        if stream.idmp is None:
            stream.idmp = ks.config.new_idmp()
        stream.idmp.record(a.idmp.producer, iid, sid, now, ks.config.idmp_max_producers)
        ks.record(IdmpRecorded(key=a.key, producer=a.idmp.producer, iid=iid, id=sid, now_ms=now))
    if a.trim is not None:
        trim = with_default_limit(ks, a.trim)
        if trim_stream(stream, trim).changed:
            ks.record(Trimmed(key=a.key, trim=trim))
    ks.blocked.signal(a.key)
    return sid


@command("xadd", -5, W, keys=key_at(1))
def _xadd(ks: Keyspace, argv: list[str]) -> StreamID | None:
    return xadd(ks, parse_xadd(ks, argv))


def xtrim(ks: Keyspace, key: str, spec: TrimSpec) -> int:
    stream = ks.get(key)
    if stream is None:
        return 0
    spec = with_default_limit(ks, spec)
    outcome = trim_stream(stream, spec)
    if outcome.changed:
        ks.record(Trimmed(key=key, trim=spec))
    return outcome.deleted


@command("xtrim", -4, W, keys=key_at(1))
def _xtrim(ks: Keyspace, argv: list[str]) -> int:
    spec = parse_trim_options(ks, argv, xadd=False).trim
    assert spec is not None  # _trim_clause refuses XTRIM without a strategy
    return xtrim(ks, argv[1], spec)


@dataclass(frozen=True, slots=True)
class RangeArgs:
    key: str
    start: StreamID
    end: StreamID
    count: int | None = None  # None: no COUNT; 0 after COUNT 0 / negative


def parse_range(argv: list[str], rev: bool) -> RangeArgs:
    start_text, end_text = (argv[3], argv[2]) if rev else (argv[2], argv[3])
    start = parse_range_start(start_text)
    end = parse_range_end(end_text)
    count: int | None = None
    j = 4
    while j < len(argv):
        if eq(argv[j], "count") and j + 1 < len(argv):
            count = max(int_arg(argv[j + 1]), 0)
            j += 2
        else:
            raise SyntaxError_()
    return RangeArgs(argv[1], start, end, count)


def xrange(ks: Keyspace, a: RangeArgs, rev: bool = False) -> list[Entry] | None:
    """Entries between two IDs (XRANGE / XREVRANGE); None for COUNT 0 on an existing stream,
    as Redis's nil (a missing key is an empty array first)."""
    stream = ks.get(a.key)
    if stream is None:
        return []
    if a.count == 0:
        return None
    return stream.range(a.start, a.end, a.count or 0, rev)


def bounded_range(ks: Keyspace, argv: list[str], rev: bool) -> list[Entry] | None:
    """XRANGE / XREVRANGE within ``max_reply_entries``: a reply that would hold more is
    refused (look at one entry past the limit, never at the whole range)."""
    a = parse_range(argv, rev)
    cap = ks.limits.reply_cap(a.count)
    if cap is None or a.count == 0:
        return xrange(ks, a, rev)
    found = xrange(ks, RangeArgs(a.key, a.start, a.end, cap), rev)
    if found is not None and len(found) >= cap:
        raise ks.limits.too_large(argv[0])
    return found


@command("xrange", -4, R, keys=key_at(1))
def _xrange(ks: Keyspace, argv: list[str]) -> list[Entry] | None:
    return bounded_range(ks, argv, rev=False)


@command("xrevrange", -4, R, keys=key_at(1))
def _xrevrange(ks: Keyspace, argv: list[str]) -> list[Entry] | None:
    return bounded_range(ks, argv, rev=True)


@command("xlen", 2, R, keys=key_at(1))
def _xlen(ks: Keyspace, argv: list[str]) -> int:
    stream = ks.get(argv[1])
    return 0 if stream is None else stream.length


def xdel(ks: Keyspace, key: str, ids: list[StreamID]) -> int:
    """Delete entries (XDEL), keeping ``max_deleted_id`` for lag tracking."""
    stream = ks.get(key)
    if stream is None:
        return 0
    deleted: list[StreamID] = []
    for sid in ids:
        if stream.delete(sid):
            if sid > stream.max_deleted_id:
                stream.max_deleted_id = sid
            deleted.append(sid)
    if deleted:
        ks.record(EntriesDeleted(key=key, ids=tuple(deleted)))
    return len(deleted)


@command("xdel", -3, W, keys=key_at(1))
def _xdel(ks: Keyspace, argv: list[str]) -> int:
    if ks.get(argv[1]) is None:
        return 0  # Redis answers 0 before looking at the IDs
    return xdel(ks, argv[1], [parse_strict_id(a) for a in argv[2:]])


@dataclass(frozen=True, slots=True)
class XSetIdArgs:
    key: str
    last_id: StreamID
    entries_added: int | None = None
    max_deleted_id: StreamID | None = None


def _entries_added_arg(entries_added: int) -> int:
    if entries_added < 0:
        raise WrongArgument.err("entries_added must be positive")
    return entries_added


def _max_deleted_arg(last_id: StreamID, max_deleted: StreamID) -> StreamID:
    if last_id < max_deleted:
        raise WrongArgument.err(
            "The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
        )
    return max_deleted


def xsetid_args(
    key: str, last_id: str, entries_added: int | None = None, max_deleted_id: str | None = None
) -> XSetIdArgs:
    """XSETID from typed values (REST), checked as ``parse_xsetid`` checks
    ``XSETID key last_id [ENTRIESADDED n] [MAXDELETEDID id]``, in that order."""
    sid = parse_strict_id(last_id)
    if entries_added is not None:
        _entries_added_arg(entries_added)
    max_deleted = None
    if max_deleted_id is not None:
        max_deleted = _max_deleted_arg(sid, parse_strict_id(max_deleted_id))
    return XSetIdArgs(key, sid, entries_added, max_deleted)


def parse_xsetid(argv: list[str]) -> XSetIdArgs:
    last_id = parse_strict_id(argv[2])
    entries_added: int | None = None
    max_deleted: StreamID | None = None
    i = 3
    n = len(argv)
    while i < n:
        moreargs = n - 1 - i
        opt = argv[i].lower()
        if opt == "entriesadded" and moreargs:
            entries_added = _entries_added_arg(int_arg(argv[i + 1]))
            i += 2
        elif opt == "maxdeletedid" and moreargs:
            max_deleted = _max_deleted_arg(last_id, parse_strict_id(argv[i + 1]))
            i += 2
        else:
            raise SyntaxError_()
    return XSetIdArgs(argv[1], last_id, entries_added, max_deleted)


def xsetid(ks: Keyspace, a: XSetIdArgs) -> Status:
    stream = ks.get(a.key)
    if stream is None:
        raise NoSuchKey()
    if stream.length > 0:
        if a.last_id < stream.last_valid_id():
            raise Conflict.err(
                "The ID specified in XSETID is smaller than the target stream top item"
            )
        if a.entries_added is not None and stream.length > a.entries_added:
            raise Conflict.err(
                "The entries_added specified in XSETID is smaller than the target stream length"
            )
    stream.last_id = a.last_id
    if a.entries_added is not None:
        stream.entries_added = a.entries_added
    max_deleted = None
    if a.max_deleted_id is not None and a.max_deleted_id != MIN_ID:
        stream.max_deleted_id = max_deleted = a.max_deleted_id
    ks.record(
        LastIdSet(
            key=a.key,
            last_id=a.last_id,
            entries_added=a.entries_added,
            max_deleted_id=max_deleted,
        )
    )
    return OK


@command("xsetid", -3, W, keys=key_at(1))
def _xsetid(ks: Keyspace, argv: list[str]) -> Status:
    return xsetid(ks, parse_xsetid(argv))
