"""kill -9 while a delivery policy dead-letters: each entry moves exactly once.

A durable server (``--fsync always``), or a front-end before a redis-server with
``appendfsync always``, holds a stream whose group has a policy: a dead-letter stream,
``max_deliveries`` 1 and a short visibility timeout. A consumer reads and releases
half of what it gets with XNACK FATAL; the rest it abandons, so the timeout dead-letters it.
Every read moves entries (XADD to the dead-letter stream + XACK in one atomic step: one
journal record, or one Lua script). The embedded server, or the redis-server, is killed with
SIGKILL at seeded random moments and restarted.

After each restart, and at the end, every entry already delivered is either still pending in
the group or in the dead-letter stream: never both (a move half kept would show the entry in
both, or twice in the dead-letter stream) and never neither (a move half lost).
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Commands
from tests.storage.conftest import DurableServer
from tests.storage.test_exactly_once import System
from tests.support.polling import until

ENTRIES = 3000
KILLS = 3
STREAM, DEAD, GROUP = "jobs", "jobs:dead", "g"
POLICY = {"visibility_timeout_ms": 150, "max_deliveries": 1, "dead_letter_stream": DEAD}


class Down(Exception):
    """The service or its Redis is down: the loop recovers it and goes on."""


def call(xs: Commands, *args: object) -> Any:
    try:
        r = xs.raw(*args)
    except httpx.HTTPError as e:
        raise Down from e
    if r.status_code == 503:
        raise Down
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json()["result"]


class Target:
    """The system under test: the embedded server (killed and started again) or a
    front-end whose redis-server is killed and started again."""

    def __init__(self, backend: str, folder: Path, db_url: str) -> None:
        self.backend, self.folder, self.db_url = backend, folder, db_url
        self.system: System | None = None
        if backend == "redis":
            self.system = System(folder, "redis")
            self.url = self.system.start()
        else:
            self.server = DurableServer(folder, db_url)
            self.url = self.server.url
        self.xs = Commands(self.url)

    def kill(self) -> None:
        if self.system is not None:
            self.system.kill_redis()
        else:
            self.server.kill()

    def recover(self) -> None:
        if self.system is not None:
            if self.system.redis is not None and self.system.redis.proc is None:
                self.system.start_redis()
            until(
                lambda: httpx.get(self.url + "/readyz", timeout=5).status_code == 200,
                30,
                "the front-end sees Redis again",
            )
            return
        self.server.proc.wait()
        self.xs.client.close()
        self.server = DurableServer(self.folder, self.db_url)
        self.url = self.server.url
        self.xs = Commands(self.url)

    def stop(self) -> None:
        self.xs.client.close()
        if self.system is not None:
            self.system.stop()
        else:
            self.server.stop()


def seed(target: Target) -> None:
    xs = Commands(target.url)
    try:
        assert xs("XGROUP", "CREATE", STREAM, GROUP, "$", "MKSTREAM") == "OK"
        lines = [["XADD", STREAM, "*", "n", str(i)] for i in range(ENTRIES)]
        for start in range(0, ENTRIES, 200):
            r = xs.client.post("/pipeline", json=lines[start : start + 200])
            assert r.status_code == 200
        r = xs.client.put(f"/v1/streams/{STREAM}/groups/{GROUP}/policy", json=POLICY)
        assert r.status_code == 200, r.text
    finally:
        xs.client.close()


def accounted(xs: Commands) -> tuple[set[str], list[str], str]:
    """The pending IDs, the dead letters' origin IDs (in order), and last-delivered."""
    pending = {row[0] for row in call(xs, "XPENDING", STREAM, GROUP, "-", "+", ENTRIES * 2)}
    origins = []
    for _, fields in call(xs, "XRANGE", DEAD, "-", "+") or []:
        named = dict(zip(fields[::2], fields[1::2], strict=True))
        assert named["xs-dl-stream"] == STREAM and named["xs-dl-group"] == GROUP
        assert named["xs-dl-reason"] in ("fatal", "max_deliveries")
        origins.append(named["xs-dl-id"])
    groups = call(xs, "XINFO", "GROUPS", STREAM)
    info = dict(zip(groups[0][::2], groups[0][1::2], strict=True))
    return pending, origins, info["last-delivered-id"]


def check(xs: Commands, all_ids: list[str]) -> bool:
    """Never both, never neither; True once every entry is in the dead-letter stream."""
    pending, origins, last = accounted(xs)
    assert len(origins) == len(set(origins)), "an entry was dead-lettered twice"
    assert not pending & set(origins), "an entry is pending and dead-lettered"
    last_ms, last_seq = map(int, last.split("-"))
    delivered = [i for i in all_ids if tuple(map(int, i.split("-"))) <= (last_ms, last_seq)]
    missing = set(delivered) - pending - set(origins)
    assert not missing, f"delivered, then neither pending nor dead-lettered: {sorted(missing)[:5]}"
    return set(origins) == set(all_ids)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_dead_lettering_survives_kill_9_of_the_embedded_server(db_url: str, tmp_path: Path) -> None:
    crash_loop(Target("embedded", tmp_path, db_url))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_dead_lettering_survives_kill_9_of_redis(tmp_path: Path) -> None:
    crash_loop(Target("redis", tmp_path, ""))


def crash_loop(target: Target) -> None:
    rng = random.Random(27)
    seed(target)
    all_ids = [e[0] for e in target.xs("XRANGE", STREAM, "-", "+")]
    kills = 0
    timer = threading.Timer(rng.uniform(0.05, 0.25), target.kill)
    timer.start()
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            try:
                # BLOCK: with nothing due yet, the server waits until the abandoned ones are.
                argv = (
                    "XREADGROUP", "GROUP", GROUP, "c", "COUNT", 10, "BLOCK", 50,
                    "STREAMS", STREAM, ">",
                )  # fmt: skip
                got = call(target.xs, *argv)
                ids = [e[0] for e in got[0][1]] if isinstance(got, list) and got else []
                fatal = ids[::2]
                if fatal:
                    call(target.xs, "XNACK", STREAM, GROUP, "FATAL", "IDS", len(fatal), *fatal)
                if not ids and check(target.xs, all_ids):
                    break
            except Down:
                timer.join()
                target.recover()
                kills += 1
                check(target.xs, all_ids)
                if kills < KILLS:
                    timer = threading.Timer(rng.uniform(0.05, 0.25), target.kill)
                    timer.start()
        else:
            pytest.fail("the entries were not all dead-lettered in time")
        assert kills == KILLS, f"only {kills} kills landed while the consumer worked"
        pending, origins, _ = accounted(target.xs)
        assert pending == set() and sorted(origins) == sorted(all_ids)
    finally:
        timer.cancel()
        target.stop()
