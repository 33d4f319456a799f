"""DUMP and RESTORE against redis-server 7.0: payloads cross both ways, and the streams they
carry answer alike.

redis-server's DUMP restored in xstreams, and xstreams's DUMP restored in redis-server, must
give the same XINFO STREAM FULL (delivery and seen times included: they travel in the
payload; only the radix tree's inner node count is Redis's own), XPENDING and XRANGE; and the
same stream keeps growing and trimming alike, which shows the nodes kept their sizes.
Payloads are bytes: redis-py sends them raw to redis-server, and xstreams gets them as JSON
with each byte that is not UTF-8 as ``\\udcNN`` (replies read back the same way).
"""

from __future__ import annotations

import base64
import json
import socket
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from app.engine.ids import StreamID
from app.engine.rdb import dump_stream, load_stream
from app.engine.rdbio import crc64, seal
from app.engine.stream import Stream
from tests.conftest import ReplyError
from tests.differential.support import mask
from tests.engine.payloads import LEGACY_RDB9

pytestmark = pytest.mark.redis

BIN = b"\xff\x00\xc3\xa9\x80"
GROUP_BIN, CONSUMER_BIN = b"g\xfe", b"\xc3\x28"
Command = tuple[bytes | str, ...]


def as_text(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, list):
        return [as_text(v) for v in value]
    return value


