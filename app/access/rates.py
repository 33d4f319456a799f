"""Request rates per credential: how a limit is written, and the rule that spends it.

A limit is a rate with a burst: ``100/s`` lets a credential make 100 requests a second, and
up to 100 at once after a quiet second; ``100/s:300`` lets it make 300 at once, then 100 a
second. ``/min`` and ``/h`` are the same rate over a longer window.

The rule is GCRA (the generic cell rate algorithm, as in ATM networks and redis-cell): one
number per credential, the theoretical arrival time (``tat``) of its next request. Each
request moves ``tat`` on by one interval (a second over the rate); a request that would
move it more than the burst's worth past now is refused, and told exactly when it would
pass. It is a token bucket without a refill timer, so it costs one read and one write, in
process or in one Lua script on Redis (app/backends/redis/lua/rate.lua, the same
arithmetic), and every front-end in front of one Redis spends the same budget.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from app.access.quotas import QuotaError, StorageQuota

__all__ = [
    "UNLIMITED",
    "CredentialLimits",
    "Decision",
    "Rate",
    "RateError",
    "micros_to_ms",
    "spend",
]

_RATE = re.compile(r"\s*(\d+)\s*/\s*(s|sec|second|min|minute|h|hour)\s*(?::\s*(\d+)\s*)?")
_WINDOW_S = {"s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600, "hour": 3600}
MAX_COUNT = 10**9


class RateError(ValueError):
    """A limit written wrong; the text says how to write it."""


@dataclass(frozen=True, slots=True)
class Rate:
    """``count`` requests per ``window_s`` seconds, at most ``burst`` at once."""

    count: int
    window_s: int
    burst: int

    @classmethod
    def parse(cls, text: str) -> Rate:
        m = _RATE.fullmatch(text)
        if m is None:
            raise RateError(
                f"not a rate: {text!r} (write COUNT/s, COUNT/min or COUNT/h, and :BURST for"
                " more at once, e.g. 100/s or 100/s:300)"
            )
        count, window_s = int(m.group(1)), _WINDOW_S[m.group(2)]
        burst = int(m.group(3)) if m.group(3) is not None else count
        if not 0 < count <= MAX_COUNT or not 0 < burst <= MAX_COUNT:
            raise RateError(f"a rate's count and burst must be 1 to {MAX_COUNT}: {text!r}")
        return cls(count, window_s, burst)

    def __str__(self) -> str:
        unit = {1: "s", 60: "min", 3600: "h"}[self.window_s]
        burst = "" if self.burst == self.count else f":{self.burst}"
        return f"{self.count}/{unit}{burst}"

    @property
    def interval_us(self) -> int:
        """Microseconds one request moves the arrival time on (at least 1)."""
        return max(1, self.window_s * 1_000_000 // self.count)


@dataclass(frozen=True, slots=True)
class Decision:
    """What spending one request said: whether it passes, what is left of the burst now,
    and in how many milliseconds the next request passes (0: now) and the burst is whole."""

    allowed: bool
    remaining: int
    retry_after_ms: int
    reset_ms: int


def spend(tat_us: int | None, now_us: int, rate: Rate, cost: int = 1) -> tuple[Decision, int]:
    """GCRA: the decision for a request of ``cost`` at ``now_us`` given the credential's
    arrival time ``tat_us`` (None: none yet), and the arrival time to keep (unchanged when
    refused). Times in microseconds, so a rate of up to a million a second stays exact."""
    interval = rate.interval_us
    tolerance = interval * rate.burst  # how far ahead of now the arrival time may run
    tat = now_us if tat_us is None or tat_us < now_us else tat_us
    new_tat = tat + interval * cost
    allow_at = new_tat - tolerance
    if allow_at > now_us:
        left = max(0, (tolerance - (tat - now_us)) // interval)
        wait, reset = micros_to_ms(allow_at - now_us), micros_to_ms(tat - now_us)
        return Decision(False, left, wait, reset), tat
    remaining = (tolerance - (new_tat - now_us)) // interval
    return Decision(True, max(0, remaining), 0, micros_to_ms(new_tat - now_us)), new_tat


def micros_to_ms(us: int) -> int:
    """Microseconds to whole milliseconds, rounded up: a wait told is never too short."""
    return math.ceil(us / 1000)


@dataclass(frozen=True, slots=True)
class CredentialLimits:
    """What one credential may spend: its requests (every surface, each request one, an
    event stream or long poll one when it opens), and the storage its prefix's streams may
    hold (app/access/quotas.py). None: not limited."""

    requests: Rate | None = None
    storage: StorageQuota | None = None

    @classmethod
    def from_json(cls, doc: object) -> CredentialLimits:
        """From ``{"requests": "100/s:300", "storage": {"entries": 1000}}`` (a key's stored
        limits, a JWT's ``xstreams_limits`` claim); anything else raises ``RateError``."""
        if not isinstance(doc, dict):
            raise RateError('limits must be an object, e.g. {"requests": "100/s"}')
        unknown = set(doc) - {"requests", "storage"}
        if unknown:
            raise RateError(f"unknown limits: {', '.join(sorted(map(str, unknown)))}")
        requests = doc.get("requests")
        if requests is not None and not isinstance(requests, str):
            raise RateError("'requests' must be a rate such as \"100/s\"")
        storage = doc.get("storage")
        try:
            quota = None if storage is None else StorageQuota.from_json(storage)
        except QuotaError as e:
            raise RateError(f"'storage': {e}") from None
        return cls(requests=Rate.parse(requests) if requests is not None else None, storage=quota)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.requests is not None:
            out["requests"] = str(self.requests)
        if self.storage is not None:
            out["storage"] = self.storage.as_json()
        return out

    @property
    def limited(self) -> bool:
        return self.requests is not None or self.storage is not None


UNLIMITED = CredentialLimits()  # a credential that sets no limits of its own
