"""Durable Streams offsets: entry IDs written so that they sort as text.

A Redis ID does not sort as text (``"9-0" > "10-0"``); the protocol's offsets must. An offset
is the ID with both halves zero-padded to the 20 digits of an unsigned 64-bit integer, joined
by ``_``. Reading from an offset answers the entries after that ID, as XREAD does with a
last-seen ID, so every surface agrees on a position. ``-1`` (the start) and ``now`` (the tail)
are the protocol's sentinels and are never minted.
"""

from __future__ import annotations

import re

from app.engine.ids import MIN_ID, UINT64_MAX, StreamID

__all__ = ["NOW", "START", "ZERO", "OffsetError", "parse", "token"]

START = "-1"
NOW = "now"
_WIDTH = 20
# Minted 20 digits wide; read with any width up to 20 (a client may write 0_0 for the start).
_SHAPE = re.compile(r"\A([0-9]{1,20})_([0-9]{1,20})\Z")


class OffsetError(ValueError):
    """Text that is neither an offset this server minted nor a sentinel (400)."""


def token(entry_id: StreamID) -> str:
    """The offset of ``entry_id``: both halves zero-padded to 20 digits."""
    return f"{entry_id.ms:0{_WIDTH}d}_{entry_id.seq:0{_WIDTH}d}"


ZERO = token(MIN_ID)  # before every entry: an empty stream's tail


def parse(text: str) -> StreamID:
    """The entry ID an offset names (``-1``: before the first); OffsetError otherwise.
    ``now`` is the caller's to resolve (it needs the stream's tail)."""
    if text == START:
        return MIN_ID
    match = _SHAPE.match(text)
    if match is None:
        raise OffsetError(f"not an offset: {text[:64]!r}")
    ms, seq = int(match[1]), int(match[2])
    if ms > UINT64_MAX or seq > UINT64_MAX:
        raise OffsetError(f"not an offset: {text[:64]!r}")
    return StreamID(ms, seq)
