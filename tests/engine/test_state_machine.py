"""The engine's invariants under random commands: a Hypothesis state machine, in process.

Random XADD (every ID form, MAXLEN / MINID trimming, exact and ``~``, LIMIT), XDEL (single
IDs and runs of consecutive entries: a node's tail, a whole node), XTRIM (MINID often at an
ID a node holds, deleted or not, so exact trims leave nodes holding only deleted entries),
XSETID, XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER), XREADGROUP (``>``,
NOACK, history), XACK, XCLAIM, XAUTOCLAIM and DEL run on a store whose clock moves only when
a rule says so; entries have one to three of three field names, so many differ from their
node's master entry. After every step the machine checks what must always hold:

- every read of every stream answers and agrees with the others and with the nodes: ranges
  both ways and from each ID a node holds, XREAD, XINFO STREAM plain and FULL (its counts),
  XINFO GROUPS and CONSUMERS, XPENDING, history XREADGROUP, DUMP into a fresh store
  (``reads.check_reads``);
- a stream's length is its number of live entries, and its nodes agree with their flags (a
  node may hold only deleted entries: a trim leaves it, as Redis does);
- no node holds more than node-max-entries, and a node with more than one entry was under
  node-max-bytes before its last entry went in (Redis's listpack rule, which ``~`` trims by);
- first / last / max-deleted ID and entries-added are consistent with the live entries;
- a group's PEL is the union of its consumers' PELs and its released entries (XNACK), each
  pending ID owned by exactly one consumer, which holds the very same record, or by none:
  the released entries are exactly the unowned ones, each once in the released FIFO;
- XDELEX, XACKDEL and trims under ACKED never delete an entry a group holds pending or has
  not been delivered yet; under DELREF no PEL keeps an ID they deleted (or were given);
- XINFO's lag is what Redis 7's rules give (``streamReplyWithCGLag``, rewritten below from
  t_stream.c, over the values XINFO shows);
- replaying the journal, through its stored form, and loading a snapshot both rebuild the
  same keyspace (node layout included, each PEL in the order its delivery times were set,
  the released FIFO in its order) and answer XINFO the same way; the loaded snapshot
  encodes back to the very same bytes.

Besides the 7.0 commands, the rules send XDELEX, XACKDEL (each policy), XADD and XTRIM
trims with a policy, XNACK (each mode, RETRYCOUNT, FORCE) and XREADGROUP ... CLAIM; and a
group's delivery policy (app/engine/delivery.py), whose reads claim and dead-letter.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from app.engine.clock import ManualClock
from app.engine.codec import decode_record, encode_record
from app.engine.commands.policy import set_policy
from app.engine.commands.webhook_ops import delete_webhook, set_webhook
from app.engine.delivery import DeliveryPolicy, Webhook
from app.engine.effects import Record
from app.engine.errors import CommandError, Conflict, NoGroup
from app.engine.ids import MIN_ID, StreamID, parse_strict_id
from app.engine.keyspace import StreamConfig
from app.engine.listpack import byte_len
from app.engine.pel import key_of, sid_of
from app.engine.replies import GroupInfo, StreamInfo
from app.engine.snapshot import encode_snapshot
from app.engine.store import Store
from app.engine.stream import Node, Stream
from tests.engine.reads import check_reads

KEYS = ("s", "t")
GROUPS = ("g1", "g2")
CONSUMERS = ("c1", "c2", "c3")
T0 = 1_700_000_000_000
# (node-max-entries, node-max-bytes): Redis's defaults, and small nodes so that appends split
# them, ``~`` trimming removes whole ones and XDEL empties some.
CONFIGS = ((100, 4096), (5, 128), (3, 64), (0, 96))

keys = st.sampled_from(KEYS)
groups = st.sampled_from(GROUPS)
consumers = st.sampled_from(CONSUMERS)
field_names = st.sampled_from(["a", "b", "c"])
values = st.text(alphabet="xyz\udcff", max_size=6)
small = st.integers(0, 6)
policies = st.none() | st.sampled_from(["KEEPREF", "DELREF", "ACKED"])
WEBHOOK_SECRET = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFS"  # 18 bytes in base64


class Sink:
    def __init__(self) -> None:
        self.records: list[Record] = []

    def append(self, record: Record) -> None:
        self.records.append(record)


class EngineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(T0)
        self.sink = Sink()
        self.config = StreamConfig()
        self.store = Store(clock=self.clock, journal=self.sink)

    @initialize(
        config=st.sampled_from(CONFIGS),
        seed=st.booleans(),
        n=st.integers(2, 9),
        read=small,
        policy=st.booleans(),
    )
    def configure(
        self, config: tuple[int, int], seed: bool, n: int, read: int, policy: bool
    ) -> None:
        self.config = StreamConfig(*config)
        self.store = Store(clock=self.clock, config=self.config, journal=self.sink)
        if seed:
            self.seed_groups(n, read + 1)
            if policy:  # a policy group with entries delivered: its rules act at once
                every = DeliveryPolicy(100, 2, "t", (50, 400))
                self.store.run(set_policy, "s", "g1", every)

    def seed_groups(self, n: int, read: int) -> None:
        """Half the runs start with both streams holding entries and both groups, part of
        the entries delivered to each: the state the reference policies, XNACK and CLAIM
        act on, which random steps alone reach seldom in a short run."""
        for key in KEYS:
            for i in range(1, n + 1):
                self.run("XADD", key, f"{i}-0", "a", "x")
            for k, group in enumerate(GROUPS):
                self.run("XGROUP", "CREATE", key, group, "0")
                self.run("XREADGROUP", "GROUP", group, CONSUMERS[k], "COUNT", read + k,
                         "STREAMS", key, ">")  # fmt: skip

    # -- helpers -------------------------------------------------------------------------

    def run(self, *argv: object) -> Any:
        try:
            return self.store.execute([str(a) for a in argv])
        except CommandError as e:
            return e

    def stream(self, key: str) -> Stream | None:
        return self.store.keyspace.get(key)

    def live_ids(self, key: str) -> list[StreamID]:
        s = self.stream(key)
        return [] if s is None else [e.id for e in s.range(MIN_ID, StreamID(2**64 - 1, 2**64 - 1))]

    def pending_ids(self, key: str, group: str) -> list[StreamID]:
        s = self.stream(key)
        g = s.groups.get(group) if s is not None else None
        return [] if g is None else [sid for sid, _ in g.pel.items()]

    def node_ids(self, key: str) -> list[StreamID]:
        """Every ID the stream's nodes hold, deleted ones included."""
        s = self.stream(key)
        return [] if s is None else [sid for n in s.nodes for sid in n.ids()]

    def trim_threshold(self, data: st.DataObject, key: str) -> str:
        """A MINID threshold: often an ID a node holds (a node's last, maybe deleted, entry:
        the exact trim then flags the live ones before it), else any ID near the stream's."""
        held = self.node_ids(key)
        if held and data.draw(st.booleans()):
            return str(data.draw(st.sampled_from(held)))
        return self.some_id(data, key)

    def some_id(self, data: st.DataObject, key: str, group: str | None = None) -> str:
        """An ID near the stream's: one of its entries, one pending, or one around them."""
        s = self.stream(key)
        last = s.last_id if s is not None else MIN_ID
        known = self.live_ids(key) + (self.pending_ids(key, group) if group else [])
        choices = [st.builds(lambda ms, seq: f"{ms}-{seq}", st.integers(0, last.ms + 3), small)]
        if known:
            choices.append(st.sampled_from(known).map(str))
        return data.draw(st.one_of(*choices))

    # -- rules ---------------------------------------------------------------------------

    @rule(ms=st.integers(0, 3000))
    def advance_clock(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule(
        data=st.data(),
        key=keys,
        form=st.sampled_from(["*", "ms-*", "ms-seq", "ms"]),
        fields=st.lists(st.tuples(field_names, values), min_size=1, max_size=3),
        trim=st.sampled_from([None, "MAXLEN", "MINID"]),
        approx=st.booleans(),
        limit=st.none() | small,
        nomkstream=st.booleans(),
    )
    def xadd(
        self,
        data: st.DataObject,
        key: str,
        form: str,
        fields: list[tuple[str, str]],
        trim: str | None,
        approx: bool,
        limit: int | None,
        nomkstream: bool,
    ) -> None:
        s = self.stream(key)
        last = s.last_id if s is not None else MIN_ID
        ms = data.draw(st.integers(max(last.ms - 1, 0), last.ms + 2))
        sid = {"*": "*", "ms-*": f"{ms}-*", "ms": str(ms)}.get(form) or f"{ms}-{data.draw(small)}"
        argv: list[object] = ["XADD", key]
        if nomkstream:
            argv.append("NOMKSTREAM")
        if trim is not None:
            argv += [trim, "~" if approx else "="]
            argv.append(
                data.draw(st.integers(0, 8)) if trim == "MAXLEN" else self.trim_threshold(data, key)
            )
            if limit is not None and (approx or data.draw(st.integers(0, 9)) == 0):
                argv += ["LIMIT", limit]  # (with "=": Redis's syntax error, now and then)
        argv.append(sid)
        for name, value in fields:
            argv += [name, value]
        self.run(*argv)

    @rule(
        key=keys,
        rows=st.lists(
            st.lists(st.tuples(field_names, values), min_size=1, max_size=3), min_size=2, max_size=8
        ),
    )
    def xadd_many(self, key: str, rows: list[list[tuple[str, str]]]) -> None:
        """Several entries at once, so streams grow past a node or two within a short run."""
        for fields in rows:
            self.run("XADD", key, "*", *(x for pair in fields for x in pair))

    @rule(
        key=keys,
        producer=st.sampled_from(["p1", "p2"]),
        iid=st.none() | st.sampled_from(["i1", "i2", "i3", "i4"]),
        fields=st.lists(st.tuples(field_names, values), min_size=1, max_size=2),
        maxlen=st.none() | st.integers(0, 4),
    )
    def xadd_idmp(
        self,
        key: str,
        producer: str,
        iid: str | None,
        fields: list[tuple[str, str]],
        maxlen: int | None,
    ) -> None:
        """Redis 8.6's idempotent XADD (IDMP, or IDMPAUTO without an iid): a repeat within the
        window answers the first ID and appends nothing."""
        before = self.stream(key)
        length = before.length if before is not None else 0
        idmp = ["IDMP", producer, iid] if iid is not None else ["IDMPAUTO", producer]
        trim = ["MAXLEN", maxlen] if maxlen is not None else []
        pairs = [x for pair in fields for x in pair]
        known = None
        if iid is not None and before is not None and before.idmp is not None:
            before.idmp.expire(self.clock.now_ms())
            known = before.idmp.lookup(producer, iid)
        reply = self.run("XADD", key, *idmp, *trim, "*", *pairs)
        if known is not None:
            assert reply == known and self.stream(key).length == length  # type: ignore[union-attr]

    @rule(
        key=keys,
        duration=st.none() | st.integers(1, 5),
        maxsize=st.none() | st.integers(1, 3),
    )
    def xcfgset(self, key: str, duration: int | None, maxsize: int | None) -> None:
        argv: list[object] = ["XCFGSET", key]
        if duration is not None:
            argv += ["IDMP-DURATION", duration]
        if maxsize is not None:
            argv += ["IDMP-MAXSIZE", maxsize]
        self.run(*argv)

    @rule(data=st.data(), key=keys, n=st.integers(1, 3))
    def xdel(self, data: st.DataObject, key: str, n: int) -> None:
        self.run("XDEL", key, *(self.some_id(data, key) for _ in range(n)))

    @rule(data=st.data(), key=keys, n=st.integers(1, 6))
    def xdel_run(self, data: st.DataObject, key: str, n: int) -> None:
        """XDEL of up to ``n`` consecutive IDs a node holds: a node's tail, or all of it."""
        held = self.node_ids(key)
        if held:
            start = data.draw(st.integers(0, len(held) - 1))
            self.run("XDEL", key, *map(str, held[start : start + n]))

    @rule(data=st.data(), key=keys, approx=st.booleans(), limit=st.none() | small)
    def empty_a_node(self, data: st.DataObject, key: str, approx: bool, limit: int | None) -> None:
        """Issue 23's pattern: XDEL a node's last entry, then trim MINID to that ID. Exact,
        the trim flags every entry of the node deleted and Redis keeps the node."""
        s = self.stream(key)
        if s is None or not s.nodes:
            return
        node = data.draw(st.sampled_from(s.nodes[:2]))
        last = str(node.id_at(len(node) - 1))
        self.run("XDEL", key, last)
        argv: list[object] = ["XTRIM", key, "MINID", "~" if approx else "=", last]
        if limit is not None and approx:
            argv += ["LIMIT", limit]
        self.run(*argv)

    @rule(
        data=st.data(),
        key=keys,
        strategy=st.sampled_from(["MAXLEN", "MINID"]),
        approx=st.booleans(),
        limit=st.none() | small,
    )
    def xtrim(
        self, data: st.DataObject, key: str, strategy: str, approx: bool, limit: int | None
    ) -> None:
        argv: list[object] = ["XTRIM", key, strategy, "~" if approx else "="]
        argv.append(
            data.draw(st.integers(0, 8)) if strategy == "MAXLEN" else self.trim_threshold(data, key)
        )
        if limit is not None and (approx or data.draw(st.integers(0, 9)) == 0):
            argv += ["LIMIT", limit]
        self.run(*argv)

    @rule(data=st.data(), key=keys, added=st.none() | st.integers(0, 30), maxdel=st.booleans())
    def xsetid(self, data: st.DataObject, key: str, added: int | None, maxdel: bool) -> None:
        argv: list[object] = ["XSETID", key, self.some_id(data, key)]
        if added is not None:
            argv += ["ENTRIESADDED", added]
        if maxdel:
            argv += ["MAXDELETEDID", self.some_id(data, key)]
        self.run(*argv)

    @rule(
        data=st.data(),
        key=keys,
        group=groups,
        start=st.sampled_from(["$", "0", "id"]),
        mkstream=st.booleans(),
        entries_read=st.none() | st.integers(-1, 12),
    )
    def xgroup_create(
        self,
        data: st.DataObject,
        key: str,
        group: str,
        start: str,
        mkstream: bool,
        entries_read: int | None,
    ) -> None:
        sid = self.some_id(data, key) if start == "id" else start
        argv: list[object] = ["XGROUP", "CREATE", key, group, sid]
        if mkstream:
            argv.append("MKSTREAM")
        if entries_read is not None:
            argv += ["ENTRIESREAD", entries_read]
        self.run(*argv)

    @rule(
        data=st.data(),
        key=keys,
        group=groups,
        start=st.sampled_from(["$", "0", "id"]),
        entries_read=st.none() | st.integers(-1, 12),
    )
    def xgroup_setid(
        self, data: st.DataObject, key: str, group: str, start: str, entries_read: int | None
    ) -> None:
        sid = self.some_id(data, key) if start == "id" else start
        argv: list[object] = ["XGROUP", "SETID", key, group, sid]
        if entries_read is not None:
            argv += ["ENTRIESREAD", entries_read]
        self.run(*argv)

    @rule(key=keys, group=groups)
    def xgroup_destroy(self, key: str, group: str) -> None:
        self.run("XGROUP", "DESTROY", key, group)

    @rule(key=keys, group=groups, consumer=consumers, create=st.booleans())
    def xgroup_consumer(self, key: str, group: str, consumer: str, create: bool) -> None:
        sub = "CREATECONSUMER" if create else "DELCONSUMER"
        self.run("XGROUP", sub, key, group, consumer)

    @rule(
        data=st.data(),
        key=keys,
        group=groups,
        consumer=consumers,
        count=st.none() | st.integers(1, 4),
        noack=st.booleans(),
        history=st.booleans(),
    )
    def xreadgroup(
        self,
        data: st.DataObject,
        key: str,
        group: str,
        consumer: str,
        count: int | None,
        noack: bool,
        history: bool,
    ) -> None:
        argv: list[object] = ["XREADGROUP", "GROUP", group, consumer]
        if count is not None:
            argv += ["COUNT", count]
        if noack:
            argv.append("NOACK")
        after = (
            data.draw(st.sampled_from(["0", self.some_id(data, key, group)])) if history else ">"
        )
        self.run(*argv, "STREAMS", key, after)

    @rule(data=st.data(), key=keys, group=groups, n=st.integers(1, 3))
    def xack(self, data: st.DataObject, key: str, group: str, n: int) -> None:
        self.run("XACK", key, group, *(self.some_id(data, key, group) for _ in range(n)))

    @rule(
        data=st.data(),
        key=keys,
        group=groups,
        consumer=consumers,
        min_idle=st.sampled_from([0, 100, 5000]),
        options=st.lists(
            st.sampled_from(["IDLE", "TIME", "RETRYCOUNT", "FORCE", "JUSTID", "LASTID"]),
            max_size=3,
            unique=True,
        ),
    )
    def xclaim(
        self,
        data: st.DataObject,
        key: str,
        group: str,
        consumer: str,
        min_idle: int,
        options: list[str],
    ) -> None:
        ids = [self.some_id(data, key, group) for _ in range(data.draw(st.integers(1, 3)))]
        argv: list[object] = ["XCLAIM", key, group, consumer, min_idle, *ids]
        for opt in options:
            argv.append(opt)
            if opt == "IDLE":
                argv.append(data.draw(st.integers(0, 10_000)))
            elif opt == "TIME":
                argv.append(self.clock.now_ms() - data.draw(st.integers(-1000, 10_000)))
            elif opt == "RETRYCOUNT":
                argv.append(data.draw(small))
            elif opt == "LASTID":
                argv.append(self.some_id(data, key, group))
        self.run(*argv)

    @rule(
        data=st.data(),
        key=keys,
        group=groups,
        consumer=consumers,
        min_idle=st.sampled_from([0, 100, 5000]),
        count=st.none() | st.integers(1, 4),
        justid=st.booleans(),
    )
    def xautoclaim(
        self,
        data: st.DataObject,
        key: str,
        group: str,
        consumer: str,
        min_idle: int,
        count: int | None,
        justid: bool,
    ) -> None:
        start = data.draw(st.sampled_from(["0-0", self.some_id(data, key, group)]))
        argv: list[object] = ["XAUTOCLAIM", key, group, consumer, min_idle, start]
        if count is not None:
            argv += ["COUNT", count]
        if justid:
            argv.append("JUSTID")
        self.run(*argv)

    @rule(key=keys)
    def delete(self, key: str) -> None:
        self.run("DEL", key)

    # -- Redis 8 rules ---------------------------------------------------------------------

    def referenced(self, key: str) -> set[StreamID]:
        """The live entries some group still needs: pending in it, or not delivered to it."""
        s = self.stream(key)
        if s is None:
            return set()
        out = set()
        for sid in self.live_ids(key):
            for g in s.groups.values():
                if sid > g.last_id or sid in g.pel:
                    out.add(sid)
                    break
        return out

    def all_pending(self, key: str) -> set[StreamID]:
        s = self.stream(key)
        if s is None:
            return set()
        return {sid for g in s.groups.values() for sid, _ in g.pel.items()}

    def check_policy(
        self,
        key: str,
        policy: str,
        live_before: list[StreamID],
        needed: set[StreamID],
        given: list[StreamID],
        reply: Any,
    ) -> None:
        """ACKED kept every entry in ``needed``; DELREF left no PEL holding an ID it
        removed from the stream, nor one of ``given``."""
        if isinstance(reply, CommandError):
            return
        live_after = set(self.live_ids(key))
        if policy == "ACKED":
            assert needed <= live_after, ("ACKED deleted a needed entry", needed - live_after)
        if policy == "DELREF":
            gone = (set(live_before) - live_after) | set(given)
            left = gone & self.all_pending(key)
            assert not left, ("DELREF left references", left)

    def ids_block(self, data: st.DataObject, key: str, group: str | None) -> list[str]:
        ids = [self.some_id(data, key, group) for _ in range(data.draw(st.integers(1, 4)))]
        if data.draw(st.integers(0, 9)) == 0:
            ids.append(ids[0])  # a duplicate
        return ids

    @rule(data=st.data(), key=keys, policy=policies)
    def xdelex(self, data: st.DataObject, key: str, policy: str | None) -> None:
        ids = self.ids_block(data, key, data.draw(st.none() | groups))
        live, needed = self.live_ids(key), self.referenced(key)
        opt = [policy] if policy else []
        reply = self.run("XDELEX", key, *opt, "IDS", len(ids), *ids)
        self.check_policy(key, policy or "KEEPREF", live, needed, _ids(ids), reply)

    @rule(data=st.data(), key=keys, group=groups, policy=policies)
    def xackdel(self, data: st.DataObject, key: str, group: str, policy: str | None) -> None:
        ids = self.ids_block(data, key, group)
        live = self.live_ids(key)
        s = self.stream(key)
        g = s.groups.get(group) if s is not None else None
        given = [sid for sid in _ids(ids) if g is not None and sid in g.pel]
        # What another group needs, or this one has not been delivered yet: ACKED keeps it.
        needed: set[StreamID] = set()
        if s is not None:
            for sid in live:
                for other in s.groups.values():
                    if sid > other.last_id or (other.name != group and sid in other.pel):
                        needed.add(sid)
        opt = [policy] if policy else []
        reply = self.run("XACKDEL", key, group, *opt, "IDS", len(ids), *ids)
        self.check_policy(key, policy or "KEEPREF", live, needed, given, reply)

    @rule(
        data=st.data(),
        key=keys,
        strategy=st.sampled_from(["MAXLEN", "MINID"]),
        approx=st.booleans(),
        limit=st.none() | small,
        policy=st.sampled_from(["KEEPREF", "DELREF", "ACKED"]),
        via_xadd=st.booleans(),
    )
    def trim_with_policy(
        self,
        data: st.DataObject,
        key: str,
        strategy: str,
        approx: bool,
        limit: int | None,
        policy: str,
        via_xadd: bool,
    ) -> None:
        threshold = (
            data.draw(st.integers(0, 8)) if strategy == "MAXLEN" else self.trim_threshold(data, key)
        )
        clause: list[object] = [strategy, "~" if approx else "=", threshold]
        if limit is not None and approx:
            clause += ["LIMIT", limit]
        live, needed = self.live_ids(key), self.referenced(key)
        if via_xadd:
            reply = self.run("XADD", key, *clause, policy, "*", "a", "x")
        else:
            reply = self.run("XTRIM", key, *clause, policy)
        self.check_policy(key, policy, live, needed, [], reply)

    @rule(
        data=st.data(),
        key=keys,
        group=groups,
        mode=st.sampled_from(["SILENT", "FAIL", "FATAL"]),
        retry=st.none() | small,
        force=st.booleans(),
    )
    def xnack(
        self,
        data: st.DataObject,
        key: str,
        group: str,
        mode: str,
        retry: int | None,
        force: bool,
    ) -> None:
        ids = self.ids_block(data, key, group)
        argv: list[object] = ["XNACK", key, group, mode, "IDS", len(ids), *ids]
        if retry is not None:
            argv += ["RETRYCOUNT", retry]
        if force:
            argv.append("FORCE")
        s = self.stream(key)
        g = s.groups.get(group) if s is not None else None
        pending = {sid for sid, _ in g.pel.items()} if g is not None else set()
        taken = [
            sid
            for sid in _ids(ids)
            if sid in pending or (force and s is not None and s.exists(sid))
        ]
        reply = self.run(*argv)
        if g is None:
            assert isinstance(reply, CommandError) and reply.text.startswith("NOGROUP")
            return
        assert reply == len(taken), (reply, taken)
        # Each sits at the end of the FIFO, once, in the order of its last mention.
        done = list(dict.fromkeys(reversed(taken)))[::-1]
        released = g.released_ids()
        assert released[len(released) - len(done) :] == done
        for sid in done:
            p = g.pel.get(sid)
            at = 0 if g.policy is None else self.clock.now_ms()  # a policy keeps the time
            assert p is not None and p.consumer is None and p.delivered_at_ms == at
            if retry is not None:
                assert p.delivery_count == retry
            elif mode == "FATAL":
                assert p.delivery_count == 2**63 - 1

    @rule(
        key=keys,
        group=groups,
        consumer=consumers,
        min_idle=st.sampled_from([0, 100, 5000]),
        count=st.none() | st.integers(1, 4),
        noack=st.booleans(),
    )
    def xreadgroup_claim(
        self, key: str, group: str, consumer: str, min_idle: int, count: int | None, noack: bool
    ) -> None:
        argv: list[object] = ["XREADGROUP", "GROUP", group, consumer, "CLAIM", min_idle]
        if count is not None:
            argv += ["COUNT", count]
        if noack:
            argv.append("NOACK")
        s = self.stream(key)
        g = s.groups.get(group) if s is not None else None
        released = g.released_ids() if g is not None else []
        reply = self.run(*argv, "STREAMS", key, ">")
        if g is None or isinstance(reply, CommandError) or reply is None:
            return
        [read] = reply
        got = [e.id for e in read.entries]
        # Released entries come first, in FIFO order (those still in the stream).
        first = [sid for sid in released if s is not None and s.exists(sid)]
        if count is not None:
            first = first[:count]
        assert got[: len(first)] == first, (got, first)
        for sid in first:
            p = g.pel.get(sid)
            assert p is not None and p.consumer == consumer and not g.released.get(key_of(sid))

    @rule(
        key=keys,
        group=groups,
        policy=st.none()
        | st.builds(
            DeliveryPolicy,
            visibility_timeout_ms=st.none() | st.sampled_from([1, 100, 2000]),
            dead_letter_stream=st.none() | st.sampled_from(KEYS),
            backoff_ms=st.lists(st.sampled_from([0, 50, 1000]), max_size=3).map(tuple),
        ),
        max_deliveries=st.none() | st.integers(1, 3),
    )
    def set_delivery_policy(
        self, key: str, group: str, policy: DeliveryPolicy | None, max_deliveries: int | None
    ) -> None:
        """A policy (or none) on a group: every later ``>`` read and XNACK follows it, and
        the dead-letter stream is one of the machine's keys, so its reads are checked too."""
        if policy is not None and policy.dead_letter_stream is not None and max_deliveries:
            policy = dataclasses.replace(policy, max_deliveries=max_deliveries)
        s = self.stream(key)
        dead = policy.dead_letter_stream if policy is not None else None
        try:
            self.store.run(set_policy, key, group, policy)
        except CommandError as e:
            same = dead == key
            back = isinstance(e, Conflict) and dead is not None and self.reaches(dead, key)
            assert isinstance(e, NoGroup) or same or back, e
            return
        assert s is not None and s.groups[group].policy == policy
        assert dead is None or not self.reaches(dead, key)  # no cycle of dead letters, ever

    def reaches(self, start: str, goal: str) -> bool:
        """Whether dead letters in ``start`` can reach ``goal`` through the policies of the
        groups on the way (the machine's own walk, depth first)."""
        todo, seen = [start], set()
        while todo:
            name = todo.pop()
            if name == goal:
                return True
            s = self.stream(name)
            if name in seen or s is None:
                continue
            seen.add(name)
            for g in s.groups.values():
                if g.policy is not None and g.policy.dead_letter_stream is not None:
                    todo.append(g.policy.dead_letter_stream)
        return False

    @rule(
        key=keys,
        group=groups,
        name=st.sampled_from(["h1", "h2"]),
        paused=st.booleans(),
        remove=st.booleans(),
    )
    def webhook(self, key: str, group: str, name: str, paused: bool, remove: bool) -> None:
        """A webhook set (paused or not) or removed: kept with its group, so replay and a
        snapshot must bring it back, and it goes with the group (XGROUP DESTROY, DEL)."""
        s = self.stream(key)
        g = s.groups.get(group) if s is not None else None
        try:
            if remove:
                self.store.run(delete_webhook, key, group, name)
            else:
                hook = Webhook(key, group, name, "https://hooks.example/x", WEBHOOK_SECRET)
                self.store.run(set_webhook, dataclasses.replace(hook, paused=paused))
        except NoGroup:
            assert g is None
            return
        assert g is not None
        assert (name in g.webhooks) is not remove

    @rule(key=keys, group=groups, consumer=consumers, count=st.none() | st.integers(1, 4))
    def policy_read(self, key: str, group: str, consumer: str, count: int | None) -> None:
        """A ``>`` read of a policy group: what it answers first is due pending entries,
        each now the reader's; what it dead-letters leaves the group."""
        s = self.stream(key)
        g = s.groups.get(group) if s is not None else None
        if g is None or g.policy is None:
            return
        before = {sid for sid, _ in g.pel.items()}
        last = g.last_id
        argv: list[object] = ["XREADGROUP", "GROUP", group, consumer]
        if count is not None:
            argv += ["COUNT", count]
        reply = self.run(*argv, "STREAMS", key, ">")
        if isinstance(reply, CommandError) or reply is None:
            return
        got = [e.id for read in reply for e in read.entries]
        if count is not None:
            assert len(got) <= count
        for sid in got:
            p = g.pel.get(sid)
            assert p is not None and p.consumer == consumer
            assert p.delivered_at_ms == self.clock.now_ms()
        # Some split puts due pending entries first and new ones (after last-delivered, in
        # order) after them; a new entry may be pending already after XGROUP SETID.
        assert any(
            all(sid in before for sid in got[:i])
            and all(sid > last for sid in got[i:])
            and got[i:] == sorted(got[i:])
            for i in range(len(got) + 1)
        ), ("due entries come before new ones", got, before, last)

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def every_read_agrees(self) -> None:
        for key in list(self.store.keyspace.streams):
            check_reads(self.store, key, self.config)

    @invariant()
    def streams_are_consistent(self) -> None:
        for key, s in self.store.keyspace.streams.items():
            live = self.live_ids(key)
            assert s.length == len(live), (key, s.length, live)
            assert live == sorted(set(live)), "live entries out of order or repeated"
            info = self.store.execute(["XINFO", "STREAM", key])
            assert isinstance(info, StreamInfo)
            assert info.header.length == len(live)
            assert info.header.entries_added >= len(live)
            if live:
                assert info.first_entry is not None and info.first_entry.id == live[0]
                assert info.last_entry is not None and info.last_entry.id == live[-1]
                assert info.header.recorded_first_entry_id == live[0]
                assert live[-1] <= info.header.last_generated_id
            else:
                assert info.first_entry is None and info.last_entry is None
            # (max-deleted-entry-id may exceed last-generated-id: XSETID on an empty stream
            # checks the new last ID only against a MAXDELETEDID given with it, as Redis does.)
            self._check_nodes(s)

    def _check_nodes(self, s: Stream) -> None:
        """Node sizes within node-max-entries / node-max-bytes, as Redis builds listpacks."""
        max_entries, max_bytes = self.config.node_max_entries, self.config.node_max_bytes
        assert [n.id_at(0) for n in s.nodes] == s.firsts
        for node in s.nodes:
            n = len(node)
            ids = node.ids()
            rows = [node.fields_at(i) for i in range(n)]
            deleted = [node.is_deleted(i) for i in range(n)]
            assert n >= 1, "a node without entries was kept"
            assert node.live == deleted.count(False) and node.ndeleted == deleted.count(True)
            assert node.live + node.ndeleted == n
            assert node.live_ids() == [sid for sid, d in zip(ids, deleted, strict=True) if not d]
            if max_entries:
                assert n <= max_entries, (n, max_entries)
            if n > 1:
                # Rebuilt without its last entry, the node had room for that entry's bytes
                # (with fewer than 128 entries, deletions leave the modelled size as it is).
                before = Node(ids[0], rows[0])
                for sid, fields in zip(ids[:-1], rows[:-1], strict=True):
                    before.append(sid, fields)
                added = sum(byte_len(x) for x in rows[-1])
                assert before.lp_bytes + added < max_bytes, (before.lp_bytes, added, max_bytes)

    @invariant()
    def groups_are_consistent(self) -> None:
        for key, s in self.store.keyspace.streams.items():
            info = self.store.execute(["XINFO", "STREAM", key])
            assert isinstance(info, StreamInfo)
            rows = self.store.execute(["XINFO", "GROUPS", key])
            assert isinstance(rows, list)
            for row in rows:
                assert isinstance(row, GroupInfo)
                g = s.groups[row.name]
                owned: dict[int, str] = {}
                for c in g.consumers.values():
                    for pk in c.pel:
                        assert pk not in owned, f"{sid_of(pk)} owned by {owned[pk]} and {c.name}"
                        owned[pk] = c.name
                        p = g.pel.lookup(pk)
                        assert p is not None and p.consumer == c.name
                pel = g.pel.items()
                unowned = {key_of(sid) for sid, p in pel if p.consumer is None}
                assert set(g.released) == unowned, "released != the unowned pending entries"
                assert len(g.released) == len(set(g.released))
                assert set(owned) | unowned == {key_of(sid) for sid, _ in pel}, (
                    "group PEL != union of consumer PELs and released entries"
                )
                assert not set(owned) & unowned
                assert row.pending == len(g.pel) and row.consumers == len(g.consumers)
                assert row.lag == redis_lag(info, row, self.live_ids(key)), (info, row)

    @invariant()
    def replay_and_snapshot_rebuild_the_state(self) -> None:
        expected = encode_snapshot(self.store.snapshot_view())
        # Read at the machine's time: XINFO counts the IDMP iids live now.
        now = self.clock.now_ms()
        replayed = Store(clock=ManualClock(now), config=self.config)
        replayed.restore(None, (decode_record(encode_record(r)) for r in self.sink.records))
        assert encode_snapshot(replayed.snapshot_view()) == expected
        loaded = Store(clock=ManualClock(now), config=self.config)
        loaded.restore(expected, [])
        assert encode_snapshot(loaded.snapshot_view()) == expected
        for key, s in self.store.keyspace.streams.items():
            for name, g in s.groups.items():
                for other in (replayed, loaded):
                    h = other.keyspace.streams[key].groups[name]
                    assert h.released_ids() == g.released_ids()
                    assert list(h.pel.items_by_key()) == list(g.pel.items_by_key())
        for key in KEYS:
            for argv in (["XINFO", "STREAM", key, "FULL"], ["XINFO", "GROUPS", key]):
                want = repr(_reply(self.store, argv))
                assert repr(_reply(replayed, argv)) == want
                assert repr(_reply(loaded, argv)) == want


def _ids(texts: list[str]) -> list[StreamID]:
    """The IDs among ``texts`` that parse (an incomplete one as its ``-0`` form)."""
    out = []
    for t in texts:
        with contextlib.suppress(CommandError):
            out.append(parse_strict_id(t))
    return out


def _reply(store: Store, argv: list[str]) -> Any:
    try:
        return store.execute(argv)
    except CommandError as e:
        return e.text


def redis_lag(info: StreamInfo, group: GroupInfo, live: list[StreamID]) -> int | None:
    """XINFO's lag by Redis 7.0's ``streamReplyWithCGLag``, from what XINFO shows."""
    added, length = info.header.entries_added, info.header.length
    first = live[0] if live else MIN_ID
    last, max_deleted = info.header.last_generated_id, info.header.max_deleted_entry_id

    def has_tombstones(start: StreamID) -> bool:  # streamRangeHasTombstones(s, start, NULL)
        if not length or max_deleted == MIN_ID or first > max_deleted:
            return False
        return start <= max_deleted

    def estimate(sid: StreamID) -> int | None:  # streamEstimateDistanceFromFirstEverEntry
        if not added:
            return 0
        if not length and sid <= last:
            return added
        if sid == last:
            return added
        if sid > last:
            return None
        if max_deleted == MIN_ID or max_deleted < first:
            if sid < first:
                return added - length
            if sid == first:
                return added - length + 1
        return None

    if not added:
        return 0
    if group.entries_read is not None and not has_tombstones(group.last_delivered_id):
        return added - group.entries_read
    read = estimate(group.last_delivered_id)
    return None if read is None else added - read


EngineMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_engine_invariants = EngineMachine.TestCase


class LongEngineMachine(EngineMachine):
    """The same machine with more and longer runs (``pytest -m slow``; ~1-2 min)."""


LongEngineMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_engine_invariants_long = pytest.mark.slow(pytest.mark.timeout(600)(LongEngineMachine.TestCase))