class RawResp:
    """RESP2 over a socket with bytes kept: replies as bytes / int / None / list, errors as
    ``ReplyError`` with their code (redis-py drops the ``ERR`` of some)."""

    def __init__(self, host: str, port: int, db: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.file = self.sock.makefile("rb")
        assert self.execute_command("SELECT", db) == b"OK"

    def execute_command(self, *args: bytes | str | int) -> Any:
        parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        out = [b"*%d\r\n" % len(parts)]
        out += [b"$%d\r\n%s\r\n" % (len(p), p) for p in parts]
        self.sock.sendall(b"".join(out))
        return self._read()

    def _read(self) -> Any:
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest
        if kind == b"-":
            return ReplyError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise ConnectionError(f"unexpected RESP line {line!r}")

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@pytest.fixture
def raw_redis(real_redis: Any) -> Iterator[RawResp]:
    """redis-server on the tests' database, bytes in and bytes out."""
    kw = real_redis.connection_pool.connection_kwargs
    client = RawResp(kw["host"], kw["port"], kw["db"])
    yield client
    client.close()


class Both:
    """One command line to redis-server (raw bytes) and to xstreams (JSON, ``\\udcNN``)."""

    def __init__(self, rr: RawResp, xs: Any) -> None:
        self.rr, self.xs = rr, xs

    def redis(self, *args: bytes | str | int) -> Any:
        return as_text(self.rr.execute_command(*args))

    def xstreams(self, *args: bytes | str | int, b64: bool = False) -> Any:
        argv = [as_text(a) if isinstance(a, bytes) else str(a) for a in args]
        headers = {"Upstash-Encoding": "base64"} if b64 else {}
        r = self.xs.client.post("/", content=json.dumps(argv).encode(), headers=headers)
        doc = r.json()
        if "error" in doc:
            return ReplyError(doc["error"])
        return doc["result"]

    def both(self, *args: bytes | str | int) -> None:
        expected, actual = self.redis(*args), self.xstreams(*args)
        assert not isinstance(expected, ReplyError), (args, expected)
        assert actual == expected, (args, expected, actual)

    def dump_xstreams(self, key: str) -> bytes:
        return base64.b64decode(self.xstreams("DUMP", key, b64=True))


@pytest.fixture
def both(raw_redis: RawResp, xs: Any) -> Both:
    return Both(raw_redis, xs)


def _inner_nodes(reply: Any) -> Any:
    """XINFO STREAM's reply with ``radix-tree-nodes`` (the rax's inner layout) masked."""
    out = list(reply)
    out[out.index("radix-tree-nodes") + 1] = None
    return out


def _views(key: str, groups: list[bytes | str]) -> list[Command]:
    out: list[Command] = [
        ("XRANGE", key, "-", "+"),
        ("XREVRANGE", key, "+", "-", "COUNT", "3"),
        ("XLEN", key),
        ("XINFO", "GROUPS", key),
    ]
    for g in groups:
        out += [
            ("XPENDING", key, g),
            ("XPENDING", key, g, "-", "+", "1000"),
            ("XINFO", "CONSUMERS", key, g),
        ]
    return out


def same_stream(
    both: Both, rkey: str, xkey: str, groups: list[bytes | str], *, times: bool = True
) -> None:
    """Redis's ``rkey`` and xstreams's ``xkey`` hold the same stream: FULL to the letter
    but for the rax's inner node count (delivery and seen times too, unless ``times`` is
    False: each side's own clock stamped some), the rest masked only where the clock moves."""
    full = ("XINFO", "STREAM", "{}", "FULL", "COUNT", "0")
    expected = both.redis(*(a.format(rkey) for a in full))
    actual = both.xstreams(*(a.format(xkey) for a in full))
    if times:
        assert _inner_nodes(actual) == _inner_nodes(expected)
    else:
        assert mask(full, actual) == mask(full, expected)
        nodes = "radix-tree-keys"  # how many nodes: where appends split and trims cut
        assert actual[actual.index(nodes) + 1] == expected[expected.index(nodes) + 1]
    for args in _views("{}", groups):
        r_args = tuple(a.format(rkey) if isinstance(a, str) else a for a in args)
        x_args = tuple(a.format(xkey) if isinstance(a, str) else a for a in args)
        text_args = tuple(as_text(list(r_args)))
        expected, actual = both.redis(*r_args), both.xstreams(*x_args)
        assert mask(text_args, actual) == mask(text_args, expected), (args, expected, actual)


def grow(run: Callable[..., Any], key: str) -> None:
    """The same later writes: node boundaries decide what ``~`` trimming removes."""
    run("XADD", key, "MAXLEN", "~", "150", "99999-1", "f", "z" * 200)
    run("XADD", key, "MAXLEN", "~", "120", "99999-2", "f", "z")
    run("XREADGROUP", "GROUP", "g1", "late", "COUNT", "3", "STREAMS", key, ">")


def build(run: Callable[..., Any], key: str = "s") -> list[bytes | str]:
    """Several nodes (by count and by bytes), tombstones, mixed fields, integers, bytes
    that are not UTF-8, groups with pending entries and consumers. Returns the groups."""
    for i in range(1, 260):
        if i % 37 == 0:
            run("XADD", key, f"{i}-1", "other", BIN, BIN, str(-i * 1000), "n", "x" * 900)
        else:
            run("XADD", key, f"{i}-1", "f", f"v{i}", "n", str(i * 97 - 5000), "big", "9" * 21)
    for i in (1, 2, 3, 50, 51, 120, 258):
        run("XDEL", key, f"{i}-1")
    run("XGROUP", "CREATE", key, "g1", "0")
    run("XGROUP", "CREATE", key, GROUP_BIN, "100-1", "ENTRIESREAD", "7")
    run("XGROUP", "CREATE", key, "123", "$")
    run("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "30", "STREAMS", key, ">")
    run("XREADGROUP", "GROUP", "g1", CONSUMER_BIN, "COUNT", "20", "STREAMS", key, ">")
    run("XREADGROUP", "GROUP", GROUP_BIN, "bob", "COUNT", "5", "STREAMS", key, ">")
    run("XGROUP", "CREATECONSUMER", key, "g1", "idle")
    run("XCLAIM", key, "g1", "idle", "0", "10-1", "11-1", "RETRYCOUNT", "9")
    run("XACK", key, "g1", "12-1", "13-1")
    return ["g1", GROUP_BIN, "123"]


def test_redis_dump_restores_in_xstreams(both: Both) -> None:
    groups = build(both.redis)
    payload = both.rr.execute_command("DUMP", "s")
    assert both.xstreams("RESTORE", "s", "0", payload) == "OK"
    same_stream(both, "s", "s", groups)
    grow(both.both, "s")
    same_stream(both, "s", "s", groups, times=False)


def test_xstreams_dump_restores_in_redis(both: Both) -> None:
    groups = build(both.xstreams)
    build(both.redis, "built")
    payload = both.dump_xstreams("s")
    assert both.redis("RESTORE", "s", "0", payload) == "OK"
    same_stream(both, "s", "s", groups)
    # What redis-server built itself is the same stream but for the clock's values.
    for args in _views("{}", groups):
        r_args = tuple(a.format("built") if isinstance(a, str) else a for a in args)
        x_args = tuple(a.format("s") if isinstance(a, str) else a for a in args)
        assert mask(tuple(as_text(list(r_args))), both.redis(*r_args)) == mask(
            tuple(as_text(list(x_args))), both.xstreams(*x_args)
        ), args
    grow(both.both, "s")
    same_stream(both, "s", "s", groups, times=False)
    # redis-server's DUMP of what it restored comes back to the same stream here.
    again = both.rr.execute_command("DUMP", "s")
    assert both.xstreams("RESTORE", "t", "0", again) == "OK"
    same_stream(both, "s", "t", groups)


def test_small_and_empty_streams_cross_both_ways(both: Both) -> None:
    for run in (both.redis, both.xstreams):
        run("XGROUP", "CREATE", "empty", "g", "$", "MKSTREAM")
        run("XADD", "one", "5-5", "f", "1")
        run("XADD", "gone", "1-1", "f", "v")
        run("XDEL", "gone", "1-1")
        run("XADD", "set", "1-1", "f", "v")
        run("XSETID", "set", "99-0", "ENTRIESADDED", "50", "MAXDELETEDID", "10-0")
        run("XGROUP", "CREATE", "set", "g", "5-0")
    for key in ("empty", "one", "gone", "set"):
        groups: list[bytes | str] = ["g"] if key in ("empty", "set") else []
        payload = both.rr.execute_command("DUMP", key)
        assert both.xstreams("RESTORE", f"{key}-r", "0", payload) == "OK"
        same_stream(both, key, f"{key}-r", groups)
        assert both.redis("RESTORE", f"{key}-x", "0", both.dump_xstreams(key)) == "OK"
        same_stream(both, f"{key}-x", key, groups)


def test_the_legacy_rdb9_payload_restores_as_in_redis(both: Both) -> None:
    both.both("RESTORE", "x", "0", LEGACY_RDB9)
    same_stream(both, "x", "x", ["g1", "g2"])
    full = both.xstreams("XINFO", "STREAM", "x", "FULL")
    g1, g2 = full[full.index("groups") + 1]
    assert (g1[g1.index("entries-read") + 1], g1[g1.index("lag") + 1]) == (1, 1)
    assert (g2[g2.index("entries-read") + 1], g2[g2.index("lag") + 1]) == (0, 2)


def _damaged(payload: bytes) -> list[bytes]:
    """Damage redis-server's own loader refuses before it builds anything (never a listpack
    damaged inside: redis-server's default shallow check may take that and crash later)."""
    body = payload[:-10]
    flipped = bytearray(payload)
    flipped[len(payload) // 2] ^= 0x40
    newer = body + struct.pack("<H", 11)
    return [
        bytes(flipped),
        payload[:-1],
        payload[:9],
        b"",
        newer + struct.pack("<Q", crc64(newer)),
        seal(body[:20]),
        seal(b"\x08"),
        seal(b"\x15" + body[1:]),
        seal(b"\x13" + b"\xff" * 20),
    ]


def test_refusals_are_redis_s_and_change_nothing(both: Both) -> None:
    for run in (both.redis, both.xstreams):
        run("XADD", "s", "1-1", "f", "v")
        run("XGROUP", "CREATE", "s", "g", "0")
    payload = both.rr.execute_command("DUMP", "s")
    cases: list[Command] = [
        ("RESTORE", "s", "0", payload),
        ("RESTORE", "s", "-1", payload, "REPLACE"),
        ("RESTORE", "t", "x", payload),
        ("RESTORE", "t", "0", payload, "NOPE"),
        ("RESTORE", "t", "0", payload, "IDLETIME", "-1"),
        ("RESTORE", "t", "0", payload, "IDLETIME", "x"),
        ("RESTORE", "t", "0", payload, "FREQ", "256"),
        ("RESTORE", "t", "0", payload, "FREQ", "1", "IDLETIME", "1"),
        ("RESTORE", "t", "0", payload, "REPLACE", "FREQ"),
        ("RESTORE", "t", "0"),
        ("DUMP",),
        ("DUMP", "a", "b"),
    ]
    for bad in _damaged(payload):
        cases += [("RESTORE", "t", "0", bad), ("RESTORE", "s", "0", bad, "REPLACE")]
    for args in cases:
        expected, actual = both.redis(*args), both.xstreams(*args)
        assert isinstance(expected, ReplyError), (args, expected)
        assert actual == expected, (args, expected, actual)
    both.both("EXISTS", "t")
    same_stream(both, "s", "s", ["g"])
    both.both("DUMP", "missing")
    both.both("RESTORE", "t", "0", payload, "REPLACE", "ABSTTL", "IDLETIME", "10")
    both.both("RESTORE", "u", "0", payload, "FREQ", "0")
    both.both("RESTORE", "s", "1", payload, "ABSTTL", "REPLACE")  # long expired: deleted
    both.both("EXISTS", "s", "t", "u")


def test_another_type_is_refused_and_a_ttl_too(both: Both) -> None:
    both.rr.execute_command("SET", "str", "abc")
    string_payload = both.rr.execute_command("DUMP", "str")
    reply = both.xstreams("RESTORE", "k", "0", string_payload)
    assert isinstance(reply, ReplyError) and "string" in str(reply)
    both.redis("XADD", "s", "1-1", "f", "v")
    payload = both.rr.execute_command("DUMP", "s")
    reply = both.xstreams("RESTORE", "k", "60000", payload)
    assert isinstance(reply, ReplyError) and "expiry" in str(reply)
    assert both.xstreams("EXISTS", "k") == 0


# -- counters at the edge of their C types ---------------------------------------------------

U64_MAX, I64_MAX, I64_MIN = (1 << 64) - 1, (1 << 63) - 1, -(1 << 63)


def _pending(delivered_at_ms: int | None = None, count: int | None = None) -> Edit:
    def edit(s: Stream) -> None:
        g = s.groups["g"]
        p = g.pel.get(StreamID(1, 0))
        assert p is not None
        at = p.delivered_at_ms if delivered_at_ms is None else delivered_at_ms
        g.set_pending(
            StreamID(1, 0), g.consumers["c"], at, p.delivery_count if count is None else count
        )

    return edit


def _counters(entries_added: int, entries_read: int | None = 1) -> Edit:
    def edit(s: Stream) -> None:
        s.entries_added = entries_added
        s.groups["g"].entries_read = entries_read

    return edit


def _seen(seen_time_ms: int) -> Edit:
    def edit(s: Stream) -> None:
        s.groups["g"].consumers["c"].seen_time_ms = seen_time_ms

    return edit


Edit = Callable[["Stream"], None]
PENDING = ("XPENDING", "t", "g", "-", "+", "10")
CLAIM = ("XCLAIM", "t", "g", "c2", "0", "1-0")
AUTOCLAIM = ("XAUTOCLAIM", "t", "g", "c2", "0", "0")
READ_NEW = ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "t", ">")
READ_OWN = ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "t", "0")
ADD = ("XADD", "t", "3-0", "a", "3")
EDGES: list[tuple[str, Edit, list[Command]]] = [
    ("delivery count 2**64-1, XCLAIM", _pending(count=U64_MAX), [CLAIM]),
    ("delivery count 2**64-1, XCLAIM JUSTID", _pending(count=U64_MAX), [(*CLAIM, "JUSTID")]),
    ("delivery count 2**64-1, XAUTOCLAIM", _pending(count=U64_MAX), [AUTOCLAIM]),
    ("delivery count 2**64-1, XREADGROUP 0", _pending(count=U64_MAX), [READ_OWN]),
    ("delivery count 2**63-1, XCLAIM", _pending(count=I64_MAX), [CLAIM]),
    ("entries_added 2**64-1, XADD", _counters(U64_MAX), [ADD, READ_NEW]),
    ("entries_added 2**63-1, XADD", _counters(I64_MAX), [ADD]),
    ("entries_read 2**63-1, XREADGROUP", _counters(5, I64_MAX), [READ_NEW]),
    ("ENTRIESREAD and ENTRIESADDED 2**63-1", _counters(5), [
        ("XGROUP", "SETID", "t", "g", "0", "ENTRIESREAD", str(I64_MAX)),
        READ_NEW,
        ("XSETID", "t", "2-0", "ENTRIESADDED", str(I64_MAX)),
        ADD,
    ]),
    ("delivery time -2**63", _pending(delivered_at_ms=I64_MIN), [
        ("XPENDING", "t", "g", "IDLE", "5", "-", "+", "10"),
        ("XAUTOCLAIM", "t", "g", "c2", "1000", "0"),
        ("XCLAIM", "t", "g", "c2", "1000", "1-0"),
        (*CLAIM, "JUSTID"),
    ]),
    ("delivery time 2**63-1", _pending(delivered_at_ms=I64_MAX), [
        ("XAUTOCLAIM", "t", "g", "c2", "1000", "0"),
        (*CLAIM, "IDLE", str(I64_MIN)),
    ]),
    ("seen time -2**63", _seen(I64_MIN), [("XINFO", "CONSUMERS", "t", "g")]),
    ("seen time 2**63-1", _seen(I64_MAX), [("XINFO", "CONSUMERS", "t", "g")]),
]  # fmt: skip


def _edge_views() -> list[Command]:
    return [("XINFO", "STREAM", "t"), ("XINFO", "GROUPS", "t"), ("XPENDING", "t", "g"), PENDING]


@pytest.mark.parametrize(("edit", "commands"), [c[1:] for c in EDGES], ids=[c[0] for c in EDGES])
def test_counters_at_their_edge_wrap_as_in_redis(
    both: Both, edit: Edit, commands: list[Command]
) -> None:
    """A payload whose counters sit at the edge of their C types (built here with the
    project's own RDB writer from redis-server's DUMP) restores alike, and the commands that
    move them past it leave both sides showing the same integers: counters wrap as Redis's
    do, every integer shown fits 64 bits, and xstreams's DUMP of the result carries the same
    values back into redis-server."""
    both.redis("XADD", "s", "1-0", "a", "1")
    both.redis("XADD", "s", "2-0", "a", "2")
    both.redis("XGROUP", "CREATE", "s", "g", "0")
    both.redis("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    stream = load_stream(both.rr.execute_command("DUMP", "s"), 100, 4096)
    edit(stream)
    payload = dump_stream(stream)
    assert both.redis("RESTORE", "t", "0", payload) == "OK"
    assert both.xstreams("RESTORE", "t", "0", payload) == "OK"
    same_stream(both, "t", "t", ["g"])
    for args in commands + _edge_views():
        text = tuple(as_text(list(args)))
        expected, actual = both.redis(*args), both.xstreams(*args)
        assert not isinstance(expected, ReplyError), (args, expected)
        assert mask(text, actual) == mask(text, expected), (args, expected, actual)
        assert all(I64_MIN <= n <= U64_MAX for n in _integers(actual)), (args, actual)
    dumped = both.xstreams("DUMP", "t", b64=True)
    assert isinstance(dumped, str), dumped
    assert both.redis("RESTORE", "back", "0", base64.b64decode(dumped)) == "OK"
    same_stream(both, "back", "t", ["g"])


def _integers(reply: Any) -> Iterator[int]:
    if isinstance(reply, int):
        yield reply
    elif isinstance(reply, list):
        for item in reply:
            yield from _integers(item)
