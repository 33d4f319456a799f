"""The building blocks of Redis's serialization (RDB) that DUMP payloads are made of.

A DUMP payload is one value in RDB form followed by a 10-byte footer::

    ... RDB type byte + value | RDB version (2 bytes, little-endian) | CRC64 (8 bytes, LE)

The CRC64 covers everything before it, version included (``createDumpPayload``). Inside
the value, lengths use RDB's variable-length encoding (``rdbSaveLen``) and strings may be
stored plainly, as small integers (``rdbEncodeInteger``) or LZF-compressed
(``rdbSaveLzfBlob``); a reader must take all three, whatever wrote them.

Pure Python on purpose: the engine depends on the standard library only. That makes a
payload cost its size in CRC64 (a table lookup per byte) and its expanded size in LZF and
listpack decoding, about 40 ms per 100 KB in all here: hence the limits on both
(``limits.Limits``, docs/operations/deployment.md, "Limits"), checked before the work is done.
"""

from __future__ import annotations

import struct

__all__ = [
    "RDB_VERSION",
    "BadPayload",
    "PayloadVersionError",
    "Reader",
    "TooLarge",
    "Writer",
    "crc64",
    "lzf_decompress",
    "seal",
    "unseal",
]

RDB_VERSION = 10  # Redis 7.0's; RESTORE takes payloads of this version or older

_RDB_6BITLEN = 0
_RDB_14BITLEN = 1
_RDB_32BITLEN = 0x80
_RDB_64BITLEN = 0x81
_RDB_ENCVAL = 3
_ENC_INT8, _ENC_INT16, _ENC_INT32, _ENC_LZF = 0, 1, 2, 3


class BadPayload(Exception):
    """A payload whose body cannot be read as a value (RESTORE's "Bad data format")."""


class TooLarge(Exception):
    """A payload past a bound on the work it asks for: ``what`` names the bound
    (``expanded``: the payload's bytes with its LZF strings expanded; ``node_entries``:
    entries of one node, live and deleted; ``dump``: the bytes DUMP would write), ``limit``
    is its value. Found before the work is done, or as soon as it passes the bound."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(what, limit)
        self.what = what
        self.limit = limit


class PayloadVersionError(Exception):
    """A footer that is too short, of a newer RDB version, or whose CRC64 does not match."""


# -- CRC64 ----------------------------------------------------------------------------------

_POLY_REFLECTED = 0x95AC9329AC4BC9B5  # Jones polynomial 0xad93d23594c935a9, bit-reversed


def _table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY_REFLECTED if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _table()


def crc64(data: bytes, crc: int = 0) -> int:
    """Redis's CRC64 (Jones polynomial, reflected input and output, no final xor), as
    ``crc64(0, s, l)`` computes it: crc64(b"123456789") == 0xE9C6D914C4B8D9CA."""
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


def seal(body: bytes) -> bytes:
    """A DUMP payload: ``body`` (type byte and value) plus Redis 7.0's version and CRC64."""
    framed = body + struct.pack("<H", RDB_VERSION)
    return framed + struct.pack("<Q", crc64(framed))


def unseal(payload: bytes) -> bytes:
    """The body of a payload whose footer RESTORE accepts (``verifyDumpPayload``): at least
    10 bytes, an RDB version no newer than 10, a matching CRC64."""
    if len(payload) < 10:
        raise PayloadVersionError("payload shorter than its footer")
    (version,) = struct.unpack_from("<H", payload, len(payload) - 10)
    if version > RDB_VERSION:
        raise PayloadVersionError(f"RDB version {version}")
    (crc,) = struct.unpack_from("<Q", payload, len(payload) - 8)
    if crc64(payload[:-8]) != crc:
        raise PayloadVersionError("CRC64 mismatch")
    return payload[:-10]


# -- LZF ------------------------------------------------------------------------------------


