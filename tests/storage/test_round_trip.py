"""A state built by every write command survives a restart exactly (snapshot and journal paths).

Compared through the command endpoint before and after: XINFO STREAM FULL, XINFO GROUPS,
XINFO CONSUMERS, XPENDING (summary and extended), XRANGE, KEYS — masking nothing but idle
times, which move with the clock.
"""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Commands, ReplyError
from tests.engine.payloads import LEGACY_RDB9
from tests.storage.conftest import DurableServer
from tests.support.waiting import parked

IDLE_KEYS = {"idle", "inactive"}


def mask(value: Any) -> Any:
    """Replace idle times (``idle``/``inactive`` fields, XPENDING's third column) by None."""
    if isinstance(value, list):
        keys = value[::2]
        if len(value) % 2 == 0 and all(isinstance(k, str) for k in keys) and IDLE_KEYS & set(keys):
            out = list(value)
            for i in range(0, len(out), 2):
                out[i + 1] = None if out[i] in IDLE_KEYS else mask(out[i + 1])
            return out
        return [mask(v) for v in value]
    return value


def xpending_rows(rows: Any) -> Any:
    return [[r[0], r[1], None, r[3]] for r in rows] if isinstance(rows, list) else rows


def build_state(xs: Commands, url: str) -> None:
    """Every write command, with the options that change what gets recorded."""
    assert xs("FLUSHALL") == "OK"
    adds = [["XADD", "orders", f"{i}-0", "item", f"book{i}", "qty", str(i)] for i in range(1, 251)]
    r = xs.client.post("/pipeline", json=adds)
    assert r.status_code == 200 and all("result" in x for x in r.json()), r.text
    xs("XADD", "orders", "300-*", "other", "fields")
    xs("XADD", "orders", "*", "b", "2", "a", "1")
    xs("XADD", "orders", "NOMKSTREAM", "MAXLEN", "~", "200", "*", "x", "y")
    xs("XADD", "nope", "NOMKSTREAM", "*", "x", "y")
    xs("XTRIM", "orders", "MAXLEN", "240")
    xs("XTRIM", "orders", "MINID", "~", "50")
    xs("XDEL", "orders", "100-0", "101-0", "250-0", "999-0")
    xs("XGROUP", "CREATE", "orders", "g1", "0")
    xs("XGROUP", "CREATE", "orders", "g2", "$", "ENTRIESREAD", "3")
    xs("XGROUP", "CREATE", "fresh", "g", "$", "MKSTREAM")
    xs("XGROUP", "CREATECONSUMER", "orders", "g1", "idle-one")
    xs("XGROUP", "CREATECONSUMER", "orders", "g1", "gone")
    xs("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "20", "STREAMS", "orders", ">")
    xs("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "10", "STREAMS", "orders", ">")
    xs("XREADGROUP", "GROUP", "g1", "gone", "COUNT", "3", "STREAMS", "orders", ">")
    xs("XGROUP", "DELCONSUMER", "orders", "g1", "gone")
    xs("XREADGROUP", "GROUP", "g1", "carol", "COUNT", "5", "NOACK", "STREAMS", "orders", ">")
    xs("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "4", "STREAMS", "orders", "0")
    xs("XACK", "orders", "g1", "60-0", "61-0", "62-0", "1-0")
    xs("XCLAIM", "orders", "g1", "carol", "0", "63-0", "64-0", "RETRYCOUNT", "7")
    xs("XCLAIM", "orders", "g1", "dave", "0", "65-0", "IDLE", "5000", "JUSTID")
    xs("XCLAIM", "orders", "g1", "dave", "0", "200-0", "FORCE", "TIME", "1700000000000")
    xs("XCLAIM", "orders", "g1", "erin", "0", "66-0", "LASTID", "210-0")
    xs("XDEL", "orders", "70-0")
    xs("XAUTOCLAIM", "orders", "g1", "frank", "0", "68-0", "COUNT", "5")
    xs("XGROUP", "SETID", "orders", "g2", "150-0", "ENTRIESREAD", "90")
    xs("XREADGROUP", "GROUP", "g2", "zed", "COUNT", "2", "STREAMS", "orders", ">")
    xs("XGROUP", "CREATE", "orders", "doomed", "0")
    xs("XGROUP", "DESTROY", "orders", "doomed")
    xs("XADD", "tmp", "*", "a", "1")
    xs("DEL", "tmp")
    xs("XADD", "future", "5-5", "a", "1")
    xs("XSETID", "future", "9999999999999-5", "ENTRIESADDED", "9", "MAXDELETEDID", "3-0")
    # CONFIG SET is journaled where it ran: the nodes appended after it are 7 entries long,
    # before and after the restart (XINFO STREAM FULL shows the node count).
    xs("XADD", "small", "1-0", "a", "1")
    assert (
        xs("CONFIG", "SET", "stream-node-max-entries", "7", "stream-node-max-bytes", "2kb") == "OK"
    )
    adds = [["XADD", "small", f"{i}-0", "a", str(i)] for i in range(2, 40)]
    assert xs.client.post("/pipeline", json=adds).status_code == 200
    # RENAME moves a stream with its groups; RENAMENX leaves an existing key alone.
    assert xs("RENAME", "fresh", "renamed") == "OK"
    assert xs("RENAMENX", "renamed", "orders") == 0
    assert xs("RENAMENX", "small", "smaller") == 1
    # RESTORE is journaled with its payload: Redis 5's legacy one, and a DUMP of orders
    # replacing a stream.
    restore(xs, "legacy", LEGACY_RDB9)
    restore(xs, "copy", LEGACY_RDB9)
    r = xs.client.post("/", json=["DUMP", "orders"], headers={"Upstash-Encoding": "base64"})
    restore(xs, "copy", base64.b64decode(r.json()["result"]), "REPLACE")
    xs("XGROUP", "CREATE", "waiting", "g", "$", "MKSTREAM")
    # A blocked XREADGROUP served inside another client's XADD: its delivery is journaled too.
    got: list[Any] = []

    def read() -> None:
        c = Commands(url)
        got.append(c("XREADGROUP", "GROUP", "g", "w", "BLOCK", "5000", "STREAMS", "waiting", ">"))
        c.client.close()

    reader = threading.Thread(target=read)
    reader.start()
    parked(url, 1)
    xs("XADD", "waiting", "7-0", "served", "yes")
    reader.join()
    assert got and not isinstance(got[0], ReplyError), got


def restore(xs: Commands, key: str, payload: bytes, *options: str) -> None:
    """RESTORE with a binary payload: bytes that are not UTF-8 travel as ``\\udcNN``."""
    argv = ["RESTORE", key, "0", payload.decode("utf-8", "surrogateescape"), *options]
    r = xs.client.post("/", content=json.dumps(argv).encode())
    assert r.json() == {"result": "OK"}, r.text


def observe(xs: Commands) -> dict[str, Any]:
    keys = sorted(xs("KEYS", "*"))
    out: dict[str, Any] = {"keys": keys, "dbsize": xs("DBSIZE")}
    out["config"] = xs("CONFIG", "GET", "stream-node-max-*")
    for key in keys:
        out[f"{key} full"] = mask(xs("XINFO", "STREAM", key, "FULL", "COUNT", "0"))
        out[f"{key} range"] = xs("XRANGE", key, "-", "+")
        groups = xs("XINFO", "GROUPS", key)
        out[f"{key} groups"] = groups
        for g in groups:
            name = g[g.index("name") + 1]
            out[f"{key} {name} consumers"] = mask(xs("XINFO", "CONSUMERS", key, name))
            out[f"{key} {name} pending"] = xs("XPENDING", key, name)
            out[f"{key} {name} pending rows"] = xpending_rows(
                xs("XPENDING", key, name, "-", "+", "1000")
            )
    return out


@pytest.mark.parametrize("restart", ["clean", "sigkill"])
@pytest.mark.timeout(120)
def test_round_trip(db_url: str, tmp_path: Path, restart: str) -> None:
    # After SIGKILL: a tiny threshold makes background snapshots happen during the build, so
    # recovery is "newest snapshot + later records". After a clean stop: the shutdown snapshot.
    small = {"XSTREAMS_SNAPSHOT_AFTER_BYTES": "3000"} if restart == "sigkill" else {}
    srv = DurableServer(tmp_path, db_url, env=small)
    xs = Commands(srv.url)
    build_state(xs, srv.url)
    before = observe(xs)
    xs.client.close()
    last_ids = {k: before[f"{k} full"][before[f"{k} full"].index("last-generated-id") + 1]
                for k in before["keys"]}  # fmt: skip
    if restart == "clean":
        srv.stop()
    else:
        srv.kill()
    srv = DurableServer(tmp_path, db_url, env=small)
    xs = Commands(srv.url)
    try:
        after = observe(xs)
        assert after == before
        assert after["config"] == ["stream-node-max-bytes", "2048", "stream-node-max-entries", "7"]
        assert "fresh" not in after["keys"] and "renamed groups" in after
        full = after["smaller full"]
        assert full[full.index("radix-tree-keys") + 1] == 6  # 39 entries, 7 per node
        # New auto IDs are greater than every earlier one, even past a future XSETID.
        for key, last in last_ids.items():
            new = xs("XADD", key, "*", "after", "restart")
            assert tuple(map(int, new.split("-"))) > tuple(map(int, last.split("-"))), key
    finally:
        xs.client.close()
        srv.stop()
