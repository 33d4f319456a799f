"""The real ``upstash-redis`` Python SDK against xstreams returns what it returns against Redis.

Clients written for Upstash talk to xstreams through this SDK, so what matters is the value an
SDK call hands back, after the SDK's own request building (JSON numbers in bodies, ``~`` trims
by default, the ``Upstash-Encoding: base64`` header and its decoding, the sync-token header) and
its own result formatting.

Each call runs twice with the same SDK code:

* ``sdk``: the stock ``upstash_redis.Redis`` client over HTTP to the running xstreams server;
* ``ref``: the SDK's ``Commands`` class (same argument building, same ``cast_response``
  formatting) whose ``execute`` sends the command to redis-server 7.0 over RESP instead.

The two results must be equal; only wall-clock fields (idle times) are masked. An error is
compared by its text (``UpstashError`` message vs redis-server's error reply).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from upstash_redis import Redis
from upstash_redis.commands import Commands as SdkCommands
from upstash_redis.errors import UpstashError
from upstash_redis.format import cast_response
from upstash_redis.http import _format_command

from tests.conftest import REDIS_DB, REDIS_HOST, REDIS_PORT, Commands, ReplyError, Server
from tests.differential.exact import RespClient
from tests.differential.support import mask
from tests.support.redis_servers import RedisProcess

pytestmark = pytest.mark.redis

# The server runs without a token; the SDK insists on one and the server ignores it.
TOKEN = "any-token"

Call = Callable[[SdkCommands], Any]


class ReferenceSdk(SdkCommands):
    """The SDK's command methods and result formatters, executed on redis-server."""

    def __init__(self, resp: RespClient) -> None:
        self.resp = resp
        self.sent: tuple[Any, ...] = ()

    def execute(self, command: list[Any]) -> Any:
        # Exactly what the HTTP client would put in the JSON body; the endpoint reads a JSON
        # boolean as its text, ``true`` / ``false``, which is what redis-server must be sent.
        wire = [json.dumps(a) if isinstance(a, bool) else a for a in _format_command(command)]
        self.sent = tuple(wire)
        reply = self.resp(*wire)
        if isinstance(reply, ReplyError):
            raise UpstashError(str(reply))
        return cast_response(command, reply, self)


def _outcome(client: SdkCommands, call: Call) -> tuple[str, Any]:
    try:
        return "ok", call(client)
    except UpstashError as e:
        return "error", str(e)


class SdkPair:
    """Runs one SDK call on both sides and asserts equal (time-masked) outcomes."""

    def __init__(self, sdk: SdkCommands, ref: ReferenceSdk) -> None:
        self.sdk = sdk
        self.ref = ref

    def outcomes(self, call: Call) -> tuple[tuple[Any, ...], tuple[str, Any], tuple[str, Any]]:
        expected = _outcome(self.ref, call)
        command = self.ref.sent
        actual = _outcome(self.sdk, call)
        return command, expected, actual

    def __call__(self, call: Call) -> Any:
        """The call's result (equal on both sides); raises ``AssertionError`` otherwise."""
        command, expected, actual = self.outcomes(call)
        assert actual[0] == expected[0], (command, expected, actual)
        if expected[0] == "ok":
            assert mask(command, actual[1]) == mask(command, expected[1]), (
                command,
                expected,
                actual,
            )
        else:
            assert actual[1] == expected[1], (command, expected, actual)
        return actual[1]

    def err(self, call: Call) -> str:
        """A call that must fail on both sides; returns the (equal) error text."""
        command, expected, actual = self.outcomes(call)
        assert expected[0] == "error", (command, expected)
        assert actual == expected, (command, expected, actual)
        return str(actual[1])


@pytest.fixture
def resp(real_redis: Any) -> Iterator[RespClient]:
    """Raw RESP2 to the tests' redis database (``real_redis`` flushed it, or skipped)."""
    client = RespClient(REDIS_HOST, REDIS_PORT, REDIS_DB)
    yield client
    client.close()


def _client(server: Server, **options: Any) -> Redis:
    return Redis(server.url, TOKEN, rest_retries=0, allow_telemetry=False, **options)


@pytest.fixture
def both(server: Server, xs: Commands, resp: RespClient) -> Iterator[SdkPair]:
    """The SDK on xstreams (flushed by ``xs``, base64 encoding on) paired with the reference."""
    sdk = _client(server)
    yield SdkPair(sdk, ReferenceSdk(resp))
    sdk.close()


