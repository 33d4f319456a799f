"""Every read of a stream, checked for agreement with the engine's state (the state machine's
invariant after each step).

The differential runs compare reads with redis-server; here there is no reference, so the
reads are checked against each other and against what the nodes hold: ranges both ways and
from every ID a node holds (deleted ones included), XREAD, the three XINFO forms and their
counts, XPENDING and the history XREADGROUP reads per consumer, and a DUMP restored into a
fresh store, which must answer XINFO STREAM FULL alike and keep the node layout. A node
holding only deleted entries (issue 23) used to fail the very first of these.
"""

from __future__ import annotations

from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.keyspace import StreamConfig
from app.engine.pel import sid_of
from app.engine.replies import (
    ConsumerInfo,
    GroupInfo,
    MissingEntry,
    PendingRow,
    PendingSummary,
    StreamFullInfo,
    StreamInfo,
    StreamRead,
)
from app.engine.store import Store
from app.engine.stream import Entry, Stream


def layout(s: Stream) -> list[tuple[StreamID, int, int]]:
    """Each node's master ID, entries (deleted included) and live entries."""
    return [(n.master, len(n), n.live) for n in s.nodes]


def check_reads(store: Store, key: str, config: StreamConfig) -> None:
    """Every read of ``key`` answers, consistently with the others and with the nodes."""
    s = store.keyspace.get(key)
    assert s is not None
    everything = store.execute(["XRANGE", key, "-", "+"])
    assert isinstance(everything, list)
    entries: list[Entry] = everything
    assert [e.id for e in entries] == [sid for n in s.nodes for sid in n.live_ids()]
    assert store.execute(["XREVRANGE", key, "+", "-"]) == entries[::-1]
    for n in (1, 2):
        assert store.execute(["XRANGE", key, "-", "+", "COUNT", str(n)]) == entries[:n]
        assert store.execute(["XREVRANGE", key, "+", "-", "COUNT", str(n)]) == entries[::-1][:n]
    # Entries out of ID order (XSETID under a node's deleted entries, then XADD) are read the
    # way Redis's node iterator meets them, which no rule here predicts: the differential
    # runs check those reads against redis-server. They must still answer.
    ordered = all(n.ordered for n in s.nodes) and s.firsts == sorted(s.firsts)
    _check_ranges_from_node_ids(store, key, s, entries, ordered)
    _check_info(store, key, s, entries, ordered)
    _check_groups(store, key, s)
    _check_dump(store, key, s, config)


def _check_ranges_from_node_ids(
    store: Store, key: str, s: Stream, entries: list[Entry], ordered: bool
) -> None:
    """Ranges and XREAD that start or end on each ID a node holds, live or deleted."""
    for sid in sorted({sid for n in s.nodes for sid in n.ids()}):
        if not ordered:
            for argv in (["XRANGE", key, str(sid), "+"], ["XREVRANGE", key, str(sid), "-"]):
                store.execute(argv)
            continue
        after = [e for e in entries if e.id > sid]
        assert store.execute(["XRANGE", key, str(sid), "+"]) == [e for e in entries if e.id >= sid]
        assert store.execute(["XRANGE", key, f"({sid}", "+"]) == after
        down = [e for e in reversed(entries) if e.id <= sid]
        assert store.execute(["XREVRANGE", key, str(sid), "-"]) == down
        read = store.execute(["XREAD", "STREAMS", key, str(sid)])
        assert read == ([StreamRead(key, list(after))] if after else None), (sid, read)


