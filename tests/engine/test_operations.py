"""INFO, CONFIG and RENAME in the engine: fields present, counts that move, node limits."""

from __future__ import annotations

from typing import Any

import pytest

from app.api.commands.resp import info_text
from app.engine.clock import ManualClock
from app.engine.errors import CommandError
from app.engine.replies import Info
from app.engine.store import Store


def fields(store: Store, *sections: str) -> dict[str, Any]:
    reply = store.execute(["INFO", *sections])
    assert isinstance(reply, Info)
    return {k: v for s in reply.sections for k, v in s.fields}


def test_info_default_sections_and_fields() -> None:
    clock = ManualClock()
    store = Store(clock=clock)
    store.execute(["XADD", "s", "1-1", "f", "v"])
    clock.advance(90_061_000)
    got = fields(store)
    assert got["redis_version"] == "7.0.15"
    assert (got["uptime_in_seconds"], got["uptime_in_days"]) == (90_061, 1)
    assert got["blocked_clients"] == 0
    assert got["db0"] == "keys=1,expires=0,avg_ttl=0"
    assert got["total_commands_processed"] == 1
    assert "cmdstat_xadd" not in got  # commandstats only with all / everything
    assert "cmdstat_xadd" in fields(store, "everything")
    text = info_text(store.execute(["INFO", "clients", "keyspace"]))
    assert (
        text
        == "# Clients\r\nblocked_clients:0\r\n\r\n# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n"
    )
    assert store.execute(["INFO", "nosuchsection"]) == Info([])


def test_blocked_clients_counts_parked_readers() -> None:
    store = Store(clock=ManualClock())
    blocks = [
        store.execute(["XREAD", "BLOCK", "0", "STREAMS", "a", "b", "$", "$"]),
        store.execute(["XREAD", "BLOCK", "0", "STREAMS", "a", "$"]),
    ]
    waiters = [store.keyspace.blocked.add(b, lambda reply: None) for b in blocks]
    assert fields(store, "clients")["blocked_clients"] == 2
    store.execute(["XADD", "b", "1-1", "f", "v"])  # serves the first
    assert fields(store, "clients")["blocked_clients"] == 1
    store.keyspace.blocked.remove(waiters[1])
    assert fields(store, "clients")["blocked_clients"] == 0


def test_errors_and_rejections_are_counted_then_reset() -> None:
    store = Store(clock=ManualClock())
    for argv in (["XLEN"], ["NOPE"], ["XADD", "s", "0-0", "f", "v"]):
        with pytest.raises(CommandError):
            store.execute(argv)
    got = fields(store, "all")
    assert got["errorstat_ERR"] == "count=3"
    assert got["total_error_replies"] == 3
    assert got["cmdstat_xlen"].endswith("rejected_calls=1,failed_calls=0")
    assert got["cmdstat_xadd"].startswith("calls=1,")
    assert got["cmdstat_xadd"].endswith("rejected_calls=0,failed_calls=1")
    assert store.execute(["CONFIG", "RESETSTAT"]) == "OK"
    got = fields(store, "all")
    assert got["total_error_replies"] == 0 and "errorstat_ERR" not in got
    # As in Redis, RESETSTAT itself is counted after it ran: the only command left.
    assert [k for k in got if k.startswith("cmdstat_")] == ["cmdstat_config|resetstat"]


def test_config_set_reaches_existing_and_new_streams() -> None:
    store = Store(clock=ManualClock())
    store.execute(["XADD", "old", "1-1", "f", "v"])
    assert store.execute(["CONFIG", "SET", "stream-node-max-entries", "2"]) == "OK"
    for i in range(2, 6):
        store.execute(["XADD", "old", f"{i}-1", "f", "v"])
        store.execute(["XADD", "new", f"{i}-1", "f", "v"])
    assert [len(n) for n in store.keyspace.streams["old"].nodes] == [2, 2, 1]
    assert [len(n) for n in store.keyspace.streams["new"].nodes] == [2, 2]
    assert store.execute(["CONFIG", "GET", "*max-e*"]) == ["stream-node-max-entries", "2"]
    with pytest.raises(CommandError, match="argument must be a memory value"):
        store.execute(["CONFIG", "SET", "stream-node-max-bytes", "lots"])


def test_rename_signals_both_keys() -> None:
    store = Store(clock=ManualClock())
    store.execute(["XGROUP", "CREATE", "src", "g", "$", "MKSTREAM"])
    block = store.execute(["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "src", ">"])
    got: list[Any] = []
    store.keyspace.blocked.add(block, got.append)
    assert store.execute(["RENAME", "src", "dst"]) == "OK"
    assert [str(e) for e in got] == ["UNBLOCKED the stream key no longer exists"]
    assert store.execute(["XINFO", "GROUPS", "dst"])[0].name == "g"
