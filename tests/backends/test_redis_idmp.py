"""XADD IDMP / IDMPAUTO and XCFGSET (Redis 8.6) through the Redis backend.

On redis-server 8.6 (``redis8_or_skip``) they are passed through, typed and raw, single and
batch, and must answer as the embedded engine does: the same IDs for repeats, the same
entries, the same IDMP fields in XINFO STREAM. On redis-server 7.0 (the tests' database) they
are refused with ``NotAvailable`` (400) naming 8.6, and nothing is written.

IDMP takes only ``*`` IDs, which come from each side's clock; so each stream starts with an
entry far in the future (``FUTURE``), after which both give ``*`` the same IDs (the last ID
plus one), and no iid expires while a test runs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.api.errors import status_of
from app.backends.embedded import EmbeddedBackend
from app.backends.errors import NotAvailable
from app.backends.redis import RedisBackend
from app.backends.redis.features import Features, parse_version
from app.backends.redis.newer import older
from app.backends.redis.parse import xadd_args
from app.backends.redis.scripts import APPEND_IDMP
from app.backends.redis.streams import DEADLINE_SPAN_MS, _deadline
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.commands.table import lookup
from app.engine.commands.xadd_options import idmp_key
from app.engine.commands.xcfgset import XCfgSetArgs
from app.engine.errors import CommandError
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.limits import Limits
from app.engine.store import Store
from tests.api.inproc import InprocCommands
from tests.backends.test_redis_newer import Trio, new, new_url, old, outcome  # noqa: F401
from tests.conftest import ReplyError

pytestmark = pytest.mark.redis

FUTURE = StreamID(9999999999999, 0)


@pytest.fixture
def trio(old: RedisBackend, new: RedisBackend) -> Trio:  # noqa: F811  (old, new: fixtures)
    return Trio(EmbeddedBackend(Store()), old, new)


def entry(key: str, producer: str | None = None, iid: str | None = None, **kw: Any) -> XAddArgs:
    """An entry ``f v`` at ``*``, with IDMP ``producer iid`` (IDMPAUTO: ``iid`` None)."""
    pair = None if producer is None else idmp_key(producer, iid)
    return XAddArgs(key, kw.pop("fields", ("f", "v")), idmp=pair, **kw)


async def pair(t: Trio, method: str, *args: Any) -> Any:
    """The same call on the engine and on 8.6: equal outcomes."""
    want = await t.get(t.engine, method, *args)
    got = await t.get(t.new, method, *args)
    assert got == want, (method, args, got, want)
    return want


async def future(t: Trio, key: str) -> None:
    await t.all("append", [XAddArgs(key, ("f", "v"), id=FUTURE)])


def refused(word: str, features: Features | None, needs: str = "8.6") -> tuple[str, str, str]:
    assert features is not None
    version = ".".join(map(str, features.version))
    text = f"ERR {word} needs Redis {needs} or newer (this server is {version})"
    return ("error", "NotAvailable", text)


async def test_typed_appends_and_configuration(trio: Trio) -> None:
    t = trio
    await future(t, "s")
    first = await pair(t, "append", [entry("s", "p", "i1")])
    assert first == [StreamID(FUTURE.ms, 1)]
    assert await pair(t, "append", [entry("s", "p", "i1", fields=("f", "other"))]) == first
    await pair(t, "append", [entry("s", "q", "i1")])  # another producer: a new entry
    auto = await pair(t, "append", [entry("s", "p", None, fields=("a", "1", "b", "2"))])
    assert await pair(t, "append", [entry("s", "p", None, fields=("b", "2", "a", "1"))]) == auto
    await pair(t, "append", [entry("s", "p", "i2", nomkstream=True)])
    # a batch: repeats answer their first IDs, the rest are appended, all at once
    batch = [
        entry("s", "p", "i1"),
        entry("s", "p", "i3"),
        entry("s"),
        entry("s", "r", None),
        entry("s", "p", "i3"),
        entry("s", id=StreamID(FUTURE.ms, 100)),  # an explicit ID after `*` ones
    ]
    ids = await pair(t, "append", batch)
    assert ids[0] == first[0] and ids[4] == ids[1] and ids[5] == StreamID(FUTURE.ms, 100)
    # a batch refused whole: the explicit ID is not after the ones before it
    bad = [entry("s", "p", "i4"), entry("s", id=StreamID(FUTURE.ms, 100))]
    error = await pair(t, "append", bad)
    assert error[0] == "error"
    await pair(t, "append", [entry("s", "p", "i4")])  # i4 was not recorded by the refusal
    await pair(t, "range", RangeArgs("s", MIN_ID, MAX_ID))
    info = await pair(t, "stream_info", "s")
    assert info.header.idmp is not None
    assert (info.header.idmp.iids_added, info.header.idmp.iids_duplicates) == (7, 4)
    # XCFGSET: a change forgets the iids, the counters stay
    await pair(t, "configure_idmp", XCfgSetArgs("s", 5, None))
    await pair(t, "configure_idmp", XCfgSetArgs("s", None, 2))
    await pair(t, "configure_idmp", XCfgSetArgs("nokey", 5, None))
    info = await pair(t, "stream_info", "s")
    assert info.header.idmp is not None
    assert (info.header.idmp.idmp_duration, info.header.idmp.idmp_maxsize) == (5, 2)
    assert info.header.idmp.iids_tracked == 0
    again = await pair(t, "append", [entry("s", "p", "i1")])
    assert again != first  # forgotten: appended anew
    await pair(t, "stream_full_info", "s", 10)
    # a batch of repeats only: nothing appended, the first IDs answered
    assert await pair(t, "append", [entry("s", "p", "i1"), entry("s", "p", "i1")]) == again * 2


async def test_a_batch_creates_its_stream_or_finds_none(trio: Trio) -> None:
    t = trio
    assert await pair(t, "append", [entry("n", "p", "i", nomkstream=True)] * 2) == [None, None]
    for side in (t.engine, t.new):  # the clock's IDs: each side's own
        ids = await side.append([entry("n", "p", "i")] * 2)
        assert ids[0] is not None and ids == [ids[0]] * 2
        assert (await side.stream_info("n")).header.length == 1


async def test_older_servers_refuse_clearly(old: RedisBackend) -> None:  # noqa: F811
    features = old.router.features
    await old.append([XAddArgs("o", ("f", "v"))])
    for batch, word in (
        ([entry("o", "p", "i")], "XADD with IDMP"),
        ([entry("o", "p", None)], "XADD with IDMPAUTO"),
        ([entry("o"), entry("o", "p", "i")], "XADD with IDMP"),
    ):
        with pytest.raises(NotAvailable) as e:
            await old.append(batch)
        assert outcome(e.value) == refused(word, features)
        assert status_of(e.value) == 400
    with pytest.raises(NotAvailable) as e:
        await old.configure_idmp(XCfgSetArgs("o", 5, None))
    assert outcome(e.value) == refused("XCFGSET", features)
    raw = [
        (["XADD", "o", "IDMP", "p", "i", "*", "f", "v"], "XADD with IDMP"),
        (["XADD", "o", "MAXLEN", "5", "idmpauto", "p", "*", "f", "v"], "XADD with IDMPAUTO"),
        (["XCFGSET", "o", "IDMP-DURATION", "5"], "XCFGSET"),
    ]
    for argv, word in raw:
        with pytest.raises(NotAvailable) as e:
            await old.command(argv)
        assert outcome(e.value) == refused(word, features)
    with pytest.raises(NotAvailable) as e:
        await old.command(["XIDMPRECORD", "o", "p", "i", "1-1"])
    assert outcome(e.value) == refused("XIDMPRECORD", features, "8.6.2")
    # a malformed IDMP gets the engine's error; a field named idmp is only a field
    with pytest.raises(CommandError) as err:
        await old.command(["XADD", "o", "IDMP", "p", "i", "1-0", "f", "v"])
    only_auto = "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"
    assert err.value.text == only_auto
    await old.command(["XADD", "o", "*", "IDMP", "p"])
    # in a pipeline and a transaction each refusal keeps its place
    lines = [["XLEN", "o"], raw[0][0], raw[2][0], ["XLEN", "o"]]
    for run in (old.pipeline, old.multi_exec):
        replies = await run(lines)
        assert replies[0] == replies[3] == 2
        assert isinstance(replies[1], NotAvailable) and isinstance(replies[2], NotAvailable)
    assert await old.command(["XLEN", "o"]) == 2  # nothing was written


# --- the command endpoint on 8.6, as the engine answers ------------------------------------
F = str(FUTURE.ms)
COMMANDS: list[list[str]] = [
    ["XADD", "{i}", f"{F}-0", "f", "v"],
    ["XADD", "{i}", "IDMP", "p", "i1", "*", "f", "1"],
    ["XADD", "{i}", "IDMP", "p", "i1", "*", "f", "2"],
    ["XADD", "{i}", "IDMPAUTO", "p", "*", "a", "1", "b", "2"],
    ["XADD", "{i}", "IDMPAUTO", "p", "*", "b", "2", "a", "1"],
    ["XADD", "{i}", "MAXLEN", "1", "IDMP", "q", "i1", "*", "f", "1"],
    ["XADD", "{i}", "IDMP", "p", "i1", "5-0", "f", "1"],
    ["XADD", "{i}", "IDMP", "p", "i1", "IDMP", "p", "i2", "*", "f", "1"],
    ["XADD", "{i}", "IDMP", "", "i1", "*", "f", "1"],
    ["XADD", "{i}", "IDMP", "p", "", "*", "f", "1"],
    ["XADD", "{i}", "IDMPAUTO", "", "*", "f", "1"],
    ["XINFO", "STREAM", "{i}"],
    ["XCFGSET", "{i}", "IDMP-DURATION", "5", "IDMP-MAXSIZE", "2"],
    ["XCFGSET", "{i}", "IDMP-DURATION", "0"],
    ["XCFGSET", "{i}", "IDMP-MAXSIZE", "10001"],
    ["XCFGSET", "{i}", "IDMP-DURATION", "5", "IDMP-DURATION", "6"],
    ["XCFGSET", "{i}", "BOGUS", "1"],
    ["XCFGSET", "{i}"],
    ["XCFGSET", "{i}nokey", "IDMP-DURATION", "5"],
    ["XINFO", "STREAM", "{i}"],
    ["XADD", "{i}", "IDMP", "p", "i1", "*", "f", "3"],
    ["XADD", "{i}", "IDMP", "p", "i2", "*", "f", "3"],
    ["XADD", "{i}", "IDMP", "p", "i3", "*", "f", "3"],
    ["XADD", "{i}", "IDMP", "p", "i1", "*", "f", "3"],
    ["XRANGE", "{i}", "-", "+"],
    ["XINFO", "STREAM", "{i}"],
    ["XIDMPRECORD", "{i}", "r", "x", f"{F}-0"],
    ["XIDMPRECORD", "{i}", "r", "x", f"{F}-0"],
    ["XIDMPRECORD", "{i}", "r", "x", f"{F}-1"],
    ["XIDMPRECORD", "{i}", "r", "y", "9-9"],
    ["XIDMPRECORD", "{i}", "", "y", "bad"],
    ["XIDMPRECORD", "{i}", "", "y", f"{F}-0"],
    ["XIDMPRECORD", "{i}nokey", "r", "y", f"{F}-0"],
    ["XADD", "{i}", "IDMP", "r", "x", "*", "f", "4"],
    ["XINFO", "STREAM", "{i}"],
]


def _radix(r: Any) -> Any:
    """XINFO STREAM's reply with radix-tree-nodes zeroed (the trees differ, not the data)."""
    if isinstance(r, list) and "radix-tree-nodes" in r:
        r = list(r)
        r[r.index("radix-tree-nodes") + 1] = 0
    return r