def fill(both: SdkPair, key: str, n: int, start: int = 1, **fields: Any) -> None:
    """Adds ``n`` entries ``start-0`` .. on both sides through ``xadd``."""
    data = fields or {"f": "v"}
    for i in range(start, start + n):
        assert both(lambda r, i=i: r.xadd(key, f"{i}-0", data)) == f"{i}-0"


# ------------------------------------------------------------------------ basics


def test_ping_echo(both: SdkPair) -> None:
    """Simple strings are base64-encoded too (except OK) and decode back to Redis's text."""
    assert both(lambda r: r.ping()) == "PONG"
    assert both(lambda r: r.ping("hello")) == "hello"
    assert both(lambda r: r.echo("héllo wörld ✓")) == "héllo wörld ✓"
    assert both(lambda r: r.echo("")) == ""
    assert both(lambda r: r.echo("OK")) == "OK"


def test_del_exists_type(both: SdkPair) -> None:
    """Key-space commands see streams like Redis does."""
    assert both(lambda r: r.type("s")) == "none"
    assert both(lambda r: r.exists("s", "t")) == 0
    fill(both, "s", 2)
    fill(both, "t", 1)
    assert both(lambda r: r.type("s")) == "stream"
    assert both(lambda r: r.exists("s", "t", "s", "u")) == 3
    assert both(lambda r: r.delete("s", "u")) == 1
    assert both(lambda r: r.exists("s")) == 0
    assert both(lambda r: r.xlen("s")) == 0


def test_keys(both: SdkPair) -> None:
    """KEYS returns the same set (its order is unspecified in Redis)."""
    for key in ("a1", "a2", "b1", "a{x}"):
        fill(both, key, 1)
    for pattern in ("*", "a*", "a?", "a[12]", "nomatch*", "a{x}"):
        command, expected, actual = both.outcomes(lambda r, p=pattern: r.keys(p))
        assert expected[0] == actual[0] == "ok", (command, expected, actual)
        assert sorted(actual[1]) == sorted(expected[1]), (command, expected, actual)


def _scan_all(client: SdkCommands, **options: Any) -> tuple[list[str], int]:
    keys: list[str] = []
    cursor, rounds = 0, 0
    while True:
        cursor, page = client.scan(cursor, **options)
        assert isinstance(cursor, int)
        keys += page
        rounds += 1
        if cursor == 0 or rounds > 1000:
            return keys, rounds


@pytest.mark.parametrize(
    "options",
    [{}, {"match": "k1*"}, {"count": 3}, {"type": "stream"}, {"type": "string"}],
    ids=["plain", "match", "count", "type-stream", "type-string"],
)
def test_scan(both: SdkPair, options: dict[str, Any]) -> None:
    """A full SCAN iteration (the SDK's tuple result) visits the same keys, each once."""
    for i in range(25):
        fill(both, f"k{i}", 1)
    expected, _ = _scan_all(both.ref, **options)
    actual, rounds = _scan_all(both.sdk, **options)
    assert rounds <= 1000
    assert len(actual) == len(set(actual)), actual
    assert sorted(actual) == sorted(expected)


def test_scan_single_page_shape(both: SdkPair) -> None:
    """On an empty database the first page is the same ``(0, [])``."""
    assert both(lambda r: r.scan(0)) == (0, [])


# -------------------------------------------------------------------------- XADD


def test_xadd_ids_and_values(both: SdkPair) -> None:
    """Explicit, incomplete and ``ms-*`` IDs; integer and unicode values (sent as text)."""
    assert both(lambda r: r.xadd("s", "5-1", {"a": 1, "b": "x"})) == "5-1"
    assert both(lambda r: r.xadd("s", "5-*", {"a": -7})) == "5-2"
    assert both(lambda r: r.xadd("s", "6", {"ü": "ÿ", "": ""})) == "6-0"
    assert both(lambda r: r.xadd("s", "7-*", {"n": 12345678901234567890})) == "7-0"
    both.err(lambda r: r.xadd("s", "7-0", {"a": 1}))
    both.err(lambda r: r.xadd("s", "0-0", {"a": 1}))
    both.err(lambda r: r.xadd("s", "x-1", {"a": 1}))
    both.err(lambda r: r.xadd("s", "8-1", {}))
    assert both(lambda r: r.xrange("s")) == [
        ["5-1", ["a", "1", "b", "x"]],
        ["5-2", ["a", "-7"]],
        ["6-0", ["ü", "ÿ", "", ""]],
        ["7-0", ["n", "12345678901234567890"]],
    ]


