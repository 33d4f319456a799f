"""RESTORE's work is bounded by what a payload decodes to, not by its size (issue 23, part 3).

A 100 KB LZF payload expands to 800,000 deleted entries in one node: it must be refused
before it is decoded, with Redis's "Bad data format" naming the limit, and nothing changed.
What the limits accept loads, and DUMP gives it back byte for byte. DUMP answers no more
than RESTORE takes. (How long the loop is held lives in bench/: ``python -m bench.restore``.)
"""

from __future__ import annotations

import pytest

from app.engine.limits import Limits
from app.engine.store import Store
from app.settings import Settings
from tests.engine.helpers import error, run
from tests.engine.payloads import tombstones
from tests.engine.test_dump_restore import build, raw, text

DEFAULTS = Limits(
    restore_bytes=Settings.model_fields["max_restore_bytes"].default,
    restore_node_entries=Settings.model_fields["max_restore_node_entries"].default,
)
EXPANDS = "ERR Bad data format: the payload expands past {} bytes (max_restore_bytes)"
DUMP = "ERR DUMP payload would be larger than {} bytes (max_restore_bytes)"
NODE = (
    "ERR Bad data format: a node holds more than {} entries, deleted ones included "
    "(max_restore_node_entries)"
)


def test_the_issue_s_payload_is_refused_by_the_default_limits(store: Store) -> None:
    """800,000 tombstones and one live entry in ~100 KB: under every payload limit, refused
    before the LZF string is expanded."""
    payload = tombstones(800_000, compressed=True)
    assert len(payload) < DEFAULTS.restore_bytes
    store.keyspace.limits = DEFAULTS
    run(store, "XADD", "t", "5-5", "f", "kept")
    assert error(store, "RESTORE", "t", "0", text(payload), "REPLACE") == EXPANDS.format(
        DEFAULTS.restore_bytes
    )
    assert [str(e.id) for e in run(store, "XRANGE", "t", "-", "+")] == ["5-5"]


@pytest.mark.parametrize("compressed", [True, False])
def test_a_node_at_the_entries_limit_loads_and_one_past_is_refused(
    store: Store, compressed: bool
) -> None:
    """Entries per node count deleted ones, as a node's walk does; the payload bytes are
    under their limit either way."""
    store.keyspace.limits = Limits(restore_bytes=1 << 20, restore_node_entries=1000)
    at_limit = tombstones(999, compressed=compressed)  # 999 deleted + 1 live
    assert run(store, "RESTORE", "t", "0", text(at_limit)) == "OK"
    assert raw(run(store, "DUMP", "t")) == tombstones(999, compressed=False)
    assert run(store, "XLEN", "t") == 1
    past = tombstones(1000, compressed=compressed)
    assert error(store, "RESTORE", "u", "0", text(past)) == NODE.format(1000)
    assert run(store, "EXISTS", "u") == 0


def test_a_payload_at_the_limit_loads_and_round_trips(store: Store) -> None:
    """At the limit: RESTORE takes it and DUMP gives it back; one byte less refuses both."""
    plain = tombstones(5000, compressed=False)
    store.keyspace.limits = Limits(restore_bytes=len(plain))
    assert run(store, "RESTORE", "t", "0", text(plain)) == "OK"
    assert raw(run(store, "DUMP", "t")) == plain
    store.keyspace.limits = Limits(restore_bytes=len(plain) - 1)
    assert error(store, "DUMP", "t") == DUMP.format(len(plain) - 1)
    assert error(store, "RESTORE", "u", "0", text(plain)).startswith(
        f"ERR RESTORE payload of {len(plain)} bytes"
    )


def test_lzf_strings_count_at_their_expanded_size(store: Store) -> None:
    """The compressed payload is under a tenth of the limit, and refused: it expands past it.
    With room for the expansion (and its few header bytes), it loads."""
    payload = tombstones(5000, compressed=True)
    plain = tombstones(5000, compressed=False)
    assert 10 * len(payload) < len(plain)
    store.keyspace.limits = Limits(restore_bytes=len(plain) - 1)
    assert error(store, "RESTORE", "t", "0", text(payload)) == EXPANDS.format(len(plain) - 1)
    assert run(store, "EXISTS", "t") == 0
    store.keyspace.limits = Limits(restore_bytes=len(plain) + 16)
    assert run(store, "RESTORE", "t", "0", text(payload)) == "OK"
    assert raw(run(store, "DUMP", "t")) == plain


def test_dump_answers_no_more_than_restore_takes(store: Store) -> None:
    """A stream with groups, consumers and pending entries: DUMP refuses one byte under its
    payload, whatever part (nodes or groups) passes the limit."""
    build(store)
    payload = run(store, "DUMP", "s")
    size = len(raw(payload))
    s = store.keyspace.get("s")
    assert s is not None
    nodes = sum(node.lp_bytes for node in s.nodes)
    for limit in (size - 1, nodes + 1, nodes - 1):
        store.keyspace.limits = Limits(restore_bytes=limit)
        assert error(store, "DUMP", "s") == DUMP.format(limit)
    store.keyspace.limits = Limits(restore_bytes=size)
    assert run(store, "DUMP", "s") == payload
    assert run(store, "RESTORE", "copy", "0", payload) == "OK"
    assert run(store, "DUMP", "copy") == payload


def test_dump_counts_pending_entries_too(store: Store) -> None:
    """A short stream whose group has every entry pending: the PELs, not the nodes, pass
    the limit."""
    for i in range(1, 501):
        run(store, "XADD", "s", f"{i}-0", "f", "v")
    run(store, "XGROUP", "CREATE", "s", "g", "0")
    run(store, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    size = len(raw(run(store, "DUMP", "s")))
    s = store.keyspace.get("s")
    assert s is not None
    nodes = sum(node.lp_bytes for node in s.nodes)
    assert nodes * 2 < size
    for limit in (nodes + 100, size - 1):
        store.keyspace.limits = Limits(restore_bytes=limit)
        assert error(store, "DUMP", "s") == DUMP.format(limit)
    store.keyspace.limits = Limits(restore_bytes=size)
    assert len(raw(run(store, "DUMP", "s"))) == size
