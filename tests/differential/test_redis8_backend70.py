"""XREADGROUP (with and without CLAIM) through the Redis backend in front of redis-server 7.0,
where CLAIM is emulated by script (app/backends/redis/newer.py), against redis-server 8.6:
several streams in one read, history reads (IDs) and ``>`` mixed, COUNT, NOACK, with XADD,
XACK and XCLAIM between; each reply compared (CLAIM idle times masked, ``Pair8``), and each
stream's XPENDING summary after every read.

Which entries a CLAIM read takes depends on their idle times, which are wall-clock: the walks
claim only entries made long idle by XCLAIM ... IDLE (a distinct idle each time, IDs in
ascending order), so both servers see the same order whatever the milliseconds between their
two copies of a command.

Environment: ``XSTREAMS_BACKEND70_WALKS=N`` runs N seeds (default 40), ``XSTREAMS_BACKEND70_SEED=S``
only seed S.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Iterator
from typing import Any

import pytest

from app.backends.redis import RedisBackend
from app.engine.errors import CommandError
from tests.backends.test_redis_backend import _standalone_url
from tests.conftest import ReplyError
from tests.differential.exact import RespClient
from tests.differential.redis8 import Pair8
from tests.support.redis_servers import redis8_or_skip

pytestmark = pytest.mark.redis

WALKS = int(os.environ.get("XSTREAMS_BACKEND70_WALKS", "40"))
ONLY = os.environ.get("XSTREAMS_BACKEND70_SEED")
SEEDS = [int(ONLY)] if ONLY else list(range(1, WALKS + 1))
STEPS = 60
KEYS = ("s1", "s2", "s3")
CONSUMERS = ("c1", "c2", "c3")
LONG_IDLE_MS = 3_600_000  # CLAIM's min-idle: only entries XCLAIM ... IDLE made this idle


class Backend70:
    """``RedisBackend.command`` on the tests' redis-server 7.0, called as a client is."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.backend = RedisBackend.from_url(_standalone_url(), block_connections=2)
        self.loop.run_until_complete(self.backend.start())
        features = self.backend.router.features
        if features is None or features.read_claim:
            self.close()
            pytest.skip("the tests' redis-server has XREADGROUP ... CLAIM: nothing is emulated")

    def __call__(self, *args: Any) -> Any:
        try:
            return self.loop.run_until_complete(self.backend.command([str(a) for a in args]))
        except CommandError as e:
            return ReplyError(e.text)

    def close(self) -> None:
        self.loop.run_until_complete(self.backend.close())
        self.loop.close()


@pytest.fixture(scope="module")
def pair70() -> Iterator[Pair8]:
    with redis8_or_skip() as server:
        xs = Backend70()
        pair = Pair8(xs, RespClient("127.0.0.1", server.port))
        yield pair
        pair.close()
        xs("FLUSHDB")
        xs.close()


def fresh(p: Pair8) -> None:
    assert p.resp("FLUSHALL") == "OK" and p.xs("FLUSHDB") == "OK"


