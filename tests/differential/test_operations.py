"""INFO, CONFIG GET / SET / RESETSTAT and RENAME / RENAMENX against redis-server.

CONFIG SET changes a whole server, and INFO's ``blocked_clients`` counts every client of it,
so these tests use a redis-server of their own (started here on a free port, never the shared
one) as the reference; the xstreams side is the session's server, whose node limits are set
back to Redis's defaults after each test.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from tests.conftest import REQUIRE_SERVICES, ReplyError, free_port
from tests.differential.exact import ExactPair
from tests.support.waiting import until

pytestmark = pytest.mark.redis

PREFIX = "ERR CONFIG SET failed (possibly related to argument"


@pytest.fixture(scope="module")
def own_redis() -> Iterator[int]:
    """A private redis-server (no persistence) for tests that change server-wide state."""
    binary = shutil.which("redis-server")
    if binary is None:
        msg = "redis-server is not installed"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(msg)
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)

    def answers() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    until(answers, what="redis-server answering PING")
    client.close()
    yield port
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def ops(own_redis: int, xs_session: Any) -> Iterator[ExactPair]:
    """Both sides flushed, stats reset and node limits at Redis's defaults, before and after."""
    rr = redis.Redis(port=own_redis, decode_responses=True)
    p = ExactPair(xs_session, rr)

    def reset() -> None:
        for side in (p.resp, p.xs):
            assert side("FLUSHALL") == "OK"
            limits = ("stream-node-max-entries", "100", "stream-node-max-bytes", "4096")
            assert side("CONFIG", "SET", *limits) == "OK"
            assert side("CONFIG", "RESETSTAT") == "OK"

    reset()
    yield p
    reset()
    p.close()
    rr.close()


def info_fields(text: str) -> dict[str, str]:
    out = {}
    for line in text.split("\r\n"):
        if line and not line.startswith("#"):
            key, _, value = line.partition(":")
            out[key] = value
    return out


# --- CONFIG --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "patterns",
    [
        ["stream-node-max-entries"],
        ["STREAM-NODE-MAX-BYTES"],
        ["stream-node-max-*"],
        ["stream-node-max-entries", "stream-node-max-entries"],
        ["stream-node-max-entries", "STREAM-node-*"],
        ["stream-node-max-[eb]*"],
        ["no-such-parameter"],
    ],
)
def test_config_get_shapes(ops: ExactPair, patterns: list[str]) -> None:
    """Pairs of name and value, patterns matched without case, each parameter once; a name
    without glob characters comes back as it was asked."""
    expected, actual = ops.both("CONFIG", "GET", *patterns)
    assert dict(zip(actual[::2], actual[1::2], strict=True)) == dict(
        zip(expected[::2], expected[1::2], strict=True)
    )
    assert len(actual) == len(expected)


@pytest.mark.parametrize(
    "args",
    [
        ["stream-node-max-entries", "abc"],
        ["stream-node-max-entries", "-1"],
        ["stream-node-max-entries", "007"],
        ["stream-node-max-entries", "9223372036854775808"],
        ["stream-node-max-bytes", "-1"],
        ["stream-node-max-bytes", "1.5kb"],
        ["stream-node-max-bytes", "18446744073709551615"],
        ["stream-node-max-bytes", "9007199254740993kb"],
        ["no-such-parameter", "1"],
        ["stream-node-max-entries", "5", "stream-node-max-entries", "6"],
        ["stream-node-max-entries", "5", "no-such-parameter", "6"],
        ["stream-node-max-entries", "5", "stream-node-max-bytes", "x"],
        ["stream-node-max-entries", "5", "stream-node-max-bytes"],
        ["stream-node-max-entries"],
    ],
)
def test_config_set_refusals(ops: ExactPair, args: list[str]) -> None:
    """Redis's words, and nothing set when any pair is refused."""
    ops.err("CONFIG", "SET", *args)
    ops("CONFIG", "GET", "stream-node-max-entries")
    ops("CONFIG", "GET", "stream-node-max-bytes")


@pytest.mark.parametrize(
    "value", ["0", "1", "4kb", "1K", "2Gb", "1b", "", "9223372036854775807", "4096"]
)
def test_config_set_memory_values(ops: ExactPair, value: str) -> None:
    assert ops("CONFIG", "SET", "stream-node-max-bytes", value) == "OK"
    ops("CONFIG", "GET", "stream-node-max-bytes")


@pytest.mark.parametrize(
    ("entries", "node_bytes", "maxlen"),
    [("2", "4096", "5"), ("10", "4096", "25"), ("0", "100", "7"), ("100", "0", "150")],
)
def test_node_limits_decide_approximate_trimming(
    ops: ExactPair, entries: str, node_bytes: str, maxlen: str
) -> None:
    """After CONFIG SET on both, appends fill nodes of the new size, so `~` trimming removes
    exactly what redis-server removes; nodes written before keep their size."""
    ops.fill("old", 30, "field", "value")
    assert (
        ops(
            "CONFIG", "SET", "stream-node-max-entries", entries, "stream-node-max-bytes", node_bytes
        )
        == "OK"
    )
    ops.fill("s", 200, "field", "value")
    ops.fill("old", 30, "field", "value", start=31)
    ops("XTRIM", "s", "MAXLEN", "~", maxlen)
    ops("XTRIM", "old", "MAXLEN", "~", "25")
    ops("XINFO", "STREAM", "s")
    ops("XINFO", "STREAM", "old")
    ops("XADD", "s", "MAXLEN", "~", maxlen, "999-0", "f", "v")
    ops("XLEN", "s")


