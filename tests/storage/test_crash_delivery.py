"""kill -9 while a delivery policy dead-letters: each entry moves exactly once.

A durable server (``--fsync always``) holds a stream whose group has a policy: a dead-letter
stream, ``max_deliveries`` 1 and a short visibility timeout. A consumer reads and releases
half of what it gets with XNACK FATAL; the rest it abandons, so the timeout dead-letters it.
Every read moves entries (XADD to the dead-letter stream + XACK in one atomic step). The
server is killed with SIGKILL at seeded random moments and restarted.

After each restart, and at the end, every entry already delivered is either still pending in
the group or in the dead-letter stream: never both (a move half kept would show the entry in
both, or twice in the dead-letter stream) and never neither (a move half lost).
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import Commands
from tests.storage.conftest import DurableServer

ENTRIES = 3000
KILLS = 3
STREAM, DEAD, GROUP = "jobs", "jobs:dead", "g"
POLICY = {"visibility_timeout_ms": 150, "max_deliveries": 1, "dead_letter_stream": DEAD}


def seed(srv: DurableServer) -> None:
    xs = Commands(srv.url)
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
    pending = {row[0] for row in xs("XPENDING", STREAM, GROUP, "-", "+", ENTRIES * 2)}
    origins = []
    for _, fields in xs("XRANGE", DEAD, "-", "+") or []:
        named = dict(zip(fields[::2], fields[1::2], strict=True))
        assert named["xs-dl-stream"] == STREAM and named["xs-dl-group"] == GROUP
        assert named["xs-dl-reason"] in ("fatal", "max_deliveries")
        origins.append(named["xs-dl-id"])
    groups = xs("XINFO", "GROUPS", STREAM)
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
def test_dead_lettering_survives_kill_9(db_url: str, tmp_path: Path) -> None:
    rng = random.Random(27)
    srv = DurableServer(tmp_path, db_url)
    seed(srv)
    xs = Commands(srv.url)
    all_ids = [e[0] for e in xs("XRANGE", STREAM, "-", "+")]
    kills = 0
    timer = threading.Timer(rng.uniform(0.1, 0.5), srv.kill)
    timer.start()
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            try:
                got = xs("XREADGROUP", "GROUP", GROUP, "c", "COUNT", 10, "STREAMS", STREAM, ">")
                ids = [e[0] for e in got[0][1]] if got else []
                fatal = ids[::2]
                if fatal:
                    xs("XNACK", STREAM, GROUP, "FATAL", "IDS", len(fatal), *fatal)
                if not ids and check(xs, all_ids):
                    break
                if not ids:
                    time.sleep(0.05)  # the abandoned ones come due after the timeout
            except httpx.HTTPError:
                timer.join()
                srv.proc.wait()
                xs.client.close()
                srv = DurableServer(tmp_path, db_url)
                xs = Commands(srv.url)
                kills += 1
                check(xs, all_ids)
                if kills < KILLS:
                    timer = threading.Timer(rng.uniform(0.1, 0.5), srv.kill)
                    timer.start()
        else:
            pytest.fail("the entries were not all dead-lettered in time")
        assert kills == KILLS, f"only {kills} kills landed while the consumer worked"
        pending, origins, _ = accounted(xs)
        assert pending == set() and sorted(origins) == sorted(all_ids)
    finally:
        timer.cancel()
        xs.client.close()
        srv.stop()
