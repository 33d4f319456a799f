"""A Python SDK generated from openapi/openapi.json (openapi-python-client) drives a running
server: the contract is complete enough for a generator, and the server keeps to it."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from app.engine.delivery import DEAD_LETTER_FIELDS
from tests.conftest import Commands

SPEC = Path(__file__).resolve().parents[3] / "openapi" / "openapi.json"
PACKAGE = "xstreams_generated_client"


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    root = tmp_path_factory.mktemp("sdk")
    config = root / "config.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run: the code is imported, not read
    generator = Path(sys.executable).with_name("openapi-python-client")
    subprocess.run(
        [str(generator), "generate", "--path", str(SPEC), "--output-path", str(root / PACKAGE),
         "--meta", "none", "--config", str(config)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def _module(sdk: ModuleType, name: str) -> Any:
    """A generated package with every module in it imported (one per operation)."""
    package = importlib.import_module(f"{sdk.__name__}.{name}")
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")
    return package


def test_the_generated_client_drives_every_resource(sdk: ModuleType, xs: Commands) -> None:
    m = _module(sdk, "models")
    streams = _module(sdk, "api.streams")
    entries = _module(sdk, "api.entries")
    groups = _module(sdk, "api.groups")
    consumers = _module(sdk, "api.consumers")
    pel = _module(sdk, "api.pending_entries")
    delivery = _module(sdk, "api.delivery")
    with sdk.Client(base_url=str(xs.client.base_url), raise_on_unexpected_status=True) as client:
        _drive(m, streams, entries, groups, consumers, pel, client)
        _drive_delivery(m, streams, entries, groups, delivery, client)
    assert xs("EXISTS", "s") == 0
    assert xs("EXISTS", "{d}") == 0


def _drive(m: Any, streams: Any, entries: Any, groups: Any, consumers: Any, pel: Any,
           client: Any) -> None:  # fmt: skip

    # Append: one entry (object form), then a batch with a repeated field (pairs form).
    one = m.Append(id="1-0", fields=m.FieldMap.from_dict({"a": "1"}))
    r = entries.append_entries.sync_detailed("s", client=client, body=one)
    assert r.status_code == 201 and r.parsed.ids == ["1-0"]
    assert r.headers["location"] == "/v1/streams/s/entries/1-0"
    batch = m.Append(entries=[
        m.NewEntry(id="2-0", fields=[["k", "x"], ["k", "y"]]),
        m.NewEntry(id="3-0", fields=m.FieldMap.from_dict({"b": "2"})),
    ])  # fmt: skip
    assert entries.append_entries.sync("s", client=client, body=batch).ids == ["2-0", "3-0"]

    page = entries.list_entries.sync("s", client=client, fields=m.FieldsForm.PAIRS, count=2)
    assert [e.id for e in page.entries] == ["1-0", "2-0"]
    assert page.entries[1].fields == [["k", "x"], ["k", "y"]]
    assert page.next_ == "(2-0"
    one_entry = entries.get_entry.sync("s", "3-0", client=client)
    assert one_entry.fields.to_dict() == {"b": "2"}
    polled = entries.list_entries.sync("s", client=client, after="2-0", block_ms=100)
    assert [e.id for e in polled.entries] == ["3-0"]
    read = entries.read_streams.sync(client=client, stream=["s"], after=["1-0"], count=1)
    assert read.streams[0].stream == "s" and read.streams[0].entries[0].id == "2-0"

    info = streams.get_stream.sync("s", client=client)
    assert isinstance(info, m.StreamInfo) and info.length == 3
    full = streams.get_stream.sync("s", client=client, full=True)
    assert isinstance(full, m.StreamFullInfo) and len(full.entries) == 3
    listed = streams.list_streams.sync(client=client)
    assert [s.name for s in listed.streams] == ["s"]

    # Groups, consumers, reads, the PEL.
    made = groups.create_group.sync("s", client=client, body=m.NewGroup(name="g", id="0"))
    assert made.name == "g" and made.lag == 3
    assert groups.list_groups.sync("s", client=client).groups[0].name == "g"
    assert (
        consumers.create_consumer.sync_detailed("s", "g", "bob", client=client).status_code == 201
    )
    got = consumers.read_group.sync("s", "g", "alice", client=client, body=m.Read(count=2))
    assert [e.id for e in got.entries] == ["1-0", "2-0"]
    pending = pel.get_pending.sync("s", "g", client=client, count=10)
    assert pending.count == 2 and [p.consumer for p in pending.entries] == ["alice", "alice"]
    claim = m.Claim(consumer="bob", min_idle_ms=0, ids=["1-0"], justid=True)
    claimed = pel.claim_entries.sync("s", "g", client=client, body=claim)
    assert claimed.ids == ["1-0"] and claimed.entries is None
    auto_claim = m.AutoClaim(consumer="carol", min_idle_ms=0)
    auto = pel.autoclaim_entries.sync("s", "g", client=client, body=auto_claim)
    assert auto.ids == ["1-0", "2-0"] and auto.next_start == "0-0"
    acked = pel.ack_entries.sync("s", "g", client=client, body=m.Ack(ids=["1-0"]))
    assert acked.acknowledged == 1
    listed_c = consumers.list_consumers.sync("s", "g", client=client).consumers
    assert sorted(c.name for c in listed_c) == ["alice", "bob", "carol"]
    assert consumers.delete_consumer.sync("s", "g", "carol", client=client).pending == 1
    moved = groups.set_group_id.sync("s", "g", client=client,
                                     body=m.GroupUpdate(last_delivered_id="$"))  # fmt: skip
    assert moved.last_delivered_id == "3-0"
    assert groups.get_group.sync("s", "g", client=client).consumers == 2

    # Errors come back as Problem models.
    missing = groups.get_group.sync("s", "nope", client=client)
    assert isinstance(missing, m.Problem) and missing.code == "NOGROUP" and missing.status == 404
    busy = groups.create_group.sync("s", client=client, body=m.NewGroup(name="g"))
    assert isinstance(busy, m.Problem) and busy.code == "BUSYGROUP"

    # Trim, XSETID, deletes.
    trimmed = streams.trim_stream.sync("s", client=client, body=m.Trim(maxlen=2))
    assert trimmed.trimmed == 1
    set_id = streams.set_last_id.sync_detailed("s", client=client, body=m.LastId(last_id="9-0"))
    assert set_id.status_code == 204
    assert entries.delete_entries.sync("s", client=client, id=["2-0", "9-9"]).deleted == 1
    assert entries.delete_entry.sync_detailed("s", "3-0", client=client).status_code == 204
    assert groups.delete_group.sync_detailed("s", "g", client=client).status_code == 204
    assert streams.delete_stream.sync_detailed("s", client=client).status_code == 204


def _drive_delivery(
    m: Any, streams: Any, entries: Any, groups: Any, delivery: Any, client: Any
) -> None:
    """A group's policy, a redrive (of a dead letter written by hand) and a retention."""
    made = groups.create_group.sync("{d}", client=client,
                                    body=m.NewGroup(name="g", id="0", mkstream=True))  # fmt: skip
    assert made.policy is None
    body = m.Policy(max_deliveries=3, dead_letter_stream="{d}:dead", backoff_ms=[10, 20])
    assert delivery.set_policy.sync("{d}", "g", client=client, body=body).max_deliveries == 3
    assert delivery.get_policy.sync("{d}", "g", client=client).backoff_ms == [10, 20]
    assert groups.get_group.sync("{d}", "g", client=client).policy.dead_letter_stream == "{d}:dead"
    assert delivery.delete_policy.sync_detailed("{d}", "g", client=client).status_code == 204
    missing = delivery.get_policy.sync("{d}", "g", client=client)
    assert isinstance(missing, m.Problem) and missing.status == 404
    origin = ["{d}", "1-0", "g", "c", "3", "fatal"]
    dead = [["f", "v"], *([k, v] for k, v in zip(DEAD_LETTER_FIELDS, origin, strict=True))]
    one = m.Append(id="5-0", fields=dead)
    assert entries.append_entries.sync("{d}:dead", client=client, body=one).ids == ["5-0"]
    redriven = delivery.redrive_entries.sync("{d}:dead", client=client, body=m.Redrive())
    assert [(x.id, x.stream) for x in redriven.moved] == [("5-0", "{d}")]
    assert redriven.skipped == []
    keep = m.Retention(max_len=10)
    assert delivery.set_retention.sync("{d}", client=client, body=keep).max_len == 10
    assert delivery.get_retention.sync("{d}", client=client).max_len == 10
    assert delivery.delete_retention.sync_detailed("{d}", client=client).status_code == 204
    assert groups.delete_group.sync_detailed("{d}", "g", client=client).status_code == 204
    for key in ("{d}", "{d}:dead"):
        assert streams.delete_stream.sync_detailed(key, client=client).status_code == 204
