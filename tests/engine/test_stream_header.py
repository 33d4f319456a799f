"""XINFO STREAM and XINFO STREAM FULL begin with the same fields; the engine answers both with
one ``StreamHeader``, so a surface that shapes the header once shapes both replies alike."""

from __future__ import annotations

from dataclasses import fields

from app.engine.idmp import IdmpInfo
from app.engine.ids import StreamID
from app.engine.replies import StreamFullInfo, StreamHeader, StreamInfo
from app.engine.store import Store

# Redis's header keys, in the order XINFO STREAM and XINFO STREAM FULL both reply them.
REDIS_HEADER = [
    "length",
    "radix-tree-keys",
    "radix-tree-nodes",
    "last-generated-id",
    "max-deleted-entry-id",
    "entries-added",
    "recorded-first-entry-id",
]


# Redis 8.6's IDMP fields, which follow them when a stream has IDMP state.
REDIS_IDMP = [
    "idmp-duration",
    "idmp-maxsize",
    "pids-tracked",
    "iids-tracked",
    "iids-added",
    "iids-duplicates",
]


def test_the_header_fields_are_redis_header_in_order() -> None:
    names = [f.name.replace("_", "-") for f in fields(StreamHeader)]
    assert names == [*REDIS_HEADER, "idmp"]
    # Redis's IDMP fields in Redis's order, then the one of xstreams's producer cap.
    assert [f.name.replace("_", "-") for f in fields(IdmpInfo)] == [*REDIS_IDMP, "pids-evicted"]


def test_info_and_full_info_share_one_header(store: Store) -> None:
    """A stream with a history (deletes, a trim, XSETID) so every header field is non-trivial."""
    for ms in range(1, 8):
        store.execute(["XADD", "s", f"{ms}-0", "f", str(ms)])
    store.execute(["XDEL", "s", "3-0"])
    store.execute(["XTRIM", "s", "MAXLEN", "4"])
    store.execute(["XSETID", "s", "9-0", "ENTRIESADDED", "12", "MAXDELETEDID", "8-0"])
    store.execute(["XGROUP", "CREATE", "s", "g", "0"])
    info = store.execute(["XINFO", "STREAM", "s"])
    full = store.execute(["XINFO", "STREAM", "s", "FULL"])
    assert isinstance(info, StreamInfo) and isinstance(full, StreamFullInfo)
    assert (
        info.header
        == full.header
        == StreamHeader(
            length=4,
            radix_tree_keys=1,
            radix_tree_nodes=2,
            last_generated_id=StreamID(9, 0),
            max_deleted_entry_id=StreamID(8, 0),
            entries_added=12,
            recorded_first_entry_id=StreamID(4, 0),
        )
    )
