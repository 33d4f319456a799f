"""Bytes appended and entries read per credential: a request's meter, spent where the work is.

The request limit is spent before routing (app/api/rates.py); these two can only be spent
once the body is parsed or the read has run, so the rate gate leaves a ``Meter`` for the
request in a context variable (``METER``) and the backend every surface calls spends it
(app/api/metered.py): one place for REST, the command endpoint, Durable Streams and the
event streams that read through it. A live tail reads through the tails every subscriber
shares, so its subscriber spends what it was handed itself (app/api/sse/subscriber.py).

- **Bytes** (``Policy.BYTES``): the UTF-8 length of every field name and value appended,
  summed over a batch, a pipeline or a transaction, spent whole before any of it runs
  (``Mode.TAKE``): past the burst the request is refused and nothing is written.
- **Entries** (``Policy.ENTRIES``): a read first peeks (``Mode.PEEK``): with less than one
  entry left it is refused before it runs; the entries it returned are then spent
  (``Mode.OWE``), past the burst too. A read's size is known only once it ran; refusing it
  then would throw its work away and leave a client nothing to retry but the same page, so
  the page is served and the debt makes the next read wait until the rate repaid it.

A refusal is ``OverBudget`` (a 429 in the one error table, app/api/errors.py, with the
Redis-style text on the command endpoint); the gate adds ``Retry-After`` and the RateLimit
fields of every policy the request spent. When the backend cannot be asked, the work goes on
unmetered, as the request limit does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from app.access.quotas import StorageQuota
from app.access.rates import Decision, Mode, Policy, Rate
from app.api.quotas import StorageBook
from app.backends.roles import RatesRole
from app.engine.errors import CommandError

__all__ = [
    "METER",
    "Meter",
    "OverBudget",
    "budget_key",
    "fields_bytes",
    "patiently",
    "unmetered",
]

log = logging.getLogger("xstreams.rates")

_WORDS = {Policy.BYTES: "bytes appended", Policy.ENTRIES: "entries read"}


class OverBudget(CommandError):
    """The credential spent its bytes or entries: 429 with ``Retry-After``."""

    def __init__(self, policy: Policy, rate: Rate, decision: Decision) -> None:
        super().__init__(
            f"ERR too many {_WORDS[policy]} for this credential (at most {rate}); retry"
            f" after {decision.retry_after_ms} ms"
        )
        self.policy = policy
        self.decision = decision


def budget_key(policy: Policy, limit_key: str) -> str:
    """Where a credential's budget of ``policy`` is kept (the requests' under the limit key
    itself, as before the other two existed)."""
    return limit_key if policy is Policy.REQUESTS else f"{policy}:{limit_key}"


def fields_bytes(fields: Iterable[str]) -> int:
    """The UTF-8 bytes of field names and values (a byte that is not UTF-8, carried as
    ``\\udcNN``, is one byte)."""
    return sum(len(f) if f.isascii() else len(f.encode("utf-8", "surrogateescape")) for f in fields)


@dataclass(slots=True)
class Meter:
    """One request's budgets of bytes and entries (None: that policy is not limited), and
    what spending them said, for the response's RateLimit fields."""

    rates: RatesRole
    key: str  # the credential's limit key
    bytes: Rate | None
    entries: Rate | None
    # Events streams wait for their budget rather than fail (app/api/sse, app/api/ds/sse).
    patient: bool = False
    told: dict[Policy, Decision] = field(default_factory=dict)
    refused: OverBudget | None = None
    # The storage quota of the credential's prefix (app/api/quotas.py); None: not held to one.
    quota: StorageQuota | None = None
    prefix: str = ""
    book: StorageBook | None = None

    async def _spend(self, policy: Policy, rate: Rate, cost: int, mode: Mode) -> Decision | None:
        try:
            key = budget_key(policy, self.key)
            decision = await self.rates.spend_rate(key, rate, cost, mode)
        except Exception:  # the backend's trouble is the work's to meet, not the meter's
            log.warning("%s of %s not metered: the backend did not answer", policy, self.key)
            return None
        self.told[policy] = decision
        return decision

    async def append(self, size: int, entries: int) -> None:
        """Spend ``size`` bytes before an append of ``entries`` entries; ``OverBudget`` when
        they do not fit now, a plain error (400) when they never will: waiting would not help
        a client that retries. Then hold them to the prefix's storage quota (``QuotaFull``,
        507)."""
        await self._spend_bytes(size)
        if self.quota is not None and self.book is not None and entries > 0:
            await self.book.admit(self.prefix, self.quota, entries, size)

    async def _spend_bytes(self, size: int) -> None:
        rate = self.bytes
        if rate is None or size <= 0:
            return
        if size > rate.burst:
            raise CommandError.err(
                f"an append of {size} bytes is larger than this credential's burst of bytes"
                f" ({rate}): it can never pass; send it in smaller parts"
            )
        decision = await self._spend(Policy.BYTES, rate, size, Mode.TAKE)
        if decision is not None and not decision.allowed:
            self.refused = OverBudget(Policy.BYTES, rate, decision)
            raise self.refused

    async def before_read(self) -> None:
        """Refuse a read (``OverBudget``) while not one entry is left; a patient meter waits
        for it instead."""
        rate = self.entries
        if rate is None:
            return
        while True:
            decision = await self._spend(Policy.ENTRIES, rate, 1, Mode.PEEK)
            if decision is None or decision.allowed:
                return
            if not self.patient:
                self.refused = OverBudget(Policy.ENTRIES, rate, decision)
                raise self.refused
            await asyncio.sleep(decision.retry_after_ms / 1000)

    async def after_read(self, n: int) -> Decision | None:
        """Spend the ``n`` entries a read returned, past the burst too (a debt): what is
        left (None: nothing spent)."""
        if self.entries is None or n <= 0:
            return None
        return await self._spend(Policy.ENTRIES, self.entries, n, Mode.OWE)


METER: ContextVar[Meter | None] = ContextVar("xstreams_meter", default=None)


@contextmanager
def unmetered() -> Iterator[None]:
    """A block whose appends and reads are the service's own bookkeeping, not the caller's
    (a Durable Stream's record, the tail it answers as the next offset, a fork's copy of its
    source's history): they spend nothing."""
    token = METER.set(None)
    try:
        yield
    finally:
        METER.reset(token)


def patiently() -> None:
    """From here on, this request's reads wait for their budget instead of being refused:
    an event stream past it pauses, and sends every entry once the rate allows (refusing
    would end the stream, and its client would reconnect at once, to be refused again)."""
    meter = METER.get()
    if meter is not None:
        meter.patient = True
