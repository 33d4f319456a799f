"""Appends in bulk: consecutive XADDs to one key as one engine call and one journal effect.

Two shapes, one loop each:

- ``xadd_run``: plain appends in a pipeline or a MULTI (``/pipeline``, ``/multi-exec``). Each
  XADD keeps its own reply, and one that Redis refuses (an ID not greater than the top, ``0-0``,
  NOMKSTREAM on a missing key) gets its own error or nil while the others go on, exactly as
  the same commands one by one. Only XADDs without a trim clause are fused (``fusable``): a
  trim between two appends changes the nodes the next one lands in.
- ``xadd_batch``: the REST batch, all or none: every ID is checked first, then the entries
  are appended.

Either way the IDs are assigned in one loop from one clock reading (a batch takes no time, as
if the clock had not ticked between its XADDs), the entries go into the nodes in one call
(``Stream.append_many``), and the journal gets one ``adds`` effect for the lot, which replay
applies the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, compress, count, repeat
from operator import itemgetter, ne

from app.engine.commands.args import eq
from app.engine.commands.streams import (
    XADD_EXHAUSTED,
    XAddArgs,
    check_not_zero,
    next_id,
    parse_xadd,
    xadd,
)
from app.engine.effects import EntriesAdded
from app.engine.errors import CommandError, Conflict
from app.engine.ids import MAX_ID, MIN_ID, UINT64_MAX, StreamID
from app.engine.keyspace import Keyspace
from app.engine.stream import STREAM_LISTPACK_MAX_SIZE, Fields, Stream

Outcome = StreamID | None | CommandError
"""One XADD's reply in a run: its ID, nil (NOMKSTREAM on a missing key), or its error."""


def fusable(ks: Keyspace, argv: Sequence[str]) -> XAddArgs | None:
    """``argv`` parsed, if it is a plain append that may join a run: an XADD that parses, with
    no trim clause. Anything else (another command, a malformed XADD) runs on its own, where
    it gets Redis's reply or error."""
    n = len(argv)
    if n < 5 or not eq(argv[0], "xadd"):
        return None
    if argv[2] == "*":  # the common form, parsed as parse_xadd would parse it
        return XAddArgs(argv[1], tuple(argv[3:])) if n % 2 else None
    try:
        a = parse_xadd(ks, list(argv))
    except CommandError:
        return None
    return a if a.trim is None and a.idmp is None else None


def _append(
    ks: Keyspace, stream: Stream, key: str, ids: list[StreamID], rows: list[Fields]
) -> None:
    if ids:
        stream.append_many(ids, rows)
        ks.record(EntriesAdded(key=key, ids=tuple(ids), rows=tuple(rows)))
        ks.blocked.signal(key)


def xadd_run(ks: Keyspace, batch: Sequence[XAddArgs]) -> list[Outcome]:
    """Consecutive XADDs to one key without trimming (``fusable``), each answered as if run
    alone: its ID, nil, or the error Redis gives it; the good ones are appended in one call.

    The checks run in ``xadd``'s order, so a run fails where the same commands one by one
    would: the stream is created (and stays, empty) by the first XADD that may create it,
    even if that XADD is then refused."""
    key = batch[0].key
    stream = ks.get(key)
    last = stream.last_id if stream is not None else MIN_ID
    now = ks.clock.now_ms()
    out: list[Outcome] = []
    ids: list[StreamID] = []
    rows: list[Fields] = []
    for a in batch:
        if a.key != key or a.trim is not None:
            raise ValueError("a run appends to one stream without trimming")
        try:
            check_not_zero(a)
            if stream is None:
                if a.nomkstream:
                    out.append(None)
                    continue
                stream = ks.create(key)
            sid = next_id(a, last, now)
        except CommandError as e:
            out.append(e)
            continue
        ids.append(sid)
        rows.append(a.fields)
        out.append(sid)
        last = sid
    if stream is not None:
        _append(ks, stream, key, ids, rows)
    return out


