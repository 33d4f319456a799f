"""Storage quotas: how many entries and bytes the streams under a credential's prefix may hold.

A quota is written ``entries=1000000,bytes=1GB`` (``xstreams keys create --storage``, the
``storage_quota`` setting) or as the object ``{"entries": 1000000, "bytes": "1GB"}`` (the
``storage`` member of a JWT's ``xstreams_limits`` claim, a key's stored limits). Sizes take
``KB``/``MB``/``GB`` (powers of 1000) or ``KiB``/``MiB``/``GiB`` (powers of 1024).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["QuotaError", "StorageQuota", "parse_size"]

_SIZE = re.compile(r"^\s*(\d+)\s*([KMGT]i?B|B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


class QuotaError(ValueError):
    """A quota written wrong; the text says how to write it."""


def parse_size(text: str | int) -> int:
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise QuotaError("a size is 0 or more bytes")
        return text
    m = _SIZE.match(str(text))
    if m is None or isinstance(text, bool):
        raise QuotaError(f"a size such as 500MB or 2GiB, not {text!r}")
    return int(m.group(1)) * _UNITS[(m.group(2) or "").lower()]


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise QuotaError(f"entries is a count, not {value!r}")
    try:
        n = int(value)
    except ValueError:
        raise QuotaError(f"entries is a count, not {value!r}") from None
    if n < 0:
        raise QuotaError("entries is 0 or more")
    return n


@dataclass(frozen=True, slots=True)
class StorageQuota:
    """At most ``entries`` entries and ``bytes`` bytes under the prefix (None: no bound)."""

    entries: int | None = None
    bytes: int | None = None

    @classmethod
    def parse(cls, text: str) -> StorageQuota:
        """From ``entries=1000000,bytes=1GB`` (either part may be left out)."""
        doc: dict[str, str] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, eq, value = part.partition("=")
            if not eq:
                raise QuotaError(f"write entries=N,bytes=SIZE, not {text!r}")
            doc[name.strip()] = value.strip()
        return cls.from_json(doc)

    @classmethod
    def from_json(cls, doc: object) -> StorageQuota:
        if not isinstance(doc, dict):
            raise QuotaError('a storage quota is an object, e.g. {"entries": 1000, "bytes": "1GB"}')
        unknown = set(doc) - {"entries", "bytes"}
        if unknown:
            raise QuotaError(f"unknown storage quota parts: {', '.join(sorted(map(str, unknown)))}")
        if not doc:
            raise QuotaError("a storage quota bounds entries, bytes or both")
        entries, size = doc.get("entries"), doc.get("bytes")
        return cls(
            entries=None if entries is None else _count(entries),
            bytes=None if size is None else parse_size(size),
        )

    def as_json(self) -> dict[str, int]:
        out = {}
        if self.entries is not None:
            out["entries"] = self.entries
        if self.bytes is not None:
            out["bytes"] = self.bytes
        return out

    def __str__(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.as_json().items())