async def test_commands_as_the_engine_answers(new: RedisBackend) -> None:  # noqa: F811
    embedded = InprocCommands()
    try:
        want = []
        for argv in COMMANDS:
            r = await asyncio.to_thread(embedded, *argv)
            want.append(("error", str(r)) if isinstance(r, ReplyError) else _radix(r))
    finally:
        await asyncio.to_thread(embedded.client.close)
    got = []
    for argv in COMMANDS:
        try:
            got.append(_radix(await new.command(argv)))
        except CommandError as e:
            got.append(("error", e.text))
    for argv, w, g in zip(COMMANDS, want, got, strict=True):
        assert g == w, argv
    await new.command(["FLUSHDB"])
    for run in (new.pipeline, new.multi_exec):
        await new.command(["FLUSHDB"])
        replies = [
            ("error", r.text) if isinstance(r, CommandError) else _radix(r)
            for r in await run(COMMANDS)
        ]
        assert replies == want, run


def test_each_server_version_gets_idmp_or_a_refusal() -> None:
    def sent(version: str, *argv: str) -> Any:
        return older(Features(parse_version(version)), Limits(), lookup(list(argv)), list(argv))

    for argv in (
        ["XADD", "s", "IDMP", "p", "i", "*", "f", "v"],
        ["XADD", "s", "IDMPAUTO", "p", "*", "f", "v"],
        ["XCFGSET", "s", "IDMP-MAXSIZE", "5"],
    ):
        for version in ("7.0.15", "8.2.0", "8.4.0"):
            line = sent(version, *argv)
            assert line is not None and line.line == ["PING"], (version, argv)
            with pytest.raises(NotAvailable, match=r"needs Redis 8\.6 or newer"):
                line.finish(b"PONG")
        for version in ("8.6.0", "8.8.0"):
            assert sent(version, *argv) is None, (version, argv)
    # a plain XADD with an IDMP field goes as it is
    assert sent("7.0.15", "XADD", "s", "*", "idmp", "p") is None
    record = ["XIDMPRECORD", "s", "p", "i", "1-1"]
    for version in ("7.0.15", "8.6.0", "8.6.1"):
        line = sent(version, *record)
        assert line is not None and line.line == ["PING"], version
        with pytest.raises(NotAvailable, match=r"needs Redis 8\.6\.2 or newer"):
            line.finish(b"PONG")
    for version in ("8.6.2", "8.6.3", "8.8.0"):
        assert sent(version, *record) is None, version


def test_an_idmp_batch_is_planned_up_to_the_millisecond_its_checks_hold() -> None:
    plain, at = XAddArgs("d", ("f", "v")), XAddArgs("d", ("f", "v"), id=StreamID(1500, 0))
    assert _deadline([at, plain], "", 1000) is None  # no explicit ID after a `*` one
    assert _deadline([plain, plain], "", 1000) is None
    assert _deadline([plain, at], "", 1000) == 1499  # at 1500, `*` takes 1500-0 itself
    far = XAddArgs("d", ("f", "v"), id=StreamID(10**9, 0))
    assert _deadline([plain, far], "", 1000) == 1000 + DEADLINE_SPAN_MS


async def test_the_script_does_nothing_past_its_deadline(new: RedisBackend) -> None:  # noqa: F811
    one = xadd_args(entry("late", "p", "i"), nomkstream=False)
    raw = await new.router.script(APPEND_IDMP, "late", "", 1, 1, len(one), *one, write=True)
    assert raw == 0 and await new.command(["EXISTS", "late"]) == 0
    raw = await new.router.script(APPEND_IDMP, "late", "", 1, "", len(one), *one, write=True)
    assert isinstance(raw, list) and len(raw) == 1