def lzf_decompress(data: bytes, size: int) -> bytes:
    """Expand an LZF block (liblzf's ``lzf_decompress``) that must give exactly ``size``
    bytes; BadPayload for anything else (a back-reference before the start, a run past
    either end), as ``rdbLoadLzfStringObject`` refuses an "Invalid LZF compressed string"."""
    out = bytearray()
    i, n, o = 0, len(data), 0  # o: len(out)
    while i < n:
        ctrl = data[i]
        i += 1
        if ctrl < 32:  # a literal run of ctrl + 1 bytes
            run = ctrl + 1
            if i + run > n:
                raise BadPayload("LZF literal run past the input")
            out += data[i : i + run]
            i += run
            o += run
        else:  # a back-reference: length (3 bits, or 7 + next byte) and 13-bit offset
            length = ctrl >> 5
            if length == 7:
                if i >= n:
                    raise BadPayload("LZF reference past the input")
                length += data[i]
                i += 1
            if i >= n:
                raise BadPayload("LZF reference past the input")
            dist = ((ctrl & 0x1F) << 8) + data[i] + 1
            i += 1
            if dist > o:
                raise BadPayload("LZF reference before the output")
            length += 2
            ref = o - dist
            if length <= dist:
                out += out[ref : ref + length]
            else:  # overlapping its own output: the last ``dist`` bytes, repeated
                tail = out[ref:]
                out += (tail * (length // dist + 1))[:length]
            o += length
        if o > size:
            raise BadPayload("LZF output longer than announced")
    if o != size:
        raise BadPayload("LZF output shorter than announced")
    return bytes(out)


# -- reading and writing RDB values -----------------------------------------------------------


class Reader:
    """Reads RDB values from a payload body; BadPayload on a short read or bad encoding."""

    __slots__ = ("data", "limit", "pos", "room")

    def __init__(self, data: bytes, expanded: int = 0, size: int = 0) -> None:
        """``expanded``: the most bytes the payload (``size`` bytes, ``data`` is its body)
        may take with every LZF string expanded; 0: no bound."""
        self.data = data
        self.pos = 0
        self.limit = expanded
        self.room = expanded - size if expanded else -1  # what LZF may still add; -1: no bound
        if expanded and self.room < 0:
            raise TooLarge("expanded", expanded)

    def raw(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise BadPayload("short read")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def byte(self) -> int:
        return self.raw(1)[0]

    def _length(self) -> tuple[int, bool]:
        """A length, or (encoding, True) for a specially encoded string (``rdbLoadLen``)."""
        first = self.byte()
        kind = first >> 6
        if kind == _RDB_ENCVAL:
            return first & 0x3F, True
        if kind == _RDB_6BITLEN:
            return first & 0x3F, False
        if kind == _RDB_14BITLEN:
            return (first & 0x3F) << 8 | self.byte(), False
        if first == _RDB_32BITLEN:
            return struct.unpack(">I", self.raw(4))[0], False
        if first == _RDB_64BITLEN:
            return struct.unpack(">Q", self.raw(8))[0], False
        raise BadPayload(f"unknown length encoding {first:#x}")

    def length(self) -> int:
        value, encoded = self._length()
        if encoded:
            raise BadPayload("an encoded string where a length belongs")
        return value

    def string(self) -> bytes:
        """A string in any of its RDB forms (``rdbGenericLoadStringObject``). An LZF string
        counts at its expanded size, checked before it is expanded: what a payload decodes
        to, not its own size, is the work it asks for."""
        value, encoded = self._length()
        if not encoded:
            return self.raw(value)
        if value == _ENC_INT8:
            return b"%d" % struct.unpack("<b", self.raw(1))[0]
        if value == _ENC_INT16:
            return b"%d" % struct.unpack("<h", self.raw(2))[0]
        if value == _ENC_INT32:
            return b"%d" % struct.unpack("<i", self.raw(4))[0]
        if value == _ENC_LZF:
            compressed, size = self.length(), self.length()
            if self.room >= 0:
                if size - compressed > self.room:
                    raise TooLarge("expanded", self.limit)
                self.room -= max(size - compressed, 0)
            return lzf_decompress(self.raw(compressed), size)
        raise BadPayload(f"unknown string encoding {value}")

    def millis(self) -> int:
        """A signed 64-bit little-endian time (``rdbLoadMillisecondTime``)."""
        return int(struct.unpack("<q", self.raw(8))[0])


class Writer:
    """Builds an RDB body. Strings are written plainly: every reader takes that form."""

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0  # bytes written

    def raw(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)

    def length(self, n: int) -> None:
        """``rdbSaveLen``, of a ``uint64_t``: what C's conversion makes of any int (a
        ``long long`` counter such as ``entries_read`` is saved this way too), so a DUMP
        always has a payload to answer."""
        n &= 0xFFFF_FFFF_FFFF_FFFF
        if n < 1 << 6:
            self.raw(bytes((n,)))
        elif n < 1 << 14:
            self.raw(bytes((n >> 8 | _RDB_14BITLEN << 6, n & 0xFF)))
        elif n <= 0xFFFF_FFFF:
            self.raw(bytes((_RDB_32BITLEN,)) + struct.pack(">I", n))
        else:
            self.raw(bytes((_RDB_64BITLEN,)) + struct.pack(">Q", n))

    def string(self, data: bytes) -> None:
        self.length(len(data))
        self.raw(data)

    def millis(self, t: int) -> None:
        """``rdbSaveMillisecondTime``: a ``long long``, little-endian."""
        self.raw(struct.pack("<Q", t & 0xFFFF_FFFF_FFFF_FFFF))

    def getvalue(self) -> bytes:
        return b"".join(self.parts)