def auto_ids(last: StreamID, now_ms: int, n: int) -> list[StreamID] | None:
    """The IDs ``n`` XADDs with ID ``*`` take one after another after ``last``, exactly as
    ``next_auto_id`` gives them one by one (one clock reading: a run takes no time), made in C
    passes. None when the run would reach the last sequence of a millisecond or the last ID:
    the one-by-one path then gives each XADD its own reply."""
    if now_ms > last.ms:
        ms, first = now_ms, 0
    else:
        ms, first = last.ms, last.seq + 1
    if n <= 0 or first + n - 1 >= UINT64_MAX:
        return None if n > 0 else []
    pairs = zip(repeat(ms, n), range(first, first + n), strict=True)
    return list(map(_make_id, repeat(StreamID), pairs))


_make_id = tuple.__new__  # StreamID((ms, seq)) without the named tuple's Python-level __new__


def all_fit(rows: Sequence[Fields]) -> bool:
    """Whether no row can be too large to store, in one C pass over all strings (a character
    is at most 4 bytes): if the whole run fits in one listpack's limit, each entry does."""
    return sum(map(len, chain.from_iterable(rows))) * 4 <= STREAM_LISTPACK_MAX_SIZE


def xadd_auto_run(ks: Keyspace, key: str, rows: list[Fields]) -> list[Outcome]:
    """``XADD key * f v ...`` once per row (``auto_run_at``), as ``xadd_run`` would run them:
    IDs made in one pass and the rows appended in one call. A run that cannot take that path
    (an ID limit reached, an entry that may be too large) goes through ``xadd_run``, which
    answers each XADD as Redis would."""
    stream = ks.get(key)
    last = stream.last_id if stream is not None else MIN_ID
    ids = _append_auto(ks, key, stream, last, ks.clock.now_ms(), rows)
    if ids is None:
        return xadd_run(ks, [XAddArgs(key, fields) for fields in rows])
    out: list[Outcome] = list(ids)
    return out


def _append_auto(
    ks: Keyspace, key: str, stream: Stream | None, last: StreamID, now: int, rows: list[Fields]
) -> list[StreamID] | None:
    """A run of ``*`` entries given its IDs in one pass and appended (the stream created if
    missing); None, with nothing done, when the run must go entry by entry (an ID limit
    reached, an entry that may be too large)."""
    ids = auto_ids(last, now, len(rows)) if all_fit(rows) else None
    if ids is None:
        return None
    if stream is None:
        stream = ks.create(key)
    _append(ks, stream, key, ids, rows)
    return ids


def xadd_batch(ks: Keyspace, batch: list[XAddArgs]) -> list[StreamID | None]:
    """Append several entries to one stream atomically: every ID is checked against the
    ones before it first, so either all entries are added or none is (and nothing changes).
    With a trim clause each entry trims after it is appended, as its own XADD would."""
    if not batch:
        return []
    key = batch[0].key
    stream = ks.get(key)
    last = stream.last_id if stream is not None else MIN_ID
    now = ks.clock.now_ms()
    if set(map(_KEY, batch)) != {key}:
        raise ValueError("a batch appends to one stream")
    auto = _auto_batch(ks, batch, stream, last, now)
    if auto is not None:
        return auto
    ids: list[StreamID] = []
    for i, a in enumerate(batch):
        if stream is None and a.nomkstream:
            return [None] * len(batch)
        check_not_zero(a)
        if last == MAX_ID:
            raise Conflict.err(XADD_EXHAUSTED)  # the stream's, not one entry's
        try:
            sid = next_id(a, last, now)
        except CommandError as e:
            raise BatchItemError(i, e) from None
        ids.append(sid)
        last = sid
    if any(a.trim is not None or a.idmp is not None for a in batch):
        # Trims interleave with appends, and an IDMP repeat appends nothing: one at a time.
        # The checks above gave each entry an ID, so none of these can fail.
        return [xadd(ks, a) for a in batch]
    if stream is None:
        stream = ks.create(key)
    _append(ks, stream, key, ids, [a.fields for a in batch])
    return list(ids)