def test_boolean_arguments(both: SdkPair) -> None:
    """Booleans handed to ``execute`` go out as JSON booleans (as @upstash/redis sends the values
    of ``xadd(key, "*", {done: true})``) and are stored as their text. (This SDK's own ``xadd``
    turns values into ``str`` first: ``"True"``.)"""
    command = ["XADD", "s", "1-1", "done", True, "failed", False, "n", 2]
    assert both(lambda r: r.execute(command)) == "1-1"
    assert both(lambda r: r.xadd("s", "2-1", {"done": True})) == "2-1"
    assert both(lambda r: r.xrange("s")) == [
        ["1-1", ["done", "true", "failed", "false", "n", "2"]],
        ["2-1", ["done", "True"]],
    ]


def test_xadd_nomkstream(both: SdkPair) -> None:
    """NOMKSTREAM on a missing key is a null reply, and no key is created."""
    assert both(lambda r: r.xadd("s", "1-1", {"f": "v"}, nomkstream=True)) is None
    assert both(lambda r: r.exists("s")) == 0
    fill(both, "s", 1)
    assert both(lambda r: r.xadd("s", "2-1", {"f": "v"}, nomkstream=True)) == "2-1"


def test_xadd_maxlen_approximate_by_default(both: SdkPair) -> None:
    """The SDK trims with ``~`` unless told otherwise: whole 100-entry nodes go, or none."""
    fill(both, "s", 250)
    both(lambda r: r.xadd("s", "1000-0", {"f": "v"}, maxlen=120))
    assert both(lambda r: r.xlen("s")) == 151  # redis-server drops one node of 100
    both(lambda r: r.xadd("s", "1001-0", {"f": "v"}, maxlen=100, limit=50))
    both(lambda r: r.xadd("s", "1002-0", {"f": "v"}, maxlen=100, limit=100))
    both(lambda r: r.xlen("s"))
    both(lambda r: r.xadd("s", "1003-0", {"f": "v"}, maxlen=10, approximate_trim=False))
    assert both(lambda r: r.xlen("s")) == 10
    both(lambda r: r.xrange("s", count=3))
    both.err(lambda r: r.xadd("s", "1004-0", {"f": "v"}, maxlen=5, approximate_trim=False, limit=2))


def test_xadd_minid(both: SdkPair) -> None:
    """MINID trimming, approximate (the SDK default) and exact."""
    fill(both, "s", 230)
    both(lambda r: r.xadd("s", "500-0", {"f": "v"}, minid="150"))
    first = both(lambda r: r.xrange("s", count=1))
    assert first == [["101-0", ["f", "v"]]]
    both(lambda r: r.xadd("s", "501-0", {"f": "v"}, minid="150-0", approximate_trim=False))
    assert both(lambda r: r.xrange("s", count=1)) == [["150-0", ["f", "v"]]]
    both(lambda r: r.xadd("s", "502-0", {"f": "v"}, minid="400", limit=1000))
    both(lambda r: r.xinfo_groups("s"))


def test_xadd_fat_entries_fill_nodes_by_bytes(both: SdkPair) -> None:
    """Nodes also close at 4096 bytes; approximate trims then drop those smaller nodes."""
    for i in range(1, 61):
        both(lambda r, i=i: r.xadd("s", f"{i}-0", {"f": "x" * (i * 13 % 400)}))
    both(lambda r: r.xtrim("s", maxlen=30))
    both(lambda r: r.xlen("s"))
    both(lambda r: r.xrange("s", count=1))


# ---------------------------------------------------------------- reading ranges


def test_xrange_xrevrange(both: SdkPair) -> None:
    """Bounds (inclusive, exclusive, incomplete), COUNT, and the SDK's defaults."""
    fill(both, "s", 10)
    both(lambda r: r.xadd("s", "10-1", {"g": "h"}))
    assert both(lambda r: r.xrange("s", count=2)) == [["1-0", ["f", "v"]], ["2-0", ["f", "v"]]]
    both(lambda r: r.xrange("s", "3", "5"))
    both(lambda r: r.xrange("s", "(3-0", "(5-0"))
    both(lambda r: r.xrange("s", "10", "10"))
    both(lambda r: r.xrange("s", "(10-0", "+"))
    assert both(lambda r: r.xrange("s", "5", "3")) == []
    assert both(lambda r: r.xrange("missing")) == []
    both(lambda r: r.xrange("s", count=0))
    both.err(lambda r: r.xrange("s", "x", "+"))
    both.err(lambda r: r.xrange("s", "(-", "+"))
    both(lambda r: r.xrevrange("s"))
    both(lambda r: r.xrevrange("s", count=3))
    both(lambda r: r.xrevrange("s", "(8", "2-0", count=4))
    both(lambda r: r.xrevrange("s", "10", "10"))
    assert both(lambda r: r.xrevrange("s", "2", "5")) == []


