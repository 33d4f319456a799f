"""Listpacks as bytes: reading the ones a DUMP payload holds and writing the ones DUMP sends.

A listpack (Redis's ``listpack.c``)::

    total bytes (uint32 LE) | element count (uint16 LE, 65535: unknown) | elements ... | 0xFF

and each element is ``encoding + data | backlen`` (backlen: the size of encoding + data, in
1 to 5 bytes read right to left). Integers take 1 to 9 bytes by range, strings carry a 6-,
12- or 32-bit length. A string that reads as a 64-bit integer is stored as that integer
(``lpEncodeGetType`` via ``lpStringToInt64``), which is why the sizes modelled in
``listpack`` match the bytes written here.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from app.engine.ids import string2ll
from app.engine.rdbio import BadPayload

Element = int | bytes
"""A listpack element as read: an integer, or a string's bytes."""

_EOF = 0xFF


def _backlen(n: int) -> bytes:
    """``lpEncodeBacklen``: the size of an element's encoding and data, read right to left."""
    if n <= 127:
        return bytes((n,))
    if n < 16383:
        return bytes((n >> 7, (n & 127) | 128))
    if n < 2097151:
        return bytes((n >> 14, ((n >> 7) & 127) | 128, (n & 127) | 128))
    if n < 268435455:
        return bytes((n >> 21, ((n >> 14) & 127) | 128, ((n >> 7) & 127) | 128, (n & 127) | 128))
    return bytes(
        (n >> 28, ((n >> 21) & 127) | 128, ((n >> 14) & 127) | 128, ((n >> 7) & 127) | 128,
         (n & 127) | 128)
    )  # fmt: skip


def decode(lp: bytes) -> list[Element]:
    """Every element of a listpack, checked as ``lpValidateIntegrity`` checks in depth (header
    size, each element's extent and back-length, the end marker); BadPayload otherwise.
    This loop is most of RESTORE's work: the two forms that make up most stream listpacks
    (a 7-bit integer, a string under 64 bytes) are read first and inline."""
    if len(lp) < 7:
        raise BadPayload("listpack shorter than its header")
    total, count = struct.unpack_from("<IH", lp)
    if total != len(lp) or lp[-1] != _EOF:
        raise BadPayload("listpack size or end marker wrong")
    out: list[Element] = []
    append = out.append
    p, end = 6, len(lp) - 1
    while p < end:
        b = lp[p]
        if b < 0x80:  # 7-bit unsigned integer; its back-length is 1
            if p + 1 >= end or lp[p + 1] != 1:
                raise BadPayload("listpack element past the end or with a wrong back-length")
            append(b)
            p += 2
            continue
        if b < 0xC0:  # string of up to 63 bytes; its back-length is one byte
            size = 1 + (b & 0x3F)
            if p + size >= end or lp[p + size] != size:
                raise BadPayload("listpack element past the end or with a wrong back-length")
            append(lp[p + 1 : p + size])
            p += size + 1
            continue
        value: Element
        if b < 0xE0:
            if p + 2 > end:
                raise BadPayload("listpack element past the end")
            v = (b & 0x1F) << 8 | lp[p + 1]
            value, size = (v - (1 << 13) if v >= 1 << 12 else v), 2
        elif b < 0xF0:
            if p + 2 > end:
                raise BadPayload("listpack element past the end")
            size = 2 + ((b & 0x0F) << 8 | lp[p + 1])
            value = lp[p + 2 : p + size]
        elif b == 0xF0:
            if p + 5 > end:
                raise BadPayload("listpack element past the end")
            size = 5 + struct.unpack_from("<I", lp, p + 1)[0]
            value = lp[p + 5 : p + size]
        elif 0xF1 <= b <= 0xF4:
            width = (2, 3, 4, 8)[b - 0xF1]
            size = 1 + width
            if p + size > end:
                raise BadPayload("listpack element past the end")
            value = int.from_bytes(lp[p + 1 : p + size], "little", signed=True)
        else:
            raise BadPayload(f"listpack encoding {b:#x}")
        back = _backlen(size)
        if p + size + len(back) > end or lp[p + size : p + size + len(back)] != back:
            raise BadPayload("listpack element past the end or with a wrong back-length")
        append(value)
        p += size + len(back)
    if count != 65535 and count != len(out):
        raise BadPayload("listpack element count wrong")
    return out


def _int(v: int) -> bytes:
    """``lpEncodeIntegerGetType``."""
    if 0 <= v <= 127:
        return bytes((v,))
    if -4096 <= v <= 4095:
        v &= 0x1FFF
        return bytes((v >> 8 | 0xC0, v & 0xFF))
    for tag, width in ((0xF1, 2), (0xF2, 3), (0xF3, 4), (0xF4, 8)):
        half = 1 << (8 * width - 1)
        if -half <= v < half:
            return bytes((tag,)) + v.to_bytes(width, "little", signed=True)
    raise ValueError(f"integer {v} does not fit in 64 bits")


def _str(data: bytes) -> bytes:
    n = len(data)
    if n < 64:
        return bytes((0x80 | n,)) + data
    if n < 4096:
        return bytes((0xE0 | n >> 8, n & 0xFF)) + data
    return b"\xf0" + struct.pack("<I", n) + data


_SMALL = [bytes((v, 1)) for v in range(128)]
"""The 7-bit integers' elements: flags, counts and most ID deltas of a stream listpack."""
_INT_FIRST = frozenset("-0123456789")


def element(value: int | str) -> bytes:
    """One element as ``lpAppend`` / ``lpAppendInteger`` write it: an integer, or a string
    (the engine's str, bytes kept as surrogates) that becomes an integer when it reads as one.
    DUMP calls this for every element: the common forms come first."""
    if isinstance(value, int):
        if 0 <= value <= 127:
            return _SMALL[value]
        enc = _int(value)
    else:
        as_int = string2ll(value) if len(value) <= 20 and value[:1] in _INT_FIRST else None
        if as_int is not None:
            if 0 <= as_int <= 127:
                return _SMALL[as_int]
            enc = _int(as_int)
        else:
            data = value.encode("utf-8", "surrogateescape")
            n = len(data)
            if n < 64:  # header and back-length one byte each
                return b"%c%b%c" % (0x80 | n, data, n + 1)
            enc = _str(data)
    return enc + _backlen(len(enc))


def encode(elements: Iterable[bytes]) -> bytes:
    """A listpack of elements already encoded by ``element``."""
    parts = list(elements)
    body = b"".join(parts)
    total = 6 + len(body) + 1
    return struct.pack("<IH", total, min(len(parts), 65535)) + body + bytes((_EOF,))
