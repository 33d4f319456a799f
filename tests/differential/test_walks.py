"""Hundreds of short seeded random walks, in process, against a redis-server of their own.

Each walk (profile ``tombstones`` of ``generator``) sets its node limits with CONFIG SET —
small ones mostly, so that nodes fill after a few entries — and then mixes XADD (with
MAXLEN / MINID trims, ``=`` and ``~``, LIMIT), XDEL of runs of entries, XTRIM, XSETID,
consumer groups, claims and reads over two streams whose entries often have other fields
than their node's master entry. After every write, every read of the keys it changed runs
on both servers (``checks.read_all``: ranges, XREAD, every XINFO form, XPENDING, history
reads, DUMP crossed both ways) and every reply must be equal, radix-tree-keys included.
This is where a node holding only deleted entries (issue 23) is met again and again.

The reference redis-server is started for this module (``tests.support.redis_servers``): CONFIG SET
on the shared one would change the node sizes under the other test workers. xstreams is the
app's command endpoint in process (``InprocCommands``): no HTTP, so hundreds of walks take
about a minute.

Environment:
    XSTREAMS_WALKS=N          how many walks (default 400)
    XSTREAMS_WALK_FIRST=F     the first seed (default 1): seeds F .. F+N-1 (fresh seeds
                              explore further; CI keeps 1..400, so its runs repeat)
    XSTREAMS_WALK_SEED=S      only the walk of seed S (the seed a failure printed)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.api.inproc import InprocCommands
from tests.differential.exact import ExactPair
from tests.differential.generator import PROFILES, Generator
from tests.differential.support import NODES_COMPARED
from tests.differential.walk import report, walk
from tests.support.redis_servers import server_or_skip

PROFILE = PROFILES["tombstones"]
WALKS = int(os.environ.get("XSTREAMS_WALKS", "400"))
FIRST = int(os.environ.get("XSTREAMS_WALK_FIRST", "1"))
ONLY = os.environ.get("XSTREAMS_WALK_SEED")
SEEDS = [int(ONLY)] if ONLY else list(range(FIRST, FIRST + WALKS))

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def walk_pair() -> Iterator[ExactPair]:
    """xstreams in process beside a redis-server of this module's own."""
    with server_or_skip() as server:
        rr = redis.Redis(port=server.port, decode_responses=True)
        xs = InprocCommands()
        pair = ExactPair(xs, rr, NODES_COMPARED)
        yield pair
        pair.close()
        xs.client.close()
        rr.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_walk(seed: int, walk_pair: ExactPair, tmp_path: Path) -> None:
    """Every reply of the walk, and every read after each of its writes, equals redis-server's."""
    pair = walk_pair
    assert pair.resp("FLUSHALL") == "OK" and pair.xs("FLUSHALL") == "OK"
    history, failure = walk(pair, Generator(seed, PROFILE), PROFILE.steps)
    if failure is not None:
        again = f"XSTREAMS_WALK_SEED={seed} pytest tests/differential/test_walks.py"
        report(history, failure, tmp_path, f"seed={seed} profile={PROFILE.name}", again)
    # The walk must have built real state, or it proves little.
    assert sum(1 for c in history if c[0] == "XADD") > PROFILE.steps // 10
