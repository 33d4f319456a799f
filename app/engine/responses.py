"""Stored responses of idempotent requests: what a retry with the same Idempotency-Key gets.

A client that retries a write must not apply it twice. The service keeps the response of each
request that carried a key, so the retry gets it back instead of running again. The engine
keeps them as state like any other: set by an engine step (``Store.remember``), journaled as an
effect in the same commit as the write it answers, carried by snapshots, expired by the clock.
The engine knows nothing of HTTP: a response is opaque bytes, a fingerprint is opaque bytes,
and a key is a string the surface builds (the credential's scope and the client's key).

Responses expire in the order they were stored (one window for all, so that order is their
expiry order), and the oldest go first when the budget (count or bytes) is full: a full
budget shortens the window, and ``evicted`` counts how often that happened.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from app.engine.effects import ResponseKept

# The name the journal's visibility rule knows stored responses by: no stream is called this
# (a stream name with a NUL first is legal, and would only share its waits).
RESPONSES_KEY = "\x00idempotency"
# What one stored response costs beyond its bytes (the dict slot, the record, its key).
OVERHEAD_BYTES = 160


@dataclass(frozen=True, slots=True)
class Stored:
    fingerprint: bytes
    response: bytes
    expires_ms: int

    def size(self, key: str) -> int:
        return len(key) + len(self.fingerprint) + len(self.response) + OVERHEAD_BYTES


@dataclass(slots=True)
class Responses:
    """The stored responses of one keyspace, oldest first, within a budget."""

    max_keys: int = 100_000
    max_bytes: int = 64 * 1024 * 1024
    window_ms: int = 24 * 3600 * 1000
    entries: OrderedDict[str, Stored] = field(default_factory=OrderedDict)
    used_bytes: int = 0
    evicted: int = 0  # dropped before their time to stay within the budget
    expired: int = 0

    def get(self, key: str, now_ms: int) -> Stored | None:
        """The live response stored under ``key``, if any."""
        found = self.entries.get(key)
        if found is None:
            return None
        if found.expires_ms <= now_ms:
            self.expire(now_ms)
            return None
        return found

    def put(self, key: str, stored: Stored, now_ms: int | None = None) -> None:
        """Store (or replace) ``key``; drop what has expired by ``now_ms`` (None: replay,
        which never reads the clock), then the oldest past the budget."""
        old = self.entries.pop(key, None)
        if old is not None:
            self.used_bytes -= old.size(key)
        self.entries[key] = stored
        self.used_bytes += stored.size(key)
        if now_ms is not None:
            self.expire(now_ms)
        while len(self.entries) > 1 and (
            len(self.entries) > self.max_keys or self.used_bytes > self.max_bytes
        ):
            self._drop_oldest()
            self.evicted += 1

    def expire(self, now_ms: int) -> int:
        """Drop the responses whose window has passed; how many."""
        dropped = 0
        entries = self.entries
        while entries:
            first = next(iter(entries.values()))
            if first.expires_ms > now_ms:
                break
            self._drop_oldest()
            dropped += 1
        self.expired += dropped
        return dropped

    def _drop_oldest(self) -> None:
        key, stored = self.entries.popitem(last=False)
        self.used_bytes -= stored.size(key)

    def keep(self, name: str, fingerprint: bytes, response: bytes, now_ms: int) -> ResponseKept:
        """Store ``response`` under ``name`` for the window from ``now_ms``; the effect that
        journals it."""
        stored = Stored(fingerprint, response, now_ms + self.window_ms)
        self.put(name, stored, now_ms)
        return ResponseKept(
            key=RESPONSES_KEY,
            name=name,
            fingerprint=fingerprint,
            response=response,
            expires_ms=stored.expires_ms,
        )

    def clear(self) -> None:
        self.entries.clear()
        self.used_bytes = 0