def test_new_entries_after_a_history_read_come_in_two_items(pair70: Pair8) -> None:
    """The ``>`` stream after a history read is read as without CLAIM (redis-server 8.6):
    its new entries come as [id, fields], nothing of its PEL is claimed."""
    p = pair70
    fresh(p)
    for key in ("s1", "s3"):
        p("XADD", key, "1-0", "f", "v")
        p("XGROUP", "CREATE", key, "g1", "0")
    p("XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "s3", "s1", ">", ">")
    p("XCLAIM", "s1", "g1", "c1", "0", "1-0", "IDLE", str(2 * LONG_IDLE_MS))
    p("XADD", "s1", "2-0", "f", "v")
    reply = p(
        "XREADGROUP",
        "GROUP",
        "g1",
        "c3",
        "COUNT",
        "5",
        "CLAIM",
        "0",
        "STREAMS",
        "s3",
        "s1",
        "0",
        ">",
    )
    assert reply == [["s3", []], ["s1", [["2-0", ["f", "v"]]]]]
    p("XPENDING", "s1", "g1")
    # Before the history read, ``>`` claims: 1-0 (long idle) then the new 3-0, 4 items each.
    p("XADD", "s1", "3-0", "f", "v")
    p("XCLAIM", "s1", "g1", "c1", "0", "1-0", "IDLE", str(2 * LONG_IDLE_MS))
    reply = p("XREADGROUP", "GROUP", "g1", "c3", "CLAIM", "1000", "STREAMS", "s1", "s3", ">", "0")
    assert [len(e) for e in reply[0][1]] == [4, 4]
    p("XPENDING", "s1", "g1")


class Walk:
    """A seeded run of reads of several streams (history and ``>`` mixed, CLAIM or not)
    with XADD, XACK and XCLAIM between."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.next_ms = {key: 1 for key in KEYS}
        self.idle = 10 * LONG_IDLE_MS

    def setup(self) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = []
        for key in KEYS:
            out += [self.add(key) for _ in range(self.rng.randint(0, 3))]
            if not out or out[-1][1] != key:
                out.append(self.add(key))
            out.append(("XGROUP", "CREATE", key, "g", "0"))
        return out

    def add(self, key: str) -> tuple[str, ...]:
        ms = self.next_ms[key]
        self.next_ms[key] = ms + 1
        return ("XADD", key, f"{ms}-0", "f", str(ms))

    def some_ids(self, key: str) -> list[str]:
        top = self.next_ms[key]
        ids = sorted(self.rng.sample(range(1, top), min(top - 1, self.rng.randint(1, 3))))
        return [f"{i}-0" for i in ids]

    def read(self) -> tuple[str, ...]:
        rng = self.rng
        keys = rng.sample(KEYS, rng.randint(1, len(KEYS)))
        ids = [rng.choice((">", ">", "0", "0-0", f"{rng.randint(0, 3)}-0")) for _ in keys]
        args: list[str] = ["XREADGROUP", "GROUP", "g", rng.choice(CONSUMERS)]
        options: list[list[str]] = []
        if rng.random() < 0.5:
            options.append(["COUNT", str(rng.randint(1, 4))])
        if rng.random() < 0.75:
            options.append(["CLAIM", str(LONG_IDLE_MS)])
        if rng.random() < 0.2:
            options.append(["NOACK"])
        rng.shuffle(options)
        for option in options:
            args += option
        return (*args, "STREAMS", *keys, *ids)

    def next(self) -> tuple[str, ...]:
        rng = self.rng
        kind = rng.random()
        key = rng.choice(KEYS)
        if kind < 0.45:
            return self.read()
        if kind < 0.65:
            return self.add(key)
        if kind < 0.8:
            return ("XACK", key, "g", *self.some_ids(key))
        self.idle -= 1000  # distinct, so no two claims tie
        consumer = rng.choice(CONSUMERS)
        return ("XCLAIM", key, "g", consumer, "0", *self.some_ids(key), "IDLE", str(self.idle))


@pytest.mark.parametrize("seed", SEEDS)
def test_walk(seed: int, pair70: Pair8) -> None:
    p = pair70
    fresh(p)
    walk = Walk(seed)
    history: list[tuple[str, ...]] = []
    try:
        for cmd in walk.setup():
            history.append(cmd)
            p(*cmd)
        for _ in range(STEPS):
            cmd = walk.next()
            history.append(cmd)
            p(*cmd)
            if cmd[0] == "XREADGROUP":
                p.many([("XPENDING", key, "g") for key in KEYS])
    except AssertionError as e:
        steps = "\n".join(" ".join(c) for c in history)
        again = f"XSTREAMS_BACKEND70_SEED={seed} pytest {__file__}"
        pytest.fail(f"seed={seed}: {e}\n{steps}\nrun it again: {again}", pytrace=False)