def test_xread(both: SdkPair) -> None:
    """XREAD over one and several streams; nothing new is ``[]`` after the SDK's formatting."""
    fill(both, "a", 5)
    fill(both, "b", 3, start=3)
    assert both(lambda r: r.xread({"a": "3-0"})) == [
        ["a", [["4-0", ["f", "v"]], ["5-0", ["f", "v"]]]]
    ]
    both(lambda r: r.xread({"a": "0", "b": "0-0"}, count=2))
    both(lambda r: r.xread({"a": "$", "b": "4"}))
    assert both(lambda r: r.xread({"a": "$"})) == []
    assert both(lambda r: r.xread({"a": "5-0", "missing": "0"})) == []
    both.err(lambda r: r.xread({"a": "bad"}))


def test_xlen_xdel(both: SdkPair) -> None:
    """XDEL counts only entries that existed; XLEN follows."""
    fill(both, "s", 5)
    assert both(lambda r: r.xdel("s", "2-0", "4-0", "9-0")) == 2
    assert both(lambda r: r.xdel("s", "2-0")) == 0
    assert both(lambda r: r.xdel("missing", "1-0")) == 0
    both.err(lambda r: r.xdel("s", "nope"))
    assert both(lambda r: r.xlen("s")) == 3
    assert both(lambda r: r.xlen("missing")) == 0
    both(lambda r: r.xrange("s"))


def test_xtrim(both: SdkPair) -> None:
    """XTRIM through the SDK: approximate by default, exact on request, MINID, LIMIT."""
    fill(both, "s", 350)
    assert both(lambda r: r.xtrim("s", maxlen=260)) == 0  # ~ keeps whole nodes
    assert both(lambda r: r.xtrim("s", maxlen=240)) == 100
    both(lambda r: r.xtrim("s", maxlen=10, limit=100))
    both(lambda r: r.xtrim("s", maxlen=10, limit=0))
    both(lambda r: r.xtrim("s", minid="345", approximate=False))
    both(lambda r: r.xtrim("s", maxlen=3, approximate=False))
    assert both(lambda r: r.xlen("s")) == 3
    both.err(lambda r: r.xtrim("s", maxlen=1, approximate=False, limit=5))
    both.err(lambda r: r.xtrim("s", maxlen=-1))
    assert both(lambda r: r.xtrim("missing", maxlen=0)) == 0


# ------------------------------------------------------------- consumer groups


def test_xgroup_lifecycle(both: SdkPair) -> None:
    """CREATE (MKSTREAM, ``$``), SETID (ENTRIESREAD), CREATECONSUMER, DELCONSUMER, DESTROY."""
    both.err(lambda r: r.xgroup_create("s", "g"))  # no key, no MKSTREAM
    both.err(lambda r: r.xgroup_create("s", "g"))
    assert both(lambda r: r.xgroup_create("s", "g", mkstream=True)) == "OK"
    both.err(lambda r: r.xgroup_create("s", "g", "0", mkstream=True))
    fill(both, "s", 4)
    assert both(lambda r: r.xgroup_create("s", "h", "2-0")) == "OK"
    assert both(lambda r: r.xgroup_createconsumer("s", "g", "alice")) == 1
    assert both(lambda r: r.xgroup_createconsumer("s", "g", "alice")) == 0
    both.err(lambda r: r.xgroup_createconsumer("s", "nope", "alice"))
    assert both(lambda r: r.xgroup_setid("s", "g", "0")) == "OK"
    assert both(lambda r: r.xgroup_setid("s", "h", "3-0", entries_read=2)) == "OK"
    both.err(lambda r: r.xgroup_setid("s", "h", "3-0", entries_read=-5))
    both(lambda r: r.xinfo_groups("s"))
    both(lambda r: r.xreadgroup("g", "alice", {"s": ">"}, count=2))
    assert both(lambda r: r.xgroup_delconsumer("s", "g", "alice")) == 2
    assert both(lambda r: r.xgroup_delconsumer("s", "g", "bob")) == 0
    assert both(lambda r: r.xgroup_destroy("s", "h")) == 1
    assert both(lambda r: r.xgroup_destroy("s", "h")) == 0
    both.err(lambda r: r.xgroup_destroy("missing", "h"))
    both(lambda r: r.xinfo_groups("s"))