_KEY = itemgetter(0)
_ROW = itemgetter(1)
_ID_NOMK = itemgetter(2, 4)
_TRIM_IDMP = itemgetter(5, 6)


def _auto_batch(
    ks: Keyspace, batch: list[XAddArgs], stream: Stream | None, last: StreamID, now: int
) -> list[StreamID | None] | None:
    """``xadd_batch``'s common case in C passes: every entry ``*``, no NOMKSTREAM, trim or
    IDMP, none too large, IDs left in the millisecond. None: anything else, which the entry
    by entry path answers."""
    if set(map(_ID_NOMK, batch)) != {(None, False)} or set(map(_TRIM_IDMP, batch)) != {
        (None, None)
    }:
        return None
    if last == MAX_ID:
        raise Conflict.err(XADD_EXHAUSTED)
    ids = _append_auto(ks, batch[0].key, stream, last, now, list(map(_ROW, batch)))
    if ids is None:
        return None
    out: list[StreamID | None] = list(ids)
    return out


class BatchItemError(Conflict):
    """An entry of a batch was refused; ``index`` says which (nothing was added)."""

    def __init__(self, index: int, cause: CommandError) -> None:
        super().__init__(cause.text)
        self.index = index


PIPELINE_RUN = 256
"""At most this many XADDs of a pipeline run as one call: a pipeline is not atomic and yields
by time between its steps (``pipeline_slice_ms``), so one fused step must stay short."""


def run_at(
    ks: Keyspace, commands: Sequence[Sequence[str]], start: int, *, serve_between: bool
) -> list[XAddArgs]:
    """The XADDs that can be fused starting at ``commands[start]``: two or more consecutive
    plain appends (``fusable``) to one key, else []. ``serve_between`` (a pipeline): Redis
    serves blocked readers after each command, so while a reader waits on the key each XADD
    runs on its own and the reader gets what it would have got, and a run holds at most
    ``PIPELINE_RUN`` XADDs; a MULTI serves readers only after EXEC and never yields, so it
    fuses regardless."""
    first = fusable(ks, commands[start])
    if first is None or (serve_between and ks.blocked.waiting_on(first.key)):
        return []
    end = start + PIPELINE_RUN if serve_between else len(commands)
    run = [first]
    for argv in commands[start + 1 : end]:
        a = fusable(ks, argv)
        if a is None or a.key != first.key:
            break
        run.append(a)
    return run if len(run) > 1 else []


_HEAD = itemgetter(0, 1, 2)
_FIELDS = itemgetter(slice(3, None))


def auto_run_at(
    ks: Keyspace, commands: Sequence[Sequence[str]], start: int, *, serve_between: bool
) -> tuple[str, list[Fields]] | None:
    """The common shape of ``run_at``, found in C passes: two or more consecutive
    ``XADD key * f v ...`` (the same command name, key and ``*``, no option, an even number
    of field strings) starting at ``commands[start]``, as (key, rows); else None, and
    ``run_at`` looks at the lines one by one. Same limits as ``run_at``."""
    first = commands[start]
    n = len(first)
    if n < 5 or not n % 2 or first[2] != "*" or not eq(first[0], "xadd"):
        return None
    key = first[1]
    if serve_between and ks.blocked.waiting_on(key):
        return None
    end = start + PIPELINE_RUN if serve_between else len(commands)
    window = commands[start:end]
    sizes = list(map(len, window))
    # Only lines of 5 or more arguments can join: the run ends before the first shorter one.
    window = window[: next(compress(count(), map((5).__gt__, sizes)), len(sizes))]
    heads = list(map(_HEAD, window))
    k = next(compress(count(), map(ne, heads, repeat(heads[0]))), len(heads))
    if k < 2 or not all(map((1).__and__, sizes[:k])):  # an even count: XADD's arity error
        return None
    window = window[:k]
    return key, list(map(tuple, map(_FIELDS, window)))