def _check_info(store: Store, key: str, s: Stream, entries: list[Entry], ordered: bool) -> None:
    info = store.execute(["XINFO", "STREAM", key])
    assert isinstance(info, StreamInfo)
    assert info.header.length == len(entries) == s.length
    assert info.header.radix_tree_keys == len(s.nodes)
    assert info.first_entry == (entries[0] if entries else None)
    assert info.last_entry == (entries[-1] if entries else None)
    if ordered:  # (else Redis's recorded first ID may be another entry's)
        assert info.header.recorded_first_entry_id == (entries[0].id if entries else StreamID(0, 0))
    for count, shown in ((None, 10), ("1", 1), ("0", len(entries))):
        argv = ["XINFO", "STREAM", key, "FULL", *(["COUNT", count] if count else [])]
        full = store.execute(argv)
        assert isinstance(full, StreamFullInfo)
        assert full.entries == entries[:shown]
        assert (full.header.length, full.header.entries_added, full.header.last_generated_id) == (
            info.header.length,
            info.header.entries_added,
            info.header.last_generated_id,
        )
        assert full.header.radix_tree_keys == info.header.radix_tree_keys
        assert [g.name for g in full.groups] == sorted(s.groups)


def _check_groups(store: Store, key: str, s: Stream) -> None:
    rows = store.execute(["XINFO", "GROUPS", key])
    assert isinstance(rows, list) and [r.name for r in rows] == sorted(s.groups)
    for row in rows:
        assert isinstance(row, GroupInfo)
        g = s.groups[row.name]
        pending = [sid for sid, _ in g.pel.items()]
        summary = store.execute(["XPENDING", key, g.name])
        assert isinstance(summary, PendingSummary)
        assert summary.count == len(pending)
        assert (summary.first, summary.last) == (
            (pending[0], pending[-1]) if pending else (None, None)
        )
        extended = store.execute(["XPENDING", key, g.name, "-", "+", "1000"])
        assert [r.id for r in extended] == pending
        consumers = store.execute(["XINFO", "CONSUMERS", key, g.name])
        assert [c.name for c in consumers] == sorted(g.consumers)
        for c in consumers:
            assert isinstance(c, ConsumerInfo)
            own = sorted(sid_of(k) for k in g.consumers[c.name].pel)
            assert c.pending == len(own)
            rows_of = store.execute(["XPENDING", key, g.name, "-", "+", "1000", c.name])
            assert all(isinstance(r, PendingRow) for r in rows_of)
            assert [r.id for r in rows_of] == own
            history = store.execute(["XREADGROUP", "GROUP", g.name, c.name, "STREAMS", key, "0"])
            assert isinstance(history, list) and len(history) == 1
            read = history[0].entries
            assert [e.id for e in read] == own
            for e in read:  # an entry that went comes back as [id, nil]
                assert isinstance(e, MissingEntry) == (not s.exists(e.id))


def _check_dump(store: Store, key: str, s: Stream, config: StreamConfig) -> None:
    """RESTORE of its DUMP in a fresh store: the same replies, the same nodes. A stream
    holding entries released by XNACK is refused (a Redis 7.0 payload has no unowned
    pending entry), and so is one with IDMP state (none for it either); nothing else is."""
    released = any(g.released for g in s.groups.values())
    if released or s.idmp is not None:
        try:
            store.execute(["DUMP", key])
        except CommandError as e:
            assert ("XNACK" in e.text and released) or ("IDMP" in e.text and s.idmp), e.text
            return
        raise AssertionError("DUMP of a stream holding released entries or IDMP state answered")
    payload = store.execute(["DUMP", key])
    assert isinstance(payload, str)
    limits = StreamConfig(config.node_max_entries, config.node_max_bytes)
    copy = Store(clock=store.clock, config=limits)
    try:
        assert copy.execute(["RESTORE", key, "0", payload]) == "OK"
    except CommandError as e:  # never: a DUMP always loads
        raise AssertionError(f"RESTORE of the engine's own DUMP: {e.text}") from e
    restored = copy.keyspace.get(key)
    assert restored is not None and layout(restored) == layout(s)
    argv = ["XINFO", "STREAM", key, "FULL", "COUNT", "0"]
    assert repr(copy.execute(argv)) == repr(store.execute(argv))