def test_xreadgroup_xack_xpending(both: SdkPair) -> None:
    """Delivery, history reads, NOACK, acknowledgements and both XPENDING forms."""
    fill(both, "s", 6)
    fill(both, "t", 2)
    both(lambda r: r.xgroup_create("s", "g", "0"))
    both(lambda r: r.xgroup_create("t", "g", "0"))
    both(lambda r: r.xreadgroup("g", "alice", {"s": ">"}, count=3))
    both(lambda r: r.xreadgroup("g", "bob", {"s": ">", "t": ">"}, count=2))
    both(lambda r: r.xreadgroup("g", "carol", {"s": ">"}, noack=True))
    assert both(lambda r: r.xreadgroup("g", "carol", {"s": ">"})) == []
    both(lambda r: r.xreadgroup("g", "alice", {"s": "0"}))
    both(lambda r: r.xreadgroup("g", "alice", {"s": "1-0"}, count=1))
    both.err(lambda r: r.xreadgroup("nope", "alice", {"s": ">"}))
    both.err(lambda r: r.xreadgroup("g", "alice", {"s": "$"}))
    assert both(lambda r: r.xpending("s", "g")) == [5, "1-0", "5-0", [["alice", "3"], ["bob", "2"]]]
    both(lambda r: r.xpending("s", "g", "-", "+", 10))
    both(lambda r: r.xpending("s", "g", "(1-0", "4", 2, consumer="alice"))
    both(lambda r: r.xpending("s", "g", "-", "+", 10, consumer="bob", idle=0))
    assert both(lambda r: r.xack("s", "g", "1-0", "2-0", "9-0")) == 2
    assert both(lambda r: r.xack("s", "g", "1-0")) == 0
    both(lambda r: r.xpending("s", "g"))
    both(lambda r: r.xreadgroup("g", "alice", {"s": "0"}))
    both(lambda r: r.xdel("s", "3-0"))
    both(lambda r: r.xreadgroup("g", "alice", {"s": "0"}))  # deleted entry: [id, null]
    both(lambda r: r.xinfo_consumers("s", "g"))
    both.err(lambda r: r.xinfo_consumers("s", "nope"))
    both.err(lambda r: r.xpending("missing", "g"))
    assert both(lambda r: r.xpending("t", "g")) == [2, "1-0", "2-0", [["bob", "2"]]]


def test_xclaim_xautoclaim(both: SdkPair) -> None:
    """Claims with min-idle 0, JUSTID, COUNT, and entries deleted while pending."""
    fill(both, "s", 8)
    both(lambda r: r.xgroup_create("s", "g", "0"))
    both(lambda r: r.xreadgroup("g", "alice", {"s": ">"}, count=6))
    both(lambda r: r.xclaim("s", "g", "bob", 0, "1-0", "2-0", "7-0"))
    both(lambda r: r.xclaim("s", "g", "bob", 0, "3-0", justid=True))
    both(lambda r: r.xpending("s", "g"))
    both(lambda r: r.xdel("s", "4-0"))
    both(lambda r: r.xautoclaim("s", "g", "carol", 0, "0-0", count=2))
    both(lambda r: r.xautoclaim("s", "g", "carol", 0, "3-0", count=2))  # crosses deleted 4-0
    both(lambda r: r.xautoclaim("s", "g", "dave", 0, "0-0", justid=True))
    both(lambda r: r.xautoclaim("s", "g", "dave", 0, "-"))
    both.err(lambda r: r.xautoclaim("s", "g", "dave", 0, "0-0", count=0))
    both.err(lambda r: r.xclaim("s", "nope", "bob", 0, "1-0"))
    both(lambda r: r.xinfo_consumers("s", "g"))
    both(lambda r: r.xpending("s", "g", "-", "+", 10))


def test_xinfo_groups_lag_and_entries_read(both: SdkPair) -> None:
    """Lag and entries-read as the SDK hands them back, including after deletions."""
    fill(both, "s", 5)
    both(lambda r: r.xgroup_create("s", "g", "0"))
    both(lambda r: r.xgroup_create("s", "h", "$"))
    both(lambda r: r.xreadgroup("g", "c", {"s": ">"}, count=2))
    both(lambda r: r.xinfo_groups("s"))
    both(lambda r: r.xdel("s", "4-0"))
    both(lambda r: r.xinfo_groups("s"))
    both(lambda r: r.xreadgroup("g", "c", {"s": ">"}))
    both(lambda r: r.xinfo_groups("s"))
    both.err(lambda r: r.xinfo_groups("missing"))


