"""DUMP payloads written by other Redis versions, for the RESTORE tests."""

from __future__ import annotations

import struct

from app.engine import lpcodec
from app.engine.rdbio import Writer, seal

LEGACY_RDB9 = bytes.fromhex(
    "0f011000000000000000010000000000000000c3404a40571657000000230002010401010184646174610500"
    "0103010020010381610204200a0001400a0062600a0002400a0063600a4022018164200a4039200a0065600a"
    "0005400a0066200a00ff02060002026731050004000000000000000100000000000000003ef783437a010000"
    "01000000000000000200000000000000003ef783437a01000001000000000000000400000000000000003ef7"
    "83437a01000001000000000000000500000000000000003ef783437a0100000101036331313ef783437a0100"
    "0004000000000000000100000000000000000000000000000002000000000000000000000000000000040000"
    "000000000000000000000000000500000000000000000267320000000009003d52ef6867521dfa"
)
"""Redis's own test payload ("Loading from legacy (Redis <= v6.2.x, rdb_ver < 10)
persistence", tests/unit/type/stream-cgroups.tcl at 7.0.15): RDB type 15 with an
LZF-compressed node, DUMPed by Redis 5 after

    XADD x 1-0 data a ... XADD x 6-0 data f; XDEL x 3-0; XGROUP CREATE x g1 0;
    XGROUP CREATE x g2 0; XREADGROUP GROUP g1 c11 COUNT 4 STREAMS x >; XTRIM x MAXLEN = 2
"""


def _lzf_literal(data: bytes) -> bytes:
    """``data`` as LZF literal runs (at most 32 bytes each)."""
    out = bytearray()
    for i in range(0, len(data), 32):
        chunk = data[i : i + 32]
        out += bytes((len(chunk) - 1,)) + chunk
    return bytes(out)


def lzf_repeating(prefix: bytes, unit: bytes, count: int, suffix: bytes) -> bytes:
    """LZF of ``prefix + unit * count + suffix`` with the repeats as back-references to the
    unit before them (264 bytes each): how a few KB expand to megabytes."""
    assert 3 <= len(unit) <= 8192 and count >= 1
    out = bytearray(_lzf_literal(prefix + unit))
    offset = len(unit) - 1
    left = len(unit) * (count - 1)
    while left:
        n = min(left, 264)
        if n < 3:  # too short for a reference: the unit's own bytes, literally
            out += _lzf_literal(unit[:n])
            break
        if n - 2 < 7:
            out += bytes(((n - 2) << 5 | offset >> 8, offset & 0xFF))
        else:
            out += bytes((7 << 5 | offset >> 8, n - 2 - 7, offset & 0xFF))
        left -= n
    out += _lzf_literal(suffix)
    return bytes(out)


def tombstones(deleted: int, *, compressed: bool) -> bytes:
    """A DUMP payload (type 19) of one node: ``deleted`` deleted entries, all 1-1 (f v),
    then one live entry 2-1 (f v); no groups. Uncompressed it is exactly what DUMP gives
    for that stream; compressed, a few bytes per thousand entries (issue 23: 91 KB held
    the loop 55 s with 800,000 of them)."""
    el = lpcodec.element
    dead = el(3) + el(0) + el(0) + el("v") + el(4)  # DELETED|SAMEFIELDS, 1-1, "v", lp-count
    live = el(2) + el(1) + el(0) + el("v") + el(4)
    master = el(1) + el(deleted) + el(1) + el("f") + el(0)
    size = 6 + len(master) + len(dead) * deleted + len(live) + 1
    head = struct.pack("<IH", size, min(5 + 5 * (deleted + 1), 65535))
    w = Writer()
    w.raw(b"\x13")  # RDB_TYPE_STREAM_LISTPACKS_2
    w.length(1)
    w.string(struct.pack(">QQ", 1, 1))
    if compressed:
        lzf = lzf_repeating(head + master, dead, deleted, live + b"\xff")
        w.raw(b"\xc3")  # an LZF string: compressed length, expanded length, data
        w.length(len(lzf))
        w.length(size)
        w.raw(lzf)
    else:
        w.string(head + master + dead * deleted + live + b"\xff")
    w.length(1)  # live entries
    for value in (2, 1, 2, 1, 1, 1, deleted + 1):  # last, first, max deleted ID; entries_added
        w.length(value)
    w.length(0)  # groups
    return seal(w.getvalue())