def test_config_resetstat_and_info_stats(ops: ExactPair) -> None:
    """Errors and calls are counted by command and by error code; RESETSTAT zeroes them."""
    ops.fill("s", 3)
    ops.err("XADD", "s", "1-0", "f", "v")
    ops.err("XGROUP", "CREATE", "s", "g", "$", "$")
    ops.err("XREADGROUP", "GROUP", "nogroup", "c", "STREAMS", "s", ">")
    ops.err("XLEN")
    for section in ("errorstats",):
        expected, actual = ops.both("INFO", section)
        assert info_fields(actual) == info_fields(expected)
    expected, actual = ops.both("INFO", "stats")
    for field in ("total_error_replies",):
        assert info_fields(actual)[field] == info_fields(expected)[field]
    expected, actual = ops.both("INFO", "commandstats")
    want, got = info_fields(expected), info_fields(actual)
    for name in ("cmdstat_xadd", "cmdstat_xlen", "cmdstat_xreadgroup"):
        calls = {
            k: v for k, v in (kv.split("=") for kv in want[name].split(",")) if "usec" not in k
        }
        mine = {k: v for k, v in (kv.split("=") for kv in got[name].split(",")) if "usec" not in k}
        assert mine == calls, name
    assert ops("CONFIG", "RESETSTAT") == "OK"
    expected, actual = ops.both("INFO", "errorstats")
    assert info_fields(actual) == info_fields(expected) == {}


# --- INFO ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [[], ["all"], ["everything"], ["default"], ["clients"], ["CLIENTS", "keyspace"], ["nope"]],
)
def test_info_sections(ops: ExactPair, args: list[str]) -> None:
    """The same section titles, in the same order, and Redis's text format."""
    ops.fill("s", 2)
    expected, actual = ops.both("INFO", *args)
    titles = [line for line in expected.split("\r\n") if line.startswith("# ")]
    mine = [line for line in actual.split("\r\n") if line.startswith("# ")]
    # Redis lists sections xstreams has no part of (modules, latency percentiles).
    ignored = {"# Modules", "# Latencystats"}
    assert mine == [t for t in titles if t not in ignored]
    assert actual.endswith("\r\n") or actual == expected == ""
    for field in ("redis_version", "blocked_clients", "db0", "role", "cluster_enabled"):
        if field + ":" in expected:
            assert field + ":" in actual, field


# --- RENAME and blocked readers ------------------------------------------------------------


