"""The protocol's request headers, parsed, and the headers every response carries."""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass
from datetime import datetime

from starlette.datastructures import Headers

__all__ = [
    "BadRequest",
    "Producer",
    "content_type_of",
    "cursor_after",
    "expires_at",
    "is_json",
    "producer",
    "same_type",
    "security",
    "ttl",
    "wants_close",
]

NEXT_OFFSET = "Stream-Next-Offset"
UP_TO_DATE = "Stream-Up-To-Date"
CLOSED = "Stream-Closed"
CURSOR = "Stream-Cursor"
SEQ = "Stream-Seq"
TTL = "Stream-TTL"
EXPIRES_AT = "Stream-Expires-At"
DEFAULT_TYPE = "application/octet-stream"
MAX_SAFE = (1 << 53) - 1  # the protocol's producer integers: JavaScript's safe range

_DECIMAL = re.compile(r"\A(0|[1-9][0-9]*)\Z")
# The protocol's cursor: 20-second intervals counted from 2024-10-09T00:00:00Z.
_CURSOR_EPOCH_S = 1728432000
_CURSOR_INTERVAL_S = 20


class BadRequest(ValueError):
    """A malformed request header or parameter (400)."""


def security() -> dict[str, str]:
    """The browser security headers on every /ds response (PROTOCOL.md 12.7)."""
    return {"x-content-type-options": "nosniff", "cross-origin-resource-policy": "cross-origin"}


def content_type_of(headers: Headers) -> str | None:
    value = headers.get("content-type")
    return value.strip() if value else None


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def same_type(a: str, b: str) -> bool:
    """Content types compare by media type, case-insensitively."""
    return media_type(a) == media_type(b)


def is_json(content_type: str) -> bool:
    return media_type(content_type) == "application/json"


def is_text(content_type: str) -> bool:
    """SSE carries text and JSON as they are, everything else as base64."""
    kind = media_type(content_type)
    return kind.startswith("text/") or kind == "application/json"


def wants_close(headers: Headers) -> bool:
    """``Stream-Closed: true`` (any case); any other value is as if absent."""
    return headers.get(CLOSED, "").strip().lower() == "true"


def ttl(headers: Headers) -> int | None:
    value = headers.get(TTL)
    if value is None:
        return None
    if not _DECIMAL.match(value.strip()):
        raise BadRequest("Stream-TTL must be a non-negative decimal integer")
    return int(value)


def expires_at(headers: Headers) -> str | None:
    value = headers.get(EXPIRES_AT)
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest("Stream-Expires-At must be an RFC 3339 timestamp") from None
    if parsed.tzinfo is None:
        raise BadRequest("Stream-Expires-At must carry a time zone")
    return value.strip()


def expires_ms(value: str) -> int:
    return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class Producer:
    id: str
    epoch: int
    seq: int


def _safe_int(name: str, value: str) -> int:
    if not _DECIMAL.match(value.strip()) or int(value) > MAX_SAFE:
        raise BadRequest(f"{name} must be an integer in 0..2^53-1")
    return int(value)


def producer(headers: Headers) -> Producer | None:
    """Producer-Id, -Epoch and -Seq: all three or none (400)."""
    values = [headers.get(name) for name in ("Producer-Id", "Producer-Epoch", "Producer-Seq")]
    if all(v is None for v in values):
        return None
    pid, epoch, seq = values
    if pid is None or epoch is None or seq is None:
        raise BadRequest("Producer-Id, Producer-Epoch and Producer-Seq go together")
    if not pid.strip():
        raise BadRequest("Producer-Id must not be empty")
    return Producer(pid, _safe_int("Producer-Epoch", epoch), _safe_int("Producer-Seq", seq))


def cursor_after(client: str | None) -> str:
    """The current interval number, strictly past the client's cursor (random jitter)."""
    now = (int(time.time()) - _CURSOR_EPOCH_S) // _CURSOR_INTERVAL_S
    if client is not None and client.isdigit() and int(client) >= now:
        now = int(client) + random.randint(1, 3600 // _CURSOR_INTERVAL_S)
    return str(now)