@pytest.fixture
def both8(server: Server, xs: Commands, target: Any, redis8: RedisProcess) -> Iterator[SdkPair]:
    """The SDK on xstreams paired with the reference on redis-server 8.x (flushed): the
    commands Redis added after 7.0, which every target answers (the Redis targets, in
    front of a redis-server 7.0, by the backend's scripts)."""
    resp8 = RespClient("127.0.0.1", redis8.port)
    assert resp8("FLUSHALL") == "OK"
    sdk = _client(server)
    yield SdkPair(sdk, ReferenceSdk(resp8))
    sdk.close()
    resp8.close()


def groups_read(both: SdkPair) -> None:
    """Entries 1..6; g delivered 1..4 to c, h delivered 1..2 to d."""
    fill(both, "s", 6)
    both(lambda r: r.xgroup_create("s", "g", "0"))
    both(lambda r: r.xgroup_create("s", "h", "0"))
    both(lambda r: r.xreadgroup("g", "c", {"s": ">"}, count=4))
    both(lambda r: r.xreadgroup("h", "d", {"s": ">"}, count=2))


def test_xackdel(both8: SdkPair) -> None:
    """``xackdel`` as the SDK sends it (``IDS`` and the count as a JSON number): the
    replies of redis-server 8.6, for each option and for none."""
    groups_read(both8)
    assert both8(lambda r: r.xackdel("s", "g", "1-0", "9-0")) == [1, -1]
    assert both8(lambda r: r.xackdel("s", "g", "2-0", "3-0", option="ACKED")) == [2, 2]
    assert both8(lambda r: r.xackdel("s", "h", "2-0", option="acked")) == [1]
    assert both8(lambda r: r.xackdel("s", "g", "4-0", option="DELREF")) == [1]
    assert both8(lambda r: r.xackdel("s", "g", "5-0", option="KEEPREF")) == [-1]
    assert both8(lambda r: r.xackdel("missing", "g", "1-0")) == [-1]
    both8(lambda r: r.xpending("s", "g", "-", "+", 10))
    both8(lambda r: r.xpending("s", "h", "-", "+", 10))
    assert [e[0] for e in both8(lambda r: r.xrange("s"))] == ["3-0", "5-0", "6-0"]
    both8.err(lambda r: r.xackdel("s", "g", "bad"))


def test_xdelex(both8: SdkPair) -> None:
    groups_read(both8)
    assert both8(lambda r: r.xdelex("s", "1-0", "9-0")) == [1, -1]
    assert both8(lambda r: r.xdelex("s", "2-0", "5-0", option="ACKED")) == [2, 2]
    assert both8(lambda r: r.xdelex("s", "1-0", "2-0", option="DELREF")) == [-1, 1]
    assert both8(lambda r: r.xdelex("s", "3-0", option="KEEPREF")) == [1]
    assert both8(lambda r: r.xdelex("missing", "1-0")) == [-1]
    both8(lambda r: r.xpending("s", "g", "-", "+", 10))
    both8(lambda r: r.xpending("s", "h", "-", "+", 10))
    both8(lambda r: r.xrange("s"))
    both8.err(lambda r: r.xdelex("s", "bad"))


# ------------------------------------------------------------- client options


@pytest.mark.parametrize(
    "options",
    [{"rest_encoding": None}, {"allow_telemetry": True}, {"read_your_writes": False}],
    ids=["no-base64", "telemetry", "no-sync-token"],
)
def test_client_options(
    server: Server, xs: Commands, resp: RespClient, options: dict[str, Any]
) -> None:
    """Without base64, with telemetry headers, without the sync-token header: same results."""
    sdk = Redis(server.url, TOKEN, rest_retries=0, **{"allow_telemetry": False, **options})
    try:
        pair = SdkPair(sdk, ReferenceSdk(resp))
        assert pair(lambda r: r.xadd("s", "1-1", {"f": "v", "n": 5})) == "1-1"
        assert pair(lambda r: r.echo("ünï")) == "ünï"
        pair(lambda r: r.xgroup_create("s", "g", "0"))
        pair(lambda r: r.xreadgroup("g", "c", {"s": ">"}))
        pair(lambda r: r.xinfo_groups("s"))
        pair.err(lambda r: r.xadd("s", "1-1", {"f": "v"}))
    finally:
        sdk.close()
