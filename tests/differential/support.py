"""Masking for the differential tests: what may differ between redis-server and xstreams.

Replies are compared in one shape (the Upstash JSON shape: arrays, strings, integers, null, and
errors as ``ReplyError``; see ``exact.ExactPair``). Only wall-clock values (idle and seen times,
delivery times) and the radix-tree node counts are masked; everything else must be equal to
the letter.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import ReplyError

# XINFO keys whose values depend on the wall clock or on Redis's radix-tree layout.
MASKED_KEYS = frozenset({"seen-time", "idle", "radix-tree-keys", "radix-tree-nodes"})
MASK = "<masked>"
# The same but for radix-tree-keys: the engine keeps Redis's nodes one for one (a node a
# trim left with deleted entries only included), so tests of node layout compare it.
NODES_COMPARED = MASKED_KEYS - {"radix-tree-keys"}


def _is_time(v: Any) -> bool:
    return isinstance(v, int) and v >= -1


def mask(args: tuple[Any, ...], reply: Any, masked: frozenset[str] = MASKED_KEYS) -> Any:
    """Mask the wall-clock parts of ``reply`` to the command ``args`` that produced it (and
    the XINFO keys in ``masked``)."""
    if isinstance(reply, ReplyError):
        return reply
    name = str(args[0]).upper()
    sub = str(args[1]).upper() if len(args) > 1 else ""
    if name == "XPENDING" and len(args) > 3 and isinstance(reply, list):
        # Extended form: [id, consumer, idle-ms, delivery-count]
        out = []
        for row in reply:
            assert _is_time(row[2]), row
            out.append([row[0], row[1], MASK, row[3]])
        return out
    if name == "XINFO":
        return _mask_map(reply, sub == "STREAM", masked)
    return reply


def _mask_map(
    value: Any, full: bool, masked: frozenset[str] = MASKED_KEYS, context: str = ""
) -> Any:
    """Mask a flat key/value array (XINFO's shape), recursing into nested ones."""
    if not isinstance(value, list):
        return value
    if _looks_like_map(value):
        out: list[Any] = []
        for key, val in zip(value[::2], value[1::2], strict=True):
            out.append(key)
            if key in masked:
                assert _is_time(val), (key, val)
                out.append(MASK)
            elif key == "pending" and full and isinstance(val, list):
                out.append([_mask_pel_row(row, context) for row in val])
            elif key in ("groups", "consumers") and isinstance(val, list):
                ctx = "group" if key == "groups" else "consumer"
                out.append([_mask_map(v, full, masked, ctx) for v in val])
            else:
                out.append(val)
        return out
    return [_mask_map(v, full, masked, context) for v in value]


def _mask_pel_row(row: list[Any], context: str) -> list[Any]:
    # XINFO STREAM FULL's "pending" rows: [id, consumer, delivery-time, count] in a group,
    # [id, delivery-time, count] in a consumer.
    time_index = 2 if context == "group" else 1
    assert _is_time(row[time_index]), row
    return [MASK if i == time_index else v for i, v in enumerate(row)]


def _looks_like_map(value: list[Any]) -> bool:
    return (
        len(value) >= 2
        and len(value) % 2 == 0
        and all(isinstance(k, str) for k in value[::2])
        and isinstance(value[0], str)
        and value[0]
        in {
            "name", "length", "consumers", "pending", "radix-tree-keys", "seen-time",
        }
    )  # fmt: skip
