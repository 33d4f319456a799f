"""Redis's own stream tests (tests/unit/type/stream.tcl and stream-cgroups.tcl of Redis 8.6.3)
against an xstreams service, through the RESP bridge, with Redis's Tcl runner: on the embedded
backend, and on the Redis backend in front of a redis-server 8.6.3.

Every test passes but the ones listed below, each with why (``COMMON`` on both backends,
``EMBEDDED`` and ``REDIS`` on one). The lists are checked both ways: a test that fails and is
not listed fails this test with its error, and a listed test that passes fails it too, so the
lists stay true (remove the line). The runner itself
leaves out the tests tagged ``needs:debug`` (DEBUG RELOAD, AOF: sent ``--tags -needs:debug``)
and ``external:skip`` (server restarts, replication, configurations it cannot undo).

Needs tclsh and the suite that ``.ci/redis8-tests`` fetches (XSTREAMS_REDIS8_TESTS_DIR), and
for the Redis backend ``.ci/redis8``'s redis-server; skips without them unless
XSTREAMS_REQUIRE_SERVICES=1. Takes one to two minutes a backend: the fuzz and large-PEL tests
send tens of thousands of commands, each one an HTTP request (redis-server itself runs the
files in under a minute).
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REQUIRE_SERVICES, Server, free_port, stop_process
from tests.support.redis_servers import redis8_or_skip
from tests.support.waiting import until
from tests.tools.redis_suite import DEFAULT_TESTS, Outcome, first_line, parse, run_suite

VERSION = "8.6.3"

OTHER_TYPE = "needs another key type: "
KEYSPACES = "needs several databases (xstreams has one keyspace; SELECT n selects it): "
NOT_SERVED = "not implemented: "
REDIS70 = "Redis 7.0's reply, which xstreams keeps for the commands 7.0 had: "

# Tests left out of the run (--skiptest): they fail against xstreams because a command is
# unknown, and leave a reader blocked on a stream (BLOCK 0 or 20 s) that Redis would have
# woken, so the tests after them would count one blocked client too many.
SKIPPED = {
    "XREAD: XADD + DEL + LPUSH should not awake client": OTHER_TYPE + "LPUSH",
    "Blocking XREADGROUP: key type changed with SET": OTHER_TYPE + "SET",
    "Blocking XREADGROUP: key type changed with transaction": OTHER_TYPE + "SET",
    "Blocking XREAD: key type changed with SET": OTHER_TYPE + "SET",
}

_IDMP_INFO = REDIS70 + (
    "XINFO STREAM shows the IDMP fields (idmp-*, pids-tracked, iids-*) only on a stream with"
    " IDMP state, so a stream 7.0 could hold answers as 7.0 does"
)

# Failing on both backends.
COMMON = {
    # unit/type/stream
    "XIDMPRECORD parameter validation": OTHER_TYPE + "SET",
    "XADD IDMP tracking survives SWAPDB": KEYSPACES + "SWAPDB",
    "XADD IDMP tracking cleared after FLUSHALL across all databases": KEYSPACES + "SELECT 1",
    "XADD IDMP tracking survives COPY": NOT_SERVED + "COPY",
    "XADD IDMP tracking correct after COPY REPLACE overwrites IDMP stream": NOT_SERVED + "COPY",
    "XADD IDMP tracking survives MOVE": KEYSPACES + "MOVE",
    # unit/type/stream-cgroups
    "XREADGROUP wrong key type": OTHER_TYPE + "SET",
    "Blocking XREADGROUP for stream key that has clients blocked on list": OTHER_TYPE + "BLPOP",
}

_RDB_STAT = NOT_SERVED + "INFO rdb_changes_since_last_save (xstreams keeps no RDB)"
_CAP = REDIS70 + "ENTRIESREAD is not capped (7.2 caps it)"

# Failing on the embedded backend (the engine's own implementation) only.
EMBEDDED = {
    # unit/type/stream
    "XADD IDMP tracking survives RESTORE": NOT_SERVED
    + "DUMP of a stream with IDMP state (it needs Redis 8's payload)",
    "XINFO STREAM returns iids-tracked and iids-added fields": _IDMP_INFO,
    "XINFO STREAM returns pids-tracked field": _IDMP_INFO,
    "XSETID cannot set smaller ID than current MAXDELETEDID": REDIS70
    + "XSETID accepts an ID below max-deleted-entry-id",
    "XADD with artial ID with maximal seq": REDIS70
    + "XADD ms-* after ms-18446744073709551615 says 'Elements are too large'",
    # unit/type/stream-cgroups
    "Blocking XREADGROUP: key deleted": REDIS70
    + "a blocked XREADGROUP whose key is deleted gets UNBLOCKED, not NOGROUP (7.2)",
    "Blocking XREADGROUP: flushed DB": REDIS70
    + "a blocked XREADGROUP whose key is flushed gets UNBLOCKED, not NOGROUP (7.2)",
    "XREAD and XREADGROUP against wrong parameter": REDIS70
    + "'Unbalanced XREAD list of streams' for both commands",
    "XINFO FULL output": _IDMP_INFO + " in XINFO STREAM FULL",
    "Consumer seen-time and active-time": REDIS70
    + "an XREADGROUP that reads nothing makes no consumer; XINFO CONSUMERS has no inactive",
    "XREADGROUP of multiple entries changes dirty by one": _RDB_STAT,
    "XREADGROUP from PEL does not change dirty": _RDB_STAT,
    "Consumer Group Lag with XDELs and tombstone after the last_id of consume group": REDIS70
    + "lag counted as 7.0 does after a deletion past the group",
    "Consumer group lag with XTRIM": REDIS70 + "lag counted as 7.0 does after a trim",
    "Loading from legacy (Redis <= v7.0.x, rdb_ver < 11) persistence": REDIS70
    + "the payload is of RDB version 11 (Redis 7.2), which 7.0's RESTORE refuses too",
    "XGROUP CREATE with ENTRIESREAD larger than stream entries should cap the value": _CAP,
    "XGROUP SETID with ENTRIESREAD larger than stream entries should cap the value": _CAP,
}

_CONFIG = NOT_SERVED + "CONFIG SET in front of Redis (stream-node-max-entries, configured on Redis)"

# Failing on the Redis backend (commands passed through to redis-server 8.6.3) only.
REDIS = {
    # unit/type/stream
    "XADD with MAXLEN option and the '~' argument": _CONFIG,
    "XADD with LIMIT consecutive calls": _CONFIG,
    "XTRIM with ~ is limited": _CONFIG,
    "XTRIM without ~ is not limited": _CONFIG,
    "XTRIM without ~ and with LIMIT": _CONFIG,
    "XTRIM with LIMIT delete entries no more than limit": _CONFIG,
    "XTRIM with approx and ACKED deletes entries correctly": _CONFIG,
    "XTRIM with approx and DELREF deletes entries correctly": _CONFIG,
    "CONFIG SET stream-idmp-duration and stream-idmp-maxsize validation": _CONFIG,
    "XADD IDMP tracking survives RESTORE": NOT_SERVED + "PTTL",
    # unit/type/stream-cgroups
    "XCLAIM with trimming": _CONFIG,
    "XGROUP DESTROY should unblock XREADGROUP with -NOGROUP": "Redis backend: under the"
    " reply-entries limit a blocking XREADGROUP first reads what is there (capped), then"
    " blocks: INFO commandstats counts calls=2",
}

EXPECTED_FAILURES = {"embedded": COMMON | EMBEDDED, "redis": COMMON | REDIS}


@pytest.fixture
def suite() -> Path:
    """The folder of Redis's runner and tests, of the version the lists are for."""
    tests = DEFAULT_TESTS
    missing = None
    if shutil.which("tclsh") is None:
        missing = "tclsh is not installed (apt-get install tcl)"
    elif not (tests / "runtest").exists():
        missing = f"Redis's Tcl tests are not in {tests} (run .ci/redis8-tests)"
    if missing:
        if REQUIRE_SERVICES:
            pytest.fail(missing + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(missing)
    # Debian's version of the package: "5:8.6.3-1" (epoch, upstream, revision).
    debian = (tests / "VERSION").read_text().strip() if (tests / "VERSION").exists() else "?"
    version = debian.rpartition(":")[2].partition("-")[0]
    if version != VERSION:
        pytest.fail(f"{tests} holds Redis {version}'s tests; the lists here are {VERSION}'s")
    return tests


class Bridge:
    """``python -m tests.tools.resp_bridge`` in front of ``url``, on a free port."""

    def __init__(self, url: str) -> None:
        self.port = free_port()
        cmd = [sys.executable, "-m", "tests.tools.resp_bridge", "--port", str(self.port)]
        self.proc = subprocess.Popen([*cmd, "--url", url])
        try:
            until(self._accepts, 30, what="the RESP bridge accepting connections")
        except AssertionError:
            self.stop()
            raise RuntimeError("the RESP bridge did not start") from None

    def _accepts(self) -> bool:
        """Whether the bridge takes a connection; raises if its process has exited."""
        if self.proc.poll() is not None:
            raise AssertionError(f"the RESP bridge exited with {self.proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def stop(self) -> None:
        stop_process(self.proc)


@pytest.fixture(params=["embedded", "redis"])
def bridge(request: pytest.FixtureRequest, suite: Path, tmp_path: Path) -> Iterator[Bridge]:
    """A service of its own (the suite flushes everything) and its bridge: the embedded
    backend, or the Redis backend in front of a redis-server 8.6.3 of its own. The journal is
    synced every second, not at each write: the suite checks replies, and a sync per command
    made it half as slow again (the fuzz tests send tens of thousands)."""
    with contextlib.ExitStack() as stack:
        args = ["--fsync", "everysec"]
        # The suite is 8.6's: XREAD's + (Redis 7.4) is on, as a user of 8.x would set it.
        env = {"XSTREAMS_XREAD_LAST_ENTRY": "1"}
        if request.param == "redis":
            redis = stack.enter_context(redis8_or_skip())
            args = ["--backend", f"redis://{redis.address}/0"]
        server = Server(tmp_path / "data", *args, env=env)
        stack.callback(server.stop)
        front = Bridge(server.url)
        stack.callback(front.stop)
        yield front


def check(outcomes: list[Outcome], expected: dict[str, str]) -> list[str]:
    """What is wrong with ``outcomes`` against ``expected`` and ``SKIPPED``: one line per
    problem."""
    failed: dict[str, Outcome] = {}
    passed: set[str] = set()
    for o in outcomes:
        if o.status == "err":
            failed.setdefault(o.name, o)
        elif o.status == "ok":
            passed.add(o.name)
    problems = [
        f"{o.unit}: {name!r} failed:\n{o.detail}\n"
        for name, o in failed.items()
        if name not in expected
    ]
    problems += [
        f"{name!r} passes now: remove it from the lists ({why})"
        for name, why in expected.items()
        if name in passed and name not in failed
    ]
    problems += [
        f"{name!r} did not run (renamed?): remove it from the lists"
        for name in expected
        if name not in passed and name not in failed
    ]
    skipped = {o.name for o in outcomes if o.status == "skip"}
    problems += [
        f"{name!r} was not skipped (renamed?): remove it from SKIPPED"
        for name in SKIPPED
        if name not in skipped
    ]
    return problems


@pytest.mark.slow
@pytest.mark.server
@pytest.mark.timeout(1200)
def test_redis_stream_suite(request: pytest.FixtureRequest, suite: Path, bridge: Bridge) -> None:
    outcomes, out = run_suite(suite, bridge.port, skip=SKIPPED)
    problems = check(outcomes, EXPECTED_FAILURES[request.node.callspec.params["bridge"]])
    counts = {s: sum(o.status == s for o in outcomes) for s in ("ok", "err", "skip", "ignore")}
    assert counts["ok"] > 200, out  # the files ran, not just their first lines
    failed = "\n".join(f"{o.name}: {first_line(o.detail)}" for o in outcomes if o.status == "err")
    assert not problems, f"{counts}\n" + "\n".join(problems) + f"\n\nall failures:\n{failed}"


# -- the checks themselves, on made-up runs (no tclsh needed) ---------------------------------
LISTED = "Consumer group lag with XTRIM"
UNIT = "unit/type/stream"


LISTS = EXPECTED_FAILURES["embedded"]


def _all_listed(except_: str = "") -> list[Outcome]:
    runs = [Outcome(UNIT, n, "err", "x") for n in LISTS if n != except_]
    return runs + [Outcome(UNIT, n, "skip") for n in SKIPPED]


def test_the_lists_as_they_are_pass() -> None:
    assert check([*_all_listed(), Outcome(UNIT, "XADD wrong number of args", "ok")], LISTS) == []


def test_an_unlisted_failure_is_named_with_its_error() -> None:
    runs = [*_all_listed(), Outcome(UNIT, "XADD IDs are incremental", "err", "Expected 1 to be 2")]
    (problem,) = check(runs, LISTS)
    assert "'XADD IDs are incremental' failed" in problem and "Expected 1 to be 2" in problem


def test_a_listed_failure_that_passes_fails() -> None:
    (problem,) = check([*_all_listed(LISTED), Outcome(UNIT, LISTED, "ok")], LISTS)
    assert "passes now" in problem and LISTED in problem


def test_a_listed_test_that_did_not_run_fails() -> None:
    (problem,) = check(_all_listed(LISTED), LISTS)
    assert "did not run" in problem and LISTED in problem


def test_the_runner_output_is_read_with_each_error() -> None:
    last = "XREAD: read last element after XDEL (issue #13628)"
    out = "\n".join(
        [
            "Testing unit/type/stream",
            "[ok]: XADD wrong number of args (3 ms)",
            f"[err]: {last} in tests/unit/type/stream.tcl",
            "[skip]: XREAD: XADD + DEL + LPUSH should not awake client",
            "[ignore]: XADD IDMP persists in RDB: Tag: needs:debug denied",
            "Testing unit/type/stream-cgroups",
            "[ok]: XCLAIM with trimming (5 ms)",
            "!!! WARNING The following tests failed:",
            "",
            f"*** [err]: {last} in tests/unit/type/stream.tcl",
            "ERR Invalid stream ID specified as stream command argument",
            "ERR Invalid stream ID specified as stream command argument",
            "    while executing",
            "Cleanup: may take some time... OK",
        ]
    )
    assert parse(out) == [
        Outcome(UNIT, "XADD wrong number of args", "ok"),
        Outcome(UNIT, last, "err", "\n".join(out.splitlines()[10:13])),
        Outcome(UNIT, "XREAD: XADD + DEL + LPUSH should not awake client", "skip"),
        Outcome(UNIT, "XADD IDMP persists in RDB", "ignore", "Tag: needs:debug denied"),
        Outcome("unit/type/stream-cgroups", "XCLAIM with trimming", "ok"),
    ]
    assert first_line(parse(out)[1].detail).startswith("ERR Invalid stream ID")