def test_rename_and_renamenx(ops: ExactPair) -> None:
    """The source must exist (even when both names are one); RENAMENX keeps an existing
    destination; groups, consumers and pending entries move with the stream."""
    ops.err("RENAME", "nokey", "x")
    ops.err("RENAMENX", "nokey", "x")
    ops.err("RENAME", "nokey", "nokey")
    ops.fill("a", 3)
    ops("XGROUP", "CREATE", "a", "g", "0")
    ops("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "a", ">")
    assert ops("RENAME", "a", "a") == "OK"
    assert ops("RENAMENX", "a", "a") == 0
    assert ops("RENAME", "a", "b") == "OK"
    assert ops("EXISTS", "a", "b") == 1
    ops("XINFO", "GROUPS", "b")
    ops("XPENDING", "b", "g", "-", "+", "10")
    ops.fill("c", 1, start=7)
    assert ops("RENAMENX", "b", "c") == 0
    ops("XRANGE", "c", "-", "+")
    assert ops("RENAME", "b", "c") == "OK"
    ops("XINFO", "STREAM", "c", "FULL")
    assert ops("RENAMENX", "c", "d") == 1
    ops("KEYS", "*")
    ops.err("RENAME", "d")
    ops.err("RENAMENX", "d", "e", "f")


def _blocked(side: Callable[..., Any]) -> int:
    return int(info_fields(side("INFO", "clients"))["blocked_clients"])


def _wait_blocked(ops: ExactPair, n: int) -> None:
    """Poll INFO on both sides until each has ``n`` blocked clients."""
    until(
        lambda: (_blocked(ops.resp), _blocked(ops.xs)) == (n, n),
        what=f"{n} blocked clients on both sides",
    )


def _in_background(ops: ExactPair, *args: str) -> Callable[[], tuple[Any, Any]]:
    """Send a blocking command to both sides from threads; returns a join giving both replies."""
    from tests.conftest import Commands
    from tests.differential.exact import RespClient

    replies: dict[str, Any] = {}
    kw = ops.rr.connection_pool.connection_kwargs
    resp = RespClient("127.0.0.1", int(kw["port"]))
    xs = Commands(str(ops.xs.client.base_url))

    def run(name: str, side: Callable[..., Any]) -> None:
        replies[name] = side(*args)

    threads = [
        threading.Thread(target=run, args=("redis", resp)),
        threading.Thread(target=run, args=("xs", xs)),
    ]
    for t in threads:
        t.start()

    def join() -> tuple[Any, Any]:
        for t in threads:
            t.join(15)
        resp.close()
        xs.client.close()
        return replies["redis"], replies["xs"]

    return join


# Blocked clients live on a server: these run in the HTTP pass only.
http_only = pytest.mark.parametrize("xs_mode", ["http"], indirect=True)


@http_only
@pytest.mark.parametrize(
    ("setup", "blocked", "rename"),
    [
        # The destination's stream has the group: the blocked consumer is served.
        (
            [("XGROUP", "CREATE", "dst", "g", "$", "MKSTREAM"),
             ("XGROUP", "CREATE", "src", "g", "$", "MKSTREAM"), ("XADD", "src", "100-0", "f", "v")],
            ("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "dst", ">"),
            ("RENAME", "src", "dst"),
        ),
        # It lacks the group: NOGROUP.
        (
            [("XGROUP", "CREATE", "dst", "g", "$", "MKSTREAM"), ("XADD", "src", "100-0", "f", "v")],
            ("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "dst", ">"),
            ("RENAME", "src", "dst"),
        ),
        # A consumer blocked on the source sees its key go.
        (
            [("XGROUP", "CREATE", "src", "g", "$", "MKSTREAM")],
            ("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "src", ">"),
            ("RENAME", "src", "dst"),
        ),
        # XREAD $ on a missing key: the renamed stream's entries are new to it.
        (
            [("XADD", "src", "7-0", "f", "v")],
            ("XREAD", "BLOCK", "0", "STREAMS", "dst", "$"),
            ("RENAMENX", "src", "dst"),
        ),
    ],
    ids=["served", "nogroup", "source-gone", "xread-new-key"],
)  # fmt: skip
def test_rename_wakes_blocked_readers_as_redis_does(
    ops: ExactPair, setup: list[tuple[str, ...]], blocked: tuple[str, ...], rename: tuple[str, ...]
) -> None:
    ops.run(*setup)
    assert (_blocked(ops.resp), _blocked(ops.xs)) == (0, 0)
    join = _in_background(ops, *blocked)
    _wait_blocked(ops, 1)  # INFO's blocked_clients moves on both
    ops(*rename)
    expected, actual = join()
    assert isinstance(actual, ReplyError) == isinstance(expected, ReplyError)
    assert actual == expected
    _wait_blocked(ops, 0)
    ops("XINFO", "GROUPS", "dst") if ops.resp("EXISTS", "dst") else None


@http_only
def test_xread_on_the_source_keeps_waiting(ops: ExactPair) -> None:
    """An XREAD blocked on the renamed-away key is not woken: it times out with nil."""
    ops("XADD", "src", "1-0", "f", "v")
    join = _in_background(ops, "XREAD", "BLOCK", "300", "STREAMS", "src", "$")
    _wait_blocked(ops, 1)
    ops("RENAME", "src", "dst")
    assert join() == (None, None)


@http_only
def test_a_blocked_call_counts_in_info_stats_when_it_ends(ops: ExactPair) -> None:
    """A blocked XREADGROUP that ends in NOGROUP (its group destroyed meanwhile) counts as a
    failed call and an error reply, as Redis's stream-cgroups.tcl checks; one served counts
    as a call."""
    ops("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    assert ops("CONFIG", "RESETSTAT") == "OK"
    join = _in_background(
        ops, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"
    )
    _wait_blocked(ops, 1)
    ops("XGROUP", "DESTROY", "s", "g")
    expected, actual = join()
    assert isinstance(expected, ReplyError) and actual == expected
    ops("XGROUP", "CREATE", "s", "g", "$")
    join = _in_background(ops, "XREADGROUP", "GROUP", "g", "bob", "BLOCK", "0", "STREAMS", "s", ">")
    _wait_blocked(ops, 1)
    ops("XADD", "s", "5-0", "f", "v")
    join()
    expected, actual = ops.both("INFO", "errorstats")
    assert info_fields(actual) == info_fields(expected) == {"errorstat_NOGROUP": "count=1"}
    expected, actual = ops.both("INFO", "stats")
    assert (
        info_fields(actual)["total_error_replies"] == info_fields(expected)["total_error_replies"]
    )
    expected, actual = ops.both("INFO", "commandstats")
    calls = [
        {
            k: v
            for k, v in (kv.split("=") for kv in fields["cmdstat_xreadgroup"].split(","))
            if "usec" not in k
        }
        for fields in (info_fields(expected), info_fields(actual))
    ]
    assert calls[1] == calls[0]
