"""Rates per credential: how a limit is written, and the rule that spends it.

A limit is a rate with a burst: ``100/s`` lets a credential make 100 requests a second, and
up to 100 at once after a quiet second; ``100/s:300`` lets it make 300 at once, then 100 a
second. ``/min`` and ``/h`` are the same rate over a longer window; ``k``, ``M`` and ``G``
multiply a count by a thousand, a million, a billion (``10M/s:50M`` bytes). Three limits
(``Policy``) are spent alike: requests, bytes appended, entries read.

The rule is GCRA (the generic cell rate algorithm, as in ATM networks and redis-cell): one
number per credential, the theoretical arrival time (``tat``) of its next request. Each
request moves ``tat`` on by one interval (a second over the rate); a request that would
move it more than the burst's worth past now is refused, and told exactly when it would
pass. It is a token bucket without a refill timer, so it costs one read and one write, in
process or in one Lua script on Redis (app/backends/redis/lua/rate.lua, the same
arithmetic), and every front-end in front of one Redis spends the same budget.

A spend of ``cost`` units moves ``tat`` on by ``cost`` times the interval, rounded up to a
whole microsecond once per spend (not per unit: a rate of a billion bytes a second stays
exact for a spend of many bytes; a spend never costs less than a microsecond, which no
append rate reaches). Three ways to spend (``Mode``): ``TAKE`` refuses what the burst cannot
pay (requests, bytes: the cost is known before the work); ``PEEK`` tells whether one more
unit would pass and spends nothing (before a read: its cost is known only after it ran);
``OWE`` always spends, past the burst too (after a read: its entries were served). So a big
page is served once and leaves the credential in debt, and its next read is refused until
the rate has repaid it: the rate holds on average, and no read is cut short or run twice.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import IntEnum, StrEnum

from app.access.quotas import QuotaError, StorageQuota

__all__ = [
    "UNLIMITED",
    "CredentialLimits",
    "Decision",
    "Mode",
    "Policy",
    "Rate",
    "RateError",
    "micros_to_ms",
    "spend",
]

_COUNT = r"(\d+)\s*([kMG]?)"
_RATE = re.compile(rf"\s*{_COUNT}\s*/\s*(s|sec|second|min|minute|h|hour)\s*(?::\s*{_COUNT}\s*)?")
_TIMES = {"": 1, "k": 1000, "M": 1_000_000, "G": 1_000_000_000}
_WINDOW_S = {"s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600, "hour": 3600}
MAX_COUNT = 10**9


class RateError(ValueError):
    """A limit written wrong; the text says how to write it."""


class Policy(StrEnum):
    """What a limit counts; the name its RateLimit headers and metrics give it."""

    REQUESTS = "requests"  # every request, one each (an event stream when it opens)
    BYTES = "bytes"  # field names and values appended, in UTF-8 bytes
    ENTRIES = "entries"  # entries handed out by reads, event streams included


class Mode(IntEnum):
    """How a spend treats a cost the burst cannot pay (the module docstring says why)."""

    TAKE = 0  # refuse it, spending nothing
    OWE = 1  # spend it all the same: the credential is in debt until the rate repays it
    PEEK = 2  # tell whether it would pass; spend nothing either way


@dataclass(frozen=True, slots=True)
class Rate:
    """``count`` units per ``window_s`` seconds, at most ``burst`` at once."""

    count: int
    window_s: int
    burst: int

    @classmethod
    def parse(cls, text: str) -> Rate:
        m = _RATE.fullmatch(text)
        if m is None:
            raise RateError(
                f"not a rate: {text!r} (write COUNT/s, COUNT/min or COUNT/h, and :BURST for"
                " more at once, e.g. 100/s, 100/s:300 or 10M/s; k, M, G multiply a count)"
            )
        count, window_s = int(m.group(1)) * _TIMES[m.group(2)], _WINDOW_S[m.group(3)]
        burst = int(m.group(4)) * _TIMES[m.group(5)] if m.group(4) is not None else count
        if not 0 < count <= MAX_COUNT or not 0 < burst <= MAX_COUNT:
            raise RateError(f"a rate's count and burst must be 1 to {MAX_COUNT}: {text!r}")
        return cls(count, window_s, burst)

    def __str__(self) -> str:
        unit = {1: "s", 60: "min", 3600: "h"}[self.window_s]
        burst = "" if self.burst == self.count else f":{self.burst}"
        return f"{self.count}/{unit}{burst}"

    def cost_us(self, cost: int) -> int:
        """Microseconds ``cost`` units move the arrival time on (rounded up, at least 1)."""
        return max(1, -(-self.window_s * 1_000_000 * cost // self.count))

    @property
    def tolerance_us(self) -> int:
        """How far past now the arrival time may run: the burst's worth of time."""
        return self.window_s * 1_000_000 * self.burst // self.count

    def units_in(self, us: int) -> int:
        """Whole units ``us`` microseconds of budget pay for (0 when none or in debt)."""
        return max(0, us * self.count // (self.window_s * 1_000_000))


@dataclass(frozen=True, slots=True)
class Decision:
    """What a spend said: whether it passes, what is left of the burst now (in units), in
    how many milliseconds the next unit passes (0: now) and the burst is whole."""

    allowed: bool
    remaining: int
    retry_after_ms: int
    reset_ms: int

    @classmethod
    def of(cls, rate: Rate, allowed: bool, ahead_us: int, wait_us: int) -> Decision:
        """From the times a spend leaves: the arrival time ``ahead_us`` past now, and the
        wait (0 when allowed). One place for both backends (Redis's script returns these)."""
        left = rate.units_in(rate.tolerance_us - ahead_us)
        return cls(allowed, left, micros_to_ms(wait_us), micros_to_ms(ahead_us))


def spend(
    tat_us: int | None, now_us: int, rate: Rate, cost: int = 1, mode: Mode = Mode.TAKE
) -> tuple[Decision, int]:
    """GCRA: the decision for a spend of ``cost`` at ``now_us`` given the credential's
    arrival time ``tat_us`` (None: none yet), and the arrival time to keep (unchanged when
    refused or peeked). Times in microseconds (lua/rate.lua does the same steps)."""
    tat = now_us if tat_us is None or tat_us < now_us else tat_us
    new_tat = tat + rate.cost_us(cost)
    allow_at = new_tat - rate.tolerance_us
    if mode is Mode.OWE:
        return Decision.of(rate, True, new_tat - now_us, 0), new_tat
    if allow_at > now_us:
        return Decision.of(rate, False, tat - now_us, allow_at - now_us), tat
    if mode is Mode.PEEK:
        return Decision.of(rate, True, tat - now_us, 0), tat
    return Decision.of(rate, True, new_tat - now_us, 0), new_tat


def micros_to_ms(us: int) -> int:
    """Microseconds to whole milliseconds, rounded up: a wait told is never too short."""
    return math.ceil(us / 1000)


@dataclass(frozen=True, slots=True)
class CredentialLimits:
    """What one credential may spend: requests (every surface, each request one, an event
    stream or long poll one when it opens), bytes appended, entries read; and the storage
    its prefix's streams may hold (app/access/quotas.py). None: not limited (the settings'
    default applies)."""

    requests: Rate | None = None
    bytes: Rate | None = None
    entries: Rate | None = None
    storage: StorageQuota | None = None

    @classmethod
    def from_json(cls, doc: object) -> CredentialLimits:
        """From ``{"requests": "100/s:300", "bytes": "1M/s", "entries": "1000/s",
        "storage": {"entries": 1000000, "bytes": "1GB"}}`` (a key's stored limits, a JWT's
        ``xstreams_limits`` claim); anything else raises ``RateError``."""
        if not isinstance(doc, dict):
            raise RateError('limits must be an object, e.g. {"requests": "100/s"}')
        names = {p.value for p in Policy}
        unknown = set(doc) - names - {"storage"}
        if unknown:
            raise RateError(f"unknown limits: {', '.join(sorted(map(str, unknown)))}")
        rates: dict[str, Rate | None] = {}
        for name in names:
            text = doc.get(name)
            if text is not None and not isinstance(text, str):
                raise RateError(f'{name!r} must be a rate such as "100/s"')
            rates[name] = Rate.parse(text) if text is not None else None
        storage = doc.get("storage")
        try:
            quota = None if storage is None else StorageQuota.from_json(storage)
        except QuotaError as e:
            raise RateError(f"'storage': {e}") from None
        return cls(**rates, storage=quota)

    def of(self, policy: Policy) -> Rate | None:
        rate: Rate | None = getattr(self, policy.value)
        return rate

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {p.value: str(r) for p in Policy if (r := self.of(p)) is not None}
        if self.storage is not None:
            out["storage"] = self.storage.as_json()
        return out

    @property
    def limited(self) -> bool:
        rated = self.requests is not None or self.bytes is not None or self.entries is not None
        return rated or self.storage is not None


UNLIMITED = CredentialLimits()  # a credential that sets no limits of its own
