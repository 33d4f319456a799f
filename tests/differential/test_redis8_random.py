"""Seeded random runs with XDELEX, XACKDEL, trims under reference policies and CLAIM reads
mixed into every other stream command, against redis-server 8.6 (``generator8``): each reply,
and after each write every read of the keys it changed (``checks.read_all``, DUMP aside:
redis-server 8 writes another RDB version), equal to redis-server's, node counts included.

Environment: ``XSTREAMS_REDIS8_WALKS=N`` runs N seeds (default 60), ``XSTREAMS_REDIS8_SEED=S``
only seed S.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.inproc import InprocCommands
from tests.differential.checks import read_all
from tests.differential.exact import ExactPair, RespClient
from tests.differential.generator8 import PROFILE8, Generator8, RandomPair8
from tests.differential.support import NODES_COMPARED
from tests.differential.walk import report, walk
from tests.support.redis_servers import redis8_or_skip

WALKS = int(os.environ.get("XSTREAMS_REDIS8_WALKS", "60"))
ONLY = os.environ.get("XSTREAMS_REDIS8_SEED")
SEEDS = [int(ONLY)] if ONLY else list(range(1, WALKS + 1))


@pytest.fixture(scope="module")
def walk_pair8() -> Iterator[RandomPair8]:
    """xstreams in process beside a redis-server 8.x of this module's own (the runs set
    node limits with CONFIG SET)."""
    with redis8_or_skip() as server:
        xs = InprocCommands()
        pair = RandomPair8(xs, RespClient("127.0.0.1", server.port), NODES_COMPARED)
        yield pair
        pair.close()
        xs.client.close()


def reads8(pair: ExactPair, key: str) -> None:
    read_all(pair, key, dump=False)


@pytest.mark.parametrize("seed", SEEDS)
def test_redis8_walk(seed: int, walk_pair8: RandomPair8, tmp_path: Path) -> None:
    pair = walk_pair8
    assert pair.resp("FLUSHALL") == "OK" and pair.xs("FLUSHALL") == "OK"
    history, failure = walk(pair, Generator8(seed, PROFILE8), PROFILE8.steps, reads=reads8)
    if failure is not None:
        again = f"XSTREAMS_REDIS8_SEED={seed} pytest tests/differential/test_redis8_random.py"
        report(history, failure, tmp_path, f"seed={seed} profile={PROFILE8.name}", again)
    names = [c[0] for c in history]
    assert names.count("XADD") > PROFILE8.steps // 10
    assert {"XDELEX", "XACKDEL"} <= set(names) or seed != 1
