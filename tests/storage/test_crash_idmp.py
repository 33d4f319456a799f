"""kill -9 after Redis 8.6's idempotent appends: the IDMP state acknowledged comes back.

XADD IDMP / IDMPAUTO (new, repeated, evicted by the size), XCFGSET, XIDMPRECORD and CONFIG SET
stream-idmp-maxsize run on a durable server (``--fsync always``), which is then killed with
SIGKILL. After the restart (the
journal replayed) and again after a clean stop (the shutdown snapshot loaded), XINFO STREAM
answers as before the kill, and a repeat of an iid still held answers its first ID while an
evicted one appends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Commands
from tests.storage.conftest import DurableServer


def idmp_writes(xs: Commands) -> dict[str, str]:
    ids = {"a": xs("XADD", "s", "IDMP", "p", "a", "*", "f", "1")}
    assert xs("XCFGSET", "s", "IDMP-MAXSIZE", "2") == "OK"  # a change: forgets "a"
    for iid in ("b", "c", "d"):  # "b" evicted by "d"
        ids[iid] = xs("XADD", "s", "IDMP", "p", iid, "*", "f", iid)
    ids["auto"] = xs("XADD", "s", "IDMPAUTO", "q", "*", "x", "1", "y", "2")
    assert xs("XADD", "s", "IDMPAUTO", "q", "*", "y", "2", "x", "1") == ids["auto"]
    assert xs("XADD", "s", "IDMP", "p", "d", "*", "f", "again") == ids["d"]
    ids["rec"] = xs("XADD", "s", "*", "f", "plain")  # recorded after the fact (8.6.2)
    assert xs("XIDMPRECORD", "s", "r", "rec", ids["rec"]) == "OK"
    assert xs("CONFIG", "SET", "stream-idmp-maxsize", "7") == "OK"  # streams from now on
    ids["t"] = xs("XADD", "t", "IDMP", "p", "a", "*", "f", "1")
    return ids


def state(xs: Commands) -> list[Any]:
    return [
        xs("XINFO", "STREAM", "s"),
        xs("XRANGE", "s", "-", "+"),
        xs("XINFO", "STREAM", "t"),
        xs("CONFIG", "GET", "stream-idmp-maxsize"),
    ]


@pytest.mark.timeout(120)
def test_idmp_state_survives_kill_9_and_a_snapshot(db_url: str, tmp_path: Path) -> None:
    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    try:
        ids = idmp_writes(xs)
        before = state(xs)
        info = dict(zip(before[0][::2], before[0][1::2], strict=True))
        assert (info["idmp-maxsize"], info["pids-tracked"], info["iids-tracked"]) == (2, 3, 4)
        assert (info["iids-added"], info["iids-duplicates"]) == (6, 2)
        assert dict(zip(before[2][::2], before[2][1::2], strict=True))["idmp-maxsize"] == 7
    finally:
        xs.client.close()
        srv.kill()
    for _ in range(2):  # after kill -9: the journal; after a clean stop: the snapshot
        srv = DurableServer(tmp_path, db_url)
        xs = Commands(srv.url)
        try:
            assert state(xs) == before
        finally:
            xs.client.close()
            srv.stop()
    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    try:
        assert xs("XADD", "s", "IDMP", "p", "c", "*", "f", "c") == ids["c"]
        assert xs("XADD", "s", "IDMPAUTO", "q", "*", "x", "1", "y", "2") == ids["auto"]
        assert xs("XADD", "s", "IDMP", "p", "b", "*", "f", "b") != ids["b"]  # evicted
        assert xs("XADD", "s", "IDMP", "r", "rec", "*", "f", "x") == ids["rec"]
        assert xs("XADD", "t", "IDMP", "p", "a", "*", "f", "1") == ids["t"]
    finally:
        xs.client.close()
        srv.kill()
